package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/webkitgtk"
	"github.com/miniapp-host/miniapp-host/playground"
	"github.com/miniapp-host/miniapp-host/webdriverfront"
)

// asMainEnv makes the test binary run as miniapp-host itself (TestMain):
// the front and the tests below start it as `miniapp-host open ...`.
const asMainEnv = "MINIAPP_HOST_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// childEnv is the environment of a process the tests start as
// miniapp-host: this one's, without the secret variables, plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(host.SecretEnv, name) && name != asMainEnv {
			env = append(env, kv)
		}
	}
	return append(append(env, asMainEnv+"=1"), extra...)
}

func randomSecret(t *testing.T, label string) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return label + "-" + hex.EncodeToString(b)
}

// webkitProcesses returns WebKit's processes (WebKitWebProcess,
// WebKitNetworkProcess, ...) among the descendants of pid, by name, from
// the parent pid in /proc/*/stat.
func webkitProcesses(t *testing.T, pid int) map[string][]int {
	t.Helper()
	children := processChildren(t)
	found := map[string][]int{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		queue = append(queue, children[p]...)
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err != nil {
			continue
		}
		name := filepath.Base(string(bytes.SplitN(cmdline, []byte{0}, 2)[0]))
		if p != pid && strings.HasPrefix(name, "WebKit") {
			found[name] = append(found[name], p)
		}
	}
	return found
}

// processChildren maps each process to its children, from the parent pid
// in /proc/*/stat.
func processChildren(t *testing.T) map[int][]int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it ended meanwhile
		}
		// "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	return children
}

// assertNoSecretInWebKit reads the environment of every WebKit process
// under pid and fails when a secret is in it. want names the processes
// that must be there; present is a variable each must have (the
// environment they inherit), so that an unreadable environ cannot pass.
func assertNoSecretInWebKit(t *testing.T, pid int, want []string, present string, secrets ...string) {
	t.Helper()
	procs := webkitProcesses(t, pid)
	for _, name := range want {
		if len(procs[name]) == 0 {
			t.Fatalf("no %s under process %d (found %v): the test reads the environment of nothing", name, pid, procs)
		}
	}
	for name, pids := range procs {
		for _, p := range pids {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
			if err != nil {
				t.Fatalf("%s %d: %v", name, p, err)
			}
			vars := strings.Split(string(raw), "\x00")
			if !slices.Contains(vars, present) {
				t.Errorf("%s %d: its environment lacks %s, which its parent has: %q", name, p, present, vars)
			}
			for _, kv := range vars {
				n, _, _ := strings.Cut(kv, "=")
				for _, s := range secrets {
					if strings.Contains(kv, s) {
						t.Errorf("%s %d has the secret in its environment: %s", name, p, n)
					}
				}
				if slices.Contains(host.SecretEnv, n) {
					t.Errorf("%s %d has %s in its environment", name, p, n)
				}
			}
		}
	}
}

// startPlayground starts the servers and demos (no window) with secret as
// the host's.
func startPlayground(t *testing.T, ctx context.Context, secret string) *playground.Playground {
	t.Helper()
	p, err := playground.Start(ctx, playground.Config{HostSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("playground: close: %v", err)
		}
	})
	return p
}

// demo returns the origin of the playground's Miniapp id.
func demo(t *testing.T, ctx context.Context, p *playground.Playground, id string) string {
	t.Helper()
	list, err := p.Miniapps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		if m.ID == id {
			return m.Origin
		}
	}
	t.Fatalf("the playground has no Miniapp %s", id)
	return ""
}

// TestOpenKeepsSecretsFromWebKit: `open` started with MINIAPP_HOST_SECRET
// and MINIAPP_HOST_KEY in its environment completes a consent with the
// secret (it read it), none of WebKit's processes it started has either in
// its environment, and its stderr holds neither the secret nor the
// automation token it wrote to --automation-fd.
func TestOpenKeepsSecretsFromWebKit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	secret, key := randomSecret(t, "open-secret"), randomSecret(t, "operator-key")
	p := startPlayground(t, ctx, secret)
	origin := demo(t, ctx, p, "demo-confidential")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "open", "--automation", "--automation-fd", "3", "--origin", origin, "--id", "demo-confidential",
		"--dashboard", p.Services().Dashboard, "--service", p.Services().Issuer, "--host-client", playground.HostClientID, "--ephemeral")
	cmd.Env = childEnv("MINIAPP_HOST_SECRET="+secret, "MINIAPP_HOST_KEY="+key, "XDG_DATA_HOME="+t.TempDir())
	var stderr syncBuffer // written by exec's goroutine while the test reads it
	cmd.Stderr = &stderr
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(r).ReadBytes('\n')
	var info host.AutomationInfo
	if err != nil || json.Unmarshal(line, &info) != nil {
		cmd.Wait()
		t.Fatalf("open wrote no automation address (%q, %v):\n%s", line, err, stderr.String())
	}
	c, err := client.Dial(ctx, info.URL, info.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The confidential demo's first load asks for consent: a web process
	// loaded the page, the network process fetched it.
	if _, err := c.WaitFor(ctx, client.Kind("consent.shown")); err != nil {
		t.Fatalf("waiting for the consent screen: %v\n%s", err, stderr.String())
	}
	assertNoSecretInWebKit(t, cmd.Process.Pid, []string{"WebKitWebProcess", "WebKitNetworkProcess"}, asMainEnv+"=1", secret, key)
	// The host read the secret before it removed it: the consent completes.
	if err := c.Approve(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitFor(ctx, client.Kind("cookies.synced")); err != nil {
		t.Fatalf("the approved consent did not complete (the host lacked its secret?): %v\n%s", err, stderr.String())
	}
	// The token went to the descriptor only: the host's log (a WebDriver
	// front's log, a CI run's artifacts) never holds it, nor the secret.
	if log := stderr.String(); strings.Contains(log, info.Token) || strings.Contains(log, secret) {
		t.Errorf("open's stderr holds its automation token or its secret:\n%s", log)
	}
}

// TestPlaygroundKeepsSecretsFromWebKit: the playground's window, started
// with MINIAPP_HOST_SECRET, uses it as the host's credential (its server
// authenticates the host with it), says it was given without printing it,
// and its WebKit processes do not have it in their environment.
func TestPlaygroundKeepsSecretsFromWebKit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	secret := randomSecret(t, "playground-secret")
	cmd := exec.CommandContext(ctx, os.Args[0], "playground", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0")
	cmd.Env = childEnv("MINIAPP_HOST_SECRET="+secret, "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer // written by exec's goroutine while the test reads it
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	credential, printed, native := false, false, ""
	for sc.Scan() {
		line := sc.Text()
		printed = printed || strings.Contains(line, secret)
		if strings.HasPrefix(line, "host credential") {
			credential = strings.HasSuffix(line, "miniapp-host, secret as given (MINIAPP_HOST_SECRET)")
		}
		if f := strings.Fields(line); len(f) == 3 && f[0] == "native" && f[1] == "consent" {
			native = f[2]
		}
		if strings.HasPrefix(line, "window") && strings.Contains(line, "the launcher is loaded") {
			break
		}
	}
	if sc.Err() != nil || !credential || printed || native == "" {
		// Its stderr is read once it has exited: until then exec's
		// goroutine writes it.
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the playground did not load its launcher saying its secret was given (%v; printed: %t, native consent %q):\n%s",
			sc.Err(), printed, native, stderr.String())
	}
	go io.Copy(io.Discard, out)
	// Its server takes the secret as the host's credential: the
	// native-consent API authenticates it (a body it then refuses, 400),
	// and refuses another (401).
	for _, c := range []struct {
		secret string
		want   int
	}{{secret, http.StatusBadRequest}, {secret + "x", http.StatusUnauthorized}} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, native, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(playground.HostClientID, c.secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST %s with the secret%s: %d, want %d", native, map[bool]string{true: "", false: " changed"}[c.secret == secret], resp.StatusCode, c.want)
		}
	}
	assertNoSecretInWebKit(t, cmd.Process.Pid, []string{"WebKitWebProcess", "WebKitNetworkProcess"}, asMainEnv+"=1", secret)
}

// wdClient speaks W3C WebDriver to the front, as a client library does.
type wdClient struct {
	t   *testing.T
	ctx context.Context
	url string
}

// do sends a command and returns its status and "value".
func (c wdClient) do(method, path string, body any) (int, json.RawMessage) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.ctx, method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var answer struct {
		Value json.RawMessage `json:"value"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &answer); err != nil {
		c.t.Fatalf("%s %s: %d %q is not WebDriver's JSON", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, answer.Value
}

// errorOf decodes a W3C error value.
func errorOf(v json.RawMessage) (code, message string) {
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	json.Unmarshal(v, &e)
	return e.Error, e.Message
}

// until repeats a command until check accepts its answer, bounded by a
// minute: a page the host loads, a consent screen shown, are not
// WebDriver commands the session waits for.
func (c wdClient) until(what, method, path string, body any, check func(int, json.RawMessage) bool) json.RawMessage {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		status, v := c.do(method, path, body)
		if check(status, v) {
			return v
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting for %s: %s %s last answered %d %s", what, method, path, status, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// script runs Execute Script and returns its value as a string.
func (c wdClient) script(sid, js string) (int, string) {
	c.t.Helper()
	status, v := c.do("POST", "/session/"+sid+"/execute/sync", map[string]any{"script": js, "args": []any{}})
	var s string
	json.Unmarshal(v, &s)
	return status, s
}

// syncWriter is a log several processes write to.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestWebDriverFront drives the confidential demo through `miniapp-host
// webdriver` (package webdriverfront): a New Session that leaves binary
// out starts this binary's `open --webdriver`, the consent screen is read,
// denied and approved with the extension commands (with their refusals
// and no such alert), the host completes the consent with the secret the
// front gave it on a pipe, no WebKit process has that secret, and Delete
// Session ends the host.
func TestWebDriverFront(t *testing.T) {
	if !webkitgtk.Available {
		t.Fatal("this build has no WebKitGTK engine: build with cgo and WebKitGTK (make test)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	secret := randomSecret(t, "front-secret")
	p := startPlayground(t, ctx, secret)
	origin := demo(t, ctx, p, "demo-confidential")
	driver := webKitWebDriver(t)
	log := &syncWriter{}
	f := testFront(t, webdriverfront.Config{Addr: "127.0.0.1:0", Driver: driver, Host: os.Args[0], Secret: secret, OperatorKey: p.OperatorKey(),
		Dashboard: p.Services().Dashboard, Service: p.Services().Issuer, Env: childEnv("XDG_DATA_HOME=" + t.TempDir()), Log: log,
		Network: webdriverfront.NetworkPrivate, Supervisor: []string{os.Args[0], "webdriver-session"}}, log)
	wd := wdClient{t: t, ctx: ctx, url: f.URL()}

	status, v := wd.do("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"webkitgtk:browserOptions": map[string]any{"args": []string{"open", "--webdriver", "--origin", origin, "--id", "demo-confidential",
			"--dashboard", p.Services().Dashboard, "--service", p.Services().Issuer, "--host-client", playground.HostClientID, "--ephemeral"}},
		"timeouts": map[string]any{"pageLoad": 60000, "script": 60000},
	}}})
	var made struct {
		SessionID    string `json:"sessionId"`
		Capabilities struct {
			BrowserName string `json:"browserName"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(v, &made); status != 200 || made.SessionID == "" || made.Capabilities.BrowserName != "miniapp-host" {
		t.Fatalf("New Session: %d %s, want a session of browser miniapp-host", status, v)
	}
	sid := made.SessionID
	consent := "/session/" + sid + "/miniapp-host/consent"

	// The service's development controls, run by the front with the
	// operator key: the clock moves, a refusal names the field.
	service := "/session/" + sid + "/miniapp-host/service/"
	if status, v := wd.do("POST", service+"clock.advance", map[string]string{"duration": "61s"}); status != 200 || !strings.Contains(string(v), `"offset":"1m1s"`) {
		t.Fatalf("service/clock.advance: %d %s, want the clock 1m1s ahead", status, v)
	}
	if status, v := wd.do("POST", service+"clock.advance", map[string]string{"duration": "soon"}); status != 400 || !strings.Contains(string(v), `"field":"/advance"`) {
		t.Fatalf("service/clock.advance of a duration that is none: %d %s, want 400 with the service's field /advance", status, v)
	}
	if status, v := wd.do("POST", service+"clock.reset", map[string]any{}); status != 200 || !strings.Contains(string(v), `"offset":"0s"`) {
		t.Fatalf("service/clock.reset: %d %s", status, v)
	}
	if status, v := wd.do("POST", service+"clock.rewind", map[string]any{}); status != 404 {
		t.Fatalf("an unknown control: %d %s, want 404 unknown command", status, v)
	}

	// The first load asks for consent; the model is the channel's.
	v = wd.until("the consent screen", "GET", consent, nil, func(s int, _ json.RawMessage) bool { return s == 200 })
	var shown struct {
		ClientID string   `json:"client_id"`
		Scopes   []string `json:"scopes"`
	}
	if err := json.Unmarshal(v, &shown); err != nil || shown.ClientID != "demo-confidential" || !slices.Contains(shown.Scopes, "openid") {
		t.Fatalf("Get Consent: %s, want demo-confidential asking for openid", v)
	}
	// Refusals: an account the screen does not offer, an unknown member,
	// deny with an account.
	for _, c := range []struct {
		path string
		body any
		want string
	}{
		{"/approve", map[string]string{"account": "acc-nope"}, `account "acc-nope" is not offered`},
		{"/approve", map[string]string{"acount": "x"}, "unknown field"},
		{"/deny", map[string]string{"account": "x"}, "deny takes no account"},
	} {
		status, v := wd.do("POST", consent+c.path, c.body)
		if code, msg := errorOf(v); status != 400 || code != "invalid argument" || !strings.Contains(msg, c.want) {
			t.Errorf("POST %s %v: %d %s, want 400 invalid argument with %q", c.path, c.body, status, v, c.want)
		}
	}
	if status, v := wd.do("GET", consent, nil); status != 200 {
		t.Fatalf("the consent screen went after refused commands: %d %s", status, v)
	}
	if status, v := wd.do("POST", consent+"/deny", map[string]any{}); status != 200 || string(v) != `{"decision":"denied"}` {
		t.Fatalf("deny: %d %s, want 200 {\"decision\":\"denied\"}", status, v)
	}
	// No screen now: no such alert, for every command.
	for _, c := range []struct{ method, path string }{{"GET", ""}, {"POST", "/approve"}, {"POST", "/deny"}} {
		var body any
		if c.method == "POST" {
			body = map[string]any{}
		}
		status, v := wd.do(c.method, consent+c.path, body)
		if code, _ := errorOf(v); status != 404 || code != "no such alert" {
			t.Errorf("%s %s with no screen: %d %s, want 404 no such alert", c.method, c.path, status, v)
		}
	}
	wd.until("the denied page", "POST", "/session/"+sid+"/execute/sync",
		map[string]any{"script": `return location.href + " " + document.readyState`, "args": []any{}},
		func(s int, v json.RawMessage) bool {
			return s == 200 && string(v) == strconv.Quote(origin+"/?error=access_denied complete")
		})

	// Sign in again; approved, the host completes with its secret and the
	// demo's signed-in page loads.
	if status, v := wd.script(sid, `document.getElementById("signin").click(); return "clicked"`); status != 200 || v != "clicked" {
		t.Fatalf("click Sign in: %d %s", status, v)
	}
	wd.until("the second consent screen", "GET", consent, nil, func(s int, _ json.RawMessage) bool { return s == 200 })
	if status, v := wd.do("POST", consent+"/approve", map[string]any{}); status != 200 || string(v) != `{"decision":"approved"}` {
		t.Fatalf("approve: %d %s, want 200 {\"decision\":\"approved\"}", status, v)
	}
	wd.until("the signed-in page", "POST", "/session/"+sid+"/execute/sync",
		map[string]any{"script": `return location.href + " " + document.body.dataset.signedIn`, "args": []any{}},
		func(s int, v json.RawMessage) bool { return s == 200 && string(v) == strconv.Quote(origin+"/ true") })

	// The host got its secret on a pipe: WebKit's processes never had it.
	assertNoSecretInWebKit(t, os.Getpid(), []string{"WebKitWebProcess", "WebKitNetworkProcess"}, asMainEnv+"=1", secret)

	if status, v := wd.do("DELETE", "/session/"+sid, nil); status != 200 || string(v) != "null" {
		t.Fatalf("Delete Session: %d %s", status, v)
	}
	if got := f.Sessions(); len(got) != 0 {
		t.Errorf("sessions %q after Delete Session", got)
	}
	if procs := webkitProcesses(t, os.Getpid()); len(procs["WebKitWebProcess"]) > 0 {
		t.Errorf("WebKit processes %v remain after Delete Session", procs)
	}
	if status, v := wd.do("GET", "/session/"+sid+"/url", nil); status != 404 {
		t.Errorf("a command of the deleted session: %d %s, want 404 invalid session id", status, v)
	}
	// The front's log (the hosts' output) holds neither the secret nor the
	// automation token the host wrote to the front on a pipe.
	if l := log.String(); strings.Contains(l, secret) || regexp.MustCompile(`automation channel \S+ token `).MatchString(l) ||
		!strings.Contains(l, "open: automation channel ws://") {
		t.Errorf("the front's log shows the secret or a host's automation token (or no channel line at all):\n%s", l)
	}
}

// hostileService is a loopback server that poses as a dashboard and an
// authorization server: it names itself as the dashboard's service, serves
// the playground's metadata with itself as issuer and native-consent
// endpoint, passes every other request to the playground's dashboard (so
// that a Miniapp resolves), and records the Authorization header of every
// request it gets.
type hostileService struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newHostileService(t *testing.T, p *playground.Playground) *hostileService {
	t.Helper()
	dash, err := url.Parse(p.Services().Dashboard)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(dash)
	h := &hostileService{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auth = append(h.auth, r.Method+" "+r.URL.Path+" Authorization: "+r.Header.Get("Authorization"))
		h.mu.Unlock()
		switch r.URL.Path {
		case "/api/service":
			json.NewEncoder(w).Encode(map[string]string{"issuer": h.URL})
		case "/.well-known/oauth-authorization-server":
			resp, err := http.Get(p.Services().Issuer + "/.well-known/oauth-authorization-server")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			var meta map[string]any
			json.NewDecoder(resp.Body).Decode(&meta)
			meta["issuer"], meta["native_consent_endpoint"] = h.URL, h.URL+"/native"
			json.NewEncoder(w).Encode(meta)
		case "/native":
			http.Error(w, `{"error":"server_error"}`, http.StatusInternalServerError)
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

// sawSecret reports whether a request to it carried the secret.
func (h *hostileService) sawSecret(secret string) (bool, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(playground.HostClientID+":"+secret))
	for _, a := range h.auth {
		if strings.HasSuffix(a, basic) {
			return true, append([]string(nil), h.auth...)
		}
	}
	return false, append([]string(nil), h.auth...)
}

// TestWebDriverFrontKeepsItsService: a New Session whose args name a
// hostile loopback server as --service, or as --dashboard (which then
// names itself as the service), is refused with invalid argument naming
// the flag and the front's own value; the hostile server, which records
// every Authorization header it gets, never receives the front's secret
// (before, the host started and sent it, Basic miniapp-host:SECRET, to the
// hostile native-consent endpoint). A session with the front's own
// dashboard and service still runs.
func TestWebDriverFrontKeepsItsService(t *testing.T) {
	if !webkitgtk.Available {
		t.Fatal("this build has no WebKitGTK engine: build with cgo and WebKitGTK (make test)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	secret := randomSecret(t, "front-secret")
	p := startPlayground(t, ctx, secret)
	origin := demo(t, ctx, p, "demo-confidential")
	hostile := newHostileService(t, p)
	driver := webKitWebDriver(t)
	log := &syncWriter{}
	f := testFront(t, webdriverfront.Config{Addr: "127.0.0.1:0", Driver: driver, Host: os.Args[0], Secret: secret,
		Dashboard: p.Services().Dashboard, Service: p.Services().Issuer, Env: childEnv("XDG_DATA_HOME=" + t.TempDir()), Log: log}, log)
	wd := wdClient{t: t, ctx: ctx, url: f.URL()}
	newSession := func(args ...string) (int, json.RawMessage) {
		return wd.do("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
			"webkitgtk:browserOptions": map[string]any{"args": append([]string{"open", "--webdriver", "--origin", origin, "--id", "demo-confidential",
				"--host-client", playground.HostClientID, "--ephemeral"}, args...)},
			"timeouts": map[string]any{"pageLoad": 60000, "script": 60000},
		}}})
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"--service", []string{"--dashboard", p.Services().Dashboard, "--service", hostile.URL},
			fmt.Sprintf("--service %q is not this front's service %q", hostile.URL, p.Services().Issuer)},
		{"--dashboard", []string{"--dashboard=" + hostile.URL},
			fmt.Sprintf("--dashboard %q is not this front's dashboard %q", hostile.URL, p.Services().Dashboard)},
	} {
		status, v := newSession(c.args...)
		if status == http.StatusOK {
			// The attack of old: the session runs, and its host sends
			// the secret to the hostile server on the consent screen.
			var made struct {
				SessionID string `json:"sessionId"`
			}
			json.Unmarshal(v, &made)
			deadline := time.Now().Add(time.Minute)
			saw, reqs := hostile.sawSecret(secret)
			for ; !saw && time.Now().Before(deadline); saw, reqs = hostile.sawSecret(secret) {
				time.Sleep(20 * time.Millisecond)
			}
			wd.do("DELETE", "/session/"+made.SessionID, nil)
			t.Errorf("%s: New Session %q made a session; the hostile server got the secret: %t (its requests: %q)", c.name, c.args, saw, reqs)
			continue
		}
		if code, msg := errorOf(v); status != http.StatusBadRequest || code != "invalid argument" || !strings.Contains(msg, c.want) {
			t.Errorf("%s: New Session %q: %d %s, want 400 invalid argument with %q", c.name, c.args, status, v, c.want)
		}
	}
	if saw, reqs := hostile.sawSecret(secret); saw || len(reqs) != 0 {
		t.Errorf("the hostile server got requests (the secret among them: %t): %q", saw, reqs)
	}
	// The front's own service, given again or left out, runs.
	status, v := newSession("--service", p.Services().Issuer+"/")
	var made struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(v, &made); status != http.StatusOK || made.SessionID == "" {
		t.Fatalf("New Session with the front's service: %d %s, want a session", status, v)
	}
	wd.until("the consent screen", "GET", "/session/"+made.SessionID+"/miniapp-host/consent", nil, func(s int, _ json.RawMessage) bool { return s == 200 })
	if status, v := wd.do("DELETE", "/session/"+made.SessionID, nil); status != 200 {
		t.Errorf("Delete Session: %d %s", status, v)
	}
}

// TestWebDriverCommandNamesItsService: `miniapp-host webdriver` refuses a
// --dashboard or --service that is not an absolute http(s) URL (exit 2,
// naming the flag), and does not start when it cannot learn its service
// from its dashboard (exit 3, saying to give --service): it never runs
// without knowing which service its hosts' secret is for.
func TestWebDriverCommandNamesItsService(t *testing.T) {
	if _, err := exec.LookPath("WebKitWebDriver"); err != nil {
		t.Fatalf("WebKitWebDriver is not installed (Debian package webkit2gtk-driver; scripts/deps.sh installs it): %v", err)
	}
	// A dashboard that is down: a port that was free a moment ago.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--dashboard", "ftp://127.0.0.1:1"}, exitUsage, `--dashboard "ftp://127.0.0.1:1": an absolute http(s) URL`},
		{[]string{"--service", "127.0.0.1:1"}, exitUsage, `--service "127.0.0.1:1": an absolute http(s) URL`},
		{[]string{"--dashboard", down.URL}, exitUndecided, "give the service's issuer with --service"},
	} {
		var out, errs syncBuffer
		code := run(t.Context(), env{args: append([]string{"webdriver", "--port", "0"}, c.args...), stdout: &out, stderr: &errs,
			getenv: func(string) string { return "" }})
		if code != c.code || !strings.Contains(errs.String(), c.want) || out.String() != "" {
			t.Errorf("webdriver %q: exit %d, stdout %q, stderr %q; want exit %d naming %q and no URL", c.args, code, out.String(), errs.String(), c.code, c.want)
		}
	}
}

// TestInspectorOutOfReach is the attack on WebKit's remote inspector as
// another local process makes it: it finds the session host's
// WEBKIT_INSPECTOR_SERVER as `ps e` shows it, attaches a WebKitWebDriver
// of its own to that address and asks it for a session. In a private
// network (webdriverfront.NetworkPrivate, what `webdriver` chooses where
// bubblewrap can) the address is the session's own loopback: the
// attacker's driver cannot reach it, and the session still answers
// Execute Script and Delete Session.
func TestInspectorOutOfReach(t *testing.T) {
	if !webkitgtk.Available {
		t.Fatal("this build has no WebKitGTK engine: build with cgo and WebKitGTK (make test)")
	}
	if err := webdriverfront.PrivateNetworkCheck("bwrap"); err != nil {
		t.Fatalf("a private network for the sessions: %v (scripts/deps.sh installs bubblewrap)", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	secret := randomSecret(t, "front-secret")
	p := startPlayground(t, ctx, secret)
	origin := demo(t, ctx, p, "demo-public")
	driver := webKitWebDriver(t)
	marker := "XDG_DATA_HOME=" + t.TempDir()
	log := &syncWriter{}
	f := testFront(t, webdriverfront.Config{Addr: "127.0.0.1:0", Driver: driver, Host: os.Args[0], Secret: secret,
		Dashboard: p.Services().Dashboard, Service: p.Services().Issuer, Env: childEnv(marker), Log: log,
		Network: webdriverfront.NetworkPrivate, Supervisor: []string{os.Args[0], "webdriver-session"}}, log)
	wd := wdClient{t: t, ctx: ctx, url: f.URL()}
	status, v := wd.do("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"webkitgtk:browserOptions": map[string]any{"args": []string{"open", "--webdriver", "--origin", origin, "--id", "demo-public",
			"--host-client", playground.HostClientID, "--ephemeral"}},
	}}})
	var made struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(v, &made); status != 200 || made.SessionID == "" {
		t.Fatalf("New Session: %d %s", status, v)
	}
	sid := made.SessionID

	// What `ps e` shows the attacker: the host and its inspector address.
	pid, inspector := inspectedProcess(t, marker)
	if inspector == "" {
		t.Fatalf("no process of the session shows WEBKIT_INSPECTOR_SERVER")
	}
	own, _ := os.Readlink("/proc/self/ns/net")
	if theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); err != nil || theirs == own {
		t.Errorf("the session's host (pid %d) is in network namespace %q, this test's is %q: want one of its own (%v)", pid, theirs, own, err)
	}

	// Nothing of the host's is on this network's loopback: no socket of
	// the host's is in its table (in a shared network, the inspector's and
	// the automation channel's are).
	if shown := hostSocketsHere(t, pid); len(shown) > 0 {
		t.Errorf("the host's sockets %v are on this network's loopback", shown)
	}

	// The attacker's driver, attached to that address, asks for a session
	// (it keeps trying to reach it) while the test drives its own.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	attacker := exec.CommandContext(ctx, driver, "--host=127.0.0.1", "--port="+strconv.Itoa(port), "--target="+inspector)
	attacker.Stdout, attacker.Stderr = log, log
	if err := attacker.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { attacker.Wait(); close(exited) }()
	t.Cleanup(func() { attacker.Process.Kill(); <-exited })
	evil := "http://127.0.0.1:" + strconv.Itoa(port)
	for tick := time.NewTicker(10 * time.Millisecond); ; {
		if resp, err := http.Get(evil + "/status"); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("the attacker's WebKitWebDriver exited before it listened")
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-tick.C:
		}
	}
	evilCtx, evilCancel := context.WithCancel(ctx)
	defer evilCancel()
	evilAnswer := make(chan string, 1)
	go func() {
		req, _ := http.NewRequestWithContext(evilCtx, "POST", evil+"/session", strings.NewReader(`{"capabilities":{}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			evilAnswer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		evilAnswer <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()

	// The session is the test's still.
	if status, v := wd.script(sid, `return "still mine"`); status != 200 || v != "still mine" {
		t.Errorf("Execute Script after the attack: %d %q", status, v)
	}
	if status, v := wd.do("DELETE", "/session/"+sid, nil); status != 200 || string(v) != "null" {
		t.Errorf("Delete Session after the attack: %d %s", status, v)
	}
	evilCancel()
	if a := <-evilAnswer; strings.HasPrefix(a, "200 ") {
		t.Errorf("the attacker's driver made a session on %s: %s", inspector, a)
	}
}

// hostSocketsHere lists the sockets of process pid that this network
// namespace's /proc/net/tcp and tcp6 show (as "inode"): none when the
// process has a network of its own.
func hostSocketsHere(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil {
			if inode, ok := strings.CutPrefix(l, "socket:["); ok {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	var shown []string
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		raw, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 9 && inodes[f[9]] {
				shown = append(shown, f[1]+" inode "+f[9])
			}
		}
	}
	return shown
}

// webKitWebDriver is WebKitWebDriver's path.
func webKitWebDriver(t *testing.T) string {
	t.Helper()
	driver, err := exec.LookPath("WebKitWebDriver")
	if err != nil {
		t.Fatalf("WebKitWebDriver is not installed (Debian package webkit2gtk-driver; scripts/deps.sh installs it): %v", err)
	}
	return driver
}

// testFront starts a front of cfg on loopback until the test ends; its
// log is shown when the test fails.
func testFront(t *testing.T, cfg webdriverfront.Config, log *syncWriter) *webdriverfront.Front {
	t.Helper()
	f, err := webdriverfront.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- f.Serve() }()
	t.Cleanup(func() {
		f.Close()
		<-served
		if t.Failed() {
			t.Logf("the front's log:\n%s", log.String())
		}
	})
	return f
}

// inspectedProcess finds, as `ps e` would, a process whose environment
// holds marker and WEBKIT_INSPECTOR_SERVER, and returns its pid and that
// address.
func inspectedProcess(t *testing.T, marker string) (int, string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		vars := strings.Split(string(raw), "\x00")
		if !slices.Contains(vars, marker) {
			continue
		}
		for _, kv := range vars {
			if addr, ok := strings.CutPrefix(kv, "WEBKIT_INSPECTOR_SERVER="); ok {
				return pid, addr
			}
		}
	}
	return 0, ""
}
