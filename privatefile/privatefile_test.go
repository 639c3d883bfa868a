package privatefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: a new file and a replaced one hold the data, mode 0600, and
// nothing else is left in the folder.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "automation.json")
	if err := os.WriteFile(path, []byte("old, and readable by all"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{`{"token":"t1"}`, `{"token":"t2"}`} {
		if err := Write(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if err != nil || string(got) != data || fi.Mode().Perm() != Mode {
			t.Fatalf("the file holds %q (%v), mode %v; want %q, mode %v", got, err, fi.Mode().Perm(), data, Mode)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the folder holds %d entries, want the file alone", len(ents))
	}
}

// TestWriteRefusesSymlink: a symbolic link planted at the path is refused
// with a clear error, and the file it points to is untouched (content and
// mode), as is the link.
func TestWriteRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"link", "dangling"} {
		path := filepath.Join(dir, name)
		to := target
		if name == "dangling" {
			to = filepath.Join(dir, "would-be-created")
		}
		if err := os.Symlink(to, path); err != nil {
			t.Fatal(err)
		}
		err := Write(path, []byte("token"))
		if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming the path as a symbolic link", name, err)
		}
		if l, err := os.Readlink(path); err != nil || l != to {
			t.Errorf("%s: the link became %q (%v)", name, l, err)
		}
	}
	got, _ := os.ReadFile(target)
	fi, _ := os.Stat(target)
	if string(got) != "precious" || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the link's target holds %q, mode %v; want it untouched", got, fi.Mode().Perm())
	}
	if _, err := os.Lstat(filepath.Join(dir, "would-be-created")); err == nil {
		t.Fatal("a dangling link's target was created")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Fatalf("the folder holds %d entries, want the target and the two links", len(ents))
	}
}

// TestWriteRefusesFolder: a path that names a folder is refused.
func TestWriteRefusesFolder(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, []byte("x")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("error %v", err)
	}
}
