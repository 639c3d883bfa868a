//go:build linux && cgo

package webkitgtk

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/origin"
)

// TestBridgeRefusesIframeOfAnotherOrigin mounts a Miniapp whose page embeds
// an iframe of another origin (one the client allows, so that it loads).
// The iframe reaches neither the top frame's bound function nor, through
// the raw message handler, the dispatcher: its message lacks the host's
// top-frame key and the bridge refuses it as a subframe call. The top
// frame's own call goes through.
func TestBridgeRefusesIframeOfAnotherOrigin(t *testing.T) {
	e := testEnv(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><script>
window.addEventListener("message", function (m) { document.body.dataset.frame = JSON.stringify(m.data); });
</script><iframe id=f src="%s/frame"></iframe></body></html>`, e.Other.URL)
	}))
	defer page.Close()
	bus := &busRecorder{}
	d, err := testWin.NewBridge(host.BridgeConfig{Origin: origin.MustParse(page.URL), ID: "iframe-test", ClientID: "demo-public",
		RedirectURI: e.Public.RedirectURI(), AuthorizeURL: e.Authorize, TokenURL: e.Token, Events: bus})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec := record(t)
	app := host.Miniapp{Name: "iframe", LoadURL: mustURL(t, page.URL+"/"), Consent: e.Consent, Bridge: d,
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{page.URL, e.Other.URL}}}
	forgetConsents(t) // a fresh subject: the consent view shows
	if err := testWin.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, "a refused bridge message", kind(host.EventBridgeRefused))

	// What the iframe saw (it reports with postMessage): no bound
	// function of its own, and the parent's out of reach.
	pollJS(t, `document.body.dataset.frame ? "reported" : ""`, "reported")
	var raw string
	evalJSON(t, `document.body.dataset.frame`, &raw)
	var seen struct{ HasPost, Parent string }
	if err := jsonUnmarshal(raw, &seen); err != nil {
		t.Fatal(err)
	}
	if seen.HasPost != "undefined" || seen.Parent != "SecurityError" {
		t.Errorf("iframe saw the bound function %q, parent call %q; want undefined, SecurityError", seen.HasPost, seen.Parent)
	}

	// The dispatcher refused the iframe's message as a subframe call (it
	// reports refusals in aggregate, by code).
	refused := func() map[bridge.Code]int {
		bus.mu.Lock()
		defer bus.mu.Unlock()
		out := map[bridge.Code]int{}
		for _, ev := range bus.evs {
			if r, ok := ev.(bridge.BridgeRefusedEvent); ok {
				for c, n := range r.Reasons {
					out[c] += n
				}
			}
		}
		return out
	}
	pollFor(t, "the bridge's refusal", func() bool { return len(refused()) > 0 })
	for c := range refused() {
		if c != bridge.CodeSubframe {
			t.Errorf("refusal code %q, want only %q", c, bridge.CodeSubframe)
		}
	}

	// The top frame's call is served.
	testWin.Eval(`window.miniapp.getContext().then(function (c) { document.body.dataset.ctx = c.origin; }, function (e) { document.body.dataset.ctx = "error " + e.code; })`)
	pollJS(t, `document.body.dataset.ctx || ""`, strings.TrimSuffix(page.URL, "/"))
}
