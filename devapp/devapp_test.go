package devapp

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func startDir(t *testing.T, files map[string]string) (*App, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Start(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	return a, dir
}

// TestFiles: what a browser needs of a static server for a Miniapp: its
// manifest as application/manifest+json, scripts as JavaScript, index.html
// for the folder, nothing cached, no dot files, read only.
func TestFiles(t *testing.T) {
	a, _ := startDir(t, map[string]string{"index.html": "<!doctype html>", "app.js": "1", "miniapp.webmanifest": "{}",
		"sub/page.mjs": "2", ".env": "SECRET=1", ".git/config": "x", "data.bin": "\x00\x01"})
	for _, tt := range []struct {
		method, path string
		status       int
		ctype, body  string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", "<!doctype html>"},
		{"GET", "/miniapp.webmanifest", 200, "application/manifest+json", "{}"},
		{"GET", "/app.js", 200, "text/javascript; charset=utf-8", "1"},
		{"GET", "/sub/page.mjs", 200, "text/javascript; charset=utf-8", "2"},
		{"GET", "/data.bin", 200, "application/octet-stream", "\x00\x01"},
		{"GET", "/.env", 404, "", ""},
		{"GET", "/.git/config", 404, "", ""},
		{"GET", "/missing.js", 404, "", ""},
		{"POST", "/app.js", 405, "", ""},
	} {
		req, _ := http.NewRequest(tt.method, a.Origin().String()+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, resp.StatusCode, tt.status)
			continue
		}
		if tt.status != 200 {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != tt.ctype || string(body) != tt.body {
			t.Errorf("%s: %q %q, want %q %q", tt.path, ct, body, tt.ctype, tt.body)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tt.path, cc)
		}
	}
}

// TestChanges: saving a file, a new file in a new folder, and a manifest
// edit each arrive as a Change naming them; hidden files and editors'
// backups do not.
func TestChanges(t *testing.T) {
	a, dir := startDir(t, map[string]string{"index.html": "a", "miniapp.webmanifest": "{}"})
	next := func(want ...string) Change {
		t.Helper()
		got := map[string]bool{}
		var last Change
		for !allIn(want, got) {
			select {
			case c := <-a.Changes():
				for _, p := range c.Paths {
					if strings.HasPrefix(p, ".") || strings.HasSuffix(p, "~") {
						t.Errorf("a change names an ignored file: %v", c.Paths)
					}
					got[p] = true
				}
				last = c
			case <-time.After(time.Minute):
				t.Fatalf("no change for %v; got %v", want, got)
			}
		}
		return last
	}
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".hidden", "x")
	write("index.html~", "x")
	write("index.html", "b")
	if c := next("index.html"); c.Manifest() {
		t.Errorf("%v counted as a manifest change", c.Paths)
	}
	write("js/deep/app.js", "1")
	next("js/deep/app.js")
	write("js/deep/more.js", "2") // a folder made after the start is watched
	next("js/deep/more.js")
	write("miniapp.webmanifest", `{"id":"x"}`)
	if c := next("miniapp.webmanifest"); !c.Manifest() {
		t.Errorf("%v not counted as a manifest change", c.Paths)
	}

	// A save in progress is not a change: the manifest truncated and half
	// written, then another file saved whole, gives the other file's
	// change alone (the kernel's events come in order); the manifest's
	// comes when its writer closes it.
	f, err := os.OpenFile(filepath.Join(dir, "miniapp.webmanifest"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":`); err != nil {
		t.Fatal(err)
	}
	write("index.html", "c")
	if c := next("index.html"); c.Manifest() {
		t.Errorf("a manifest still being written was delivered: %v", c.Paths)
	}
	if _, err := f.WriteString(`"y"}`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	next("miniapp.webmanifest")

	// An editor's atomic save: a temporary file renamed over the original.
	write(".index.html.tmp", "d")
	if err := os.Rename(filepath.Join(dir, ".index.html.tmp"), filepath.Join(dir, "index.html")); err != nil {
		t.Fatal(err)
	}
	next("index.html")
}

func allIn(want []string, got map[string]bool) bool {
	for _, w := range want {
		if !got[w] {
			return false
		}
	}
	return true
}

// TestReadMembers: the members registration needs, read leniently from
// the served manifest, resolved against its URL.
func TestReadMembers(t *testing.T) {
	a, _ := startDir(t, map[string]string{"miniapp.webmanifest": `{"id":"app","name":5,"start_url":"./start.html","oauth":{"client_id":"c1","auth_url":"/login"}}`})
	m, err := a.ReadMembers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o := a.Origin().String()
	if m.ID != "app" || m.Name != "" || m.OAuth.ClientID != "c1" || a.StartURL(m) != o+"/start.html" || a.AuthURL(m) != o+"/login" {
		t.Errorf("members %+v, start %s, auth %s", m, a.StartURL(m), a.AuthURL(m))
	}
	if _, err := readMembers([]byte(`[1,2]`)); err == nil {
		t.Error("an array read as a manifest")
	}
}

// FuzzReadMembers: any manifest bytes read without a panic, and what is
// read is what a JSON object holds as strings.
func FuzzReadMembers(f *testing.F) {
	f.Add([]byte(`{"id":"a","oauth":{"client_id":"b","auth_url":"/x"}}`))
	f.Add([]byte(`{"oauth":[]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := readMembers(b)
		if err != nil && (m.ID != "" || m.OAuth.ClientID != "") {
			t.Errorf("members %+v with an error %v", m, err)
		}
	})
}

// TestNew: the written Miniapp is complete, and nothing is overwritten.
func TestNew(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Shop & Pay!")
	files, err := New(dir, NewConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	slices.Sort(names)
	if want := []string{"README.md", "app.js", "config.json", "index.html", "miniapp.webmanifest", "style.css"}; !slices.Equal(names, want) {
		t.Errorf("wrote %v, want %v", names, want)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "miniapp.webmanifest"))
	m, err := readMembers(b)
	if err != nil || m.ID != "shop-pay" || m.OAuth.ClientID != "shop-pay" || m.Name != "Shop pay" {
		t.Errorf("manifest %+v (%v): %s", m, err, b)
	}
	if _, err := New(dir, NewConfig{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("new into a non-empty folder: %v", err)
	}
	for _, bad := range []NewConfig{{ID: "Upper"}, {ID: "a/b"}, {Issuer: "ftp://x"}, {Issuer: "http://h/?q=1"}} {
		if _, err := New(filepath.Join(t.TempDir(), "x"), bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

// TestWriteReady: mode 0600, and a symbolic link planted at the path is
// refused with an error naming it, its target untouched.
func TestWriteReady(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteReady(link, Ready{ID: "x"}); err == nil || !strings.Contains(err.Error(), link) {
		t.Errorf("a ready file through a link: %v, want it refused, naming the link", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target became %q", b)
	}
	path := filepath.Join(dir, "ready.json")
	if err := WriteReady(path, Ready{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("ready file %v (%v), want a regular file of mode 0600", fi.Mode(), err)
	}
}
