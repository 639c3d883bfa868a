package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/devclient"
	"github.com/miniapp-host/miniapp-host/host/webkitgtk"
	"github.com/miniapp-host/miniapp-host/playground"
	"github.com/miniapp-host/miniapp-host/webdriverfront"
)

// soakMinutesEnv makes TestWebDriverFrontSoak run rounds for that many
// minutes (the front is something users keep open for hours); without it
// the test runs a few rounds, as `make test` does.
const soakMinutesEnv = "WEBDRIVER_SOAK_MINUTES"

// privateRig is a front in private mode (webdriverfront.NetworkPrivate)
// in this process, before the playground it serves. Every process it
// starts has marker in its environment, so that one left behind is found
// even once its parent is gone and it was given to init.
type privateRig struct {
	t      *testing.T
	ctx    context.Context
	p      *playground.Playground
	f      *webdriverfront.Front
	wd     wdClient
	log    *syncWriter
	marker string
	origin string

	mu      sync.Mutex
	most    int // processes of the rig's sessions seen at once
	mostFDs int // this process's descriptors seen at once
}

// sample notes how many processes and descriptors the rig has now.
func (r *privateRig) sample(t *testing.T) {
	procs := len(markedProcesses(t, r.marker))
	fds := len(openFiles(t))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.most, r.mostFDs = max(r.most, procs), max(r.mostFDs, fds)
}

func newPrivateRig(t *testing.T, ctx context.Context, demoID string) *privateRig {
	t.Helper()
	if !webkitgtk.Available {
		t.Fatal("this build has no WebKitGTK engine: build with cgo and WebKitGTK (make test)")
	}
	if err := webdriverfront.PrivateNetworkCheck("bwrap"); err != nil {
		t.Fatalf("a private network for the sessions: %v (scripts/deps.sh installs bubblewrap)", err)
	}
	driver, err := exec.LookPath("WebKitWebDriver")
	if err != nil {
		t.Fatalf("WebKitWebDriver is not installed (Debian package webkit2gtk-driver; scripts/deps.sh installs it): %v", err)
	}
	// Session folders go to a $TMPDIR of the test's own: other runs on
	// the machine make theirs in /tmp.
	tmp, err := os.MkdirTemp("", "wdrig")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	secret := randomSecret(t, "front-secret")
	p := startPlayground(t, ctx, secret)
	r := &privateRig{t: t, ctx: ctx, p: p, log: &syncWriter{}, marker: "MINIAPP_HOST_TEST_RIG=" + randomSecret(t, "rig"), origin: demo(t, ctx, p, demoID)}
	r.f, err = webdriverfront.New(webdriverfront.Config{Addr: "127.0.0.1:0", Driver: driver, Host: os.Args[0], Secret: secret, OperatorKey: p.OperatorKey(),
		Dashboard: p.Services().Dashboard, Service: p.Services().Issuer, Env: childEnv("XDG_DATA_HOME="+t.TempDir(), r.marker), Log: r.log,
		Network: webdriverfront.NetworkPrivate, Supervisor: []string{os.Args[0], "webdriver-session"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.f.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- r.f.Serve() }()
	t.Cleanup(func() {
		r.f.Close()
		<-served
		if t.Failed() {
			t.Logf("the front's log:\n%s", r.log.String())
		}
	})
	r.wd = wdClient{t: t, ctx: ctx, url: r.f.URL()}
	return r
}

// newSession makes a session of the rig's demo and returns its id.
func (r *privateRig) newSession(wd wdClient, demoID, subject string) string {
	wd.t.Helper()
	status, v := wd.do("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"webkitgtk:browserOptions": map[string]any{"args": []string{"open", "--webdriver", "--origin", r.origin, "--id", demoID,
			"--host-client", playground.HostClientID, "--ephemeral", "--subject", subject}},
		"timeouts": map[string]any{"pageLoad": 120000, "script": 120000},
	}}})
	var made struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(v, &made); status != 200 || made.SessionID == "" {
		wd.t.Fatalf("New Session: %d %s", status, v)
	}
	return made.SessionID
}

// soakSubject is the playground's second subject, added by a fixture
// (subjects), so that two sessions side by side each have a consent
// screen of their own to approve.
const soakSubject = "sub_soak_b"

// subjects adds soakSubject to the playground's service, beside the
// seed's sub_ana.
func (r *privateRig) subjects() {
	r.t.Helper()
	fx := `{"fixture": {"version": 1, "subjects": [{"id": "` + soakSubject + `", "profile": {"name": "Soak B"},
		"accounts": [{"id": "7a1c3e40-7d9f-4a01-9c2d-3e4f5a6b7c99", "name": "Cuenta corriente", "number": "00-900-00099-01", "currency": "CLP"}]}]}}`
	if _, err := r.control().Do(r.ctx, devclient.FixtureApply, json.RawMessage(fx)); err != nil {
		r.t.Fatalf("fixture.apply of %s: %v", soakSubject, err)
	}
}

func (r *privateRig) control() *devclient.Client {
	return &devclient.Client{Dashboard: r.p.Services().Dashboard, Key: r.p.OperatorKey()}
}

// forget makes the service forget every decision on the confidential
// demo, so that the next session's sign-in asks for consent again.
func (r *privateRig) forget(t *testing.T) {
	t.Helper()
	if _, err := r.control().Do(r.ctx, devclient.FixtureReset, json.RawMessage(`{"client_id": "demo-confidential"}`)); err != nil {
		t.Fatalf("fixture.reset of demo-confidential: %v", err)
	}
}

// round is one session's life, as subject: New Session of the
// confidential demo, Execute Script, its consent approved through the
// front's extension command, the signed-in page, Delete Session, and then
// the session is gone.
func (r *privateRig) round(t *testing.T, subject string) {
	t.Helper()
	wd := wdClient{t: t, ctx: r.ctx, url: r.f.URL()}
	sid := r.newSession(wd, "demo-confidential", subject)
	if status, v := wd.script(sid, `return "alive " + (6*7)`); status != 200 || v != "alive 42" {
		t.Fatalf("Execute Script: %d %q", status, v)
	}
	r.sample(t)
	r.signIn(wd, sid)
	if status, v := wd.do("DELETE", "/session/"+sid, nil); status != 200 || string(v) != "null" {
		t.Fatalf("Delete Session: %d %s", status, v)
	}
	if status, v := wd.do("GET", "/session/"+sid+"/url", nil); status != 404 {
		t.Fatalf("a command of the deleted session: %d %s, want 404 invalid session id", status, v)
	}
}

// signIn approves the consent screen of session sid through the front's
// extension command and waits for the demo's signed-in page.
func (r *privateRig) signIn(wd wdClient, sid string) {
	t := wd.t
	t.Helper()
	consent := "/session/" + sid + "/miniapp-host/consent"
	wd.until("the consent screen", "GET", consent, nil, func(s int, _ json.RawMessage) bool { return s == 200 })
	if status, v := wd.do("POST", consent+"/approve", map[string]any{}); status != 200 || string(v) != `{"decision":"approved"}` {
		t.Fatalf("approve: %d %s", status, v)
	}
	wd.until("the signed-in page", "POST", "/session/"+sid+"/execute/sync",
		map[string]any{"script": `return location.href + " " + document.body.dataset.signedIn`, "args": []any{}},
		func(s int, v json.RawMessage) bool { return s == 200 && string(v) == strconv.Quote(r.origin+"/ true") })
}

// leftovers is what the rig's ended sessions may not leave: processes
// (bwrap, webdriver-session, the host, WebKitWebDriver, WebKit's), found
// both as this process's descendants and by the rig's marker, and session
// folders in $TMPDIR.
func (r *privateRig) leftovers(t *testing.T) (procs, folders []string) {
	t.Helper()
	procs = descendants(t, os.Getpid())
	for _, p := range markedProcesses(t, r.marker) {
		if !slices.Contains(procs, p) {
			procs = append(procs, p)
		}
	}
	folders, err := filepath.Glob(filepath.Join(os.TempDir(), "miniapp-host-webdriver-*"))
	if err != nil {
		t.Fatal(err)
	}
	return procs, folders
}

// descendants lists the processes under pid as "PID NAME".
func descendants(t *testing.T, pid int) []string {
	t.Helper()
	children := processChildren(t)
	var out []string
	queue := slices.Clone(children[pid])
	for len(queue) > 0 {
		p := queue[0]
		queue = append(queue[1:], children[p]...)
		out = append(out, procName(p))
	}
	return out
}

// markedProcesses lists the processes whose environment holds marker.
func markedProcesses(t *testing.T, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(raw), "\x00"), marker) {
			out = append(out, procName(p))
		}
	}
	return out
}

func procName(pid int) string {
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	state := ""
	if i := bytes.LastIndexByte(stat, ')'); i > 0 {
		if f := strings.Fields(string(stat[i+1:])); len(f) > 0 {
			state = " " + f[0]
		}
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	name := filepath.Base(args[0])
	if len(args) > 1 {
		name += " " + args[1]
	}
	return fmt.Sprintf("%d %s%s", pid, name, state)
}

// openFiles lists this process's descriptors that are the front's
// concern, as what each names: pipes, sockets, devices, and anything in a
// session folder. The regular files of the playground (in this process
// too: its database, whose pool opens a connection when it needs one)
// are not.
func openFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && (!strings.HasPrefix(l, "/") || strings.HasPrefix(l, "/dev/") || strings.Contains(l, "miniapp-host-webdriver-")) {
			out = append(out, e.Name()+" "+l)
		}
	}
	return out
}

// settle waits until no session of the rig is running and nothing of
// theirs is left: no process, no folder, and (when fds > 0) this
// process's descriptors back to fds (connections a session's end closes
// close on the far side's goroutines a moment later). It fails naming what
// is left after a bound well past any of it.
func (r *privateRig) settle(t *testing.T, what string, fds int, baseline []string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		procs, folders := r.leftovers(t)
		open := openFiles(t)
		ids := r.f.Sessions()
		if len(procs) == 0 && len(folders) == 0 && len(ids) == 0 && (fds == 0 || len(open) <= fds) {
			return
		}
		if time.Now().After(deadline) {
			var extra []string
			for _, o := range open {
				if !slices.Contains(baseline, o) {
					extra = append(extra, o)
				}
			}
			if fds == 0 {
				t.Fatalf("%s: left behind: sessions %q, processes %q, folders %q", what, ids, procs, folders)
			}
			t.Fatalf("%s: left behind: sessions %q, processes %q, folders %q, %d descriptors (want at most %d), new ones %q",
				what, ids, procs, folders, len(open), fds, extra)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebDriverFrontSoak uses one front in private mode as a user keeps
// it open: rounds of a session alone then two side by side, each a New
// Session of the confidential demo, Execute Script, its consent approved
// through the front, Delete Session. After each round no process or
// session folder of an ended session is left and the front's process
// (this one) holds no more descriptors than after the first round. A few
// rounds by default; WEBDRIVER_SOAK_MINUTES=N runs rounds for N minutes
// (give go test a -timeout past it).
func TestWebDriverFrontSoak(t *testing.T) {
	minutes := 0.0
	if v := os.Getenv(soakMinutesEnv); v != "" {
		var err error
		if minutes, err = strconv.ParseFloat(v, 64); err != nil || minutes <= 0 {
			t.Fatalf("%s=%q: a number of minutes above 0", soakMinutesEnv, v)
		}
	}
	budget := 10 * time.Minute
	if minutes > 0 {
		budget = time.Duration(minutes*float64(time.Minute)) + 10*time.Minute
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()
	if folders, _ := filepath.Glob(filepath.Join(os.TempDir(), "miniapp-host-webdriver-*")); len(folders) > 0 {
		t.Logf("session folders of another run are in %s: %q", os.TempDir(), folders)
	}
	r := newPrivateRig(t, ctx, "demo-confidential")
	r.subjects()
	start := time.Now()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	baseline := openFiles(t)
	level := len(baseline)
	alone := func(t *testing.T) {
		r.forget(t)
		r.round(t, "sub_ana")
	}
	pair := func(t *testing.T) {
		r.forget(t)
		for _, subject := range []string{"sub_ana", soakSubject} {
			t.Run(subject, func(t *testing.T) {
				t.Parallel()
				r.round(t, subject)
			})
		}
	}
	rounds, sessions := 0, 0
	for i := 0; ; i++ {
		if minutes == 0 && i == 2 || minutes > 0 && time.Since(start) > time.Duration(minutes*float64(time.Minute)) {
			break
		}
		if !t.Run(fmt.Sprintf("alone-%d", i), alone) {
			break
		}
		r.settle(t, fmt.Sprintf("after round %d (alone)", i), level, baseline)
		if !t.Run(fmt.Sprintf("pair-%d", i), pair) {
			break
		}
		r.settle(t, fmt.Sprintf("after round %d (two side by side)", i), level, baseline)
		rounds += 2
		sessions += 3
		if minutes > 0 {
			t.Logf("soak: round %d done at %.1f minutes: %d sessions, %d descriptors", i, time.Since(start).Minutes(), sessions, len(openFiles(t)))
		}
	}
	procs, _ := r.leftovers(t)
	t.Logf("soak: %d rounds, %d sessions in %.1f minutes; descriptors %d before the first session, %d at the end; processes left %d; most at once: %d processes, %d descriptors",
		rounds, sessions, time.Since(start).Minutes(), level, len(openFiles(t)), len(procs), r.most, r.mostFDs)
}
