package oauth

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandlersTakeNarrowStorage keeps the package's shape (doc.go): only
// the Server holds the whole Storage, which it splits among the handlers
// in wire; no code reaches the configuration's Store (cfg.Store) but New;
// and the flow state (flowstate.go, pending.go) never names the Server.
func TestHandlersTakeNarrowStorage(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok || ts.Name.Name == "Server" || ts.Name.Name == "Config" {
						continue
					}
					for _, fld := range st.Fields.List {
						if id, ok := fld.Type.(*ast.Ident); ok && id.Name == "Storage" {
							t.Errorf("%s: %s holds the whole Storage; give it the narrow interfaces it uses", fset.Position(fld.Pos()), ts.Name.Name)
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == "New" || d.Body == nil {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
						if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "cfg" {
							t.Errorf("%s: %s reaches cfg.Store; take a narrow interface in the handler's fields", fset.Position(sel.Pos()), d.Name.Name)
						}
					}
					return true
				})
			}
		}
		if name == "flowstate.go" || name == "pending.go" {
			ast.Inspect(f, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name == "Server" {
					t.Errorf("%s: the flow state names the Server; give it what it needs as a function", fset.Position(id.Pos()))
				}
				return true
			})
		}
	}
}
