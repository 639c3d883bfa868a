package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/devapp"
	"github.com/miniapp-host/miniapp-host/playground"
)

// lineLog is a writer that keeps the lines written to it and wakes who
// waits for one: a test waits on the process's own output, never on a
// timer.
type lineLog struct {
	mu      sync.Mutex
	partial string
	lines   []string
	changed chan struct{} // closed and replaced at each new line
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial += string(p)
	for {
		line, rest, ok := strings.Cut(l.partial, "\n")
		if !ok {
			break
		}
		l.lines, l.partial = append(l.lines, line), rest
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + "\n" + l.partial
}

// wait returns the first line that match accepts, waiting for it until
// ctx ends or ended is closed (the process exited).
func (l *lineLog) wait(t *testing.T, ctx context.Context, ended <-chan struct{}, what string, match func(string) bool) string {
	t.Helper()
	for i := 0; ; {
		l.mu.Lock()
		for ; i < len(l.lines); i++ {
			if match(l.lines[i]) {
				line := l.lines[i]
				l.mu.Unlock()
				return line
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-ended:
			t.Fatalf("waiting for %s: the process ended:\n%s", what, l.String())
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v:\n%s", what, ctx.Err(), l.String())
		}
	}
}

// TestDevQuotesFileNames is the attacker's side of a file name chosen to
// drive the developer's terminal (docs/security.md): a file whose name
// holds an OSC 52 sequence (which writes the clipboard in many terminals)
// and a screen clear, saved in the folder `dev` watches, is printed
// Go-quoted; no ESC or BEL byte reaches the terminal.
func TestDevQuotesFileNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app")
	if _, err := devapp.New(dir, devapp.NewConfig{ID: "quote-app"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	out := newLineLog()
	var errs syncBuffer
	ended := make(chan struct{})
	code := -1
	go func() {
		defer close(ended)
		code = run(runCtx, env{args: []string{"dev", "--no-window", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0",
			dir}, stdout: out, stderr: &errs})
	}()
	t.Cleanup(func() { stop(); <-ended })
	out.wait(t, ctx, ended, "the first launch", func(l string) bool { return strings.HasPrefix(l, "launch   launch-1: accepted") })

	name := "\x1b]52;c;cHduZWQ=\x07\x1b[2Jx.js"
	if err := os.WriteFile(filepath.Join(dir, name), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	line := out.wait(t, ctx, ended, "the changed line", func(l string) bool { return strings.HasPrefix(l, "changed  ") })
	if want := "changed  " + strconv.Quote(name); line != want {
		t.Errorf("printed %q, want %q", line, want)
	}
	stop()
	<-ended
	if all := out.String() + errs.String(); strings.ContainsAny(all, "\x1b\x07") {
		t.Errorf("a control character reached the terminal:\n%q", all)
	}
	if code != exitOK {
		t.Errorf("dev exit %d: %s", code, errs.String())
	}
}

// TestNewThenDevOnDefaultPorts is the README's first commands as a new
// user types them, on the default ports (tests on free ports hid that
// `dev` served its folder on the FAPI demo's port): `new my-app`, then
// `dev my-app` with its window; the generated Miniapp signs in in the
// window (its Sign in button, the host's consent screen) and in a plain
// tab of headless Chromium (the service's own pages, config.json's
// issuer). It is the one test that binds the default ports (8600-8603,
// 8700-8709): it fails, naming the port and the process holding it, when
// one is taken. It needs a display (xvfb-run -a, as make test runs).
func TestNewThenDevOnDefaultPorts(t *testing.T) {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		t.Fatal("no display: run the test under xvfb-run -a (make test does)")
	}
	checkPortsFree(t, playground.DefaultAddrs())

	dir := filepath.Join(t.TempDir(), "my-app")
	var newOut, newErr syncBuffer
	if code := run(context.Background(), env{args: []string{"new", dir}, stdout: &newOut, stderr: &newErr}); code != exitOK {
		t.Fatalf("new: exit %d: %s", code, newErr.String())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	ready := filepath.Join(t.TempDir(), "ready.json")
	cmd := exec.Command(os.Args[0], "dev", "--ready-file", ready, dir)
	cmd.Env = childEnv("XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
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
	line := out.wait(t, ctx, ended, "the first launch", func(l string) bool { return strings.HasPrefix(l, "launch   launch-1: ") })
	if !strings.HasPrefix(line, "launch   launch-1: accepted") {
		t.Fatalf("dev's first launch: %s\n%s\n%s", line, out.String(), stderr.String())
	}
	var r devapp.Ready
	b, err := os.ReadFile(ready)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	def := playground.DefaultAddrs()
	if r.Origin != "http://"+def.Dev || r.Issuer != devapp.DefaultIssuer || r.ID != "my-app" {
		t.Fatalf("dev runs %s (issuer %s, id %s), want the default %s (issuer %s, id my-app)", r.Origin, r.Issuer, r.ID, def.Dev, devapp.DefaultIssuer)
	}

	t.Run("window", func(t *testing.T) { signInInWindow(t, ctx, r) })
	t.Run("browser tab", func(t *testing.T) { signInInTab(t, ctx, r) })

	// Ctrl-C ends dev cleanly.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
		if waitErr != nil {
			t.Errorf("dev after Ctrl-C: %v\n%s", waitErr, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("dev did not stop after Ctrl-C:\n%s", stderr.String())
	}
}

// signInInWindow signs the generated Miniapp in in the playground's window,
// through the automation channel: its Sign in button, the host's consent
// screen approved, the account shown.
func signInInWindow(t *testing.T, ctx context.Context, r devapp.Ready) {
	c, err := client.Dial(ctx, r.Automation.URL, r.Automation.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eval := func(script string) string {
		t.Helper()
		raw, err := c.Eval(ctx, "", script)
		if err != nil {
			t.Fatalf("eval %s: %v", script, err)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("eval %s: %s is not a string", script, raw)
		}
		return s
	}
	waitState := func(want string) {
		t.Helper()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			state := eval(`location.origin === ` + strconv.Quote(r.Origin) + ` ? (document.body && document.body.dataset.state) || "" : "elsewhere"`)
			if state == want {
				return
			}
			if state == "error" {
				t.Fatalf("the page's sign-in failed: %s", eval(`document.getElementById("error").textContent`))
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				t.Fatalf("the page's state is %q, want %q", state, want)
			}
		}
	}
	waitState("signed-out")
	eval(`document.getElementById("signin").click(), ""`)
	if _, err := c.WaitFor(ctx, client.Kind("consent.shown")); err != nil {
		t.Fatal(err)
	}
	if err := c.Approve(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	waitState("signed-in")
	if got := eval(`document.querySelector("#detail dd").textContent`); got == "" || got == "none chosen" {
		t.Errorf("the window's page shows accounts %q, want the one chosen", got)
	}
}

// signInInTab signs the generated Miniapp in in a plain tab of headless
// Chromium: the service's sign-in and consent pages, the code redeemed by
// the page at the issuer config.json names.
func signInInTab(t *testing.T, ctx context.Context, r devapp.Ready) {
	path := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("chromium is not installed: run scripts/deps.sh (Debian package chromium)")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1480, 1000))
	defer cancelAlloc()
	bctx, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	defer chromedp.Cancel(bctx)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	evalString := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	// poll waits until expr is true in the tab; an evaluation during a
	// navigation fails, and is made again at the next tick.
	poll := func(what, expr string) {
		t.Helper()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(time.Minute)
		var err error
		for {
			var ok bool
			if ok, err = chromedp.Run(bctx, chromedp.Evaluate[bool]("!!("+expr+")")); err == nil && ok {
				return
			}
			select {
			case <-tick.C:
			case <-deadline:
				page, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
				t.Fatalf("waiting for %s: timed out (last error: %v); the tab shows %s", what, err, page)
			}
		}
	}
	click := func(sel string) {
		t.Helper()
		do(chromedp.Click(chromedp.CSS(sel)))
	}
	do(chromedp.Navigate(r.Origin + "/"))
	poll("the page signed out", `document.body.dataset.state === "signed-out"`)
	click("#signin")
	back := `location.origin === ` + strconv.Quote(r.Origin) + ` && ["signed-in", "error"].includes(document.body.dataset.state)`
	poll("the sign-in or consent page", `document.querySelector('input[name=subject]') || document.querySelector('button[value=approve]')`)
	if evalString(`document.querySelector('input[name=subject]') !== null ? "login" : ""`) == "login" {
		click(`input[name=subject][value="sub_ana"]`)
		click(`button[name=action][value=login]`)
		// The consent given in the window is remembered by the service
		// (docs/authserver.md): the tab may come back without a screen.
		poll("the consent page or the Miniapp", `document.querySelector('button[value=approve]') !== null || (`+back+`)`)
	}
	if evalString(`document.querySelector('button[value=approve]') !== null ? "consent" : ""`) == "consent" {
		click(`button[name=action][value=approve]`)
	}
	poll("the page back", `location.origin === `+strconv.Quote(r.Origin)+` && ["signed-in", "error"].includes(document.body.dataset.state)`)
	if state := evalString(`document.body.dataset.state + ": " + document.getElementById("error").textContent`); state != "signed-in: " {
		t.Fatalf("the tab's sign-in ended %q", state)
	}
	if accounts := evalString(`(document.querySelector("#detail dd") || {}).textContent || ""`); accounts == "" || accounts == "none chosen" {
		t.Errorf("the tab shows accounts %q, want the one chosen", accounts)
	}
}

// checkPortsFree fails the test, naming the port, the part of the
// playground it is for and the process that holds it, when a port of
// addrs cannot be bound.
func checkPortsFree(t *testing.T, addrs playground.Addrs) {
	t.Helper()
	var taken []string
	for _, p := range addrs.Parts() {
		ln, err := net.Listen("tcp", p.Addr)
		if err != nil {
			_, port, _ := net.SplitHostPort(p.Addr)
			n, _ := strconv.Atoi(port)
			taken = append(taken, fmt.Sprintf("%s (%s) is taken by %s", p.Addr, p.Name, portHolder(n)))
			continue
		}
		ln.Close()
	}
	if len(taken) > 0 {
		t.Fatalf("this test runs dev on the default ports, and some are taken; stop what holds them:\n  %s", strings.Join(taken, "\n  "))
	}
}

// portHolder names the process listening on a local TCP port, from
// /proc/net/tcp{,6} (the socket's inode) and /proc/*/fd (who has it open).
func portHolder(port int) string {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, proc := range procs {
		fds, _ := os.ReadDir(filepath.Join(proc, "fd"))
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
			if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok && inodes[strings.TrimSuffix(inode, "]")] {
				cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
				return fmt.Sprintf("pid %s (%s)", filepath.Base(proc), strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
			}
		}
	}
	if len(inodes) > 0 {
		return fmt.Sprintf("a process of another user (`ss -ltnp 'sport = :%d'` as root names it)", port)
	}
	return fmt.Sprintf("another program (`ss -ltnp 'sport = :%d'` names it)", port)
}

var _ io.Writer = (*lineLog)(nil)

// TestStartHintNamesThePart: when a port of the layout is taken, the hint
// names the port and the part of the playground it was for.
func TestStartHintNamesThePart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = net.Listen("tcp", ln.Addr().String())
	if err == nil {
		t.Fatal("a second listener on a taken port")
	}
	addrs := playground.Layout("127.0.0.1:0", "127.0.0.1:"+strconv.Itoa(port-7))
	hint := startHint(fmt.Errorf("playground: demoapps: %w", err), addrs)
	if want := fmt.Sprintf("port %d (the FAPI demo) is taken", port); !strings.Contains(hint, want) || !strings.Contains(hint, "127.0.0.1:0") {
		t.Errorf("hint %q, want it to say %q and how to pick free ports", hint, want)
	}
}
