// Package miniapphost_test holds repository-wide checks.
package miniapphost_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasADocComment walks the repository and fails for a Go
// package none of whose files carries a package doc comment (docs/architecture.md, "Rules that keep the house simple").
func TestEveryPackageHasADocComment(t *testing.T) {
	documented := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		documented[dir] = documented[dir] || f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != ""
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(documented) == 0 {
		t.Fatal("found no packages")
	}
	for dir, ok := range documented {
		if !ok {
			t.Errorf("package %s has no package doc comment", dir)
		}
	}
}
