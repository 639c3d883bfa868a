package host_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/netshape"
)

// TestNetworkIsPerLaunch: a window starts no proxy until a launch has
// network conditions; then the engine's Miniapp views get the proxy's
// URL, a request through it gets the launch's mock answer (recorded in
// the launch's network log, injected), and the next launch, which names
// none, has none: its request reaches the server.
func TestNetworkIsPerLaunch(t *testing.T) {
	e := world(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "real")
	}))
	defer srv.Close()
	c := newCore(t, host.Options{NetworkLoopbackOnly: true})
	if err := c.w.Mount(t.Context(), publicApp(t, e)); err != nil {
		t.Fatal(err)
	}
	if p := c.eng.MiniappProxy(); p != "" {
		t.Fatalf("a launch without conditions set the proxy %q", p)
	}
	rules, err := netshape.ParseRules([]byte(`[{"url": "` + srv.URL + `/api/*", "status": 503, "body": "busy"}]`))
	if err != nil {
		t.Fatal(err)
	}
	nl := netlog.New(netlog.Config{})
	app := publicApp(t, e)
	app.NetLog = nl.BeginLaunch(e.Public.Origin, "demo-public", "demo-public")
	app.Network = netshape.Conditions{Mocks: rules}
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(c.eng.MiniappProxy())
	if err != nil || pu.Scheme != "socks5" || pu.User == nil || !strings.HasPrefix(pu.Host, "127.0.0.1:") {
		t.Fatalf("the views' proxy: %v, %v; want socks5 with a credential on 127.0.0.1", pu, err)
	}
	get := func() (int, string) {
		t.Helper()
		cl := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}}
		resp, err := cl.Get(srv.URL + "/api/orders")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get(); st != 503 || body != "busy" || hits.Load() != 0 {
		t.Errorf("under the launch's rule: %d %q (%d hits); want its 503", st, body, hits.Load())
	}
	flows := nl.Flows()
	if len(flows) != 1 {
		t.Fatalf("flows %+v; want the launch's network flow", flows)
	}
	x, _ := nl.Flow(flows[0].ID)
	if len(x.Entries) != 1 || x.Entries[0].Injected != netlog.InjectedMock || x.Entries[0].Response.Status != 503 {
		t.Errorf("entries %+v; want the injected 503", x.Entries)
	}
	if got := c.w.Network(); len(got.Mocks) != 1 {
		t.Errorf("Network() = %+v", got)
	}
	// The next launch names no conditions: it has none.
	if err := c.w.Mount(t.Context(), publicApp(t, e)); err != nil {
		t.Fatal(err)
	}
	if got := c.w.Network(); !got.IsZero() {
		t.Errorf("the next launch kept %+v", got)
	}
	if st, body := get(); st != 200 || body != "real" {
		t.Errorf("the next launch: %d %q; want the server's answer", st, body)
	}
	// A bad rule made in Go is refused, and changes nothing.
	if err := c.w.SetNetwork(context.Background(), netshape.Conditions{Mocks: []netshape.Rule{{URL: "ftp://x"}}}); err == nil || !strings.Contains(err.Error(), "/mocks/0/url") {
		t.Errorf("SetNetwork with a bad rule: %v", err)
	}
}

// TestNetworkProxyFromTheFirstLaunch: a window with
// Options.NetworkProxy (the playground's, open --automation's) puts its
// Miniapp views behind the proxy at the first launch, conditions or not,
// so that a later network.set changes no proxy setting of the views.
func TestNetworkProxyFromTheFirstLaunch(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{NetworkLoopbackOnly: true, NetworkProxy: true})
	if p := c.eng.MiniappProxy(); p != "" {
		t.Fatalf("before any launch: %q", p)
	}
	if err := c.w.Mount(t.Context(), publicApp(t, e)); err != nil {
		t.Fatal(err)
	}
	first := c.eng.MiniappProxy()
	if !strings.HasPrefix(first, "socks5://") {
		t.Fatalf("after the first launch: %q; want the proxy", first)
	}
	th, _ := netshape.ParseThrottle("slow-3g")
	if err := c.w.SetNetwork(t.Context(), netshape.Conditions{Throttle: th}); err != nil {
		t.Fatal(err)
	}
	if p := c.eng.MiniappProxy(); p != first {
		t.Errorf("network.set changed the views' proxy to %q", p)
	}
}

// TestOpenTakesItsNetwork: `open --network --mock` reaches the window:
// host.Open mounts the accepted Miniapp with OpenConfig.Network, so the
// Miniapp views go through the window's proxy.
func TestOpenTakesItsNetwork(t *testing.T) {
	srv, app := hosttest.StartServer(t)
	u := srv.URLs()
	th, err := netshape.ParseThrottle("slow-3g")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := netshape.ParseRules([]byte(`[{"url": "http://127.0.0.1:*/api/*", "status": 500}]`))
	if err != nil {
		t.Fatal(err)
	}
	var eng *hosttest.Engine
	rec := hosttest.NewRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- host.Open(ctx, hosttest.Factory(&eng), host.OpenConfig{Origin: app.Origin, ID: "demo-public", Dashboard: u.Dashboard,
			Service: u.Issuer, Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret,
			Ephemeral: true, OnEvent: rec.Add, Network: netshape.Conditions{Throttle: th, Mocks: rules}})
	}()
	rec.Wait(t, "the first page", func(e host.Event) bool {
		return e.Kind == host.EventLoadFinished && strings.HasPrefix(e.URL, app.Origin)
	})
	if p := eng.MiniappProxy(); !strings.HasPrefix(p, "socks5://") {
		t.Errorf("the Miniapp views' proxy %q; want the window's SOCKS5 proxy", p)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
