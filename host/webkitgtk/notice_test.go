//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/redact"
)

// TestBlockedSignInNotice: a Miniapp whose sign-in link leads to an
// authorization server the host does not know (another port, as when the
// host watches another service than the Miniapp's) is blocked, even on a
// click, which would otherwise open the system browser; and the host's
// own view, rendered by WebKit, shows the notice over the Miniapp: the
// URL with its state redacted, the rule, the server this host signs in
// with, and a Close button. The other server never sees the request.
func TestBlockedSignInNotice(t *testing.T) {
	e := testEnv(t)
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("another authorization server"))
	}))
	defer other.Close()
	const state = "ST4TE-only-the-page-knows"
	signIn := other.URL + "/oauth/authorize?response_type=code&client_id=demo-public&state=" + state
	app := triggerApp(t, map[string]string{"": `<a id=go href="` + html.EscapeString(signIn) + `">Sign in</a>`}, signIn)
	externalsBefore := len(externalURLs())
	rec := mount(t, host.Miniapp{Name: "other server", LoadURL: mustURL(t, app.URL+"/"),
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{app.URL}}, Consent: e.Consent})
	defer testWin.CloseConsent()
	testWin.Eval(`document.getElementById("go").click()`)
	nav := rec.Wait(t, "the sign-in's decision", func(ev host.Event) bool {
		return ev.Kind == host.EventNavigation && strings.HasPrefix(ev.URL, other.URL)
	})
	if nav.Action != host.Block || nav.Rule != host.RuleOtherServer {
		t.Errorf("the sign-in with %s was decided %s by %q; want block by %q", other.URL, nav.Action, nav.Rule, host.RuleOtherServer)
	}
	rec.Wait(t, "the notice on screen", func(ev host.Event) bool { return ev.Kind == host.EventHostShown && ev.Detail == "blocked" })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := testWin.EvalHost(ctx, `JSON.stringify({title: document.querySelector("h1").textContent,
		text: document.getElementById("message").textContent, close: (document.getElementById("dismiss") || {}).textContent || ""})`)
	if err != nil {
		t.Fatal(err)
	}
	var raw string
	var shown struct{ Title, Text, Close string }
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if err := json.Unmarshal([]byte(raw), &shown); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	if !strings.Contains(shown.Title, "another authorization server") {
		t.Errorf("the notice's title %q does not say what happened", shown.Title)
	}
	for _, want := range []string{redact.URL(signIn), host.RuleOtherServer, e.Authorize} {
		if !strings.Contains(shown.Text, want) {
			t.Errorf("the notice lacks %q:\n%s", want, shown.Text)
		}
	}
	if strings.Contains(shown.Text, state) {
		t.Errorf("the notice shows the request's state:\n%s", shown.Text)
	}
	if shown.Close != "Close" {
		t.Errorf("the notice's button is %q, want Close", shown.Close)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the other server received %d requests", n)
	}
	if got := externalURLs()[externalsBefore:]; len(got) != 0 {
		t.Errorf("the sign-in went to the system browser: %v", got)
	}
	if top := testWin.TopURL(); top == nil || !strings.HasPrefix(top.String(), app.URL) {
		t.Errorf("the view left the Miniapp: top URL %v", top)
	}
}

// externalURLs is a copy of what the host handed to the system browser.
func externalURLs() []string {
	externals.mu.Lock()
	defer externals.mu.Unlock()
	return append([]string(nil), externals.urls...)
}
