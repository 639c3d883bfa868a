//go:build linux && cgo

package webkitgtk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/netshape"
	"github.com/miniapp-host/miniapp-host/playground"
)

// netApp is a Miniapp on a loopback server whose page the tests fetch
// from; the server counts what reaches it and the Proxy-Authorization
// headers it saw (none may reach it).
type netApp struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
	auth []string
}

func newNetApp(t *testing.T) (*netApp, host.Miniapp) {
	t.Helper()
	a := &netApp{hits: map[string]int{}}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.hits[r.URL.Path]++
		if v := r.Header.Get("Proxy-Authorization"); v != "" {
			a.auth = append(a.auth, v)
		}
		a.mu.Unlock()
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(make([]byte, 200_000))
		case "/api/orders":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"orders":["real"]}`)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><body>net test</body></html>`)
		}
	}))
	t.Cleanup(a.srv.Close)
	e := testEnv(t)
	app := host.Miniapp{Name: "net", LoadURL: mustURL(t, a.srv.URL+"/"), Consent: e.Consent,
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{a.srv.URL}}}
	t.Cleanup(func() {
		if err := testWin.SetNetwork(context.Background(), netshape.Conditions{}); err != nil {
			t.Error(err)
		}
	})
	return a, app
}

func (a *netApp) count(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[path]
}

// fetchJS fetches path from the page and leaves what it got, or the
// error's name, in window.__fetched as JSON.
func fetchJS(path string) string {
	return `window.__fetched = ""; (async () => { try { const r = await fetch(` + fmt.Sprintf("%q", path) + `, {cache: "no-store"});
	  const b = await r.text();
	  window.__fetched = JSON.stringify({status: r.status, body: b, retry: r.headers.get("Retry-After"), type: r.headers.get("Content-Type")});
	} catch (e) { window.__fetched = JSON.stringify({error: e.name}); } })(); null`
}

// awaitJS evaluates start, then waits (on the page's answers, up to
// 30 s) for window[name] to be a non-empty string, and returns it.
func awaitJS(t *testing.T, start, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := testWin.EvalResult(ctx, start); err != nil {
		t.Fatalf("eval: %v", err)
	}
	for {
		out, err := testWin.EvalResult(ctx, "window."+name+" || \"\"")
		if err != nil {
			t.Fatalf("eval: %v", err)
		}
		var s string
		if err := jsonUnmarshal(out, &s); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		if s != "" {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s within 30 s", name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type fetched struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Retry  string `json:"retry"`
	Type   string `json:"type"`
	Error  string `json:"error"`
}

// fetchFrom runs fetchJS in the Miniapp's page.
func fetchFrom(t *testing.T, path string) fetched {
	t.Helper()
	s := awaitJS(t, fetchJS(path), "__fetched")
	var f fetched
	if err := jsonUnmarshal(s, &f); err != nil {
		t.Fatalf("fetch %s: %q: %v", path, s, err)
	}
	return f
}

// TestNetworkMocksInTheView: a launch with a mock rule gets the rule's
// answer (status, headers, body) for its page's fetch() on a loopback
// server, which never sees the request; another path of the same server
// reaches it through the proxy, which the server never learns the
// credential of; the mocked answer is in the network log, marked
// injected.
func TestNetworkMocksInTheView(t *testing.T) {
	a, app := newNetApp(t)
	rules, err := netshape.ParseRules([]byte(`[{"method": "GET", "url": "http://127.0.0.1:*/api/orders*", "status": 503,
	  "headers": {"Retry-After": "7", "Content-Type": "application/json"}, "body": "{\"error\":\"busy\"}"}]`))
	if err != nil {
		t.Fatal(err)
	}
	nl := netlog.New(netlog.Config{})
	app.NetLog = nl.BeginLaunch(a.srv.URL, "net", "")
	app.Network = netshape.Conditions{Mocks: rules}
	mount(t, app)
	got := fetchFrom(t, "/api/orders?tab=open")
	if got.Status != 503 || got.Body != `{"error":"busy"}` || got.Retry != "7" || got.Type != "application/json" {
		t.Errorf("fetch = %+v; want the rule's 503", got)
	}
	if n := a.count("/api/orders"); n != 0 {
		t.Errorf("the server saw the mocked request %d times", n)
	}
	// The page itself came through the proxy, and so does a path no
	// rule names.
	if got := fetchFrom(t, "/other"); got.Status != 200 || !strings.Contains(got.Body, "net test") {
		t.Errorf("unmocked fetch = %+v", got)
	}
	a.mu.Lock()
	auth := a.auth
	a.mu.Unlock()
	if len(auth) != 0 {
		t.Errorf("the proxy's credential reached the server: %q", auth)
	}
	var injected int
	for _, f := range nl.Flows() {
		x, _ := nl.Flow(f.ID)
		for _, e := range x.Entries {
			if e.Injected == "mock" && e.Response != nil && e.Response.Status == 503 && strings.Contains(e.Request.URL, "/api/orders") {
				injected++
			}
		}
	}
	if injected != 1 {
		t.Errorf("%d injected entries of the mocked request in the network log; want 1: %+v", injected, nl.Flows())
	}
	// Cleared, the same fetch reaches the server.
	if err := testWin.SetNetwork(context.Background(), netshape.Conditions{}); err != nil {
		t.Fatal(err)
	}
	if got := fetchFrom(t, "/api/orders"); got.Status != 200 || got.Body != `{"orders":["real"]}` {
		t.Errorf("after clearing: %+v", got)
	}
}

// TestNetworkOfflineInTheView: offline makes the page's fetch() reject
// with a network error (TypeError), as DevTools' offline does, and the
// server sees nothing; back online, it answers.
func TestNetworkOfflineInTheView(t *testing.T) {
	a, app := newNetApp(t)
	mount(t, app)
	if err := testWin.SetNetwork(context.Background(), netshape.Conditions{Throttle: netshape.Presets["offline"]}); err != nil {
		t.Fatal(err)
	}
	before := a.count("/api/orders")
	if got := fetchFrom(t, "/api/orders"); got.Error != "TypeError" {
		t.Errorf("offline fetch = %+v; want a TypeError", got)
	}
	if n := a.count("/api/orders") - before; n != 0 {
		t.Errorf("offline: the server saw %d requests", n)
	}
	if err := testWin.SetNetwork(context.Background(), netshape.Conditions{}); err != nil {
		t.Fatal(err)
	}
	if got := fetchFrom(t, "/api/orders"); got.Status != 200 {
		t.Errorf("back online: %+v", got)
	}
}

// TestNetworkThrottlesTheView: a 200 kB body at 3200 kbit/s (400 kB/s)
// with 200 ms of latency takes the page at least the latency and the
// body's bytes at that rate (less one chunk): a lower bound only, which
// the shaping guarantees whatever the machine's load.
func TestNetworkThrottlesTheView(t *testing.T) {
	_, app := newNetApp(t)
	th, err := netshape.ParseThrottle("200ms/3200/0")
	if err != nil {
		t.Fatal(err)
	}
	mount(t, app)
	if err := testWin.SetNetwork(context.Background(), netshape.Conditions{Throttle: th}); err != nil {
		t.Fatal(err)
	}
	js := `window.__big = ""; (async () => { const t0 = performance.now(); const r = await fetch("/big", {cache: "no-store"});
	  const b = await r.arrayBuffer(); window.__big = JSON.stringify({n: b.byteLength, ms: performance.now() - t0}); })(); null`
	s := awaitJS(t, js, "__big")
	var got struct {
		N  int     `json:"n"`
		MS float64 `json:"ms"`
	}
	if err := jsonUnmarshal(s, &got); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	least := th.Latency + time.Duration(200_000-th.Down/20)*time.Second/time.Duration(th.Down)
	if got.N != 200_000 || time.Duration(got.MS*float64(time.Millisecond)) < least {
		t.Errorf("200 kB at %s: %d bytes in %.0f ms; at least %v", th, got.N, got.MS, least)
	}
}

// TestNetworkThroughTheAutomationClient: a QA suite sets the Miniapp
// view's mock rules and throttle with the Go client (network.set through
// the playground's channel), sees its page's fetch() get the rule's
// answer, gets a bad throttle or rule refused naming the field, and
// clears them (network.clear).
func TestNetworkThroughTheAutomationClient(t *testing.T) {
	a, app := newNetApp(t)
	pw := playground.NewWindow(testWin, "qa")
	bus := bridge.NewBus(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p, err := playground.Start(ctx, playground.Config{Opener: pw, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("playground: close: %v", err)
		}
		testWin.ShowPage(host.PageMiniapp)
	})
	c, err := client.Dial(ctx, p.AutomationURL(), p.AutomationToken())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The playground's window is behind the proxy from its first launch
	// (host.Options.NetworkProxy); this shared test window gets there
	// with a launch whose rule answers nothing the test asks.
	never, err := netshape.ParseRules([]byte(`[{"url": "http://127.0.0.1:1/never"}]`))
	if err != nil {
		t.Fatal(err)
	}
	app.Network = netshape.Conditions{Mocks: never}
	mount(t, app)
	res, err := c.SetNetwork(ctx, "100ms/0/0", []map[string]any{{"method": "GET", "url": a.srv.URL + "/api/*", "status": 418, "body": "teapot"}})
	if err != nil || res.Throttle != "100ms/0/0" || res.Mocks != 1 {
		t.Fatalf("network.set: %+v, %v", res, err)
	}
	if got := fetchFrom(t, "/api/orders"); got.Status != 418 || got.Body != "teapot" {
		t.Errorf("fetch under the client's rule: %+v", got)
	}
	var refused *client.Error
	for _, c2 := range []struct {
		throttle string
		mocks    any
		want     string
	}{
		{"slow-4g", nil, "throttle: network \"slow-4g\""},
		{"", []map[string]any{{"url": a.srv.URL + "/*", "status": 99}}, "/mocks/0/status"},
		{"", []map[string]any{{"url": a.srv.URL + "/*", "stauts": 500}}, "/mocks/0/stauts"},
		{"", map[string]any{"url": "x"}, "mocks must be an array"},
	} {
		_, err := c.SetNetwork(ctx, c2.throttle, c2.mocks)
		if !errors.As(err, &refused) || refused.Code != bridge.CodeInvalidParams || !strings.Contains(refused.Message, c2.want) {
			t.Errorf("network.set %q %v: %v; want invalid_params naming %s", c2.throttle, c2.mocks, err, c2.want)
		}
	}
	// A refused command changed nothing.
	if got := fetchFrom(t, "/api/orders"); got.Status != 418 {
		t.Errorf("after refused commands: %+v; want the rule still in force", got)
	}
	if err := c.ClearNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fetchFrom(t, "/api/orders"); got.Status != 200 || got.Body != `{"orders":["real"]}` {
		t.Errorf("after network.clear: %+v", got)
	}
}
