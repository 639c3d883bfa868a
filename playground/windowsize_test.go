package playground

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWindowSizeRemembered: the size a window was left at is the size the
// next one opens with; a missing file gives the default silently, and a
// damaged or absurd one gives the default with a message that says which
// file and how to fix it.
func TestWindowSizeRemembered(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	def := WindowSize{1280, 860}
	path := WindowSizeFile("playground")
	if !strings.HasPrefix(path, os.Getenv("XDG_CONFIG_HOME")) {
		t.Fatalf("file %s is not under XDG_CONFIG_HOME", path)
	}
	if s, err := LoadWindowSize(path, def); err != nil || s != def {
		t.Fatalf("first run: %v %v, want the default", s, err)
	}
	if err := SaveWindowSize(path, WindowSize{1000, 640}); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadWindowSize(path, def); err != nil || s != (WindowSize{1000, 640}) {
		t.Fatalf("next run: %v %v, want 1000x640", s, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("config dir: %v %v", fi, err)
	}
	// A size not known or out of bounds is not kept.
	for _, s := range []WindowSize{{0, 0}, {100, 100}, {20000, 800}} {
		if err := SaveWindowSize(path, s); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := LoadWindowSize(path, def); s != (WindowSize{1000, 640}) {
		t.Fatalf("after saving unusable sizes: %v, want 1000x640 kept", s)
	}
	for _, c := range []struct{ content, want string }{
		{"{", "is not {\"width\": W, \"height\": H}"},
		{`{"width": 10, "height": 10}`, "outside 480x360 to 16384x16384"},
	} {
		if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := LoadWindowSize(path, def)
		if s != def || err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "delete it") {
			t.Errorf("%q: %v %v, want the default and an error naming the file, %q and the fix", c.content, s, err, c.want)
		}
	}
}

// TestWindowSizeNotWrittenThroughLinks: the window's size is never
// written through a symbolic link planted at its path: the error says
// which path is a link, and the file the link points to is untouched.
func TestWindowSizeNotWrittenThroughLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	untouched := func(what string) {
		t.Helper()
		got, _ := os.ReadFile(victim)
		fi, _ := os.Stat(victim)
		if string(got) != "precious" || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: the link's target holds %q, mode %v; want it untouched", what, got, fi.Mode().Perm())
		}
	}
	size := filepath.Join(dir, "playground-window.json")
	if err := os.Symlink(victim, size); err != nil {
		t.Fatal(err)
	}
	if err := SaveWindowSize(size, WindowSize{1000, 640}); err == nil || !strings.Contains(err.Error(), size+" is a symbolic link") {
		t.Errorf("window size through a link: %v, want an error naming the link", err)
	}
	untouched("window size")
}
