package devapp

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// get sends a GET for path to the running dev server with the given Host
// header ("" for the server's own), as a browser would, and returns the
// status and body.
func get(t *testing.T, a *App, path, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.Origin().String()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	// Redirects are seen, not followed.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestFilesServesOnlyTheFolder is the attacker's side of `dev DIR`
// (docs/security.md): symbolic links planted in the folder (to a file
// outside, to a folder outside, to a dot file under another name) are not
// followed, a folder is never listed, and a page on a DNS name rebound to
// 127.0.0.1 (its own Host header) gets nothing; the folder's own files
// are served as before.
func TestFilesServesOnlyTheFolder(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "passwd")
	if err := os.WriteFile(secret, []byte("root:x:0:0:SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, dir := startDir(t, map[string]string{"index.html": "<!doctype html>home", "app.js": "app-code", ".env": "API_KEY=SECRET",
		"assets/logo.svg": "<svg/>", "docs/readme.txt": "no index here", "sub/index.html": "sub page"})
	for link, target := range map[string]string{"leak": secret, "dir": outside, "env.txt": filepath.Join(dir, ".env"),
		"etc": "/etc", "rel": "../" + filepath.Base(outside) + "/passwd", "inner.js": "app.js", "assets/up": ".."} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		path   string
		status int
	}{
		{"/leak", 404},
		{"/dir/passwd", 404},
		{"/dir/", 404},
		{"/env.txt", 404},
		{"/etc/passwd", 404},
		{"/etc/", 404},
		{"/rel", 404},
		{"/inner.js", 404}, // a link inside the folder is not followed either
		{"/assets/up/.env", 404},
		{"/assets/up/app.js", 404},
		{"/.env", 404},
		{"/%2e%2e/" + filepath.Base(outside) + "/passwd", 404},
		{"/docs/", 404}, // no index.html: not listed
		{"/assets/", 404},
		{"/sub/", 200},
		{"/app.js", 200},
		{"/assets/logo.svg", 200},
	} {
		status, body := get(t, a, tt.path, "")
		if status != tt.status {
			t.Errorf("GET %s: %d %q, want %d", tt.path, status, body, tt.status)
		}
		if strings.Contains(body, "SECRET") || strings.Contains(body, "root:") || strings.Contains(body, "logo.svg") && tt.path != "/assets/logo.svg" {
			t.Errorf("GET %s gave away %q", tt.path, body)
		}
	}
	if status, _ := get(t, a, "/sub", ""); status != http.StatusMovedPermanently {
		t.Errorf("GET /sub: %d, want a redirect to /sub/", status)
	}

	// DNS rebinding: the attacker's page, on its own name resolved to
	// 127.0.0.1, sends that name as Host. Any loopback name is the dev
	// server's own.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(a.Origin().String(), "http://"))
	for host, want := range map[string]int{
		"evil.example:" + port: 403, "evil.example": 403, "127.0.0.1.nip.io:" + port: 403, "10.0.0.1:" + port: 403,
		"localhost:" + port: 200, "127.0.0.1:" + port: 200, "[::1]:" + port: 200,
	} {
		if status, body := get(t, a, "/app.js", host); status != want || want == 403 && strings.Contains(body, "app-code") {
			t.Errorf("Host %s: %d %q, want %d", host, status, body, want)
		}
	}
	// A request without any Host header (HTTP/1.0) is refused too.
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.Origin().String(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /app.js HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("no Host header: %d, want 403", resp.StatusCode)
	}
}

// TestConfigIssuer: under dev, config.json is served with the running
// playground's issuer, its other members kept, and the file on disk left
// as it is; a config.json without an issuer, or not an object, is served
// as it is.
func TestConfigIssuer(t *testing.T) {
	disk := `{"issuer": "http://127.0.0.1:8600", "theme": "dark"}`
	a, dir := startDir(t, map[string]string{"config.json": disk, "sub/config.json": `{"issuer": "x"}`})
	if iss, err := a.ConfigIssuer(); err != nil || iss != "http://127.0.0.1:8600" {
		t.Errorf("ConfigIssuer: %q %v", iss, err)
	}
	if _, body := get(t, a, "/config.json", ""); body != disk {
		t.Errorf("before UseIssuer: %q, want the file", body)
	}
	a.UseIssuer("http://127.0.0.1:41234")
	_, body := get(t, a, "/config.json", "")
	var got map[string]string
	if err := json.Unmarshal([]byte(body), &got); err != nil || got["issuer"] != "http://127.0.0.1:41234" || got["theme"] != "dark" {
		t.Errorf("served %q (%v), want the running issuer and the theme kept", body, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(b) != disk {
		t.Errorf("the file on disk became %q", b)
	}
	if _, body := get(t, a, "/sub/config.json", ""); body != `{"issuer": "x"}` {
		t.Errorf("another folder's config.json: %q, want it as it is", body)
	}
	for _, other := range []string{`{"theme": "dark"}`, `["issuer"]`, `not json`} {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(other), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, body := get(t, a, "/config.json", ""); body != other {
			t.Errorf("config.json %s served as %q", other, body)
		}
	}
}

// TestQuote: names with control characters, spaces or invalid UTF-8 are
// printed Go-quoted, others as they are.
func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"app.js":                    "app.js",
		"js/deep/app.js":            "js/deep/app.js",
		"été.css":                   "été.css",
		"a b.js":                    `"a b.js"`,
		"\x1b]52;c;cHduZWQ=\x07.js": `"\x1b]52;c;cHduZWQ=\a.js"`,
		"\x1b[2J":                   `"\x1b[2J"`,
		"\u009b31m":                 `"\u009b31m"`,
		"evil\u202egnp.js":          `"evil\u202egnp.js"`,
		"bad\xff":                   `"bad\xff"`,
		"new\nline":                 `"new\nline"`,
		"":                          `""`,
		`quote".js`:                 `"quote\".js"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
		if strings.ContainsAny(Quote(in), "\x1b\x07\n\u009b\u202e") {
			t.Errorf("Quote(%q) still holds a control character", in)
		}
	}
}
