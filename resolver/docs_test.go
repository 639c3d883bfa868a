package resolver

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCodesAreDocumented checks that every Code constant of reason.go is
// listed in docs/resolve.md, so that the codes QA matches on are the
// documented ones.
func TestCodesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "resolve.md"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "reason.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Code") || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok {
			return true
		}
		code, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !strings.Contains(string(doc), "`"+code+"`") {
			t.Errorf("code %s (%s) is not documented in docs/resolve.md", code, vs.Names[0].Name)
		}
		return true
	})
	if n < 20 {
		t.Fatalf("found %d codes in reason.go", n)
	}
}
