package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/seed"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Fixed credentials of the serve tests: 128 bits or more.
const (
	fixedHostSecret  = "fixed-host-secret-of-the-tests"
	fixedOperatorKey = "0123456789abcdef0123456789ABCDEF"
)

// TestServe starts `serve` on free ports, waits for the printed addresses,
// fetches the discovery document and stops it with the context.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, env{args: []string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0",
			"--secret", "miniapp-host=" + fixedHostSecret, "--operator-key", fixedOperatorKey,
			"--trusted-proxy", "0.0.0.0/0", "--trust-any-proxy"}, stdout: &out, stderr: &errs})
	}()
	issuer := regexp.MustCompile(`(?m)^issuer\s+(\S+)$`)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "subjects:") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve printed no addresses: %s %s", out.String(), errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := issuer.FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "miniapp-host         confidential secret as given (--secret)") {
		t.Fatalf("output lacks the issuer or the host credential:\n%s", out.String())
	}
	// A secret serve was given is never printed; one it made is, once.
	if strings.Contains(out.String(), fixedHostSecret) || strings.Contains(out.String(), fixedOperatorKey) ||
		!strings.Contains(out.String(), "operator key        as given (--operator-key)") {
		t.Errorf("serve printed a secret it was given, or not that it was given:\n%s", out.String())
	}
	if !regexp.MustCompile(`(?m)^  demo-confidential\s+confidential secret [A-Za-z0-9_-]{43}\b`).MatchString(out.String()) {
		t.Errorf("serve did not print the secret it made for demo-confidential:\n%s", out.String())
	}
	resp, err := http.Get(m[1] + "/.well-known/openid-configuration")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("discovery: %v %v", err, resp)
	}
	resp.Body.Close()
	// With --addr 127.0.0.1:0 every role prints the port it is bound to,
	// never port 0, and the dashboard printed is the one that answers.
	if bad := regexp.MustCompile(`127\.0\.0\.1:0\b`).FindString(out.String()); bad != "" {
		t.Errorf("serve printed an unbound address %s:\n%s", bad, out.String())
	}
	dash := regexp.MustCompile(`(?m)^dashboard_url\s+(http://127\.0\.0\.1:[1-9]\d*)$`).FindStringSubmatch(out.String())
	if dash == nil {
		t.Fatalf("no dashboard_url with a bound port:\n%s", out.String())
	}
	if code, lines, errs := runCLI(t, "", "rs", "list", "--dashboard", dash[1], "--json"); code != exitOK || !strings.Contains(lines, `"resource_servers"`) {
		t.Errorf("rs list at the printed dashboard_url: exit %d %s %s", code, lines, errs)
	}
	// The operator key it was given opens review.
	if code, lines, errs := runCLI(t, "", "review", "list", "--dashboard", dash[1], "--key", fixedOperatorKey); code != exitOK {
		t.Errorf("review list with the operator key: exit %d %s %s", code, lines, errs)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}

// TestServeTwiceOnOneDatabase: a second serve on the database of a running
// one is refused, naming the running one's PID and service address, and
// the first keeps serving.
func TestServeTwiceOnOneDatabase(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := filepath.Join(t.TempDir(), "a.db")
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{args: []string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, stdout: &out, stderr: &errs})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "subjects:") {
		select {
		case code := <-done:
			t.Fatalf("first serve exited %d: %s", code, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no addresses: %s %s", out.String(), errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	issuer := regexp.MustCompile(`(?m)^issuer\s+(\S+)$`).FindStringSubmatch(out.String())[1]

	var out2, errs2 syncBuffer
	code := run(ctx, env{args: []string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, stdout: &out2, stderr: &errs2})
	if code == exitOK {
		t.Fatal("a second serve on the same database started")
	}
	for _, want := range []string{"in use by another server", "pid " + strconv.Itoa(os.Getpid()), "service " + issuer, "--db"} {
		if !strings.Contains(errs2.String(), want) {
			t.Errorf("refusal lacks %q:\n%s", want, errs2.String())
		}
	}
	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the first server stopped serving: %v %v", err, resp)
	}
	resp.Body.Close()
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}

// startServe runs `serve` with e's arguments and environment until ctx
// ends, and waits for it to print its addresses.
func startServe(t *testing.T, ctx context.Context, e env) (out, errs *syncBuffer, done chan int) {
	t.Helper()
	out, errs, done = &syncBuffer{}, &syncBuffer{}, make(chan int, 1)
	e.stdout, e.stderr = out, errs
	go func() { done <- run(ctx, e) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "subjects:") {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no addresses: %s %s", out.String(), errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out, errs, done
}

// printed returns the value of a line "name   value" of serve's output.
func printed(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q line in:\n%s", name, out)
	}
	return m[1]
}

// TestServePublicAddresses: the public addresses come from the flags and
// the environment, a flag winning; serve prints them and the listen
// addresses, and the listener serves discovery below the issuer's path
// with the public issuer, which the dashboard names.
func TestServePublicAddresses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	environ := map[string]string{
		"MINIAPP_HOST_DB":            filepath.Join(t.TempDir(), "env.db"),
		"MINIAPP_HOST_ISSUER":        "https://id.example.test/miniapp",
		"MINIAPP_HOST_DASHBOARD_URL": "https://dashboard.example.test/",
		"MINIAPP_HOST_SIGNING_URL":   "https://signing-from-env.example.test",
		"MINIAPP_HOST_INVOICING_URL": "https://invoicing.example.test:8443",
	}
	out, errs, done := startServe(t, ctx, env{args: []string{"serve", "--addr", "127.0.0.1:0",
		"--signing-url", "https://signing.example.test"}, getenv: func(k string) string { return environ[k] }})
	for name, want := range map[string]string{
		"database":           environ["MINIAPP_HOST_DB"],
		"issuer":             "https://id.example.test/miniapp",
		"discovery":          "https://id.example.test/miniapp/.well-known/openid-configuration",
		"token":              "https://id.example.test/miniapp/oauth/token",
		"base_url":           "https://id.example.test/miniapp/bank",
		"grant endpoint":     "https://id.example.test/miniapp/bank/authorization",
		"dashboard_url":      "https://dashboard.example.test",
		"signing_base_url":   "https://signing.example.test/api",
		"invoicing_base_url": "https://invoicing.example.test:8443/api",
	} {
		if got := printed(t, out.String(), name); got != want {
			t.Errorf("%s: printed %s, want %s", name, got, want)
		}
	}
	service := printed(t, out.String(), "listen service")
	for _, role := range []string{"listen dashboard", "listen signing", "listen invoicing"} {
		if addr := printed(t, out.String(), role); !regexp.MustCompile(`^127\.0\.0\.1:[1-9]\d*$`).MatchString(addr) {
			t.Errorf("%s: %s is not a bound loopback address", role, addr)
		}
	}
	resp, err := http.Get("http://" + service + "/miniapp/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if md["issuer"] != "https://id.example.test/miniapp" {
		t.Errorf("discovery at the listener: issuer %v", md["issuer"])
	}
	// The dashboard names the public issuer, which a host then asks for
	// its metadata (docs/dashboard.md, "The service").
	resp, err = http.Get("http://" + printed(t, out.String(), "listen dashboard") + "/api/service")
	if err != nil {
		t.Fatal(err)
	}
	var svc map[string]any
	json.NewDecoder(resp.Body).Decode(&svc)
	resp.Body.Close()
	if svc["issuer"] != "https://id.example.test/miniapp" {
		t.Errorf("the dashboard's GET /api/service: %v, want the public issuer", svc)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}

// TestServeRefusesBadAddresses: a public address that breaks its rule is
// a usage error naming the flag or variable it came from and the rule,
// before anything listens.
func TestServeRefusesBadAddresses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		environ map[string]string
		want    []string
	}{
		{"issuer with a query", []string{"--issuer", "https://id.example/x?a=b"}, nil,
			[]string{`--issuer "https://id.example/x?a=b"`, "no query", "RFC 8414"}},
		{"issuer from the environment", nil, map[string]string{"MINIAPP_HOST_ISSUER": "id.example"},
			[]string{`MINIAPP_HOST_ISSUER "id.example"`, "not an absolute http(s) URL"}},
		{"flag over a bad variable", []string{"--issuer", "https://id.example#f"}, map[string]string{"MINIAPP_HOST_ISSUER": "https://ok.example"},
			[]string{`--issuer "https://id.example#f"`, "no fragment"}},
		{"issuer ending in a slash", []string{"--issuer", "https://id.example/"}, nil, []string{`write "https://id.example"`}},
		{"dashboard with a path", []string{"--dashboard-url", "https://dash.example/console"}, nil,
			[]string{`--dashboard-url "https://dash.example/console"`, "no path"}},
		{"signing with a query", nil, map[string]string{"MINIAPP_HOST_SIGNING_URL": "https://s.example?x"},
			[]string{`MINIAPP_HOST_SIGNING_URL "https://s.example?x"`, "no query"}},
		{"invoicing of another scheme", []string{"--invoicing-url", "ftp://i.example"}, nil,
			[]string{`--invoicing-url "ftp://i.example"`, "http or https"}},
		{"negative drain", []string{"--drain", "-1s"}, nil, []string{"--drain"}},
		{"trusted proxy by name", []string{"--trusted-proxy", "10.0.0.2,proxy.internal"}, nil,
			[]string{"--trusted-proxy", `"proxy.internal"`, "CIDR"}},
		{"trusted proxies from the environment", nil, map[string]string{"MINIAPP_HOST_TRUSTED_PROXIES": "10.0.0.0/33"},
			[]string{"MINIAPP_HOST_TRUSTED_PROXIES", `"10.0.0.0/33"`}},
		{"every peer trusted", []string{"--trusted-proxy", "10.0.0.2,0.0.0.0/0"}, nil,
			[]string{"--trusted-proxy 0.0.0.0/0", "public network", "--trust-any-proxy"}},
		{"a public IPv6 network trusted", nil, map[string]string{"MINIAPP_HOST_TRUSTED_PROXIES": "2001:db8::/32"},
			[]string{"MINIAPP_HOST_TRUSTED_PROXIES 2001:db8::/32", "private network"}},
		{"a private network wider than private", []string{"--trusted-proxy", "10.0.0.0/7"}, nil, []string{"--trusted-proxy 10.0.0.0/7"}},
		{"a one-letter operator key", []string{"--operator-key", "a"}, nil, []string{"--operator-key", "too short", "22 characters of base64url or 32 hexadecimal digits"}},
		{"a 31-digit hex operator key", []string{"--operator-key", strings.Repeat("0123456789abcdef", 2)[:31]}, nil, []string{"--operator-key", "124 bits"}},
		{"a long but regular operator key", []string{"--operator-key", strings.Repeat("ab", 20)}, nil, []string{"--operator-key", "too regular"}},
		{"a short secret", []string{"--secret", "miniapp-host=letmein"}, nil, []string{"--secret miniapp-host=…", "too short"}},
		{"a secret of a public client", []string{"--secret", "demo-public=" + fixedHostSecret}, nil,
			[]string{"--secret demo-public=…", "public client has no secret", "demo-confidential", "miniapp-host"}},
		{"a secret of an unknown client", []string{"--secret", "nobody=" + fixedHostSecret}, nil,
			[]string{"--secret nobody=…", "no seeded client", "demo-confidential"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0"}, tc.args...)
			code := run(context.Background(), env{args: args, stdout: &out, stderr: &errs, getenv: func(k string) string { return tc.environ[k] }})
			if code != exitUsage || out.Len() != 0 {
				t.Fatalf("exit %d, want %d and nothing printed: %s", code, exitUsage, out.String())
			}
			if strings.Contains(errs.String(), "letmein") || strings.Contains(errs.String(), fixedHostSecret) {
				t.Errorf("the error repeats the secret:\n%s", errs.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errs.String(), w) {
					t.Errorf("error lacks %q:\n%s", w, errs.String())
				}
			}
		})
	}
}

// TestServeDrainsThenStops: at the interrupt /readyz turns to 503 while
// the server keeps serving for the drain period; a second interrupt skips
// the rest of the drain, the shutdown finishes, serve exits 0 and its
// listeners refuse connections.
func TestServeDrainsThenStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hurry := make(chan struct{}, 1)
	out, errs, done := startServe(t, ctx, env{args: []string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0",
		"--drain", "1h"}, hurry: hurry})
	issuer := printed(t, out.String(), "issuer")
	dashboard := printed(t, out.String(), "dashboard_url")
	status := func(u string) int {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s during the drain: %v", u, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := status(issuer + "/readyz"); st != http.StatusOK {
		t.Fatalf("readiness before the interrupt: %d", st)
	}
	cancel() // the first interrupt
	deadline := time.Now().Add(20 * time.Second)
	for status(issuer+"/readyz") != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("readiness never turned to 503 after the interrupt")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, u := range []string{dashboard + "/readyz"} {
		if st := status(u); st != http.StatusServiceUnavailable {
			t.Errorf("%s during the drain: %d", u, st)
		}
	}
	for _, u := range []string{issuer + "/.well-known/openid-configuration", issuer + "/healthz", dashboard + "/api/oauth/clients/demo-public"} {
		if st := status(u); st != http.StatusOK {
			t.Errorf("%s during the drain: %d, want 200", u, st)
		}
	}
	select {
	case code := <-done:
		t.Fatalf("serve exited %d during the drain", code)
	default:
	}
	if !strings.Contains(errs.String(), "serving 1h0m0s more (--drain)") {
		t.Errorf("serve did not say it drains: %s", errs.String())
	}
	hurry <- struct{}{} // the second interrupt
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if resp, err := http.Get(issuer + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("the stopped server still answers")
	}
}

// TestServeWarnsOfRegisteredRedirectURIs: a database whose clients were
// registered before the redirect URI rules (or written to directly) is
// served, and serve names every redirect URI the dashboard would refuse
// today, its client and how to write it.
func TestServeWarnsOfRegisteredRedirectURIs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := filepath.Join(t.TempDir(), "old.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	w, err := seed.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := st.PutClient(ctx, &store.Client{ID: "old-client", ProjectID: "prj_demo", Name: "Old", Type: store.Public,
		RedirectURIs:   []string{"http://127.0.0.1:7000/cb", "HTTP://127.0.0.1:19556/cb", "http://2130706433/cb", `http://127.0.0.1\@evil.example/cb`},
		AllowedOrigins: []string{"http://127.0.0.1:7000"}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, errs, done := startServe(t, ctx, env{args: []string{"serve", "--db", db, "--addr", "127.0.0.1:0"}})
	got := errs.String()
	for _, want := range []string{
		`warning: client old-client (project prj_demo): redirect URI "HTTP://127.0.0.1:19556/cb": write "http://127.0.0.1:19556/cb"`,
		`warning: client old-client (project prj_demo): redirect URI "http://2130706433/cb": the host "2130706433" is a numeric IPv4 form`,
		`warning: client old-client (project prj_demo): redirect URI "http://127.0.0.1\\@evil.example/cb": a redirect URI has no backslash`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("serve's warnings lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "warning:"); n != 3 {
		t.Errorf("%d warnings, want 3 (the canonical redirect URI is fine):\n%s", n, got)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d", code)
	}
}
