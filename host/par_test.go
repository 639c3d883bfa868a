package host_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
)

// pushPublic pushes the public demo's authorization request (RFC 9126) as
// the public client and returns it with the request_uri the service gave.
func pushPublic(t *testing.T, e *hosttest.World) (url.Values, string) {
	t.Helper()
	q := mustURL(t, e.PublicAuthorizeURL()).Query()
	resp, err := http.PostForm(e.Svc.URL+"/oauth/par", q)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		RequestURI string `json:"request_uri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusCreated || m.RequestURI == "" {
		t.Fatalf("PAR: want 201 with a request_uri, got %d %v %+v", resp.StatusCode, err, m)
	}
	return q, m.RequestURI
}

func publicApp(t *testing.T, e *hosttest.World) host.Miniapp {
	return host.Miniapp{Name: "Demo public Miniapp", LoadURL: mustURL(t, e.Public.Origin+"/"), ClientID: "demo-public",
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{e.Public.Origin}}, Consent: e.Consent}
}

// TestPushedRequestCaught: a navigation to the authorization endpoint
// with only client_id and the request_uri of a pushed request (RFC 9126
// §4) is caught like any other. The consent shows the pushed request's
// permissions (the consent.shown event says pushed, with the pushed
// scopes, which the caught URL does not hold); approved, the view is sent
// to the pushed redirect_uri with a code, the pushed state and iss, and
// code.issued names that redirect_uri. The service's authorization
// endpoint is never reached.
func TestPushedRequestCaught(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	if err := c.w.Mount(t.Context(), publicApp(t, e)); err != nil {
		t.Fatal(err)
	}
	pushed, uri := pushPublic(t, e)
	before := e.AuthorizeHits()
	caught := e.Authorize + "?" + url.Values{"client_id": {"demo-public"}, "request_uri": {uri}}.Encode()
	if c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: caught, Method: "GET", Trigger: host.TriggerLink, UserGesture: true}) {
		t.Fatal("the navigation to the authorization endpoint loaded")
	}
	c.rec.Wait(t, "the event", shown("consent"))
	c.eng.Post(host.ViewHost, `{"action":"approve"}`)
	done := c.rec.Wait(t, "the event", kind(host.EventCompleted))
	// consent.shown was published with the screen, before the approval
	// that led to completed.
	var ev *bridge.ConsentShownEvent
	for _, b := range c.bus.all() {
		if s, ok := b.(bridge.ConsentShownEvent); ok {
			ev = &s
		}
	}
	if ev == nil || !ev.Pushed || ev.ClientID != "demo-public" || !slices.Equal(ev.Scopes, strings.Fields(hosttest.Scope)) {
		t.Fatalf("consent.shown: want the pushed request (pushed, demo-public, scopes %q), got %+v", hosttest.Scope, ev)
	}
	q := mustURL(t, done.URL).Query()
	if !strings.HasPrefix(done.URL, e.Public.RedirectURI()+"?") || q.Get("code") == "" || q.Get("state") != pushed.Get("state") || q.Get("iss") != e.Svc.URL {
		t.Errorf("the view is sent to %s; want the pushed redirect_uri %s with a code, the pushed state and iss", done.URL, e.Public.RedirectURI())
	}
	var code *bridge.CodeIssuedEvent
	for _, b := range c.bus.all() {
		if s, ok := b.(bridge.CodeIssuedEvent); ok {
			code = &s
		}
	}
	if code == nil || code.RedirectURI != e.Public.RedirectURI() {
		t.Errorf("code.issued: want the pushed redirect_uri %s, got %+v", e.Public.RedirectURI(), code)
	}
	if e.AuthorizeHits() != before {
		t.Errorf("the service's authorization endpoint was reached %d times", e.AuthorizeHits()-before)
	}
}

// TestPushedRequestMixRefused: a caught request that mixes a request_uri
// with other authorization parameters (RFC 9126 §4: client_id and
// request_uri only) is refused by the host with an error that names them;
// the service is not asked and the view goes nowhere. The request_uri is
// therefore still good for a request of the right form.
func TestPushedRequestMixRefused(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	if err := c.w.Mount(t.Context(), publicApp(t, e)); err != nil {
		t.Fatal(err)
	}
	_, uri := pushPublic(t, e)
	native := e.Hits("/native/requests")
	mixed := e.Authorize + "?" + url.Values{"client_id": {"demo-public"}, "request_uri": {uri}, "scope": {"openid email"},
		"redirect_uri": {"http://127.0.0.1:1/elsewhere"}}.Encode()
	c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: mixed, Method: "GET", Trigger: host.TriggerLink, UserGesture: true})
	c.rec.Wait(t, "the event", shown("error"))
	errEv := c.rec.Wait(t, "the event", kind(host.EventError))
	if !strings.Contains(errEv.Detail, "mixes request_uri with redirect_uri, scope") || !strings.Contains(errEv.Detail, "RFC 9126 section 4") {
		t.Errorf("error %q: want it to name the parameters beside request_uri and RFC 9126 section 4", errEv.Detail)
	}
	if n := e.Hits("/native/requests") - native; n != 0 {
		t.Errorf("the native-consent API was asked %d times about a mixed request", n)
	}
	if len(c.rec.All(kind(host.EventCompleted))) != 0 {
		t.Error("the view was sent somewhere after a refused request")
	}
}

// TestCheckPushedReference: the form rules of a caught request naming a
// pushed one.
func TestCheckPushedReference(t *testing.T) {
	const uri = "urn:ietf:params:oauth:request_uri:abc"
	for _, tc := range []struct {
		q    url.Values
		want string
	}{
		{url.Values{"client_id": {"a"}, "scope": {"openid"}}, ""},
		{url.Values{"client_id": {"a"}, "request_uri": {uri}}, ""},
		{url.Values{"client_id": {"a"}, "request_uri": {"https://app.example/req.jwt"}, "redirect_uri": {"x"}}, ""},
		{url.Values{"client_id": {"a"}, "request_uri": {uri, uri}}, "request_uri 2 times"},
		{url.Values{"request_uri": {uri}}, "not exactly one client_id"},
		{url.Values{"client_id": {"a", "b"}, "request_uri": {uri}}, "not exactly one client_id"},
		{url.Values{"client_id": {"a"}, "request_uri": {uri}, "state": {"s"}, "code_challenge": {"c"}}, "mixes request_uri with code_challenge, state"},
	} {
		err := host.CheckPushedReference(tc.q)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: want it passed, got %v", tc.q, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: want an error saying %q, got %v", tc.q, tc.want, err)
		}
	}
}

// TestConsentShownGrantManagement: consent.shown carries the request's
// grant_management_action, caught in the URL or read from the pushed
// request its request_uri named (whose URL holds none), so that whoever
// drives or debugs the consent sees that the approval makes a new grant.
func TestConsentShownGrantManagement(t *testing.T) {
	e := world(t)
	for _, pushed := range []bool{false, true} {
		c := newCore(t, host.Options{})
		if err := c.w.Mount(t.Context(), publicApp(t, e)); err != nil {
			t.Fatal(err)
		}
		caught := mustURL(t, e.PublicAuthorizeURL())
		q := caught.Query()
		q.Set("grant_management_action", "create")
		caught.RawQuery = q.Encode()
		if pushed {
			resp, err := http.PostForm(e.Svc.URL+"/oauth/par", q)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				RequestURI string `json:"request_uri"`
			}
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusCreated {
				t.Fatalf("PAR with grant_management_action=create: %d %v", resp.StatusCode, err)
			}
			caught.RawQuery = url.Values{"client_id": {"demo-public"}, "request_uri": {m.RequestURI}}.Encode()
		}
		if c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: caught.String(), Method: "GET", Trigger: host.TriggerLink, UserGesture: true}) {
			t.Fatal("the navigation to the authorization endpoint loaded")
		}
		c.rec.Wait(t, "the event", shown("consent"))
		var ev *bridge.ConsentShownEvent
		for _, b := range c.bus.all() {
			if s, ok := b.(bridge.ConsentShownEvent); ok {
				ev = &s
			}
		}
		if ev == nil || ev.Pushed != pushed || ev.GrantManagementAction != "create" || ev.GrantID != "" {
			t.Fatalf("pushed %v: consent.shown: want grant_management_action create, got %+v", pushed, ev)
		}
	}
}
