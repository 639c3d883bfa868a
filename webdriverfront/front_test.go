package webdriverfront

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The refusals happen before anything starts: the front's driver and host
// are tripwires here, scripts that leave a file behind if the front ever
// ran them; the red team's binary leaves one too.

// tripwires are what a refused request must never run.
type tripwires struct {
	dir    string
	host   string // the front's "host binary"
	driver string // the front's "WebKitWebDriver"
}

func newTripwires(t *testing.T) tripwires {
	t.Helper()
	dir := t.TempDir()
	w := tripwires{dir: dir, host: filepath.Join(dir, "host.sh"), driver: filepath.Join(dir, "driver.sh")}
	for _, p := range []string{w.host, w.driver} {
		script := "#!/bin/sh\ntouch '" + p + ".ran'\n"
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// redTeamMarker is the file the red team's New Session would create.
func (w tripwires) redTeamMarker() string { return filepath.Join(w.dir, "red-team-ran") }

// assertNothingRan fails when any tripwire file exists.
func (w tripwires) assertNothingRan(t *testing.T) {
	t.Helper()
	for _, p := range []string{w.host + ".ran", w.driver + ".ran", w.redTeamMarker()} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists: the front ran a program for a refused request", p)
		}
	}
}

// redTeamBody is the New Session of the finding: /bin/sh runs a command.
func (w tripwires) redTeamBody() string {
	return `{"capabilities":{"alwaysMatch":{"webkitgtk:browserOptions":{"binary":"/bin/sh","args":["-c","id > ` + w.redTeamMarker() + `"]}}}}`
}

// lines keeps what the front logs and lets a test wait for a line.
type lines struct {
	mu      sync.Mutex
	text    strings.Builder
	changed chan struct{}
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

// wait waits until the log holds want, bounded by d.
func (l *lines) wait(t *testing.T, want string, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		l.mu.Lock()
		text, changed := l.text.String(), l.changed
		l.mu.Unlock()
		if strings.Contains(text, want) {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("the front never logged %q; it logged:\n%s", want, text)
		}
	}
}

// The dashboard and service the tripwire fronts are started for: nothing
// listens there, and nothing of these tests sends a request there.
const (
	frontDashboard = "http://127.0.0.1:9/dashboard"
	frontService   = "http://127.0.0.1:9/issuer"
)

// startFront starts a front on a free loopback port with the tripwires as
// its host and driver.
func startFront(t *testing.T, w tripwires) (*Front, *lines) {
	t.Helper()
	return startFrontWith(t, w.host, w.driver)
}

// startFrontWith starts a front on a free loopback port with hostBin as its
// host binary and driver as its WebKitWebDriver.
func startFrontWith(t *testing.T, hostBin, driver string) (*Front, *lines) {
	t.Helper()
	log := newLines()
	f, err := New(Config{Addr: "127.0.0.1:0", Driver: driver, Host: hostBin, Secret: "s", Log: log,
		Dashboard: frontDashboard, Service: frontService})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Serve() }()
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return f, log
}

// w3cError is a WebDriver error answer.
type w3cError struct {
	Value struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	} `json:"value"`
}

// send sends a request and returns its status and decoded error.
func send(t *testing.T, method, url string, header map[string]string, body string) (int, w3cError) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e w3cError
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("%s %s answered %d %q, not W3C WebDriver JSON", method, url, resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q, want application/json; charset=utf-8", ct)
	}
	return resp.StatusCode, e
}

// TestRefusesWhatNoClientSends: the red team's New Session (text/plain,
// Origin) and its variants are refused with 400 invalid argument, naming
// the header, and nothing runs.
func TestRefusesWhatNoClientSends(t *testing.T) {
	w := newTripwires(t)
	f, log := startFront(t, w)
	body := w.redTeamBody()
	for _, c := range []struct {
		name   string
		method string
		header map[string]string
		body   string
		want   string
	}{
		{"red team: text/plain with Origin", "POST", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, body, "Origin header"},
		{"Origin with JSON", "POST", map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:9"}, body, "Origin header"},
		{"Origin null", "POST", map[string]string{"Content-Type": "application/json", "Origin": "null"}, body, "Origin header"},
		{"Origin on a GET", "GET", map[string]string{"Origin": "http://evil.example"}, "", "Origin header"},
		{"text/plain", "POST", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, body, `Content-Type is "text/plain;charset=UTF-8"`},
		{"form data", "POST", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, body, "application/x-www-form-urlencoded"},
		{"multipart", "POST", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, body, "multipart/form-data"},
		{"no Content-Type", "POST", nil, body, `Content-Type is ""`},
		{"a DNS name rebound to loopback", "POST", map[string]string{"Content-Type": "application/json", "Host": "evil.example:4444"}, body, `Host header "evil.example:4444"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, e := send(t, c.method, f.URL()+"/session", c.header, c.body)
			if status != http.StatusBadRequest || e.Value.Error != "invalid argument" || !strings.Contains(e.Value.Message, c.want) {
				t.Errorf("answered %d %+v, want 400 invalid argument naming %q", status, e.Value, c.want)
			}
		})
	}
	log.wait(t, "refused POST /session: the request has an Origin header", time.Minute)
	if got := f.Sessions(); len(got) != 0 {
		t.Errorf("sessions %q after refusals", got)
	}
	w.assertNothingRan(t)
}

// TestNewSessionStartsOnlyOpenWebDriver: a New Session in proper JSON that
// names another binary, or other arguments than `open --webdriver ...`, is
// refused with invalid argument and nothing runs.
func TestNewSessionStartsOnlyOpenWebDriver(t *testing.T) {
	w := newTripwires(t)
	f, _ := startFront(t, w)
	session := func(opts string) string {
		return `{"capabilities":{"alwaysMatch":{"webkitgtk:browserOptions":` + opts + `}}}`
	}
	for _, c := range []struct {
		name string
		body string
		want string
	}{
		{"the red team's binary", w.redTeamBody(), "binary /bin/sh: this front starts " + w.host + " only"},
		{"another binary with open's args", session(`{"binary":"/usr/bin/env","args":["open","--webdriver"]}`), "binary /usr/bin/env"},
		{"binary not a string", session(`{"binary":1,"args":["open","--webdriver"]}`), "binary 1"},
		{"another command", session(`{"args":["serve","--addr","127.0.0.1:0"]}`), `must start with "open", "--webdriver"`},
		{"open without --webdriver", session(`{"args":["open","--origin","http://127.0.0.1:1","--id","x"]}`), `must start with "open", "--webdriver"`},
		{"--webdriver not second", session(`{"args":["open","--origin","http://127.0.0.1:1","--webdriver"]}`), `must start with "open", "--webdriver"`},
		{"no args", session(`{}`), `must start with "open", "--webdriver"`},
		{"an arg not a string", session(`{"args":["open","--webdriver",3]}`), "holds 3, not a string"},
		{"the front's secret flag", session(`{"args":["open","--webdriver","--secret-fd","0"]}`), "--secret-fd is the front's own"},
		{"the front's automation flag", session(`{"args":["open","--webdriver","-automation-fd=1"]}`), "--automation-fd is the front's own"},
		{"another browser option", session(`{"args":["open","--webdriver"],"certificates":[]}`), "webkitgtk:browserOptions.certificates is not supported"},
		{"no browser options", `{"capabilities":{"alwaysMatch":{}}}`, "alwaysMatch.webkitgtk:browserOptions is required"},
		{"options in firstMatch", `{"capabilities":{"firstMatch":[{"webkitgtk:browserOptions":{"binary":"/bin/sh","args":["-c","id"]}}]}}`, "firstMatch[0] has webkitgtk:browserOptions"},
		{"legacy capabilities only", `{"desiredCapabilities":{"webkitgtk:browserOptions":{"binary":"/bin/sh"}}}`, "New Session takes W3C capabilities"},
		{"not JSON", `{"capabilities":`, "not one JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, e := send(t, "POST", f.URL()+"/session", map[string]string{"Content-Type": "application/json; charset=utf-8"}, c.body)
			if status != http.StatusBadRequest || e.Value.Error != "invalid argument" || !strings.Contains(e.Value.Message, c.want) {
				t.Errorf("answered %d %+v, want 400 invalid argument with %q", status, e.Value, c.want)
			}
		})
	}
	w.assertNothingRan(t)
}

// TestFrontAnswersItsOwnPaths: /status answers ready without any session;
// a command of a session the front does not have is invalid session id;
// any other path is unknown command.
func TestFrontAnswersItsOwnPaths(t *testing.T) {
	w := newTripwires(t)
	f, _ := startFront(t, w)
	resp, err := http.Get(f.URL() + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Value struct {
			Ready bool `json:"ready"`
		} `json:"value"`
	}
	err = json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&status)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !status.Value.Ready {
		t.Errorf("/status: %d %+v (%v), want 200 ready", resp.StatusCode, status, err)
	}
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/session/nope/url", 404, "invalid session id"},
		{"GET", "/session/nope/miniapp-host/consent", 404, "invalid session id"},
		{"DELETE", "/session/nope", 404, "invalid session id"},
		{"GET", "/nothing", 404, "unknown command"},
	} {
		got, e := send(t, c.method, f.URL()+c.path, nil, "")
		if got != c.status || e.Value.Error != c.code {
			t.Errorf("%s %s: %d %+v, want %d %s", c.method, c.path, got, e.Value, c.status, c.code)
		}
	}
	w.assertNothingRan(t)
}

// TestListensOnLoopbackOnly: any other address is refused before listening.
func TestListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:4444", ":4444", "192.0.2.1:4444", "localhost:4444"} {
		if _, err := New(Config{Addr: addr, Driver: "d", Host: "h"}); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("New(%q): %v, want a refusal naming loopback", addr, err)
		}
	}
}

// TestConfigNamesOneService: a front is started for one dashboard and one
// service, absolute http(s) URLs; without them it does not start.
func TestConfigNamesOneService(t *testing.T) {
	for _, c := range []struct{ dashboard, service, want string }{
		{"", frontService, "Config.Dashboard"},
		{frontDashboard, "", "Config.Service"},
		{frontDashboard, "127.0.0.1:9", "Config.Service"},
		{"file:///etc", frontService, "Config.Dashboard"},
		{frontDashboard, frontService + "?x=1", "Config.Service"},
	} {
		_, err := New(Config{Addr: "127.0.0.1:0", Driver: "d", Host: "h", Dashboard: c.dashboard, Service: c.service})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "absolute http(s) URL") {
			t.Errorf("New(dashboard %q, service %q): %v, want a refusal naming %s", c.dashboard, c.service, err, c.want)
		}
	}
}

// authRecorder is a hostile loopback server: it records the Authorization
// header of every request it gets (and the request itself).
type authRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newAuthRecorder(t *testing.T) *authRecorder {
	r := &authRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.URL.Path+" Authorization: "+req.Header.Get("Authorization"))
		r.mu.Unlock()
		http.NotFound(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *authRecorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// TestNewSessionKeepsTheFrontsService: a New Session whose args name
// another dashboard or service than the front's, in any spelling `open`'s
// flag parser reads, is refused with invalid argument naming the flag and
// the front's value; no host starts, and the hostile server named gets no
// request, so it never sees the secret.
func TestNewSessionKeepsTheFrontsService(t *testing.T) {
	w := newTripwires(t)
	f, _ := startFront(t, w)
	hostile := newAuthRecorder(t)
	session := func(args ...string) string {
		b, _ := json.Marshal(map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
			"webkitgtk:browserOptions": map[string]any{"args": append([]string{"open", "--webdriver", "--origin", "http://127.0.0.1:1", "--id", "x"}, args...)}}}})
		return string(b)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"--service", []string{"--service", hostile.URL}, `--service "` + hostile.URL + `" is not this front's service "` + frontService + `"`},
		{"--service=", []string{"--service=" + hostile.URL}, `--service "` + hostile.URL + `"`},
		{"-service", []string{"-service", hostile.URL + "/"}, `--service "` + hostile.URL + `/"`},
		{"--dashboard", []string{"--dashboard", hostile.URL}, `--dashboard "` + hostile.URL + `" is not this front's dashboard "` + frontDashboard + `"`},
		{"-dashboard=", []string{"-dashboard=" + hostile.URL}, `--dashboard "` + hostile.URL + `"`},
		{"the front's dashboard, another service", []string{"--dashboard", frontDashboard, "--service", hostile.URL}, `--service "` + hostile.URL + `"`},
		{"--service without a value", []string{"--service"}, "--service has no value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, e := send(t, "POST", f.URL()+"/session", map[string]string{"Content-Type": "application/json"}, session(c.args...))
			if status != http.StatusBadRequest || e.Value.Error != "invalid argument" || !strings.Contains(e.Value.Message, c.want) ||
				!strings.Contains(e.Value.Message, "leave --") {
				t.Errorf("answered %d %+v, want 400 invalid argument with %q and how to fix it", status, e.Value, c.want)
			}
		})
	}
	w.assertNothingRan(t)
	if got := hostile.requests(); len(got) != 0 {
		t.Errorf("the hostile server got %q", got)
	}
}

// TestHostGetsTheFrontsService: a session that repeats the front's own
// dashboard and service (with a trailing slash) is not refused, and the
// host the front starts gets the front's --dashboard and --service last,
// after the session's flags, so that they are the values it reads.
func TestHostGetsTheFrontsService(t *testing.T) {
	w := newTripwires(t)
	argsFile := filepath.Join(w.dir, "host-args")
	// A host that records its arguments, one a line, and exits as `open`
	// does on a usage error, before its window runs.
	recorder := filepath.Join(w.dir, "recording-host.sh")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + argsFile + "'\necho 'recorded' >&2\nexit 2\n"
	if err := os.WriteFile(recorder, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f, _ := startFrontWith(t, recorder, w.driver)
	body := `{"capabilities":{"alwaysMatch":{"webkitgtk:browserOptions":{"args":["open","--webdriver","--origin","http://127.0.0.1:1","--id","x",` +
		`"--dashboard","` + frontDashboard + `/","--service=` + frontService + `"]}}}}`
	status, e := send(t, "POST", f.URL()+"/session", map[string]string{"Content-Type": "application/json"}, body)
	if status != http.StatusBadRequest || !strings.Contains(e.Value.Message, "exited with code 2 before its window ran: recorded") {
		t.Fatalf("answered %d %+v, want the host's usage error (it ran)", status, e.Value)
	}
	raw, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("the host did not run: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	want := []string{"open", "--automation-fd", "4", "--secret-fd", "3", "--webdriver", "--origin", "http://127.0.0.1:1", "--id", "x",
		"--dashboard", frontDashboard + "/", "--service=" + frontService, "--dashboard", frontDashboard, "--service", frontService}
	if !slices.Equal(got, want) {
		t.Errorf("the host's arguments:\n got %q\nwant %q", got, want)
	}
}
