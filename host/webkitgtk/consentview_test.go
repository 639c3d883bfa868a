//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// TestConsentViewDetails asks, through the bridge, for authorization
// details whose consent screens carry what the view must render: the
// company, each permission's meaning and actions, CLP limits and budget,
// and the account chooser. It picks an account, approves, and checks that
// the granted details name that account. The screens are written to
// artifacts/host/ as screenshots.
func TestConsentViewDetails(t *testing.T) {
	e := testEnv(t)
	base := e.Svc.URL + "/api"
	cases := []struct {
		name    string
		request map[string]any
		want    []string // text the consent view shows
		account string   // the account to choose
	}{{
		name: "bank_account",
		request: map[string]any{"authorization_details": []map[string]any{{
			"type": "bank_account", "actions": []string{"read", "read_movements"}, "locations": []string{base},
			"subject": map[string]any{"type": "profile"}, "selection": map[string]any{"min": 1, "max": 1},
		}}},
		want:    []string{"Read selected accounts", "Read selected account movements", "Cuenta corriente", "Cuenta vista", "Account to share", "Ana Rojas"},
		account: "0b7e9d3c-8a21-4f5e-a6b7-c8d9e0f1a2b3",
	}, {
		name: "automatic-charge",
		request: map[string]any{"org_id": "org_andes", "authorization_details": []map[string]any{{
			"type": base + "/authorization-details/automatic-charge", "actions": []string{"create_automatic_charge", "execute_automatic_charge"},
			"locations": []string{base}, "transaction": map[string]any{"currency": "CLP", "minimum": "1000", "maximum": "50000"},
			"budget": map[string]any{"amount": "200000", "interval": map[string]any{"unit": "months", "count": 1}, "time_zone": "America/Santiago"},
		}}},
		want:    []string{"Comercial Andes SpA", "Create automatic charges", "CLP", "50.000", "200.000", "not enforced", "Cuenta empresa"},
		account: "c0ffee00-1234-4abc-9def-0123456789ab",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := mount(t, publicApp(t, e, nil))
			req, _ := json.Marshal(c.request)
			testWin.Eval(`window.miniapp.authorize(` + string(req) + `).then(function (r) { document.body.dataset.details = JSON.stringify(r.authorization_details); },
				function (err) { document.body.dataset.details = "error " + err.code + " " + err.message; })`)
			rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			text, err := testWin.EvalHost(ctx, `document.body.innerText`)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("consent view lacks %q:\n%s", w, text)
				}
			}
			if out, err := testWin.EvalHost(ctx, `(function(){ var r = document.querySelector('input[name=account][value=`+jsString(c.account)+`]'); if (!r) return false; r.click(); return r.checked; })()`); err != nil || out != "true" {
				t.Fatalf("choose account %s: %v %s", c.account, err, out)
			}
			if err := os.MkdirAll(artifactDir(t), 0o755); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(artifactDir(t), "consent-"+c.name+".png")
			if err := testWin.Snapshot(ctx, shot); err != nil {
				t.Fatal(err)
			}
			press(t, "approve")
			pollJS(t, `(document.body.dataset.details || "").indexOf(`+jsString(c.account)+`) >= 0 ? "granted" : (document.body.dataset.details || "")`, "granted")
		})
	}
}

// TestConsentViewRefusedCheck: a request that one of the checks refuses
// (here an automatic charge from a source that is the subject's own
// account, none of the Company's) says which check refused it and can only be denied.
func TestConsentViewRefusedCheck(t *testing.T) {
	e := testEnv(t)
	base := e.Svc.URL + "/api"
	req, _ := json.Marshal(map[string]any{"org_id": "org_andes", "authorization_details": []map[string]any{{
		"type": "bank_account", "actions": []string{"read"}, "locations": []string{base},
		"subject": map[string]any{"type": "profile"}, "selection": map[string]any{"min": 1, "max": 1},
	}, {
		"type": base + "/authorization-details/automatic-charge", "actions": []string{"create_automatic_charge"},
		"locations": []string{base}, "transaction": map[string]any{"currency": "CLP", "minimum": "1000", "maximum": "50000"},
		"sources": []string{"6f1c2a4e-3b5d-4c7e-9f10-2a3b4c5d6e71"}, // sub_ana's Cuenta corriente
	}}})
	rec := mount(t, publicApp(t, e, nil))
	testWin.Eval(`window.miniapp.authorize(` + string(req) + `).then(function () { document.body.dataset.details = "granted"; },
		function (err) { document.body.dataset.details = err.code; })`)
	rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := testWin.EvalHost(ctx, `JSON.stringify([document.getElementById("refused") ? document.getElementById("refused").innerText : "", document.getElementById("approve").disabled])`)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	var s string
	if err := json.Unmarshal([]byte(out), &s); err != nil || json.Unmarshal([]byte(s), &got) != nil || len(got) != 2 {
		t.Fatalf("refused state: %s (%v)", out, err)
	}
	if text, _ := got[0].(string); !strings.Contains(text, "accounts") || got[1] != true {
		t.Errorf("refused section %q, approve disabled %v; want the accounts check named and approve disabled", got[0], got[1])
	}
	shot := filepath.Join(artifactDir(t), "consent-refused.png")
	if err := testWin.Snapshot(ctx, shot); err != nil {
		t.Fatal(err)
	}
	press(t, "deny")
	pollJS(t, `document.body.dataset.details || ""`, "access_denied")
}

// TestConsentViewOutOfReach: while the consent screen is up, the Miniapp's
// page has no handle on it: the host view's message handler does not exist
// in the Miniapp's view, and the Miniapp's scripts keep running beneath.
func TestConsentViewOutOfReach(t *testing.T) {
	e := testEnv(t)
	rec := mount(t, publicApp(t, e, nil))
	testWin.Eval(`document.getElementById("bridge-signin").click()`)
	rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	var handlers []string
	evalJSON(t, `[typeof window.webkit.messageHandlers.host, typeof window.hostRender, typeof window.__miniappHostPost, String(window.opener)]`, &handlers)
	want := []string{"undefined", "undefined", "undefined", "null"}
	if strings.Join(handlers, ",") != strings.Join(want, ",") {
		t.Errorf("the Miniapp's page sees %v, want %v", handlers, want)
	}
	press(t, "deny")
	pollJS(t, `document.body.dataset.state || ""`, "denied")
}

// TestConsentViewTwoOwners: a request that binds an account of the subject
// (bank_account) and one of the Company (an automatic charge) shows one
// chooser for each owner, and approving binds both: the subject is not
// sent back with "company_account_id required".
func TestConsentViewTwoOwners(t *testing.T) {
	e := testEnv(t)
	base := e.Svc.URL + "/api"
	req, _ := json.Marshal(map[string]any{"org_id": "org_andes", "authorization_details": []map[string]any{{
		"type": "bank_account", "actions": []string{"read"}, "locations": []string{base},
		"subject": map[string]any{"type": "profile"}, "selection": map[string]any{"min": 1, "max": 1},
	}, {
		"type": base + "/authorization-details/automatic-charge", "actions": []string{"create_automatic_charge"},
		"locations": []string{base}, "transaction": map[string]any{"currency": "CLP", "minimum": "1000", "maximum": "50000"},
	}}})
	rec := mount(t, publicApp(t, e, nil))
	testWin.Eval(`window.miniapp.authorize(` + string(req) + `).then(function () { document.body.dataset.details = "granted"; },
		function (err) { document.body.dataset.details = err.code; })`)
	rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := testWin.EvalHost(ctx, `JSON.stringify([document.querySelectorAll("input[name=account]").length, document.querySelectorAll("input[name=company_account]").length])`)
	if err != nil {
		t.Fatal(err)
	}
	// sub_ana has two accounts, Comercial Andes two (the seed).
	if out != `"[2,2]"` {
		t.Errorf("account choosers (subject's, Company's radios): %s, want [2,2]", out)
	}
	press(t, "approve")
	pollJS(t, `document.body.dataset.details || ""`, "granted")
}
