package miniapphost_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestPackageTable keeps docs/architecture.md's package table equal to the
// code: each row's "may import" lists exactly the module's packages that
// the package's non-test files import (docs/architecture.md, "Packages").
func TestPackageTable(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	table, err := parsePackageTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	actual := listImports(t)
	for _, p := range comparePackageTable(table, actual) {
		t.Error(p)
	}
}

// TestPackageTableComparison shows the comparison's messages on a small
// table and import graph.
func TestPackageTableComparison(t *testing.T) {
	doc := []byte("# A\n\n## Packages\n\n| package | owns | may import |\n|---|---|---|\n" +
		"| `host` | the core | `bridge`, `origin`; x/oauth2 |\n" +
		"| `bridge` | the page API | `origin` |\n" +
		"| `origin` | the policy | nothing of the module; x/net/idna |\n" +
		"| `gone` | was removed | nothing |\n\nAfter the table.\n| x | y |\n")
	table, err := parsePackageTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(table); got != "map[bridge:[origin] gone:[] host:[bridge origin] origin:[]]" {
		t.Fatalf("parsed %s", got)
	}
	actual := map[string][]string{
		"host":   {"bridge", "netlog"}, // origin no longer imported, netlog new
		"bridge": {"origin"},
		"origin": nil,
		"netlog": {"bridge"}, // no row
	}
	got := comparePackageTable(table, actual)
	want := []string{
		"docs/architecture.md: `gone` has a row in the package table but is no package of the module: remove the row",
		"docs/architecture.md: `host` imports `netlog`, which its row does not list: add `netlog` to the \"may import\" cell of the row `host` (or remove the import)",
		"docs/architecture.md: the row `host` lists `origin`, which host does not import (any more): remove `origin` from that row's \"may import\" cell",
		"docs/architecture.md: `netlog` has no row in the package table: add a row `netlog` whose \"may import\" cell lists `bridge`",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{
		"## Packages\n\nno table here\n",
		"| package | owns | may import |\n|---|---|---|\n| host | no backticks | `bridge` |\n",
		"| package | owns | may import |\n|---|---|---|\n| `host` | two rows | |\n| `host` | the same | |\n",
	} {
		if _, err := parsePackageTable([]byte(bad)); err == nil {
			t.Errorf("parsePackageTable(%q) accepted it", bad)
		}
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// parsePackageTable reads the table whose header is "| package | owns |
// may import |": package -> the module packages it may import, the
// backticked names before the first semicolon of its last cell.
func parsePackageTable(doc []byte) (map[string][]string, error) {
	table := map[string][]string{}
	in := false
	for i, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if !in {
			in = len(cells) == 3 && cells[0] == "package" && cells[2] == "may import"
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.Trim(cells[0], "-") == "" {
			continue // the delimiter row
		}
		if len(cells) != 3 {
			return nil, fmt.Errorf("docs/architecture.md:%d: a package row has %d cells, want 3 (package, owns, may import)", i+1, len(cells))
		}
		m := backticked.FindStringSubmatch(cells[0])
		if m == nil || m[0] != cells[0] {
			return nil, fmt.Errorf("docs/architecture.md:%d: the package cell %q is not one backticked package path", i+1, cells[0])
		}
		if _, dup := table[m[1]]; dup {
			return nil, fmt.Errorf("docs/architecture.md:%d: a second row for `%s`", i+1, m[1])
		}
		imports, _, _ := strings.Cut(cells[2], ";")
		deps := []string{}
		for _, d := range backticked.FindAllStringSubmatch(imports, -1) {
			deps = append(deps, d[1])
		}
		sort.Strings(deps)
		table[m[1]] = deps
	}
	if len(table) == 0 {
		return nil, fmt.Errorf("docs/architecture.md has no package table (a header | package | owns | may import |)")
	}
	return table, nil
}

// listImports asks go list for every package of the module with Go files
// and the module packages its non-test files import, paths relative to the
// module ("authserver/oauth").
func listImports(t *testing.T) map[string][]string {
	t.Helper()
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod))
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{len .GoFiles}}{{len .CgoFiles}}|{{join .Imports " "}}`, "./...")
	// cgo on, whatever the environment says, so that the engine's files
	// (all cgo) are listed as the build sees them.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	actual := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		pkg, _ := rel(parts[0])
		if parts[1] == "00" {
			continue // test files only, like the checkout's root
		}
		deps := []string{}
		for _, imp := range strings.Fields(parts[2]) {
			if r, ok := rel(imp); ok {
				deps = append(deps, r)
			}
		}
		actual[pkg] = deps
	}
	return actual
}

// comparePackageTable returns one message per difference, each saying
// which row to edit and how.
func comparePackageTable(table, actual map[string][]string) []string {
	var problems []string
	pkgs := map[string]bool{}
	for p := range table {
		pkgs[p] = true
	}
	for p := range actual {
		pkgs[p] = true
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		listed, hasRow := table[p]
		imports, isPkg := actual[p]
		switch {
		case !isPkg:
			problems = append(problems, fmt.Sprintf("docs/architecture.md: `%s` has a row in the package table but is no package of the module: remove the row", p))
			continue
		case !hasRow:
			cell := "nothing of the module"
			if len(imports) > 0 {
				cell = "`" + strings.Join(imports, "`, `") + "`"
			}
			problems = append(problems, fmt.Sprintf("docs/architecture.md: `%s` has no row in the package table: add a row `%s` whose \"may import\" cell lists %s", p, p, cell))
			continue
		}
		inRow := map[string]bool{}
		for _, d := range listed {
			inRow[d] = true
		}
		imported := map[string]bool{}
		for _, d := range imports {
			imported[d] = true
			if !inRow[d] {
				problems = append(problems, fmt.Sprintf("docs/architecture.md: `%s` imports `%s`, which its row does not list: add `%s` to the \"may import\" cell of the row `%s` (or remove the import)", p, d, d, p))
			}
		}
		for _, d := range listed {
			if !imported[d] {
				problems = append(problems, fmt.Sprintf("docs/architecture.md: the row `%s` lists `%s`, which %s does not import (any more): remove `%s` from that row's \"may import\" cell", p, d, p, d))
			}
		}
	}
	return problems
}
