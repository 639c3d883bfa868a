package host_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/origin"
)

// The core's tests run the host's decisions against the real reference
// server and demo Miniapps on loopback, with the fake engine in place of
// WebKitGTK: no display, no cgo.

var (
	worldOnce sync.Once
	theWorld  *hosttest.World
	worldErr  error
)

func world(t *testing.T) *hosttest.World {
	t.Helper()
	worldOnce.Do(func() { theWorld, worldErr = hosttest.Start() })
	if worldErr != nil {
		t.Fatalf("world: %v", worldErr)
	}
	if err := theWorld.ForgetConsents(context.Background()); err != nil {
		t.Fatal(err)
	}
	return theWorld
}

func TestMain(m *testing.M) {
	code := m.Run()
	if theWorld != nil {
		theWorld.Close()
	}
	os.Exit(code)
}

// core is a window on the fake engine, running its UI loop, with a record
// of its events and of what it published.
type core struct {
	w   *host.Window
	eng *hosttest.Engine
	bus *busLog
	rec *hosttest.Recorder
}

func newCore(t *testing.T, opts host.Options) *core {
	t.Helper()
	c := &core{bus: &busLog{}, rec: hosttest.NewRecorder()}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Subject == "" {
		opts.Subject = "sub_ana"
	}
	if opts.Events == nil {
		opts.Events = c.bus
	}
	w, err := host.NewWindow(hosttest.Factory(&c.eng), opts)
	if err != nil {
		t.Fatal(err)
	}
	c.w = w
	w.OnEvent(c.rec.Add)
	ran := make(chan struct{})
	go func() { w.Run(); close(ran) }()
	t.Cleanup(func() { w.Terminate(); <-ran })
	return c
}

func kind(k host.EventKind) func(host.Event) bool { return hosttest.Kind(k) }

func shown(screen string) func(host.Event) bool {
	return func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == screen }
}

// busLog records what the window published for the automation channel.
type busLog struct {
	mu  sync.Mutex // guards evs
	evs []bridge.Event
}

func (b *busLog) Publish(e bridge.Event) {
	b.mu.Lock()
	b.evs = append(b.evs, e)
	b.mu.Unlock()
}

// all returns what was published so far.
func (b *busLog) all() []bridge.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]bridge.Event(nil), b.evs...)
}

func (b *busLog) kinds() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, e := range b.evs {
		out = append(out, e.Kind())
	}
	return out
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := origin.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// browse plays what WebKit does with a navigation of the Miniapp's view
// to u: the core decides it; an allowed one is fetched with the view's
// cookies, its Set-Cookie stored, and a redirect followed as a new,
// redirected navigation. It returns the last URL the view loaded, or "" when
// the core refused a navigation of the chain.
func browse(t *testing.T, eng *hosttest.Engine, u string) string {
	t.Helper()
	redirect := false
	for range 10 {
		if !eng.Navigate(host.ViewMiniapp, host.Navigation{URL: u, Method: "GET", Trigger: host.TriggerOther, Redirect: redirect}) {
			return ""
		}
		next := fetch(t, eng, u)
		if next == "" {
			return u
		}
		u, redirect = next, true
	}
	t.Fatalf("too many redirects at %s", u)
	return ""
}

// fetch GETs u with the fake view's cookies, stores what it sets and
// returns where it redirects ("" when it does not).
func fetch(t *testing.T, eng *hosttest.Engine, u string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := cookieHeader(t, eng, u); h != "" {
		req.Header.Set("Cookie", h)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	pu := mustURL(t, u)
	var set []host.Cookie
	for _, ck := range resp.Cookies() {
		set = append(set, host.Cookie{Name: ck.Name, Value: ck.Value, Domain: pu.Hostname(), Path: "/", MaxAge: -1, HTTPOnly: ck.HttpOnly})
	}
	done := make(chan error, 1)
	eng.Dispatch(func() { eng.AddCookies(set, func(err error) { done <- err }) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode/100 == 3 {
		next, err := origin.ResolveReference(pu, loc)
		if err != nil {
			t.Fatal(err)
		}
		return next.String()
	}
	return ""
}

func cookieHeader(t *testing.T, eng *hosttest.Engine, u string) string {
	t.Helper()
	ch := make(chan string, 1)
	eng.Dispatch(func() { eng.CookieHeader(u, func(h string, _ error) { ch <- h }) })
	return <-ch
}

func confidentialApp(t *testing.T, e *hosttest.World) host.Miniapp {
	return host.Miniapp{Name: "Demo confidential Miniapp", LoadURL: mustURL(t, e.Confidential.Origin+"/login"),
		StartURL: mustURL(t, e.Confidential.Origin+"/"), Confidential: true, ClientID: "demo-confidential",
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Confidential.Origin}}, Consent: e.Consent}
}

// TestConfidentialFlowWithoutDisplay is docs/architecture.md's way 1 in the
// core: the Miniapp's redirect to the service is caught, the service never
// sees it, the consent is shown and approved, the host makes the callback
// with the view's cookies and gives the view what the callback set, and
// the Miniapp's page is signed in.
func TestConfidentialFlowWithoutDisplay(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	app := confidentialApp(t, e)
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	if got, want := c.eng.Filter(), app.Policy.FilterRules(); got != want {
		t.Errorf("content filter %s, want the policy's %s", got, want)
	}
	before := e.AuthorizeHits()
	// The mount's own load was decided and "loaded" by the fake; a
	// browser would have fetched it and followed its redirect.
	c.rec.Wait(t, "the event", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == app.LoadURL.String() })
	if got := browse(t, c.eng, fetch(t, c.eng, app.LoadURL.String())); got != "" {
		t.Fatalf("the redirect to the service loaded %s; want it caught", got)
	}
	c.rec.Wait(t, "the event", shown("consent"))
	if !c.eng.HostShown() {
		t.Error("the consent screen is not shown over the Miniapp")
	}
	c.eng.Post(host.ViewHost, `{"action":"approve"}`)
	done := c.rec.Wait(t, "the event", kind(host.EventCompleted))
	c.rec.Wait(t, "the event", kind(host.EventCallback))
	if e.AuthorizeHits() != before {
		t.Errorf("the service's authorization endpoint was reached %d times", e.AuthorizeHits()-before)
	}
	if strings.Contains(done.URL, "code=") {
		t.Errorf("the view is sent to %s, which carries the code", done.URL)
	}
	if h := cookieHeader(t, c.eng, e.Confidential.Origin+"/"); !strings.Contains(h, "demo_session=") {
		t.Errorf("the view's cookies after the callback: %q, want the demo's session", h)
	}
	c.rec.Wait(t, "the event", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == done.URL })
	if c.eng.HostShown() {
		t.Error("the consent screen stays over the signed-in Miniapp")
	}
	for _, k := range []string{"navigation", "consent.shown", "consent.decided", "code.issued", "cookies.synced"} {
		if !strings.Contains(strings.Join(c.bus.kinds(), " "), k) {
			t.Errorf("the automation channel got no %s event: %v", k, c.bus.kinds())
		}
	}
}

// TestPublicNavigationDenied is way 3 with a denial: the view is sent to
// the redirect_uri with error=access_denied, state and iss.
func TestPublicNavigationDenied(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	app := host.Miniapp{Name: "Demo public Miniapp", LoadURL: mustURL(t, e.Public.Origin+"/"), ClientID: "demo-public",
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Public.Origin}}, Consent: e.Consent}
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	authz := e.PublicAuthorizeURL()
	if c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: authz, Method: "GET", Trigger: host.TriggerLink, UserGesture: true}) {
		t.Fatal("the navigation to the authorization endpoint loaded")
	}
	c.rec.Wait(t, "the event", shown("consent"))
	c.eng.Post(host.ViewHost, `{"action":"deny"}`)
	done := c.rec.Wait(t, "the event", kind(host.EventCompleted))
	u := mustURL(t, done.URL)
	q := u.Query()
	if q.Get("error") != "access_denied" || q.Get("state") != mustURL(t, authz).Query().Get("state") || q.Get("iss") != e.Svc.URL {
		t.Errorf("the denial went to %s; want error=access_denied with the request's state and the service's iss", done.URL)
	}
	if !origin.Of(u).Equal(origin.MustParse(e.Public.Origin)) {
		t.Errorf("the denial went to %s, not to the Miniapp", origin.Of(u))
	}
}

// TestOtherClientRefusedWithoutDisplay: a Miniapp signs in as itself only;
// the service is not asked.
func TestOtherClientRefusedWithoutDisplay(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	app := confidentialApp(t, e)
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: e.PublicAuthorizeURL(), Method: "GET", Trigger: host.TriggerOther})
	ev := c.rec.Wait(t, "the event", shown("error"))
	if ev.Kind != host.EventHostShown {
		t.Fatal(ev)
	}
	errEv := c.rec.Wait(t, "the event", kind(host.EventError))
	if !strings.Contains(errEv.Detail, `"demo-public"`) {
		t.Errorf("error %q does not name the other client", errEv.Detail)
	}
}

// TestBridgeAuthorizeWithoutDisplay is way 2: the page's bridge call
// authorize gets a token response; the page never sees the code.
func TestBridgeAuthorizeWithoutDisplay(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	key := mountPublic(t, c, e)
	msg, _ := json.Marshal(map[string]any{"v": 1, "id": 7, "key": key, "method": "authorize",
		"params": map[string]any{"scope": "openid profile"}})
	c.eng.Post(host.ViewMiniapp, c.w.TransportKey()+string(msg))
	c.rec.Wait(t, "the event", shown("consent"))
	c.eng.Post(host.ViewHost, `{"action":"approve"}`)
	c.rec.Wait(t, "the event", kind(host.EventCompleted))
	reply := waitEval(t, c.eng, host.ViewMiniapp, `"access_token"`)
	if strings.Contains(reply, `"code"`) {
		t.Errorf("the reply to the page carries the code: %s", reply)
	}
	if !strings.Contains(strings.Join(c.bus.kinds(), " "), "token.issued") {
		t.Errorf("no token.issued on the channel: %v", c.bus.kinds())
	}
}

// mountPublic mounts the public demo with its bridge, waits for its page
// and returns the bridge's per-view key, which the page's script holds.
func mountPublic(t *testing.T, c *core, e *hosttest.World) string {
	t.Helper()
	d, err := c.w.NewBridge(host.BridgeConfig{Origin: origin.MustParse(e.Public.Origin), ID: "demo-public", ClientID: "demo-public",
		RedirectURI: e.Public.RedirectURI(), AuthorizeURL: e.Authorize, TokenURL: e.Token, Issuer: e.Svc.URL,
		Resource: e.Svc.URL + "/api", Events: c.bus})
	if err != nil {
		t.Fatal(err)
	}
	app := host.Miniapp{Name: "Demo public Miniapp", LoadURL: mustURL(t, e.Public.Origin+"/"), ClientID: "demo-public",
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Public.Origin}}, Consent: e.Consent, Bridge: d}
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	c.rec.Wait(t, "the public demo's page", kind(host.EventLoadFinished))
	return bridgeKey(t, c.eng.Script())
}

// bridgeKey is the per-view key in a bridge script.
func bridgeKey(t *testing.T, script string) string {
	t.Helper()
	i := strings.Index(script, `"key":"`)
	if i < 0 {
		t.Fatalf("no key in the view's script")
	}
	rest := script[i+len(`"key":"`):]
	return rest[:strings.IndexByte(rest, '"')]
}

// waitEval waits until a script evaluated in v contains want.
func waitEval(t *testing.T, eng *hosttest.Engine, v host.View, want string) string {
	t.Helper()
	for {
		for _, js := range eng.Evals(v) {
			if strings.Contains(js, want) {
				return js
			}
		}
		// The reply is delivered from the flow's goroutine: wait for the
		// next turn of the UI loop.
		done := make(chan struct{})
		eng.Dispatch(func() { close(done) })
		select {
		case <-done:
		case <-t.Context().Done():
			t.Fatalf("no script with %s was evaluated in the %s view", want, v)
		}
	}
}

// TestHostViewKeepsItsDocument: the host's view loads the one document the
// host gave it and follows nothing else, links and scripts alike.
func TestHostViewKeepsItsDocument(t *testing.T) {
	c := newCore(t, host.Options{})
	for _, n := range []host.Navigation{
		{URL: "https://evil.example/", Trigger: host.TriggerLink, UserGesture: true},
		{URL: "about:blank", Trigger: host.TriggerLink, UserGesture: true},
		{URL: "about:blank", Trigger: host.TriggerOther, NewWindow: true},
		{URL: "data:text/html,x", Trigger: host.TriggerOther},
	} {
		if c.eng.Navigate(host.ViewHost, n) {
			t.Errorf("the host's view followed %+v", n)
		}
	}
	if !c.eng.Navigate(host.ViewHost, host.Navigation{URL: "about:blank", Trigger: host.TriggerOther}) {
		t.Error("the host's view refused its own document")
	}
}

// TestCrashShowsStoppedScreen: a crashed web process is said so in the
// host's view, and its reload loads the Miniapp's start again.
func TestCrashShowsStoppedScreen(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	app := confidentialApp(t, e)
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	c.eng.Crash()
	ev := c.rec.Wait(t, "the event", kind(host.EventWebProcessTerminated))
	if ev.Detail != "crashed" {
		t.Errorf("termination %q", ev.Detail)
	}
	c.rec.Wait(t, "the event", shown("crashed"))
	c.eng.Post(host.ViewHost, `{"action":"reload"}`)
	c.rec.Wait(t, "the event", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == app.StartURL.String() })
}

// TestHungPageIsStopped: a page that stops answering is stopped after
// HangTimeout, which shows the stopped screen.
func TestHungPageIsStopped(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{HangTimeout: 100 * time.Millisecond})
	c.eng.Hang(true)
	if err := c.w.Mount(t.Context(), confidentialApp(t, e)); err != nil {
		t.Fatal(err)
	}
	c.rec.Wait(t, "the event", kind(host.EventUnresponsive))
	c.rec.Wait(t, "the event", shown("crashed"))
	if c.eng.Stopped() == 0 {
		t.Error("the hung page's web process was not stopped")
	}
}

// TestOpenExternalNeedsInputWithoutDisplay: openExternal opens a URL only
// after the engine reported real input on the Miniapp's view, once per
// input, whatever the page claims.
func TestOpenExternalNeedsInputWithoutDisplay(t *testing.T) {
	e := world(t)
	opened := make(chan string, 4)
	c := newCore(t, host.Options{OpenExternal: func(u string) { opened <- u }})
	key := mountPublic(t, c, e)
	call := func(id int, u string) {
		msg, _ := json.Marshal(map[string]any{"v": 1, "id": id, "key": key, "method": "openExternal",
			"params": map[string]any{"url": u, "gesture": true}})
		c.eng.Post(host.ViewMiniapp, c.w.TransportKey()+string(msg))
	}
	call(1, "https://docs.example/forged")
	waitEval(t, c.eng, host.ViewMiniapp, `"id":1,"ok":false,"error":{"code":"no_user_gesture"`)
	c.eng.Input()
	call(2, "https://docs.example/clicked")
	waitEval(t, c.eng, host.ViewMiniapp, `"id":2,"ok":true`)
	if u := <-opened; u != "https://docs.example/clicked" {
		t.Errorf("opened %s", u)
	}
	call(3, "https://docs.example/again")
	waitEval(t, c.eng, host.ViewMiniapp, `"id":3,"ok":false,"error":{"code":"no_user_gesture"`)
}
