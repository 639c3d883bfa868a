//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// TestJavaScriptURLTowardsTheEndpoint is the red team's attack, 50 times
// on one mounted Miniapp: a frame navigates to a javascript: URL whose
// script, JSON-escaped and %-encoded, heads for the authorization endpoint
// as another client, and then the top frame does the same. WebKit never
// asks the policy about the javascript: URL itself (it runs the script);
// the navigation the script starts is an http(s) one, decided on its own:
// towards the endpoint, refused, and caught by the client check (the
// error screen), never a consent flow. The web process never dies, the
// endpoint receives nothing, and the host still answers afterwards.
func TestJavaScriptURLTowardsTheEndpoint(t *testing.T) {
	e := testEnv(t)
	auth := strings.Replace(e.PublicAuthorizeURL(), "client_id=demo-public", "client_id=cli_x", 1) + "&probe=nav-javascript-frame"
	lit, err := json.Marshal(auth)
	if err != nil {
		t.Fatal(err)
	}
	jsURL, err := json.Marshal("javascript:" + url.PathEscape("void(location.href="+string(lit)+")"))
	if err != nil {
		t.Fatal(err)
	}
	app := triggerApp(t, map[string]string{"attack": `<iframe id=f src="about:blank"></iframe>`}, e.Authorize)
	attack := app.URL + "/attack"
	m := publicApp(t, e, nil)
	m.Name, m.LoadURL, m.StartURL = "javascript: URLs", mustURL(t, attack), mustURL(t, attack)
	m.Policy.Allowed = []string{app.URL}
	before := e.AuthorizeHits()
	rec := mount(t, m)

	// nth matches the n-th event (from 1) that match matches.
	nth := func(n int, match func(host.Event) bool) func(host.Event) bool {
		seen := 0
		return func(ev host.Event) bool {
			if match(ev) {
				seen++
			}
			return seen == n
		}
	}
	caught := func(ev host.Event) bool {
		return ev.Kind == host.EventNavigation && ev.Action == host.Consent && strings.HasPrefix(ev.URL, e.Authorize)
	}
	refused := func(ev host.Event) bool {
		return ev.Kind == host.EventError && strings.Contains(ev.Detail, `client "cli_x"`)
	}
	loaded := func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == attack }
	const rounds = 50
	for i := 1; i <= rounds; i++ {
		// The frame's javascript: URL, then the top frame's.
		testWin.Eval(`document.getElementById("f").src = ` + string(jsURL))
		rec.Wait(t, "the frame's navigation towards the endpoint", nth(2*i-1, caught))
		rec.Wait(t, "the client check's error", nth(2*i-1, refused))
		testWin.Eval(`location.href = ` + string(jsURL))
		rec.Wait(t, "the top frame's navigation towards the endpoint", nth(2*i, caught))
		rec.Wait(t, "the client check's error", nth(2*i, refused))
		testWin.CloseConsent()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := testWin.Reload(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: reload: %v", i, err)
		}
		rec.Wait(t, "the reloaded page", nth(i+1, loaded))
		if dead := rec.All(kind(host.EventWebProcessTerminated)); len(dead) != 0 {
			t.Fatalf("round %d: the web process died: %v", i, dead)
		}
	}
	if got := rec.All(kind(host.EventConsentRequested)); len(got) != 0 {
		t.Errorf("a javascript: URL started %d consent flows: %v", len(got), got)
	}
	// No navigation the policy was asked about was the javascript: URL
	// treated as a sign-in.
	for _, ev := range rec.All(kind(host.EventNavigation)) {
		if ev.Action == host.Consent && !strings.HasPrefix(ev.URL, e.Authorize) {
			t.Errorf("consent for %q", ev.URL)
		}
	}
	if n := e.AuthorizeHits() - before; n != 0 {
		t.Errorf("the authorization endpoint received %d requests from the view", n)
	}
	// The host still answers: the page runs script, and a top URL is the
	// Miniapp's.
	var got string
	evalJSON(t, `document.getElementById("f") ? "alive" : "no frame"`, &got)
	if got != "alive" {
		t.Errorf("after %d rounds the page answers %q", rounds, got)
	}
	if top := testWin.TopURL(); top == nil || top.String() != attack {
		t.Errorf("the view left the Miniapp: top URL %v", top)
	}
}
