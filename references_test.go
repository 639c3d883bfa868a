package miniapphost_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// The repository must explain itself: every path its text names is in it,
// every citation of the service contract names a section docs/service.md
// has, and no citation is left in the old bare form. What is read, and
// what is deliberately left alone (URLs, host names and Go import paths,
// absolute paths, string literals, test corpora, what .gitignore names),
// is in docs/architecture.md, "Rules that keep the house simple".

// TestReferencesResolve scans every tracked text file.
func TestReferencesResolve(t *testing.T) {
	repo := loadRepo(t)
	for _, name := range repo.textFiles() {
		if name == "references_test.go" {
			continue // the scanner's own crafted inputs (TestReferenceScanner)
		}
		data, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range repo.check(name, data) {
			t.Error(p)
		}
	}
}

// TestReferenceScanner runs the scanner on crafted inputs, against a small
// repository, to show both what it catches and what it leaves alone.
func TestReferenceScanner(t *testing.T) {
	repo := &repoIndex{
		files: map[string]bool{"README.md": true, "docs/a.md": true, "docs/service.md": true,
			"host/flow.go": true, "assets/bridge/miniapp.js": true, "bench/peer/bench.sh": true, "bench/side/README.md": true},
		dirs:    map[string]bool{"docs": true, "host": true, "assets": true, "assets/bridge": true, "bench": true, "bench/peer": true, "bench/side": true},
		ignored: []string{"/bin", "node_modules"},
		anchors: map[string]map[string]bool{},
	}
	repo.anchors["docs/service.md"] = anchorsOf([]byte(`<a id="s2.2"></a>
### 2.2 Rules
<a id="s2.2-3"></a>
<a id="s4.3"></a>
<a id="s4.3-3"></a>
<a id="s5.8-c"></a>
<a id="s5.8"></a>
<a id="s8"></a>
`))
	repo.anchors["docs/a.md"] = anchorsOf([]byte("# A\n## The three ways an authorization completes\n## GET {base_url}/authorization\n## The `--json` report (version 1)\n"))
	// Paths outside the repository are assembled so that this file does
	// not name them itself.
	outside := func(parts ...string) string { return strings.Join(parts, "/") }
	for _, tc := range []struct {
		file, text string
		want       []string // substrings of the problems, in order; none when empty
	}{
		// Paths and links that resolve.
		{"docs/b.md", "See [a](a.md), [flow](../host/flow.go) and docs/a.md, README.md.", nil},
		{"docs/b.md", "Its [section](a.md#the-three-ways-an-authorization-completes), [grant](a.md#get-base_urlauthorization), [report](a.md#the---json-report-version-1).", nil},
		{"host/x.go", `// ReadFile("bridge/miniapp.js") reads the embedded script; host/flow.go decides.`, nil},
		{"bench/side/README.md", "copies `../peer` and runs ../peer/bench.sh", nil},
		{"README.md", "staticcheck (into `./bin`), bin/miniapp-host, ./node_modules/x/package.json; `go test ./host`", nil},
		// Things that are not references.
		{"docs/b.md", "https://example.com/notes/x.md, github.com/webview/webview_go, golang.org/x/net/idna, RFC 9396 §2, /etc/nginx/x.conf, ~/.local/share/x.md, <origin>/miniapp.webmanifest", nil},
		{"host/x_test.go", `{"dot segments", "../../admin"}, {"file", "file:///etc/passwd.md"}`, nil},
		{"devapp/x_test.go", `write("js/deep/app.js") // then host/flow.go reads it`, nil},
		{"devapp/x_test.go", "write(`js/deep/app.js`) /* as docs/a.md says */", nil},
		{"devapp/x_test.go", `write("js/deep/app.js") // as docs/c.md says`, []string{"devapp/x_test.go:1: names docs/c.md"}},
		{"docs/b.md", "# A\n[mail](mailto:a@b.example), [top](#a), {base_url}/authorization-details/x.md", nil},
		// Paths and links that do not.
		{"host/x.go", "// (" + outside("notes", "security.md") + ", \"Hosts\")", []string{"host/x.go:1: names notes/security.md, which the repository does not have"}},
		{"README.md", "Deviations from " + "ARCHITECTURE" + ".md:", []string{"README.md:1: names ARCHITECTURE.md"}},
		{"bench/peer/README.md", "bash " + outside("..", "shared", "bench", "peer", "bench.sh"), []string{"names ../shared/bench/peer/bench.sh (bench/shared/bench/peer/bench.sh)"}},
		{"docs/b.md", "line one\n[x](missing.md)", []string{"docs/b.md:2: links to missing.md"}},
		{"docs/b.md", "[x](a.md#no-such-heading)", []string{"docs/b.md:1: links to a.md#no-such-heading, and docs/a.md has no such anchor"}},
		// Citations of the contract.
		{"host/x.go", "// (docs/service.md §2.2 rule 3, §4.3 step 3, docs/service.md §5.8 c) and (docs/service.md §8)", nil},
		{"host/x.go", "// docs/service.md\n// §2.2 rule 3", nil},
		{"host/x.go", "// docs/service.md §2.11", []string{"host/x.go:1: cites docs/service.md §2.11, which docs/service.md does not have"}},
		{"host/x.go", "// docs/service.md §2.2 rule 9 and §4.3 step 7", []string{"§2.2 rule 9", "§4.3 step 7"}},
		{"host/x.go", "// docs/service.md §5.8 d)", []string{"§5.8 d"}},
		{"host/x.go", "// a (" + "spec" + " 2.4) limit, " + "Spec" + " 1: the consent, the " + "spec" + " sections 2.9", []string{
			"host/x.go:1: bare citation \"" + "spec" + " 2.4\"", "host/x.go:1: bare citation \"" + "Spec" + " 1\"",
			"host/x.go:1: bare citation \"" + "spec" + " sections 2.9\""}},
		{"playground/x.go", `spec := brokenSpecs[id]; "http://www.softwareishard.com/blog/har-12-spec/"; RFC 9068 §2.2`, nil},
	} {
		got := repo.check(tc.file, []byte(tc.text))
		if len(got) != len(tc.want) {
			t.Errorf("%s %q: got %d problems %q, want %d %q", tc.file, tc.text, len(got), got, len(tc.want), tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s %q: problem %d is %q, want it to contain %q", tc.file, tc.text, i, got[i], w)
			}
		}
	}
}

// repoIndex is what the scanner knows of the repository: its tracked
// files, their folders, and the anchors of its Markdown pages.
type repoIndex struct {
	files   map[string]bool
	dirs    map[string]bool
	ignored []string                   // what git ignores: "/bin" anchored at the checkout's root, "node_modules" anywhere
	anchors map[string]map[string]bool // Markdown page -> its anchors, read on demand
}

func loadRepo(t *testing.T) *repoIndex {
	t.Helper()
	r := &repoIndex{files: map[string]bool{}, dirs: map[string]bool{}, anchors: map[string]map[string]bool{}}
	for _, f := range trackedFiles(t) {
		r.files[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			r.dirs[d] = true
		}
		if path.Base(f) == ".gitignore" {
			b, err := os.ReadFile(filepath.FromSlash(f))
			if err != nil {
				t.Fatal(err)
			}
			r.ignored = append(r.ignored, ignoredDirs(path.Dir(f), string(b))...)
		}
	}
	return r
}

// ignoredDirs reads the simple patterns of a .gitignore in dir: what a
// build or an install leaves (bin/, node_modules/, artifacts/) may be named
// though it is not tracked.
func ignoredDirs(dir, gitignore string) []string {
	var out []string
	for _, line := range strings.Split(gitignore, "\n") {
		line = strings.TrimSuffix(strings.TrimSpace(line), "/")
		switch {
		case line == "" || strings.ContainsAny(line, "*?[!#"):
		case strings.HasPrefix(line, "/"):
			out = append(out, "/"+path.Join(dir, line[1:]))
		case !strings.Contains(line, "/"):
			out = append(out, line)
		default:
			out = append(out, "/"+path.Join(dir, line))
		}
	}
	return out
}

func (r *repoIndex) isIgnored(p string) bool {
	for _, ig := range r.ignored {
		if strings.HasPrefix(ig, "/") {
			if p == ig[1:] || strings.HasPrefix(p, ig[1:]+"/") {
				return true
			}
			continue
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == ig {
				return true
			}
		}
	}
	return false
}

// trackedFiles lists the repository's files: git's index when this is a
// git checkout, else (an exported tree) every file but .git and bin.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	if out, err := exec.Command("git", "ls-files", "-z").Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if _, err := os.Lstat(filepath.FromSlash(f)); f != "" && err == nil {
				files = append(files, f)
			}
		}
		return files
	}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// textExt are the kinds of file whose text is scanned. Corpora under
// testdata/ are not: they hold hostile inputs on purpose.
var textExt = map[string]bool{".go": true, ".md": true, ".sh": true, ".yml": true, ".yaml": true, ".js": true,
	".mjs": true, ".html": true, ".css": true, ".sql": true, ".c": true, ".h": true, ".json": true, ".txt": true}

func (r *repoIndex) textFiles() []string {
	var out []string
	for f := range r.files {
		if strings.HasPrefix(f, "testdata/") || strings.Contains(f, "/testdata/") || strings.HasSuffix(f, "package-lock.json") {
			continue
		}
		if textExt[path.Ext(f)] || path.Base(f) == "Makefile" || shebang(f) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func shebang(name string) bool {
	if path.Ext(name) != "" {
		return false
	}
	f, err := os.Open(filepath.FromSlash(name))
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := f.Read(head)
	return n == 2 && string(head) == "#!"
}

var (
	// urlRE matches URLs, removed before paths are looked for.
	urlRE = regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*:(//)?[^\s"'<>)\x60]+`)
	// pathRE matches a path-like token: segments of name characters joined
	// by slashes, not preceded by anything that makes it part of a larger
	// word, URL, absolute path or placeholder.
	pathRE = regexp.MustCompile(`(^|[\s"'\x60(\[,;=])((?:\.\.?/)+[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)*/?|[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)+/?|[A-Za-z0-9_][A-Za-z0-9_.-]*\.md)`)
	// mdLinkRE matches a Markdown link or image target.
	mdLinkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// citeRE matches a citation of the contract: the page, then a list of
	// sections, each with the items cited inside it. The page may end a
	// comment line and the list begin the next.
	citeRE = regexp.MustCompile(`docs/service\.md(?:[ \t]+|[ \t]*\n[ \t]*(?://|#|\*)?[ \t]*)§`)
	// sectRE matches one cited section at the start of the text, with the
	// items cited inside it ("rule 3", "rules 4 and 5", "step 3", "c").
	sectRE = regexp.MustCompile(`^§([0-9]+(?:\.[0-9]+)?)((?:,?[ \t]+(?:rules?|steps?)[ \t]+[0-9]+(?:(?:,[ \t]+|[ \t]+and[ \t]+)[0-9]+)*)|[ \t]+[a-z](?:[),;.:\n]|$))?`)
	// listRE matches what separates two sections of one citation.
	listRE   = regexp.MustCompile(`^(?:,[ \t]+and[ \t]+|,[ \t]+|[ \t]+and[ \t]+|[ \t]+to[ \t]+|[ \t]+or[ \t]+)§`)
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	itemRE   = regexp.MustCompile(`[0-9]+|\b[a-z]\b`)
	bareRE   = regexp.MustCompile(`\b[Ss]pec(?:[ \t]+sections?)?[ \t]+[0-9]+(?:\.[0-9]+)?`)
	checked  = map[string]bool{".md": true, ".go": true, ".sh": true, ".json": true, ".js": true, ".mjs": true,
		".html": true, ".css": true, ".sql": true, ".yml": true, ".yaml": true, ".c": true, ".h": true, ".png": true, ".mod": true}
)

// check returns the problems of one file's text, each "file:line: ...".
func (r *repoIndex) check(name string, data []byte) []string {
	var problems []string
	add := func(off int, format string, args ...any) {
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		problems = append(problems, fmt.Sprintf("%s:%d: ", name, line)+fmt.Sprintf(format, args...))
	}
	dir := path.Dir(name)
	ext := path.Ext(name)
	text := string(data)

	// Markdown links, relative ones only.
	if ext == ".md" {
		for _, m := range mdLinkRE.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[2]:m[3]]
			if schemeRE.MatchString(target) || strings.HasPrefix(target, "/") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			resolved := name
			if file != "" {
				resolved = path.Join(dir, file)
				if !r.files[resolved] && !r.dirs[resolved] {
					add(m[2], "links to %s (%s), which the repository does not have", target, resolved)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(resolved, ".md") && !r.anchorsOf(resolved, name, data)[frag] {
				add(m[2], "links to %s, and %s has no such anchor", target, resolved)
			}
		}
	}

	// Path-like tokens, once URLs (and Markdown link targets, checked
	// above) are blanked out, offsets kept. In source code only comments
	// are read: a string literal is the program's business (a path it
	// opens fails its own tests), and test data is full of made-up paths.
	spaces := func(s string) string { return strings.Repeat(" ", len(s)) }
	blank := text
	switch ext {
	case ".md":
		blank = mdLinkRE.ReplaceAllStringFunc(blank, spaces)
	case ".go", ".js", ".mjs", ".c", ".h", ".css":
		blank = commentsOnly(data)
	case ".json", ".html", ".sql":
		blank = ""
	}
	lineStart := 0
	for _, line := range strings.SplitAfter(blank, "\n") {
		start := lineStart
		lineStart += len(line)
		// Only a line with a slash or a .md name can hold a reference.
		if !strings.Contains(line, "/") && !strings.Contains(line, ".md") {
			continue
		}
		if strings.Contains(line, ":") {
			line = urlRE.ReplaceAllStringFunc(line, spaces)
		}
		for _, m := range pathRE.FindAllStringSubmatchIndex(line, -1) {
			tok := strings.TrimRight(line[m[4]:m[5]], ".")
			if !r.pathExists(name, ext, tok) {
				where := tok
				if strings.HasPrefix(tok, "../") || strings.HasPrefix(tok, "./") {
					where = fmt.Sprintf("%s (%s)", tok, path.Join(dir, tok))
				}
				add(start+m[4], "names %s, which the repository does not have; cite the repository page that says it (docs/...)", where)
			}
		}
	}

	// Citations of the contract.
	for _, m := range citeRE.FindAllStringIndex(text, -1) {
		anchors := r.anchorsOf("docs/service.md", name, data)
		for at := m[1] - len("§"); ; {
			s := sectRE.FindStringSubmatch(text[at:])
			if s == nil {
				break // "§" not followed by a number: not a citation
			}
			items := strings.TrimRight(s[2], "),;.:\n")
			if !anchors["s"+s[1]] {
				add(at, "cites docs/service.md §%s, which docs/service.md does not have", s[1])
			} else {
				for _, item := range itemRE.FindAllString(items, -1) {
					if !anchors["s"+s[1]+"-"+item] {
						add(at, "cites docs/service.md §%s%s, which docs/service.md does not have", s[1], items)
						break
					}
				}
			}
			at += len(s[0])
			sep := listRE.FindString(text[at:])
			if sep == "" {
				break
			}
			at += len(sep) - len("§")
		}
	}
	if !strings.Contains(text, "spec") && !strings.Contains(text, "Spec") {
		return sortProblems(problems)
	}
	for _, m := range bareRE.FindAllStringIndex(text, -1) {
		add(m[0], "bare citation %q: cite the contract as docs/service.md §N (scripts/cite-service.sh rewrites it)", text[m[0]:m[1]])
	}
	return sortProblems(problems)
}

func sortProblems(problems []string) []string {
	sort.SliceStable(problems, func(i, j int) bool { return lineOf(problems[i]) < lineOf(problems[j]) })
	return problems
}

// commentsOnly returns src with everything but its comments blanked (line
// breaks kept), read with Go's scanner, which also reads the comments and
// strings of JavaScript, C and CSS well enough.
func commentsOnly(src []byte) string {
	out := bytes.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return ' '
	}, src)
	var s scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	s.Init(file, src, func(token.Position, string) {}, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT {
			off := file.Offset(pos)
			copy(out[off:], lit)
		}
	}
	return string(out)
}

func lineOf(problem string) int {
	var line int
	if _, rest, ok := strings.Cut(problem, ":"); ok {
		fmt.Sscanf(rest, "%d", &line)
	}
	return line
}

// pathExists decides whether tok, found in file name, is a reference the
// repository satisfies, or no reference at all.
func (r *repoIndex) pathExists(name, ext, tok string) bool {
	dotted := strings.HasPrefix(tok, "../") || strings.HasPrefix(tok, "./")
	clean := strings.TrimRight(tok, "/")
	segs := strings.Split(strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(clean, "../"), "./"), "./"), "/")
	tokExt := path.Ext(clean)
	switch {
	case !dotted && strings.Contains(segs[0], ".") && len(segs) > 1:
		return true // a host name: github.com/..., golang.org/x/...
	case !dotted && len(segs) == 1 && tokExt != ".md":
		return true // a single word; of names without a folder only *.md ones are checked
	case !checked[tokExt] && !(dotted && (ext == ".md" || ext == ".sh" || ext == ".yml" || path.Base(name) == "Makefile")):
		return true // not a file kind that is checked; ../x without one only in docs and scripts
	}
	// Relative to the file; a command's ./x to the checkout's root, where
	// commands run; a plain path also to the root of the embedded files.
	bases := []string{path.Dir(name)}
	switch {
	case strings.HasPrefix(tok, "./"):
		bases = append(bases, ".")
	case !dotted:
		bases = append(bases, ".", "assets")
	}
	for _, b := range bases {
		p := path.Join(b, clean)
		if r.files[p] || r.dirs[p] || r.isIgnored(p) {
			return true
		}
	}
	return false
}

// anchorsOf returns the anchors of a Markdown page: explicit ids and the
// headings' GitHub anchors. The page being checked is read from data.
func (r *repoIndex) anchorsOf(page, current string, data []byte) map[string]bool {
	if page == current {
		return anchorsOf(data)
	}
	if a, ok := r.anchors[page]; ok {
		return a
	}
	b, err := os.ReadFile(filepath.FromSlash(page))
	if err != nil {
		return nil
	}
	r.anchors[page] = anchorsOf(b)
	return r.anchors[page]
}

var idRE = regexp.MustCompile(`\bid="([^"]+)"`)

func anchorsOf(md []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		for _, m := range idRE.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := githubSlug(h)
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// githubSlug is the anchor GitHub gives a heading: lower case, spaces as
// hyphens, and every character but letters, digits, hyphens and
// underscores dropped.
func githubSlug(h string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(h) {
		switch {
		case c == ' ':
			b.WriteByte('-')
		case c == '-' || c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c):
			b.WriteRune(c)
		}
	}
	return b.String()
}
