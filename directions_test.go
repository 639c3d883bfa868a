package miniapphost_test

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The direction rules of docs/architecture.md ("Rules that keep the
// house simple"), on the import graph of the non-test files:
//   - nothing below cmd imports playground, even through another package:
//     the playground uses the host, never the reverse;
//   - `import "C"` only in host/webkitgtk: only the engine folder under
//     host touches WebKitGTK;
//   - only cmd imports the engine (host/webkitgtk): the core decides, the
//     engine executes, and no package of the core, the playground or the
//     domain reaches the engine, even through another package;
//   - the domain packages (catalog, resolver, consent, authserver and its
//     sub-packages, bridge) need no cgo and no GUI: none of them, nor any
//     package they import, has cgo files;
//   - the shared test worlds (a package whose name ends in "test":
//     host/hosttest, authserver/store/storetest) are for tests: only
//     another test world imports one from a non-test file.

// pkgInfo is what the direction rules read of one package.
type pkgInfo struct {
	deps    []string // the module packages its non-test files import, directly or not
	imports []string // the module packages they import directly
	cgo     bool     // one of its Go files (any build tags) says import "C"
}

// TestDirectionRules checks the rules above on the module.
func TestDirectionRules(t *testing.T) {
	for _, p := range checkDirections(listGraph(t)) {
		t.Error(p)
	}
}

// TestDirectionRulesComparison shows each rule's message on a small graph
// that breaks it.
func TestDirectionRulesComparison(t *testing.T) {
	graph := map[string]pkgInfo{
		"cmd/miniapp-host":           {deps: []string{"host", "host/webkitgtk", "playground"}, imports: []string{"host/webkitgtk", "playground"}},
		"playground":                 {deps: []string{"host"}, imports: []string{"host"}},
		"host":                       {},
		"host/webkitgtk":             {deps: []string{"host"}, imports: []string{"host"}, cgo: true},
		"devapp":                     {deps: []string{"netshape", "playground", "host"}, imports: []string{"netshape"}},
		"netshape":                   {deps: []string{"playground", "host"}, imports: []string{"playground"}},
		"bridge":                     {deps: []string{"redact"}, imports: []string{"redact"}},
		"redact":                     {cgo: true},
		"authserver/oauth":           {deps: []string{"host/webkitgtk", "host"}, imports: []string{"host/webkitgtk"}},
		"cmd/loadgen":                {deps: []string{"authserver/store/storetest"}, imports: []string{"authserver/store/storetest"}},
		"host/hosttest":              {deps: []string{"authserver/store/storetest"}, imports: []string{"authserver/store/storetest"}},
		"authserver/store/storetest": {},
	}
	got := checkDirections(graph)
	want := []string{
		"authserver/oauth imports host/webkitgtk (through host/webkitgtk): only cmd imports the engine; the core decides, the engine executes (docs/architecture.md)",
		"authserver/oauth imports host/webkitgtk, which has cgo: a domain package needs no cgo and no GUI (docs/architecture.md)",
		"bridge imports redact, which has cgo: a domain package needs no cgo and no GUI (docs/architecture.md)",
		"cmd/loadgen imports the test world authserver/store/storetest from a non-test file: only tests and other test worlds may (docs/architecture.md, \"Packages\")",
		"devapp imports playground (through netshape): nothing below cmd imports playground (docs/architecture.md)",
		"netshape imports playground (through playground): nothing below cmd imports playground (docs/architecture.md)",
		"redact has `import \"C\"`: only host/webkitgtk may use cgo (docs/architecture.md)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// domain are the domain packages of docs/architecture.md: these and their
// sub-packages need no cgo and no GUI.
var domain = []string{"catalog", "resolver", "consent", "authserver", "bridge"}

func inDomain(p string) bool {
	for _, d := range domain {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func isCmd(p string) bool { return strings.HasPrefix(p, "cmd/") }

func isTestWorld(p string) bool { return strings.HasSuffix(filepath.Base(p), "test") }

// checkDirections returns one message per broken rule, sorted.
func checkDirections(graph map[string]pkgInfo) []string {
	const engine = "host/webkitgtk"
	var problems []string
	// through names the direct import that leads p to dep.
	through := func(p, dep string) string {
		for _, d := range graph[p].imports {
			if d == dep || contains(graph[d].deps, dep) {
				return d
			}
		}
		return "?"
	}
	for p, info := range graph {
		if info.cgo && p != engine {
			problems = append(problems, fmt.Sprintf("%s has `import \"C\"`: only %s may use cgo (docs/architecture.md)", p, engine))
		}
		if !isCmd(p) && contains(info.deps, "playground") {
			problems = append(problems, fmt.Sprintf("%s imports playground (through %s): nothing below cmd imports playground (docs/architecture.md)", p, through(p, "playground")))
		}
		if !isCmd(p) && p != engine && contains(info.deps, engine) {
			problems = append(problems, fmt.Sprintf("%s imports %s (through %s): only cmd imports the engine; the core decides, the engine executes (docs/architecture.md)", p, engine, through(p, engine)))
		}
		if inDomain(p) {
			for _, d := range info.deps {
				if graph[d].cgo {
					problems = append(problems, fmt.Sprintf("%s imports %s, which has cgo: a domain package needs no cgo and no GUI (docs/architecture.md)", p, d))
				}
			}
		}
		if !isTestWorld(p) {
			for _, d := range info.imports {
				if isTestWorld(d) {
					problems = append(problems, fmt.Sprintf("%s imports the test world %s from a non-test file: only tests and other test worlds may (docs/architecture.md, \"Packages\")", p, d))
				}
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// listGraph asks go list for every package's module imports, direct and
// transitive, of its non-test files, and reads every Go file (whatever its
// build tags) for import "C".
func listGraph(t *testing.T) map[string]pkgInfo {
	t.Helper()
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod))
	cmd := exec.Command("go", "list", "-f", `{{.Dir}}|{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, "./...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	rel := func(list string) []string {
		var r []string
		for _, p := range strings.Fields(list) {
			if q, ok := strings.CutPrefix(p, module+"/"); ok {
				r = append(r, q)
			}
		}
		return r
	}
	graph := map[string]pkgInfo{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 4)
		if len(parts) != 4 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		p, ok := strings.CutPrefix(parts[1], module+"/")
		if !ok {
			continue // the module's root: repository-wide tests only
		}
		graph[p] = pkgInfo{imports: rel(parts[2]), deps: rel(parts[3]), cgo: usesCgo(t, parts[0])}
	}
	if len(graph) < 10 {
		t.Fatalf("go list found %d packages", len(graph))
	}
	return graph
}

// usesCgo reports whether a Go file of dir, whatever its build tags, says
// import "C".
func usesCgo(t *testing.T, dir string) bool {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			if imp.Path.Value == `"C"` {
				return true
			}
		}
	}
	return false
}
