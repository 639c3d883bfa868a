package host_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
)

// TestEngineNeverHoldsTheWindow: the engine is given the core's own
// EngineEvents, not the Window, and no callback of EngineEvents is a
// method of the Window (docs/host.md, "Core and engine"): an engine, or a
// caller of the Window, cannot make the window believe its view did
// something.
func TestEngineNeverHoldsTheWindow(t *testing.T) {
	var given host.EngineEvents
	var eng *hosttest.Engine
	fake := hosttest.Factory(&eng)
	w, err := host.NewWindow(func(cfg host.EngineConfig, events host.EngineEvents) (host.Engine, error) {
		given = events
		return fake(cfg, events)
	}, host.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { w.Run(); close(ran) }()
	t.Cleanup(func() { w.Terminate(); <-ran })

	if given == nil {
		t.Fatal("the engine was given no EngineEvents")
	}
	if reflect.TypeOf(given) == reflect.TypeOf(w) {
		t.Error("the engine was given the *host.Window as its EngineEvents")
	}
	if _, ok := any(w).(host.EngineEvents); ok {
		t.Error("*host.Window implements host.EngineEvents: the engine's callbacks are part of its API")
	}
	events := reflect.TypeOf((*host.EngineEvents)(nil)).Elem()
	window := reflect.TypeOf(w)
	for i := range events.NumMethod() {
		if name := events.Method(i).Name; hasMethod(window, name) {
			t.Errorf("*host.Window has the engine's callback %s", name)
		}
	}
}

func hasMethod(t reflect.Type, name string) bool {
	_, ok := t.MethodByName(name)
	return ok
}

// TestNoTypeOverFortyMethods: no type of package host declares more than
// 40 methods (non-test files, go/ast), so that each job of the window is a
// type of its own.
func TestNoTypeOverFortyMethods(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	count := map[string]int{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				count[id.Name]++
			}
		}
	}
	if count["Window"] == 0 {
		t.Fatal("found no method of Window: the test reads the wrong folder")
	}
	for typ, n := range count {
		if n > 40 {
			t.Errorf("type %s declares %d methods; at most 40: give one of its jobs a type of its own", typ, n)
		}
	}
}
