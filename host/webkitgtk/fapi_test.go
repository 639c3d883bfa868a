//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/playground"
)

// TestPlaygroundFAPIWindow runs the FAPI demo (docs/fapi.md, "Running a
// Miniapp on the profile") end to end in the window: launched from the
// launcher, its backend pushes its request with private_key_jwt and a
// DPoP proof, the view's navigation with client_id and request_uri only is
// caught, the host's consent shows the pushed request and is approved
// natively, and the Miniapp's page is signed in with a DPoP-bound token
// that GET {base_url}/authorization accepted with its proof. The network
// log and its HAR hold the pushed request first, the request_uri's
// resolution on the caught request, and every DPoP proof as its header
// and the key's thumbprint (the one the page shows) only; the launcher's
// inspector shows the pushed request and the consent of the pushed one.
func TestPlaygroundFAPIWindow(t *testing.T) {
	pw := playground.NewWindow(testWin, "test")
	bus := bridge.NewBus(nil)
	testBus.forwardTo(t, bus)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	p, err := playground.Start(ctx, playground.Config{Opener: pw, Bus: bus})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("playground: close: %v", err)
		}
		testWin.ShowPage(host.PageMiniapp)
	})
	rec := record(t)
	if err := testWin.ShowLauncher(p.LauncherURL()); err != nil {
		t.Fatal(err)
	}
	pollLauncher(t, `document.body.dataset.ready === "true" && document.getElementById("channel").dataset.state === "open" &&
		document.querySelector('#list-demo li[data-id="demo-fapi"]') !== null`)
	launcherClick(t, `#miniapps-pane li[data-id="demo-fapi"] button.launch`)
	rec.Wait(t, "the consent screen", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = pw.ApproveConsent(actx, bridge.ApproveCommand{})
	acancel()
	if err != nil {
		t.Fatalf("approve: %v; the window's events:\n%s", err, rec.Dump())
	}
	o := entryOrigin(t, p, playground.DemoFAPIID)
	rec.Wait(t, "the Miniapp signed in", func(e host.Event) bool {
		return e.Kind == host.EventLoadFinished && strings.HasPrefix(e.URL, o+"/") && !strings.Contains(e.URL, "error=")
	})
	var page struct{ SignedIn, TokenType, GrantStatus, JKT, Grant string }
	evalJSON(t, `({SignedIn: document.body.dataset.signedIn, TokenType: document.body.dataset.tokenType,
		GrantStatus: document.body.dataset.grantStatus, JKT: document.body.dataset.jkt,
		Grant: (document.getElementById("grant") || {}).textContent || ""})`, &page)
	if page.SignedIn != "true" || page.TokenType != "DPoP" || page.GrantStatus != "200" || len(page.JKT) != 43 ||
		!strings.Contains(page.Grant, "authorization-details/signing-key") {
		t.Fatalf("the FAPI demo's page: %+v; want signed in with a DPoP token whose grant GET /authorization answered (200, the signing-key detail)", page)
	}

	testWin.ShowPage(host.PageLauncher)
	var flow netlog.FlowExport
	pollFor(t, "the FAPI demo's completed flow with its grant read", func() bool {
		for _, f := range p.NetLog().Flows() {
			x, _ := p.NetLog().Flow(f.ID)
			if f.ClientID == playground.DemoFAPIID && f.Outcome == netlog.OutcomeCompleted && len(x.Entries) > 0 &&
				x.Entries[len(x.Entries)-1].Kind != "" && hasKind(x, netlog.KindGrant) {
				flow = x
				return true
			}
		}
		return false
	})
	// Entries are in the order they started: the view's request of
	// auth_url may come first, then the backend's push it made while
	// answering, then the caught request.
	caught, par := -1, -1
	for i, e := range flow.Entries {
		switch e.Kind {
		case netlog.KindAuthorize:
			caught = i
		case netlog.KindPAR:
			par = i
		}
	}
	if par < 0 || caught < par || flow.Entries[par].Source != netlog.SourceBackend || flow.Entries[par].Response == nil ||
		flow.Entries[par].Response.Status != 201 {
		t.Fatalf("flow %s entries: want the backend's pushed request (201) before the caught request; got %v", flow.ID, kindsOf(flow))
	}
	var pushed struct {
		Pushed      bool   `json:"pushed"`
		RedirectURI string `json:"redirect_uri"`
		DPoPJKT     string `json:"dpop_jkt"`
	}
	if err := json.Unmarshal(flow.Entries[caught].Authorize.Pushed, &pushed); err != nil || !pushed.Pushed || pushed.RedirectURI != o+"/callback" || pushed.DPoPJKT != page.JKT {
		t.Errorf("the caught request's resolution %s: want the pushed request, its redirect_uri and the page's key %s", flow.Entries[caught].Authorize.Pushed, page.JKT)
	}
	var h netlog.HAR
	apiGet(t, p, "/api/flows/"+flow.ID+"/har", &h)
	proofs := 0
	for _, e := range h.Log.Entries {
		for _, hd := range e.Request.Headers {
			if !strings.EqualFold(hd.Name, "DPoP") {
				continue
			}
			proofs++
			if !strings.HasPrefix(hd.Value, `redacted:withheld (the DPoP proof); header {"alg":"ES256","typ":"dpop+jwt"}; jkt `+page.JKT) {
				t.Errorf("HAR %s %s: DPoP kept as %q, want its header and the key %s only", e.Kind, e.Request.URL, hd.Value, page.JKT)
			}
		}
	}
	if proofs < 3 {
		t.Errorf("HAR of flow %s: %d DPoP proofs, want those of the PAR, token and grant requests (%v)", flow.ID, proofs, kindsOf(flow))
	}
	pollLauncher(t, `(() => {
		const f = document.querySelector('#timeline .flow[data-flow="`+flow.ID+`"]');
		if (f === null) return false;
		const sums = (k) => [...f.querySelectorAll('li[data-kind="' + k + '"] .ev-summary')].map((e) => e.textContent);
		return sums("network").some((s) => s.startsWith("pushed authorization request: POST ") && s.includes("→ 201") && s.includes("; DPoP redacted:withheld")) &&
			sums("consent.shown").some((s) => s.startsWith("client demo-fapi asks") && s.endsWith("(the pushed request its request_uri named)")) &&
			sums("grant").some((s) => s.startsWith("GET /authorization → 200"));
	})()`)
}

func hasKind(x netlog.FlowExport, kind string) bool {
	for _, e := range x.Entries {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

func kindsOf(x netlog.FlowExport) []string {
	var out []string
	for _, e := range x.Entries {
		out = append(out, e.Kind)
	}
	return out
}
