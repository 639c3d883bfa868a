//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
)

// dataPage serves a Miniapp page; /set also sets the server cookie srv
// (a day long), as a Miniapp's server does when it signs its user in.
func dataPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "srv", Value: "1", Path: "/", MaxAge: 86400, HttpOnly: true})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>data</title><p>data</p>")
	})
}

// seen is what a Miniapp's page and its view see of the data.
type seen struct {
	Cookie  string // document.cookie
	Storage string // localStorage "who", "" when unset
	Header  string // the Cookie header the view sends (HttpOnly included)
}

// readData reads what the Miniapp's view sees of the data at origin o.
func readData(t *testing.T, o string) seen {
	t.Helper()
	var s seen
	evalJSON(t, `({Cookie: document.cookie, Storage: localStorage.getItem("who") || ""})`, &s)
	h, err := testWin.Cookies(t.Context(), o+"/")
	if err != nil {
		t.Fatal(err)
	}
	s.Header = h
	return s
}

// TestMiniappDataIsolation mounts Miniapps one after another in the one
// window, as the playground launches them and as `open` opens the
// automation channel's: Miniapp A sets a server cookie, a script cookie
// and localStorage; Miniapp B, on the same origin with another manifest
// id, and Miniapp C, on another origin of the same host (cookies are kept
// by host, not by port), see none of it; A mounted again sees its own
// data; a reset of B leaves A's data alone (docs/host.md, "Each Miniapp's
// data").
func TestMiniappDataIsolation(t *testing.T) {
	e := testEnv(t)
	one, two := httptest.NewServer(dataPage()), httptest.NewServer(dataPage())
	defer one.Close()
	defer two.Close()
	rec := record(t)
	n := 0
	mount := func(o, id, path string) {
		t.Helper()
		n++
		load := fmt.Sprintf("%s%s?mount=%d", o, path, n)
		app := host.Miniapp{Name: id, Origin: o, ID: id, LoadURL: mustURL(t, load), Consent: e.Consent,
			Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{one.URL, two.URL}}}
		if err := testWin.Mount(t.Context(), app); err != nil {
			t.Fatal(err)
		}
		rec.Wait(t, id+" loaded", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == load })
	}

	mount(one.URL, "data-a", "/set")
	testWin.Eval(`document.cookie = "js=a; max-age=86400; path=/"; localStorage.setItem("who", "a");`)
	a := readData(t, one.URL)
	if a.Cookie != "js=a" || a.Storage != "a" || !strings.Contains(a.Header, "srv=1") || !strings.Contains(a.Header, "js=a") {
		t.Fatalf("Miniapp A sees %+v, want its cookies srv and js and its localStorage", a)
	}

	mount(one.URL, "data-b", "/")
	if b := readData(t, one.URL); b != (seen{}) {
		t.Errorf("Miniapp B (same origin, other id) sees %+v, want none of A's cookies or storage", b)
	}
	testWin.Eval(`document.cookie = "js=b; max-age=86400; path=/"; localStorage.setItem("who", "b");`)
	if b := readData(t, one.URL); b.Cookie != "js=b" || b.Storage != "b" {
		t.Fatalf("Miniapp B sees %+v after setting its own", b)
	}

	mount(two.URL, "data-c", "/")
	if c := readData(t, two.URL); c != (seen{}) {
		t.Errorf("Miniapp C (same host, other port) sees %+v, want none of A's or B's cookies", c)
	}

	mount(one.URL, "data-a", "/")
	if a := readData(t, one.URL); a.Cookie != "js=a" || a.Storage != "a" || !strings.Contains(a.Header, "srv=1") {
		t.Errorf("Miniapp A mounted again sees %+v, want its own cookies and storage back", a)
	}

	// A reset is of one Miniapp's data: B's, while A is mounted.
	if err := testWin.ForgetMiniapp(t.Context(), one.URL, "data-b"); err != nil {
		t.Fatal(err)
	}
	if a := readData(t, one.URL); a.Cookie != "js=a" || a.Storage != "a" {
		t.Errorf("after B's reset, Miniapp A sees %+v, want its data kept", a)
	}
	mount(one.URL, "data-b", "/")
	if b := readData(t, one.URL); b != (seen{}) {
		t.Errorf("after its reset, Miniapp B sees %+v, want nothing", b)
	}
}

// TestOpenDataPerMiniapp is `miniapp-host open` with its automation
// channel, in a process of its own with the data kept on disk: Miniapp A
// sets a cookie and localStorage; the channel's open of Miniapp B (another
// origin on the same host) sees neither, and has a data folder of its own;
// the channel's open of A again sees both. A second `open` of A, a new
// process, finds its persistent cookie: docs/host.md promises cookies kept
// across runs in the Miniapp's folder.
func TestOpenDataPerMiniapp(t *testing.T) {
	srv, appA := hosttest.StartServer(t)
	u := srv.URLs()
	appB := hosttest.StartPublic(t, srv, "demo-public-b")
	root := t.TempDir()
	cfg := childConfig{Origin: appA.Origin, ID: "demo-public", Dashboard: u.Dashboard, Service: u.Issuer, Subject: "sub_ana",
		HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret, DataRoot: root, Automation: true}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	c, stop := startOpenAutomation(t, cfg)
	// The channel answers open once the load is issued: wait for the page
	// of o to have loaded.
	loaded := func(view, o string) {
		t.Helper()
		for {
			raw, err := c.Eval(ctx, view, `location.origin + " " + document.readyState`)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) == `"`+o+` complete"` {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the page of %s never loaded (last %s)", o, raw)
			}
		}
	}
	read := func(view, o string) seen {
		t.Helper()
		loaded(view, o)
		raw, err := c.Eval(ctx, view, `JSON.stringify({Cookie: document.cookie, Storage: localStorage.getItem("who") || ""})`)
		if err != nil {
			t.Fatal(err)
		}
		var js string
		var s seen
		if err := json.Unmarshal(raw, &js); err != nil || json.Unmarshal([]byte(js), &s) != nil {
			t.Fatalf("eval: %s: %v", raw, err)
		}
		return s
	}
	loaded("", appA.Origin)
	if _, err := c.Eval(ctx, "", `document.cookie = "js=a; max-age=86400; path=/"; localStorage.setItem("who", "a"); ""`); err != nil {
		t.Fatal(err)
	}
	if a := read("", appA.Origin); a.Cookie != "js=a" || a.Storage != "a" {
		t.Fatalf("Miniapp A sees %+v, want its cookie and localStorage", a)
	}
	view, err := c.Open(ctx, appB.Origin, "demo-public-b")
	if err != nil {
		t.Fatal(err)
	}
	if b := read(view, appB.Origin); b != (seen{}) {
		t.Errorf("Miniapp B, opened through the channel, sees %+v, want none of A's data", b)
	}
	view, err = c.Open(ctx, appA.Origin, "demo-public")
	if err != nil {
		t.Fatal(err)
	}
	if a := read(view, appA.Origin); a.Cookie != "js=a" || a.Storage != "a" {
		t.Errorf("Miniapp A, opened again through the channel, sees %+v, want its own data", a)
	}
	for _, app := range []struct{ origin, id string }{{appA.Origin, "demo-public"}, {appB.Origin, "demo-public-b"}} {
		if _, err := os.Stat(filepath.Join(host.MiniappDir(root, app.origin, app.id), "cookies.sqlite")); err != nil {
			t.Errorf("the data folder of %s: %v", app.origin, err)
		}
	}
	stop()

	// A new process: A's cookie was kept in its folder.
	c, stop = startOpenAutomation(t, cfg)
	if a := read("", appA.Origin); a.Cookie != "js=a" {
		t.Errorf("Miniapp A in a new open process sees %+v, want its persistent cookie", a)
	}
	stop()
}

// startOpenAutomation starts an `open` child with its automation channel
// and connects to it; stop ends the process (SIGTERM) and waits for it.
func startOpenAutomation(t *testing.T, cfg childConfig) (*client.Client, func()) {
	t.Helper()
	cmd := openChild(t, cfg)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{w} // fd 3: the channel's URL and token
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	type read struct {
		raw []byte
		err error
	}
	got := make(chan read, 1)
	go func() {
		raw, err := io.ReadAll(r)
		r.Close()
		got <- read{raw, err}
	}()
	var rd read
	select {
	case rd = <-got:
	case <-time.After(time.Minute):
		stop()
		t.Fatalf("open wrote no automation channel address within a minute:\n%s", stderr.String())
	}
	var info host.AutomationInfo
	if rd.err != nil || json.Unmarshal(rd.raw, &info) != nil {
		stop()
		t.Fatalf("the automation channel's address: %q %v\n%s", rd.raw, rd.err, stderr.String())
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, info.URL, info.Token)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, func() { c.Close(); stop() }
}

// TestReplacedViewsAreFreed launches Miniapps one after another, as a
// developer does in the playground for hours: each launch of another
// Miniapp replaces the window's Miniapp view (UseData), and the replaced
// view must be freed with every widget it holds, its internal ones
// included, not kept by a reference the window or WebKit forgot (each kept
// one stayed in this process: the host's memory grew with every launch).
func TestReplacedViewsAreFreed(t *testing.T) {
	e := testEnv(t)
	srv := httptest.NewServer(dataPage())
	defer srv.Close()
	rec := record(t)
	const launches = 8
	for n := range launches {
		id := fmt.Sprintf("views-%d", n%2)
		load := fmt.Sprintf("%s/?launch=%d", srv.URL, n)
		app := host.Miniapp{Name: id, Origin: srv.URL, ID: id, LoadURL: mustURL(t, load), Consent: e.Consent,
			Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{srv.URL}}}
		if err := testWin.Mount(t.Context(), app); err != nil {
			t.Fatal(err)
		}
		rec.Wait(t, id+" loaded", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == load })
		// What the soak and a developer's tools do with a page.
		var title string
		evalJSON(t, `document.title`, &title)
	}
	type alive struct{ views, children, current int }
	var got alive
	live := func() bool {
		n := make(chan alive, 1)
		testEng.Dispatch(func() {
			v, c, cur := testEng.liveMiniappViews()
			n <- alive{v, c, cur}
		})
		got = <-n
		return got.views == 1 && got.children == got.current
	}
	// Freed when the last reference goes, which an answer of WebKit's
	// still on its way may hold a moment.
	deadline := time.Now().Add(10 * time.Second)
	for !live() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !live() {
		t.Fatalf("after %d launches: %d Miniapp views alive with %d child widgets, want the window's one with its own %d",
			launches, got.views, got.children, got.current)
	}
}
