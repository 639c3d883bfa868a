package host_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver/store"

	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/netlog"
)

// TestNetworkLogOfConfidentialFlow records docs/architecture.md's way 1 against
// the real reference server and demo Miniapp: the flow's log has the
// caught request decoded with the service's reading of it, the host's two
// native-consent calls, its callback with the cookies by name and flags,
// the view's own request that led to the consent, and its outcome; and no
// secret (cookie values, the host's secret, the code) is anywhere in the
// JSON or HAR export.
func TestNetworkLogOfConfidentialFlow(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	log := netlog.New(netlog.Config{Events: c.bus})
	app := confidentialApp(t, e)
	app.NetLog = log.BeginLaunch(e.Confidential.Origin, "demo-confidential", "demo-confidential")
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	c.rec.Wait(t, "the auth_url loaded", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == app.LoadURL.String() })

	// What WebKit does with auth_url: it fetches it, the demo redirects
	// to the service, the host catches the redirect, and the load of
	// auth_url ends with the redirect's response.
	started := time.Now()
	resp := get(t, app.LoadURL.String(), "")
	authz := resp.Header.Get("Location")
	loginCookie := cookieValue(resp, demoapps.LoginCookie)
	if resp.StatusCode != http.StatusFound || authz == "" || loginCookie == "" {
		t.Fatalf("auth_url answered %d, Location %q, login cookie %q", resp.StatusCode, authz, loginCookie)
	}
	if c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: authz, Method: "GET", Trigger: host.TriggerOther, Redirect: true}) {
		t.Fatal("the redirect to the service loaded")
	}
	c.eng.Resource(host.Resource{Method: "GET", URL: app.LoadURL.String(), RequestHeaders: http.Header{"Accept": {"text/html"}},
		Status: resp.StatusCode, ResponseHeaders: resp.Header, Size: -1, Started: started, Responded: time.Now(), Finished: time.Now()})
	// A request to an origin the Miniapp is not allowed is not the log's.
	c.eng.Resource(host.Resource{Method: "GET", URL: e.Other.URL + "/tracker", Status: 200, Started: started, Finished: time.Now()})
	// The view's cookie store has what the demo set, as WebKit's would.
	addCookie(t, c.eng, host.Cookie{Name: demoapps.LoginCookie, Value: loginCookie, Domain: "127.0.0.1", Path: "/", MaxAge: -1, HTTPOnly: true})

	c.rec.Wait(t, "the consent screen", shown("consent"))
	c.eng.Post(host.ViewHost, `{"action":"approve"}`)
	cb := c.rec.Wait(t, "the callback", kind(host.EventCallback))
	c.rec.Wait(t, "the completion", kind(host.EventCompleted))
	code := mustURL(t, cb.URL).Query().Get("code")
	var session string
	for _, ck := range c.eng.Cookies() {
		if ck.Name == demoapps.SessionCookie {
			session = ck.Value
		}
	}
	if code == "" || session == "" {
		t.Fatalf("the flow did not complete: code %q, session cookie %q", code, session)
	}

	flows := log.Flows()
	if len(flows) != 1 {
		t.Fatalf("flows %+v, want one", flows)
	}
	fs := flows[0]
	if fs.Outcome != netlog.OutcomeCompleted || fs.Ended == nil || fs.ClientID != "demo-confidential" ||
		fs.Origin != e.Confidential.Origin || fs.MiniappID != "demo-confidential" || fs.Launch == "" {
		t.Errorf("flow summary %+v, want a completed flow of demo-confidential", fs)
	}
	x, ok := log.Flow(fs.ID)
	if !ok {
		t.Fatal("the listed flow cannot be exported")
	}
	byKind := map[string][]netlog.Entry{}
	for _, en := range x.Entries {
		byKind[en.Kind] = append(byKind[en.Kind], en)
		if en.Curl == "" || !strings.HasPrefix(en.Curl, "curl ") {
			t.Errorf("entry %d (%s) has no copy as curl: %q", en.ID, en.Kind, en.Curl)
		}
	}

	t.Run("authorize decoded", func(t *testing.T) {
		a := byKind[netlog.KindAuthorize]
		if len(a) != 1 || a[0].Authorize == nil {
			t.Fatalf("authorize entries %+v", a)
		}
		d := a[0].Authorize
		params := map[string]string{}
		for _, p := range d.Params {
			params[p.Name] = p.Value
		}
		if params["client_id"] != "demo-confidential" || params["code_challenge_method"] != "S256" || params["redirect_uri"] != e.Confidential.RedirectURI() {
			t.Errorf("decoded params %v", params)
		}
		if st := mustURL(t, authz).Query().Get("state"); params["state"] == st {
			t.Errorf("the state is kept as sent: %q", st)
		}
		var model struct {
			Client      struct{ ID string }
			Permissions []json.RawMessage
		}
		if err := json.Unmarshal(d.Consent, &model); err != nil || len(model.Permissions) == 0 {
			t.Errorf("the service's reading of the request (consent model) is missing: %s (%v)", d.Consent, err)
		}
		if a[0].Response != nil || a[0].Error != "" || a[0].Note == "" {
			t.Errorf("the caught request shows a response %+v, an error %q, a note %q; it was never sent, which is no failure: its note says so",
				a[0].Response, a[0].Error, a[0].Note)
		}
	})

	t.Run("native consent", func(t *testing.T) {
		nc := byKind[netlog.KindNativeConsent]
		if len(nc) != 2 {
			t.Fatalf("%d native-consent entries, want begin and decision", len(nc))
		}
		if !strings.HasSuffix(nc[1].Request.URL, "/decision") || nc[0].Request.Method != "POST" {
			t.Errorf("native-consent calls %s %s, %s %s", nc[0].Request.Method, nc[0].Request.URL, nc[1].Request.Method, nc[1].Request.URL)
		}
		for _, en := range nc {
			if en.Response == nil || en.Response.Status/100 != 2 || en.Response.Body == nil || en.Response.Body.Text == "" {
				t.Errorf("native-consent %s: response %+v, want 2xx with its JSON", en.Request.URL, en.Response)
			}
			if auth := header(en.Request.Headers, "Authorization"); !strings.HasPrefix(auth, "Basic redacted:") {
				t.Errorf("the host's credential is logged as %q", auth)
			}
			if en.Timings.Send < 0 || en.Timings.Wait < 0 || en.Timings.Receive < 0 {
				t.Errorf("timings %+v", en.Timings)
			}
		}
		if !strings.Contains(nc[1].Response.Body.Text, `"redirect_url": "`+e.Confidential.RedirectURI()+"?code=") {
			t.Errorf("decision answer %s: want its redirect_url with the code's fingerprint", nc[1].Response.Body.Text)
		}
	})

	t.Run("callback", func(t *testing.T) {
		cbs := byKind[netlog.KindCallback]
		if len(cbs) != 1 || cbs[0].Response == nil {
			t.Fatalf("callback entries %+v", cbs)
		}
		en := cbs[0]
		if !strings.HasPrefix(en.Request.URL, e.Confidential.RedirectURI()+"?") || en.Response.Status/100 != 3 {
			t.Errorf("callback %s answered %d", en.Request.URL, en.Response.Status)
		}
		if len(en.Request.Cookies) != 1 || en.Request.Cookies[0].Name != demoapps.LoginCookie {
			t.Errorf("callback request cookies %+v, want %s by name", en.Request.Cookies, demoapps.LoginCookie)
		}
		var set *netlog.Cookie
		for i, ck := range en.Response.Cookies {
			if ck.Name == demoapps.SessionCookie {
				set = &en.Response.Cookies[i]
			}
		}
		if set == nil || !set.HTTPOnly || set.Path == "" || !strings.HasPrefix(set.Value, "redacted:") {
			t.Errorf("the callback's Set-Cookie %+v; want %s with HttpOnly and its path, value redacted", en.Response.Cookies, demoapps.SessionCookie)
		}
	})

	t.Run("view requests", func(t *testing.T) {
		rs := byKind[netlog.KindResource]
		if len(rs) != 1 || rs[0].Request.URL != app.LoadURL.String() || rs[0].Response == nil || rs[0].Response.Status != http.StatusFound {
			t.Fatalf("view entries %+v, want auth_url's 302 only", rs)
		}
		if rs[0].Source != netlog.SourceView || rs[0].DurationMS < 0 {
			t.Errorf("view entry %+v", rs[0])
		}
	})

	t.Run("no secret in the exports", func(t *testing.T) {
		js, _ := json.Marshal(x)
		har, _ := log.HAR(fs.ID)
		hs, _ := json.Marshal(har)
		for name, secret := range map[string]string{"login cookie": loginCookie, "session cookie": session, "code": code,
			"host secret": hosttest.HostSecret, "state": mustURL(t, authz).Query().Get("state")} {
			for what, doc := range map[string][]byte{"JSON": js, "HAR": hs} {
				if strings.Contains(string(doc), secret) {
					t.Errorf("the %s export holds the %s %q", what, name, secret)
				}
			}
		}
	})

	if n := strings.Count(strings.Join(c.bus.kinds(), " "), "network"); n != len(x.Entries) {
		t.Errorf("%d network events on the automation channel, want one per entry (%d)", n, len(x.Entries))
	}
}

// TestNetworkLogOfDenial: a denied flow ends denied, with the decision
// call in it.
func TestNetworkLogOfDenial(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	log := netlog.New(netlog.Config{})
	app := host.Miniapp{Name: "Demo public Miniapp", LoadURL: mustURL(t, e.Public.Origin+"/"), ClientID: "demo-public",
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Public.Origin}}, Consent: e.Consent,
		NetLog: log.BeginLaunch(e.Public.Origin, "demo-public", "demo-public")}
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: e.PublicAuthorizeURL(), Method: "GET", Trigger: host.TriggerLink, UserGesture: true})
	c.rec.Wait(t, "the consent screen", shown("consent"))
	c.eng.Post(host.ViewHost, `{"action":"deny"}`)
	c.rec.Wait(t, "the completion", kind(host.EventCompleted))
	fs := log.Flows()
	if len(fs) != 1 || fs[0].Outcome != netlog.OutcomeDenied || fs[0].Entries != 3 {
		t.Errorf("flows %+v, want one denied flow of 3 entries (authorize, begin, decision)", fs)
	}
}

func get(t *testing.T, u, cookie string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func cookieValue(resp *http.Response, name string) string {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func addCookie(t *testing.T, eng *hosttest.Engine, ck host.Cookie) {
	t.Helper()
	done := make(chan error, 1)
	eng.Dispatch(func() { eng.AddCookies([]host.Cookie{ck}, func(err error) { done <- err }) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func header(hs []netlog.Header, name string) string {
	for _, h := range hs {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// TestNetworkLogCanaries runs a real flow against the reference server
// whose client registered its redirect URI with an upper-case scheme (as
// the dashboard once stored it), with a canary for every secret the flow
// carries: the state and PKCE verifier the Miniapp made up, the code the
// server issued, the host's own secret; the view's requests add the code
// in the headers that carry URLs (Referer, Refresh, Link). No canary, in
// any encoding, is in the flow list, the JSON or HAR export, or on the
// automation channel; the state and verifier not even as fingerprints.
func TestNetworkLogCanaries(t *testing.T) {
	e := world(t)
	redirect := "HTTP://" + strings.TrimPrefix(e.Public.Origin, "http://") + "/cb"
	if err := e.Store.PutClient(t.Context(), &store.Client{ID: "canary-public", ProjectID: "prj_demo", Name: "Canary", Type: store.Public,
		RedirectURIs: []string{redirect}, AllowedOrigins: []string{e.Public.Origin}}); err != nil {
		t.Fatal(err)
	}
	e.Srv.InvalidateClient("canary-public")
	const state, verifier = "cnrySTATE-7Qx2Lw9Zp", "cnryVERIFIER-s6Yj0Qe3Tn1Hd8Km4Vb2Xc5Lp9Rq7Wz1Nf6"
	c := newCore(t, host.Options{})
	log := netlog.New(netlog.Config{Events: c.bus})
	app := host.Miniapp{Name: "Canary", LoadURL: mustURL(t, e.Public.Origin+"/"), ClientID: "canary-public",
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Public.Origin}}, Consent: e.Consent,
		NetLog: log.BeginLaunch(e.Public.Origin, "canary", "canary-public")}
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	q := url.Values{"response_type": {"code"}, "client_id": {"canary-public"}, "redirect_uri": {redirect}, "scope": {hosttest.Scope},
		"state": {state}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
		"resource": {e.Svc.URL + "/api"}}
	c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: e.Authorize + "?" + q.Encode(), Method: "GET", Trigger: host.TriggerLink, UserGesture: true})
	c.rec.Wait(t, "the consent screen", shown("consent"))
	c.eng.Post(host.ViewHost, `{"action":"approve"}`)
	done := c.rec.Wait(t, "the completion", kind(host.EventCompleted))
	code := mustURL(t, done.URL).Query().Get("code")
	if code == "" {
		t.Fatalf("the completion carries no code: %+v", done)
	}
	// The view's own requests, as WebKit reports them: the redirect URI's
	// page, and a later request that names it in its headers.
	now := time.Now()
	cb := redirect + "?code=" + code + "&state=" + url.QueryEscape(state)
	c.eng.Resource(host.Resource{Method: "GET", URL: cb, Status: 200, Size: -1, Started: now, Finished: now,
		ResponseHeaders: http.Header{"Refresh": {"0; url=" + cb}, "Link": {"<" + cb + `>; rel="canonical"`}}})
	c.eng.Resource(host.Resource{Method: "GET", URL: e.Public.Origin + "/app.js", Status: 200, Size: -1, Started: now, Finished: now,
		RequestHeaders: http.Header{"Referer": {" " + cb}}})

	fs := log.Flows()
	if len(fs) != 1 || fs[0].Outcome != netlog.OutcomeCompleted {
		t.Fatalf("flows %+v, want one completed", fs)
	}
	x, _ := log.Flow(fs[0].ID)
	har, _ := log.HAR(fs[0].ID)
	list, _ := json.Marshal(fs)
	js, _ := json.Marshal(x)
	hs, _ := json.Marshal(har)
	var events []string
	c.bus.mu.Lock()
	for _, ev := range c.bus.evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, string(b))
	}
	c.bus.mu.Unlock()
	decision := false
	for _, en := range x.Entries {
		if r := en.Response; r != nil && r.Body != nil && strings.Contains(r.Body.Text, `"redirect_url": "HTTP://`) {
			decision = true
		}
	}
	if !decision {
		t.Errorf("the decision's answer, with its upper-case redirect URL, is not in the export (nothing was checked):\n%s", js)
	}
	for what, doc := range map[string]string{"flow list": string(list), "JSON export": string(js), "HAR export": string(hs),
		"automation channel": strings.Join(events, "\n")} {
		for _, s := range []struct {
			name, value string
			withheld    bool
		}{{"code", code, false}, {"state", state, true}, {"verifier", verifier, true}, {"host secret", hosttest.HostSecret, true}} {
			if how := hosttest.Leak(doc, s.value, s.withheld); how != "" {
				t.Errorf("the %s holds the %s (%s)", what, s.name, how)
			}
		}
	}
}
