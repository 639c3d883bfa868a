// Package miniapphost_test holds repository-wide checks.
package miniapphost_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestEveryPackageHasADocComment walks the repository and fails for a Go
// package none of whose files carries a package doc comment, for one whose
// comment sits in two files (go doc would show one of them), and for one
// whose comment does not start as go doc expects, "Package name ..." (a
// command's names the command) (docs/architecture.md, "Rules that keep the
// house simple").
func TestEveryPackageHasADocComment(t *testing.T) {
	type pkg struct {
		name string   // the package clause's name
		docs []string // the files with a package doc comment
		text string   // the first one's text
	}
	pkgs := map[string]*pkg{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "bin" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != ".") {
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
		p := pkgs[dir]
		if p == nil {
			p = &pkg{name: f.Name.Name}
			pkgs[dir] = p
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			p.docs = append(p.docs, filepath.Base(path))
			if p.text == "" {
				p.text = f.Doc.Text()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("found no packages")
	}
	for dir, p := range pkgs {
		want := "Package " + p.name + " "
		if p.name == "main" {
			want = "" // a command's comment names the command, as its user types it
		}
		sort.Strings(p.docs)
		switch {
		case len(p.docs) == 0:
			t.Errorf("package %s has no package doc comment", dir)
		case len(p.docs) > 1:
			t.Errorf("package %s has package doc comments in %s: keep one (go doc shows one)", dir, strings.Join(p.docs, ", "))
		case !strings.HasPrefix(p.text, want):
			t.Errorf("package %s: its doc comment (%s) starts %q, want %q", dir, p.docs[0], firstWords(p.text), want+"...")
		}
	}
}

func firstWords(s string) string {
	if f := strings.Fields(s); len(f) > 3 {
		return strings.Join(f[:3], " ")
	}
	return s
}
