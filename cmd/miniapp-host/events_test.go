package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/audit"
)

// serveForEvents runs serve with the operator key of the tests and extra
// arguments, until the test ends; its stderr is a lineLog.
func serveForEvents(t *testing.T, extra ...string) (issuer, dash string, errs *lineLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errs := newLineLog(), newLineLog()
	done := make(chan int, 1)
	ended := make(chan struct{})
	args := append([]string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--operator-key", fixedOperatorKey}, extra...)
	go func() { done <- run(ctx, env{args: args, stdout: out, stderr: errs}); close(ended) }()
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	out.wait(t, wctx, ended, "serve's addresses", func(l string) bool { return strings.HasPrefix(l, "subjects:") })
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("serve exit %d: %s", code, errs.String())
		}
	})
	return printed(t, out.String(), "issuer"), printed(t, out.String(), "dashboard_url"), errs
}

// refuse makes the server refuse an authorization request: a
// redirect_uri not registered for demo-public.
func refuse(t *testing.T, issuer, redirect string) {
	t.Helper()
	q := url.Values{"client_id": {"demo-public"}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"openid"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	resp, err := http.Get(issuer + "/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("authorize with an unregistered redirect_uri: %d", resp.StatusCode)
	}
}

// stored runs do while a stream of the dashboard's events is open, and
// returns once the stream delivered an event: what do recorded is then
// stored, and a listing shows it.
func stored(t *testing.T, dash string, do func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, dash+"/api/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+fixedOperatorKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	do()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			return
		}
	}
	t.Fatalf("the stream ended without an event: %v", sc.Err())
}

// TestEventsCommand: events lists what a running serve recorded, one line
// each with the refusal's field, what was sent and what was expected, or
// one JSON object a line; the filters narrow it.
func TestEventsCommand(t *testing.T) {
	issuer, dash, _ := serveForEvents(t, "--addr", "127.0.0.1:0")
	stored(t, dash, func() { refuse(t, issuer, "https://evil.example/cb") })
	code, lines, errs := runCLI(t, "", "events", "--dashboard", dash, "--key", fixedOperatorKey, "--kind", "request.refused")
	if code != exitOK {
		t.Fatalf("events: exit %d: %s", code, errs)
	}
	if !strings.Contains(lines, "request.refused client=demo-public outcome=refused") || !strings.Contains(lines, "error=invalid_request field=redirect_uri sent=https://evil.example/cb expected=") ||
		!strings.Contains(lines, `rule="redirect_uri 'https://evil.example/cb' is not registered`) {
		t.Fatalf("events' line lacks the refusal:\n%s", lines)
	}
	code, out, errs := runCLI(t, "", "events", "--dashboard", dash, "--key", fixedOperatorKey, "--json", "--client", "demo-public")
	if code != exitOK {
		t.Fatalf("events --json: exit %d: %s", code, errs)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev audit.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.ID == 0 || ev.ClientID != "demo-public" {
			t.Fatalf("events --json: a line that is not an event of demo-public: %q (%v)", l, err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("events --json printed nothing")
	}
	if code, out, _ := runCLI(t, "", "events", "--dashboard", dash, "--key", fixedOperatorKey, "--subject", "nobody"); code != exitOK || out != "" {
		t.Fatalf("--subject nobody: exit %d %q", code, out)
	}
	// Without the operator key: refused, with how to authenticate.
	if code, _, errs := runCLI(t, "", "events", "--dashboard", dash, "--key", "wrong"); code != exitRejected || !strings.Contains(errs, "operator_only") {
		t.Fatalf("a wrong key: exit %d %s", code, errs)
	}
}

// TestEventsCommandOnDefaultAddress: events without --dashboard and
// --key reaches a serve on the README's default addresses, with the
// operator key serve read from MINIAPP_HOST_OPERATOR_KEY.
func TestEventsCommandOnDefaultAddress(t *testing.T) {
	for _, a := range []string{authserver.DefaultServiceAddr, strings.TrimPrefix(defaultDashboardURL, "http://"), nextPort(authserver.DefaultServiceAddr, 2), nextPort(authserver.DefaultServiceAddr, 3)} {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			_, port, _ := net.SplitHostPort(a)
			p, _ := strconv.Atoi(port)
			t.Skipf("the default address %s is taken by %s: this test needs serve's defaults free", a, portHolder(p))
		}
		ln.Close()
	}
	issuer, dash, _ := serveForEvents(t)
	if dash != defaultDashboardURL {
		t.Fatalf("serve's default dashboard_url is %s, events' default %s", dash, defaultDashboardURL)
	}
	stored(t, dash, func() { refuse(t, issuer, "https://default.example/cb") })
	getenv := func(k string) string {
		if k == operatorKeyEnv {
			return fixedOperatorKey
		}
		return ""
	}
	var out, errs syncBuffer
	code := run(context.Background(), env{args: []string{"events", "--kind", "request.refused"}, stdout: &out, stderr: &errs, getenv: getenv})
	if code != exitOK || !strings.Contains(out.String(), "sent=https://default.example/cb") {
		t.Fatalf("events on the defaults: exit %d: %s %s", code, out.String(), errs.String())
	}
}

// TestEventsFollow: events --follow (the real binary) prints an event
// recorded after it started, and exits 0 on SIGINT.
func TestEventsFollow(t *testing.T) {
	issuer, dash, _ := serveForEvents(t, "--addr", "127.0.0.1:0")
	cmd := exec.Command(os.Args[0], "events", "--follow", "--json", "--kind", "request.refused", "--dashboard", dash)
	cmd.Env = childEnv(operatorKeyEnv + "=" + fixedOperatorKey)
	out := newLineLog()
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(ended) }()
	t.Cleanup(func() {
		select {
		case <-ended:
		default:
			cmd.Process.Kill()
			<-ended
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The first refusal is printed by the listing or by the stream; once
	// it is, the listing is done, so the second comes by the stream.
	refuse(t, issuer, "https://before.example/cb")
	out.wait(t, ctx, ended, "the first refusal", func(l string) bool { return strings.Contains(l, "https://before.example/cb") })
	refuse(t, issuer, "https://after.example/cb")
	line := out.wait(t, ctx, ended, "the second refusal", func(l string) bool { return strings.Contains(l, "https://after.example/cb") })
	if !strings.Contains(line, `"kind":"request.refused"`) {
		t.Fatalf("not an event's JSON: %s", line)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-ended
	if waitErr != nil {
		t.Fatalf("events --follow after SIGINT: %v (want exit 0): %s", waitErr, stderr.String())
	}
}

// TestEventsCommandErrors: bad flags are usage errors (exit 2) saying
// what to fix; an unreachable dashboard is exit 3 with how to reach it.
func TestEventsCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"events", "--kind", "nope"}, `--kind: unknown kind "nope"; use one or more of signin.started`},
		{[]string{"events", "--limit", "0"}, "--limit 0: give 1 to 1000"},
		{[]string{"events", "--limit", "x"}, `invalid value "x" for flag -limit`},
		{[]string{"events", "extra"}, `takes no argument, got "extra"`},
		{[]string{"events", "--dashboard", "ftp://x"}, `--dashboard "ftp://x": give the dashboard's http(s) URL`},
		{[]string{"events", "--frob"}, "flag provided but not defined: -frob"},
		{[]string{"serve", "--log-format", "xml"}, `--log-format "xml": use text or json`},
		{[]string{"serve", "--log-level", "loud"}, `--log-level "loud": use debug, info, warn or error`},
		{[]string{"serve", "--events-keep", "0"}, "--events-keep 0: give how many audit events to keep, 1 or more"},
		{[]string{"playground", "--no-window", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0", "--log-format", "yaml"}, `--log-format "yaml": use text or json`},
		{[]string{"dev", "--no-window", "--log-level", "verbose", "."}, `--log-level "verbose": use debug, info, warn or error`},
	} {
		code, out, stderr := runCLI(t, "", tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, stderr, tc.want)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	code, _, stderr := runCLI(t, "", "events", "--dashboard", gone, "--key", "k")
	if code != exitUndecided || !strings.Contains(stderr, "is the server running?") || !strings.Contains(stderr, gone) {
		t.Fatalf("unreachable dashboard: exit %d %s", code, stderr)
	}
}

// TestServeLogsJSON: serve --log-format json writes each audit event as
// one JSON object on stderr, and no secret.
func TestServeLogsJSON(t *testing.T) {
	issuer, _, errs := serveForEvents(t, "--addr", "127.0.0.1:0", "--log-format", "json")
	refuse(t, issuer, "https://json.example/cb?code=SECRET-CODE-OF-THE-TEST")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	line := errs.wait(t, ctx, nil, "the refusal's log line", func(l string) bool { return strings.Contains(l, "json.example") })
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["msg"] != "audit event" || m["kind"] != "request.refused" || m["level"] != "INFO" {
		t.Fatalf("not a JSON audit line: %q (%v)", line, err)
	}
	if strings.Contains(errs.String(), "SECRET-CODE-OF-THE-TEST") {
		t.Fatalf("a code is in the log: %s", errs.String())
	}
}
