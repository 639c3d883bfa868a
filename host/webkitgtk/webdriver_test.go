//go:build linux && cgo

package webkitgtk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tebeka/selenium"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/playground"
)

// webdriverChildEnv makes the test binary what WebKitWebDriver starts from
// a session's webkitgtk:browserOptions: `miniapp-host open --webdriver`
// with the arguments the capabilities carry (the driver passes its
// environment on), without building the command.
const webdriverChildEnv = "MINIAPP_HOST_WEBDRIVER_CHILD"

// runWebDriverChild runs Open as `miniapp-host open --webdriver -v` does
// (cmd/miniapp-host/open.go), from the arguments WebKitWebDriver passed.
func runWebDriverChild(args []string) int {
	if len(args) == 0 || args[0] != "open" {
		fmt.Fprintf(os.Stderr, "webdriver child: want the arguments of open, got %q\n", args)
		return 2
	}
	fs := flag.NewFlagSet("open", flag.ContinueOnError)
	secrets, err := host.TakeSecretEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webdriver child:", err)
		return 2
	}
	cfg := host.OpenConfig{Log: os.Stderr, HostVersion: "test", HostClientID: playground.HostClientID,
		HostSecret: secrets[host.HostSecretEnv], Automation: true}
	fs.StringVar(&cfg.Origin, "origin", "", "")
	fs.StringVar(&cfg.ID, "id", "", "")
	fs.StringVar(&cfg.Dashboard, "dashboard", "", "")
	fs.StringVar(&cfg.Service, "service", "", "")
	fs.StringVar(&cfg.Subject, "subject", "sub_ana", "")
	fs.BoolVar(&cfg.Ephemeral, "ephemeral", false, "")
	fs.BoolVar(&cfg.WebDriver, "webdriver", false, "")
	fs.StringVar(&cfg.AutomationFile, "automation-file", "", "")
	verbose := fs.Bool("v", false, "")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *verbose {
		cfg.OnEvent = func(ev host.Event) {
			// The line `miniapp-host open -v` prints (host.Event.String).
			fmt.Fprintf(os.Stderr, "event %s\n", ev)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := host.Open(ctx, New, cfg); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "webdriver child:", err)
		return 1
	}
	return 0
}

// lineLog keeps every line a process writes, for tests that wait for one.
type lineLog struct {
	mu      sync.Mutex // guards below
	lines   []string
	closed  bool
	changed chan struct{} // closed and replaced at each line
}

func newLineLog(r io.Reader) *lineLog {
	l := &lineLog{changed: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.closed = true
		close(l.changed)
		l.mu.Unlock()
	}()
	return l
}

// wait returns the first line at or after index from that match does, and
// the index after it.
func (l *lineLog) wait(t *testing.T, ctx context.Context, what string, from int, match func(string) bool) (string, int) {
	t.Helper()
	for {
		l.mu.Lock()
		for i := from; i < len(l.lines); i++ {
			if match(l.lines[i]) {
				line := l.lines[i]
				l.mu.Unlock()
				return line, i + 1
			}
		}
		from = len(l.lines)
		closed, changed := l.closed, l.changed
		l.mu.Unlock()
		if closed {
			t.Fatalf("the driver's output ended before %s:\n%s", what, l.String())
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v\n%s", what, ctx.Err(), l.String())
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// eventLine matches the line `open -v` (runWebDriverChild) prints of the
// event of kind with that URL and detail ("" for none): "event " and
// host.Event.String.
func eventLine(kind host.EventKind, url, detail string) func(string) bool {
	want := "event " + host.Event{Kind: kind, URL: url, Detail: detail}.String()
	return func(l string) bool { return l == want }
}

// webDriver is a WebKitWebDriver process on a free loopback port, with
// its output (and that of the hosts it starts) in log.
type webDriver struct {
	url string
	log *lineLog
}

// startWebDriver starts WebKitWebDriver with env added to its environment,
// which it passes on to the host it starts, and waits until it answers.
func startWebDriver(t *testing.T, ctx context.Context, env ...string) *webDriver {
	t.Helper()
	bin, err := exec.LookPath("WebKitWebDriver")
	if err != nil {
		t.Fatalf("WebKitWebDriver is not installed (Debian package webkit2gtk-driver; scripts/deps.sh installs it): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, fmt.Sprintf("--port=%d", port))
	cmd.Env = append(os.Environ(), append([]string{webdriverChildEnv + "=1", "WEBKIT_DISABLE_COMPOSITING_MODE=1"}, env...)...)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	d := &webDriver{url: fmt.Sprintf("http://127.0.0.1:%d", port), log: newLineLog(r)}
	t.Cleanup(func() {
		// The driver ends the hosts it started when it ends.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		r.Close()
	})
	// WebKitWebDriver says nothing when it listens: ask its status
	// until it answers.
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.url+"/status", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			return d
		}
		if ctx.Err() != nil {
			t.Fatalf("WebKitWebDriver never answered on %s: %v\n%s", d.url, err, d.log)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// newSession asks the driver for a session whose browser is
// `miniapp-host open --webdriver ARGS` (this test binary in that role), as
// docs/webdriver.md writes the capabilities, and says how long it took.
func (d *webDriver) newSession(t *testing.T, args ...string) (selenium.WebDriver, time.Duration) {
	t.Helper()
	caps := selenium.Capabilities{"webkitgtk:browserOptions": map[string]any{
		"binary": os.Args[0],
		"args":   append([]string{"open", "--webdriver"}, args...),
	}}
	start := time.Now()
	wd, err := selenium.NewRemote(caps, d.url)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("new session: %v\n%s", err, d.log)
	}
	return wd, took
}

// TestWebDriver drives the host with a W3C WebDriver client
// (github.com/tebeka/selenium) through WebKitWebDriver, the host being
// what a session's capabilities start: `open --webdriver` of the
// playground's confidential demo, with the host secret the playground was
// given in MINIAPP_HOST_SECRET. The first consent is denied and the second
// approved through the automation channel (the consent screen is the
// host's own view, outside the session: docs/webdriver.md); the Miniapp is
// clicked, typed into, scripted, its cookies read and its window
// captured through WebDriver. A broken Miniapp's session opens on the
// rejection, with its stage and code. Against a WebKitGTK 4.0 build, the
// driver (built on 4.1) refuses element clicks and keys: the test asserts
// that refusal and clicks through a script instead.
func TestWebDriver(t *testing.T) {
	const secret = "webdriver-test-host-secret"
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	// A session that never starts must fail the test, not hang it.
	selenium.HTTPClient = &http.Client{Timeout: 3 * time.Minute}
	p, err := playground.Start(ctx, playground.Config{HostSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("playground: close: %v", err)
		}
	})
	if id, s := p.HostCredential(); id != playground.HostClientID || s != secret {
		t.Fatalf("the playground's host credential is %s/%s, want the one it was given", id, s)
	}
	svc := p.Services()
	common := []string{"--dashboard", svc.Dashboard, "--service", svc.Issuer, "--ephemeral", "-v"}

	t.Run("confidential demo", func(t *testing.T) {
		d := startWebDriver(t, ctx, "MINIAPP_HOST_SECRET="+secret)
		origin := entryOrigin(t, p, playground.DemoConfidentialID)
		autoFile := filepath.Join(t.TempDir(), "automation.json")
		wd, ready := d.newSession(t, append([]string{"--origin", origin, "--id", playground.DemoConfidentialID,
			"--automation-file", autoFile}, common...)...)
		defer wd.Quit()

		// The automation channel, as the host printed it and wrote it
		// to --automation-file before its window could take a session.
		line, _ := d.log.wait(t, ctx, "the automation channel's address", 0, func(l string) bool {
			return strings.HasPrefix(l, "open: automation channel ")
		})
		var info host.AutomationInfo
		if raw, err := os.ReadFile(autoFile); err != nil {
			t.Fatal(err)
		} else if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatalf("automation file %s: %v", raw, err)
		}
		if want := "open: automation channel " + info.URL + " token " + info.Token; line != want {
			t.Fatalf("the automation file says %+v, stderr %q", info, line)
		}
		if fi, err := os.Stat(autoFile); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("automation file mode %v (%v), want 0600: it holds the token", fi.Mode(), err)
		}
		c, err := client.Dial(ctx, info.URL, info.Token)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		// The host loaded auth_url in the session's view; the demo
		// redirected to the service and the consent screen shows. It is
		// denied: the demo's page says so, with its Sign in link.
		_, at := d.log.wait(t, ctx, "the first consent screen", 0, eventLine(host.EventHostShown, "", "consent"))
		if err := c.Deny(ctx, ""); err != nil {
			t.Fatal(err)
		}
		// The channel's events from here on follow the denial (the
		// first screen's consent.shown may have come before the client).
		ev, err := c.WaitFor(ctx, client.Kind("consent.decided"))
		if err != nil {
			t.Fatal(err)
		}
		var decided bridge.ConsentDecidedEvent
		if err := ev.Decode(&decided); err != nil || decided.Decision != bridge.ConsentDenied {
			t.Fatalf("consent.decided %+v (%v), want denied", decided, err)
		}
		_, at = d.log.wait(t, ctx, "the denied page", at, eventLine(host.EventLoadFinished, origin+"/?error=access_denied", ""))
		if u, err := wd.CurrentURL(); err != nil || u != origin+"/?error=access_denied" {
			t.Fatalf("current URL %q (%v), want the demo's denied page", u, err)
		}
		status, err := wd.FindElement(selenium.ByCSSSelector, "#status")
		if err != nil {
			t.Fatal(err)
		}
		if txt, err := status.Text(); err != nil || !strings.Contains(txt, "Not signed in (access_denied)") {
			t.Errorf("status %q (%v), want the denial", txt, err)
		}

		// Typing reaches the page: a field the test adds, since the demo
		// has none.
		if _, err := wd.ExecuteScript(`const i = document.createElement("input"); i.id = "qa"; document.body.append(i);`, nil); err != nil {
			t.Fatal(err)
		}
		field, err := wd.FindElement(selenium.ByCSSSelector, "#qa")
		if err != nil {
			t.Fatal(err)
		}
		signin, err := wd.FindElement(selenium.ByCSSSelector, "#signin")
		if err != nil {
			t.Fatal(err)
		}
		if API() == "4.1" {
			if err := field.SendKeys("typed by WebDriver"); err != nil {
				t.Fatal(err)
			}
			if v, err := wd.ExecuteScript(`return arguments[0].value`, []any{field}); err != nil || v != "typed by WebDriver" {
				t.Errorf("the field holds %q (%v) after send keys", v, err)
			}
			if err := signin.Click(); err != nil {
				t.Fatal(err)
			}
		} else {
			// docs/webdriver.md, "Limits": WebKitWebDriver is built on
			// 4.1 and drives no input into a 4.0 host.
			for what, err := range map[string]error{"send keys": field.SendKeys("x"), "click": signin.Click()} {
				if err == nil || !strings.Contains(err.Error(), "unsupported operation") {
					t.Errorf("%s against a WebKitGTK 4.0 host: %v, want unsupported operation (docs/webdriver.md is wrong)", what, err)
				}
			}
			if _, err := wd.ExecuteScript(`arguments[0].click()`, []any{signin}); err != nil {
				t.Fatal(err)
			}
		}

		// Sign in led to the service: the consent screen again, read
		// from the channel, and approved there.
		ev, err = c.WaitFor(ctx, client.Kind("consent.shown"))
		if err != nil {
			t.Fatal(err)
		}
		var shown bridge.ConsentShownEvent
		if err := ev.Decode(&shown); err != nil {
			t.Fatal(err)
		}
		if shown.ClientID != playground.DemoConfidentialID || !slices.Contains(shown.Scopes, "openid") {
			t.Fatalf("consent model %+v: want the demo's client and its scopes", shown)
		}
		if err := c.Approve(ctx, "", ""); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"consent.decided", "code.issued", "cookies.synced"} {
			if _, err := c.WaitFor(ctx, client.Kind(k)); err != nil {
				t.Fatalf("waiting for %s: %v", k, err)
			}
		}
		d.log.wait(t, ctx, "the signed-in page", at, eventLine(host.EventLoadFinished, origin+"/", ""))
		if got, err := wd.ExecuteScript(`return document.body.dataset.signedIn`, nil); err != nil || got != "true" {
			t.Fatalf("signed in: %v (%v), want true", got, err)
		}
		status, err = wd.FindElement(selenium.ByCSSSelector, "#status")
		if err != nil {
			t.Fatal(err)
		}
		if txt, err := status.Text(); err != nil || !strings.HasPrefix(txt, "Signed in. Scope:") {
			t.Errorf("status %q (%v), want signed in", txt, err)
		}

		// The view is the host's Miniapp view, controlled by automation:
		// no service or shared workers (docs/host.md), and the host's
		// navigation policy decides what a script of the session starts.
		got, err := wd.ExecuteScript(`return [navigator.webdriver === true, typeof navigator.serviceWorker, typeof SharedWorker]`, nil)
		if fmt.Sprint(got) != "[true undefined undefined]" || err != nil {
			t.Errorf("webdriver, service worker, shared worker: %v (%v), want [true undefined undefined]", got, err)
		}
		if _, err := wd.ExecuteScript(`location.href = "data:text/html,not-here"`, nil); err != nil {
			t.Fatal(err)
		}
		ev, err = c.WaitFor(ctx, func(e client.Event) bool {
			var n bridge.NavigationEvent
			return e.Kind == "navigation" && e.Decode(&n) == nil && strings.HasPrefix(n.URL, "data:")
		})
		if err != nil {
			t.Fatal(err)
		}
		var nav bridge.NavigationEvent
		if err := ev.Decode(&nav); err != nil || nav.Decision != bridge.NavigationBlocked {
			t.Errorf("a data: navigation: %+v (%v), want blocked", nav, err)
		}
		if u, err := wd.CurrentURL(); err != nil || u != origin+"/" {
			t.Errorf("after a blocked navigation the session is on %q (%v)", u, err)
		}
		// The content filter stands between the session's page and the
		// authorization endpoint (docs/host.md, "What the view may not do").
		got, err = wd.ExecuteScriptAsync(`const done = arguments[arguments.length - 1];
			fetch(arguments[0], {mode: "no-cors"}).then(() => done("loaded"), (e) => done("blocked: " + e));`, []any{svc.Authorization})
		if s, _ := got.(string); err != nil || !strings.HasPrefix(s, "blocked") {
			t.Errorf("a fetch of the authorization endpoint from the session's page: %v (%v), want blocked", got, err)
		}
		// Navigate To inside the allowed origins loads as in a browser.
		if err := wd.Get(origin + "/?via=webdriver"); err != nil {
			t.Fatal(err)
		}
		if u, err := wd.CurrentURL(); err != nil || u != origin+"/?via=webdriver" {
			t.Errorf("after Navigate To the session is on %q (%v)", u, err)
		}

		// Cookies: WebDriver reads the session cookie the host copied
		// from the callback (HttpOnly: the page cannot), and a cookie it
		// adds is one the page sees.
		cookies, err := wd.GetCookies()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ck := range cookies {
			names = append(names, ck.Name)
		}
		if !slices.Contains(names, demoapps.SessionCookie) {
			t.Errorf("WebDriver reads cookies %q, want the demo's session cookie", names)
		}
		// tebeka/selenium sends expiry 0 (1970) unless told: a cookie
		// that would be expired at once.
		if err := wd.AddCookie(&selenium.Cookie{Name: "qa", Value: "webdriver", Path: "/",
			Expiry: uint(time.Now().Add(time.Hour).Unix())}); err != nil {
			t.Fatal(err)
		}
		// WebKit tells the web process of a new cookie asynchronously:
		// the next document sees it. The demo's signed-in page shows
		// what its scripts read of document.cookie.
		if err := wd.Refresh(); err != nil {
			t.Fatal(err)
		}
		seen, err := wd.FindElement(selenium.ByCSSSelector, "#cookies")
		if err != nil {
			t.Fatal(err)
		}
		if txt, err := seen.Text(); err != nil || txt != `"qa=webdriver"` {
			t.Errorf("the page's scripts read cookies %s (%v), want only the one WebDriver added", txt, err)
		}

		shot, err := wd.Screenshot()
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if b := img.Bounds(); b.Dx() < 200 || b.Dy() < 200 {
			t.Errorf("screenshot of %v, want the window's view", b)
		}
		dir := artifactDir(t)
		if err := os.MkdirAll(dir, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "webdriver-signed-in.png"), shot, 0o644)
		}

		// The round trip of a command: execute script, 20 times.
		var trips []time.Duration
		for i := 0; i < 20; i++ {
			start := time.Now()
			if _, err := wd.ExecuteScript(`return 1`, nil); err != nil {
				t.Fatal(err)
			}
			trips = append(trips, time.Since(start))
		}
		t.Logf("WebKitGTK %s: new session -> ready: %s; execute script round trip: %s", API(),
			ready.Round(time.Millisecond), stats(trips))
	})

	t.Run("rejected Miniapp", func(t *testing.T) {
		list, err := p.Miniapps(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var broken *playground.Entry
		for i := range list {
			if list[i].ID == playground.BrokenUnregistered {
				broken = &list[i]
			}
		}
		if broken == nil || broken.Expect == nil {
			t.Fatalf("the playground lists no %s with its expected rejection", playground.BrokenUnregistered)
		}
		d := startWebDriver(t, ctx, "MINIAPP_HOST_SECRET="+secret)
		wd, _ := d.newSession(t, append([]string{"--origin", broken.Origin, "--id", broken.ID}, common...)...)
		defer wd.Quit()
		d.log.wait(t, ctx, "the rejection in the Miniapp's view", 0, eventLine(host.EventLoadFinished, "about:blank", ""))
		text, err := wd.ExecuteScript(`return document.body.dataset.screen + "\n" + document.body.innerText`, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%s/%s", broken.Expect.Stage, broken.Expect.Code)
		if s, _ := text.(string); !strings.HasPrefix(s, "rejection\n") || !strings.Contains(s, want) {
			t.Errorf("the session's page says %q, want the rejection with %s", text, want)
		}
		if strings.Contains(d.log.String(), "event navigation allow "+broken.Origin) {
			t.Errorf("the rejected Miniapp was loaded:\n%s", d.log)
		}
	})
}
