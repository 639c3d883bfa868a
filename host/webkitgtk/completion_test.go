//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
)

// confidentialApp is the confidential demo as the resolver would hand it
// over: load oauth.auth_url first.
func confidentialApp(t *testing.T, e *hosttest.World) host.Miniapp {
	t.Helper()
	return host.Miniapp{Name: "Demo confidential Miniapp", LoadURL: mustURL(t, e.Confidential.Origin+"/login"),
		StartURL: mustURL(t, e.Confidential.Origin+"/"), Confidential: true, ClientID: "demo-confidential",
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Confidential.Origin}}, Consent: e.Consent}
}

// publicApp is the public demo with its bridge.
func publicApp(t *testing.T, e *hosttest.World, events bridge.Publisher) host.Miniapp {
	t.Helper()
	d, err := testWin.NewBridge(host.BridgeConfig{Origin: origin.MustParse(e.Public.Origin), ID: "demo-public", ClientID: "demo-public",
		RedirectURI: e.Public.RedirectURI(), AuthorizeURL: e.Authorize, TokenURL: e.Token, Issuer: e.Svc.URL, Resource: e.Svc.URL + "/api", Events: events})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return host.Miniapp{Name: "Demo public Miniapp", LoadURL: mustURL(t, e.Public.Origin+"/"), StartURL: mustURL(t, e.Public.Origin+"/"), ClientID: "demo-public",
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Public.Origin}}, Consent: e.Consent, Bridge: d}
}

// press approves or denies the consent on screen as the automation
// channel does (the page's hostPress): script clicks are not the deliberate
// input the screen's Approve takes, and the press waits out its arming.
func press(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ctl := testWin.Controller(nil)
	var err error
	switch id {
	case "approve":
		err = ctl.ApproveConsent(ctx, bridge.ApproveCommand{})
	case "deny":
		err = ctl.DenyConsent(ctx, bridge.ViewCommand{})
	default:
		// The other screens' buttons (reload, close) decide nothing.
		var out string
		out, err = testWin.EvalHost(ctx, `(function(){ var b = document.getElementById(`+jsString(id)+`); if (!b || b.disabled) return false; b.click(); return true; })()`)
		if err == nil && out != "true" {
			err = fmt.Errorf("no enabled button %q", id)
		}
	}
	if err != nil {
		t.Fatalf("press %s on the host's view: %v", id, err)
	}
}

func jsString(s string) string {
	b := strings.Builder{}
	b.WriteString(`"`)
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u` + strings.ToUpper(strings.TrimPrefix(string(rune(0x10000+r)), "")))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(`"`)
	return b.String()
}

func clearCookies(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := testWin.ClearCookies(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestConfidentialApprove is way 1: the host catches the backend's
// redirect, shows consent, makes the callback request with the view's
// cookies, copies the session cookie into the view and opens the start
// page, which the view then loads signed in.
func TestConfidentialApprove(t *testing.T) {
	e := testEnv(t)
	clearCookies(t)
	before := e.AuthorizeHits()
	busFrom := testBus.len()
	rec := record(t)
	forgetConsents(t) // a fresh subject: the consent view shows
	netEvents := &netWatch{notify: make(chan netlog.NetworkEvent, 64)}
	netLog := netlog.New(netlog.Config{Events: netEvents})
	app := confidentialApp(t, e)
	app.NetLog = netLog.BeginLaunch(e.Confidential.Origin, "demo-confidential", "demo-confidential")
	if err := testWin.Mount(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, "consent requested", kind(host.EventConsentRequested))
	shown := rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })

	// The consent view renders the model: who asks and for whom.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	text, err := testWin.EvalHost(ctx, `document.body.innerText`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Demo confidential Miniapp", "Ana Rojas", "Approve", "Deny"} {
		if !strings.Contains(text, want) {
			t.Errorf("consent view lacks %q: %s", want, text)
		}
	}
	if err := os.MkdirAll(artifactDir(t), 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifactDir(t), "consent-confidential.png")
	if err := testWin.Snapshot(t.Context(), shot); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 1000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("consent view screenshot: %s", shot)

	press(t, "approve")
	rec.Wait(t, "callback", kind(host.EventCallback))
	completed := rec.Wait(t, "completed", kind(host.EventCompleted))
	done := rec.WaitAfter(t, completed, "start page loaded", func(ev host.Event) bool {
		return ev.Kind == host.EventLoadFinished && ev.URL == completed.URL
	})
	t.Logf("consent shown -> signed-in page loaded: %v", done.At.Sub(shown.At))

	// The view sent the HttpOnly session cookie: the server rendered the
	// page signed in. Its scripts cannot see the cookie.
	var signedIn, cookies string
	evalJSON(t, `document.body.dataset.signedIn`, &signedIn)
	evalJSON(t, `document.cookie`, &cookies)
	if signedIn != "true" {
		t.Errorf("start page not signed in (data-signed-in=%q)", signedIn)
	}
	if strings.Contains(cookies, demoapps.SessionCookie) {
		t.Errorf("document.cookie shows the HttpOnly session cookie: %q", cookies)
	}
	header, err := testWin.Cookies(t.Context(), e.Confidential.Origin+"/")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(header, demoapps.SessionCookie+"=") {
		t.Errorf("the view's store has no session cookie: %q", header)
	}
	// The code never entered the view: no load of /callback.
	for _, ev := range rec.All(kind(host.EventNavigation)) {
		if strings.Contains(ev.URL, "/callback") {
			t.Errorf("the view navigated to the callback: %s", ev.URL)
		}
	}
	if n := e.AuthorizeHits() - before; n != 0 {
		t.Errorf("the authorization endpoint received %d requests from the view", n)
	}

	// The automation channel saw each step, secrets by fingerprint only.
	kinds := map[string]bridge.Event{}
	for _, ev := range testBus.since(busFrom) {
		if _, seen := kinds[ev.Kind()]; !seen {
			kinds[ev.Kind()] = ev
		}
	}
	if nav, ok := kinds["navigation"].(bridge.NavigationEvent); !ok {
		t.Error("no navigation event")
	} else if ev := testBus.find(busFrom, func(ev bridge.Event) bool {
		n, ok := ev.(bridge.NavigationEvent)
		return ok && n.Decision == bridge.NavigationConsent && n.Rule == host.RuleAuthorize
	}); ev == nil {
		t.Errorf("no navigation event with decision consent (first: %+v)", nav)
	}
	if s, ok := kinds["consent.shown"].(bridge.ConsentShownEvent); !ok || s.ClientID != "demo-confidential" {
		t.Errorf("consent.shown: %+v", kinds["consent.shown"])
	}
	if d, ok := kinds["consent.decided"].(bridge.ConsentDecidedEvent); !ok || d.Decision != bridge.ConsentApproved {
		t.Errorf("consent.decided: %+v", kinds["consent.decided"])
	}
	if c, ok := kinds["code.issued"].(bridge.CodeIssuedEvent); !ok || len(c.Fingerprint) != 16 || c.RedirectURI != e.Confidential.RedirectURI() {
		t.Errorf("code.issued: %+v", kinds["code.issued"])
	}
	if c, ok := kinds["cookies.synced"].(bridge.CookiesSyncedEvent); !ok || !slices.Contains(c.Names, demoapps.SessionCookie) {
		t.Errorf("cookies.synced: %+v", kinds["cookies.synced"])
	}
	// WebKit may report the start page's request as finished after the
	// page's load: wait for it.
	netEvents.wait(t, "the start page in the network log", func(ev netlog.NetworkEvent) bool {
		return ev.Source == netlog.SourceView && ev.URL == e.Confidential.Origin+"/"
	})
	checkNetLog(t, netLog, e, header)
}

// netWatch is a network log's event publisher a test waits on.
type netWatch struct{ notify chan netlog.NetworkEvent }

func (n *netWatch) Publish(ev bridge.Event) {
	if ne, ok := ev.(netlog.NetworkEvent); ok {
		select {
		case n.notify <- ne:
		default:
		}
	}
}

// wait returns once an event matches; the minute is for a bug to be
// reported, not a pace the host must keep.
func (n *netWatch) wait(t *testing.T, what string, match func(netlog.NetworkEvent) bool) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		select {
		case ev := <-n.notify:
			if match(ev) {
				return
			}
		case <-deadline.C:
			t.Fatalf("waiting for %s, which never came", what)
		}
	}
}

// checkNetLog checks the network log of a confidential flow in the real
// view: WebKit reported the view's own requests (auth_url, which led to
// the consent, and the signed-in start page with its status and timing)
// beside the host's exchanges, and no cookie value is in the export.
func checkNetLog(t *testing.T, log *netlog.Log, e *hosttest.World, cookieHeader string) {
	t.Helper()
	flows := log.Flows()
	if len(flows) != 1 || flows[0].Outcome != netlog.OutcomeCompleted {
		t.Fatalf("network log flows %+v, want one completed", flows)
	}
	x, _ := log.Flow(flows[0].ID)
	var login, start *netlog.Entry
	kinds := map[string]int{}
	for i, en := range x.Entries {
		kinds[en.Kind]++
		if en.Source != netlog.SourceView || en.Kind != netlog.KindResource {
			continue
		}
		if !strings.HasPrefix(en.Request.URL, e.Confidential.Origin+"/") {
			t.Errorf("the log has a view request outside the Miniapp's allowed origins: %s", en.Request.URL)
		}
		switch en.Request.URL {
		case e.Confidential.Origin + "/login":
			login = &x.Entries[i]
		case e.Confidential.Origin + "/":
			start = &x.Entries[i]
		}
	}
	if kinds[netlog.KindAuthorize] != 1 || kinds[netlog.KindNativeConsent] != 2 || kinds[netlog.KindCallback] != 1 {
		t.Errorf("entries by kind %v, want the authorize, two native-consent calls and the callback", kinds)
	}
	// WebKit gives no response for a redirect its policy refused: the
	// load of auth_url ends interrupted.
	if login == nil || (login.Response == nil) == (login.Error == "") {
		t.Errorf("the view's request of auth_url: %+v, want its response or why it ended", login)
	}
	if start == nil || start.Response == nil || start.Response.Status != 200 || start.DurationMS < 0 ||
		start.Timings.Wait < 0 || start.Timings.Receive < 0 || start.Request.Method != "GET" {
		t.Errorf("the view's request of the start page: %+v, want GET 200 with its timing", start)
	}
	js, _ := json.Marshal(x)
	for _, c := range strings.Split(cookieHeader, ";") {
		if _, v, ok := strings.Cut(strings.TrimSpace(c), "="); ok && len(v) > 8 && strings.Contains(string(js), v) {
			t.Errorf("the log's export holds a cookie value of the view: %q", v)
		}
	}
}

// TestConfidentialDeny: a denial reaches the Miniapp's backend through the
// same callback, which shows access_denied and opens no session.
func TestConfidentialDeny(t *testing.T) {
	e := testEnv(t)
	clearCookies(t)
	rec := record(t)
	forgetConsents(t) // a fresh subject: the consent view shows
	if err := testWin.Mount(context.Background(), confidentialApp(t, e)); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	press(t, "deny")
	rec.Wait(t, "callback", kind(host.EventCallback))
	completed := rec.Wait(t, "completed", kind(host.EventCompleted))
	rec.WaitAfter(t, completed, "start page loaded", func(ev host.Event) bool {
		return ev.Kind == host.EventLoadFinished && ev.URL == completed.URL
	})
	var signedIn, errCode string
	evalJSON(t, `document.body.dataset.signedIn`, &signedIn)
	evalJSON(t, `document.body.dataset.error`, &errCode)
	if signedIn != "false" || errCode != "access_denied" {
		t.Errorf("after deny: signed-in %q, error %q; want false, access_denied", signedIn, errCode)
	}
}

// TestPublicNavigation is way 3: the page navigates to the service itself;
// the host answers with a navigation to redirect_uri?code&state&iss, or
// error=access_denied.
func TestPublicNavigation(t *testing.T) {
	e := testEnv(t)
	for _, c := range []struct{ button, want string }{{"approve", "code"}, {"deny", "denied"}} {
		t.Run(c.button, func(t *testing.T) {
			rec := mount(t, publicApp(t, e, nil))
			testWin.Eval(`document.getElementById("signin").click()`)
			rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
			press(t, c.button)
			completed := rec.Wait(t, "completed", kind(host.EventCompleted))
			rec.WaitAfter(t, completed, "callback page", func(ev host.Event) bool {
				return ev.Kind == host.EventLoadFinished && ev.URL == completed.URL
			})
			pollJS(t, `document.body.dataset.state`, c.want)
			var res struct {
				StateOK bool   `json:"state_ok"`
				Iss     string `json:"iss"`
			}
			var raw string
			evalJSON(t, `document.getElementById("result").textContent`, &raw)
			if err := jsonUnmarshal(raw, &res); err != nil || !res.StateOK || res.Iss != e.Svc.URL {
				t.Errorf("callback page: %s (%v); want state_ok and iss %s", raw, err, e.Svc.URL)
			}
		})
	}
}

// busRecorder records the bridge's call events.
type busRecorder struct {
	mu      sync.Mutex // guards evs and forward
	evs     []bridge.Event
	forward bridge.Publisher // also gets every event, when set (the playground's bus)
}

func (b *busRecorder) Publish(e bridge.Event) {
	b.mu.Lock()
	b.evs = append(b.evs, e)
	fw := b.forward
	b.mu.Unlock()
	if fw != nil {
		fw.Publish(e)
	}
}

// forwardTo makes b pass every event on to p too, until the test ends.
func (b *busRecorder) forwardTo(t *testing.T, p bridge.Publisher) {
	b.mu.Lock()
	b.forward = p
	b.mu.Unlock()
	t.Cleanup(func() {
		b.mu.Lock()
		b.forward = nil
		b.mu.Unlock()
	})
}

func (b *busRecorder) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.evs)
}

func (b *busRecorder) since(i int) []bridge.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.evs[i:])
}

func (b *busRecorder) find(from int, match func(bridge.Event) bool) bridge.Event {
	for _, ev := range b.since(from) {
		if match(ev) {
			return ev
		}
	}
	return nil
}

// TestPublicBridgeAuthorize is way 2: window.miniapp.authorize; the host
// runs PKCE, consent and the code exchange, and the page gets the token.
func TestPublicBridgeAuthorize(t *testing.T) {
	e := testEnv(t)
	for _, c := range []struct{ button, want string }{{"approve", "signed-in"}, {"deny", "denied"}} {
		t.Run(c.button, func(t *testing.T) {
			rec := mount(t, publicApp(t, e, nil))
			start := time.Now()
			testWin.Eval(`document.getElementById("bridge-signin").click()`)
			rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
			press(t, c.button)
			pollJS(t, `document.body.dataset.state`, c.want)
			t.Logf("%s through the bridge in %v", c.button, time.Since(start))
			if c.want == "signed-in" {
				if testBus.find(0, func(ev bridge.Event) bool {
					tok, ok := ev.(bridge.TokenIssuedEvent)
					return ok && tok.ClientID == "demo-public" && len(tok.Fingerprint) == 16
				}) == nil {
					t.Error("no token.issued event")
				}
				var raw string
				evalJSON(t, `document.getElementById("result").textContent`, &raw)
				if !strings.Contains(raw, `"has_access_token":true`) {
					t.Errorf("bridge result: %s", raw)
				}
			}
			if got := rec.All(func(ev host.Event) bool {
				return ev.Kind == host.EventNavigation && strings.Contains(ev.URL, "/callback")
			}); len(got) != 0 {
				t.Errorf("the view navigated to the callback: %v", got)
			}
		})
	}
}

// TestOtherClientRefused: a Miniapp that heads for the authorization
// endpoint with another client's client_id gets an error screen; the
// service is not asked.
func TestOtherClientRefused(t *testing.T) {
	e := testEnv(t)
	rec := mount(t, publicApp(t, e, nil))
	other := strings.Replace(e.PublicAuthorizeURL(), "client_id=demo-public", "client_id=demo-confidential", 1)
	testWin.Eval(`location.href = ` + jsString(other))
	ev := rec.Wait(t, "error", kind(host.EventError))
	if !strings.Contains(ev.Detail, "demo-confidential") {
		t.Errorf("error %q", ev.Detail)
	}
	rec.Wait(t, "error screen", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "error" })
	if got := rec.All(kind(host.EventConsentRequested)); len(got) != 0 {
		t.Errorf("the service was asked: %v", got)
	}
}

// TestRememberedConsentIsNotAskedAgain: once the subject approved, the same
// request from the same client completes without the consent view (docs/service.md §1:
// consent is remembered per subject and client), and a new request after
// the consent is revoked asks again.
func TestRememberedConsentIsNotAskedAgain(t *testing.T) {
	e := testEnv(t)
	app := publicApp(t, e, nil)
	rec := mount(t, app)
	signIn := func(rec *recorder) host.Event {
		t.Helper()
		testWin.Eval(`document.getElementById("signin").click()`)
		return rec.Wait(t, "consent requested", kind(host.EventConsentRequested))
	}
	back := func() *recorder {
		t.Helper()
		rec := record(t)
		testWin.Eval(`location.href = ` + strconv.Quote(app.StartURL.String()))
		rec.Wait(t, "start page", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == app.StartURL.String() })
		return rec
	}

	// done waits for the callback page the completion leads to, so that no
	// load of this test is still running when the next test mounts.
	done := func(rec *recorder, after host.Event, state string) {
		t.Helper()
		completed := rec.WaitAfter(t, after, "completed", kind(host.EventCompleted))
		rec.WaitAfter(t, completed, "callback page", func(ev host.Event) bool {
			return ev.Kind == host.EventLoadFinished && ev.URL == completed.URL
		})
		pollJS(t, `document.body.dataset.state`, state)
	}

	asked := signIn(rec)
	rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	press(t, "approve")
	done(rec, asked, "code")

	rec = back()
	asked = signIn(rec)
	rec.WaitAfter(t, asked, "remembered", kind(host.EventConsentRemembered))
	done(rec, asked, "code")
	for _, ev := range rec.All(func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" }) {
		t.Errorf("the consent view was shown again (%v) for a remembered consent", ev)
	}

	forgetConsents(t)
	rec = back()
	asked = signIn(rec)
	rec.Wait(t, "consent shown after revocation", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	press(t, "deny")
	done(rec, asked, "denied")
}
