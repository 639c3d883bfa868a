//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/devapp"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/playground"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// The signing provider's client reads GET {base_url}/authorization for the
// tokens whose audience names it (docs/authserver.md): its secret is set
// once in the test world.
const signingSecret = "signing-provider-secret-for-the-tests"

var signingOnce sync.Once

func signingProvider(t *testing.T, e *hosttest.World) {
	t.Helper()
	var err error
	signingOnce.Do(func() {
		err = e.Store.SetClientSecret(context.Background(), "signing-provider", store.Hash(signingSecret))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// perEntryRequest asks, for the Company org_andes, three scopes and five
// details: company-identity (0) and company-addresses (1), which the
// catalog grants only together, an automatic charge of 1000 to 50000 CLP
// (2), invoicing documents (3) and the signing key (4), whose provider
// reads the grant.
func perEntryRequest(e *hosttest.World) map[string]any {
	base := e.Svc.URL + "/api"
	const signing, invoicing = "http://127.0.0.1:9", "http://127.0.0.1:9"
	return map[string]any{"scope": "openid profile email", "org_id": "org_andes", "authorization_details": []map[string]any{
		{"type": base + "/authorization-details/company-identity", "actions": []string{"read"}, "locations": []string{base}},
		{"type": base + "/authorization-details/company-addresses", "actions": []string{"read"}, "locations": []string{base}},
		{"type": base + "/authorization-details/automatic-charge", "actions": []string{"create_automatic_charge", "execute_automatic_charge"},
			"locations": []string{base}, "transaction": map[string]any{"currency": "CLP", "minimum": "1000", "maximum": "50000"}},
		{"type": invoicing + "/authorization-details/documents", "actions": []string{"read"}, "locations": []string{invoicing + "/invoicing"}},
		{"type": signing + "/authorization-details/signing-key", "actions": []string{"read"}, "locations": []string{signing + "/signing"}},
	}}
}

// clickHost clicks the element of the host's view that selector names
// with a real pointer (XTest), after scrolling it into view.
func clickHost(t *testing.T, selector string) {
	t.Helper()
	var r struct{ X, Y float64 }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := testWin.EvalHost(ctx, `(() => { const e = document.querySelector(`+jsString(selector)+`); if (!e) return null;
		e.scrollIntoView({block: "center"}); const b = e.getBoundingClientRect(); return {X: b.left + b.width / 2, Y: b.top + b.height / 2}; })()`)
	if err != nil || out == "null" || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("where is %s on the consent view: %v %s", selector, err, out)
	}
	ch := make(chan [2]int, 1)
	testEng.Dispatch(func() {
		ox, oy := testEng.screenOrigin(host.ViewHost)
		ch <- [2]int{ox, oy}
	})
	o := <-ch
	xdotool(t, "mousemove", itoa(o[0]+int(r.X)), itoa(o[1]+int(r.Y)), "click", "1")
}

// grantState is what the consent view shows of the choices.
type grantState struct {
	Checked  []string `json:"checked"`  // the entries checked
	Disabled []string `json:"disabled"` // the checkboxes that cannot change
	Rules    string   `json:"rules"`    // the warning beside Approve, "" when hidden
	Approve  bool     `json:"approve"`  // Approve is enabled
	Maximum  string   `json:"maximum"`  // the automatic charge's maximum field
	Decided  string   `json:"decided"`
}

func viewState(t *testing.T) grantState {
	t.Helper()
	var s grantState
	js := hostString(t, `JSON.stringify({
		checked: Array.from(document.querySelectorAll("input.grant:checked")).map((b) => b.value),
		disabled: Array.from(document.querySelectorAll("input.grant:disabled")).map((b) => b.value),
		rules: document.getElementById("rules").hidden ? "" : document.getElementById("rules").textContent,
		approve: !document.getElementById("approve").disabled && document.getElementById("approve").dataset.blocked !== "true",
		maximum: (document.getElementById("maximum-2") || {}).value || "",
		decided: document.getElementById("approve").dataset.decided || ""})`)
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("consent view state %s: %v", js, err)
	}
	return s
}

// waitView waits until the consent view's state satisfies ok.
func waitView(t *testing.T, what string, ok func(grantState) bool) grantState {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := viewState(t)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: the consent view shows %+v; its presses: %s", what, s, hostString(t, `JSON.stringify(window.hostPresses.slice(-6))`))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readGrant is GET {base_url}/authorization for token, as the signing
// provider (in the token's audience) reads it.
func readGrant(t *testing.T, e *hosttest.World, token string) (scopes []string, details []map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.Svc.URL+"/api/authorization", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Client-Id", "signing-provider")
	req.Header.Set("X-Client-Secret", signingSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var g struct {
		Scopes  []string         `json:"scopes"`
		Details []map[string]any `json:"authorizationDetails"`
		Code    string           `json:"code"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /authorization: %d %s %v", resp.StatusCode, g.Code, err)
	}
	return g.Scopes, g.Details
}

// detailSummary names each granted detail by the end of its type, with an
// automatic charge's maximum.
func detailSummary(details []map[string]any) string {
	var out []string
	for _, d := range details {
		typ, _ := d["type"].(string)
		s := typ[strings.LastIndex(typ, "/")+1:]
		if tx, ok := d["transaction"].(map[string]any); ok {
			s += " max " + tx["maximum"].(string)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// authorizeThroughBridge starts window.miniapp.authorize with req in the
// public demo and waits for the consent view to be armed.
func authorizeThroughBridge(t *testing.T, rec *recorder, req map[string]any) {
	t.Helper()
	js, _ := json.Marshal(req)
	testWin.Eval(`window.miniapp.authorize(` + string(js) + `).then(function (r) { document.body.dataset.result = JSON.stringify(r); },
		function (err) { document.body.dataset.result = "error " + err.code + " " + err.message; })`)
	rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	pollHost(t, `document.getElementById("approve").dataset.inert`, "false")
}

// tokenResult waits for the token response the Miniapp's page received.
func tokenResult(t *testing.T) (scope string, details []map[string]any, token string) {
	t.Helper()
	pollJS(t, `(document.body.dataset.result || "") === "" ? "waiting" : "done"`, "done")
	var raw string
	evalJSON(t, `document.body.dataset.result`, &raw)
	var r struct {
		AccessToken string           `json:"access_token"`
		Scope       string           `json:"scope"`
		Details     []map[string]any `json:"authorization_details"`
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil || r.AccessToken == "" {
		t.Fatalf("the Miniapp got %s", raw)
	}
	return r.Scope, r.Details, r.AccessToken
}

// TestConsentViewPerEntry is per-entry consent in the host's own view,
// with real pointer and key input: every entry but openid has a checkbox,
// checked; declining company-addresses alone says why Approve is off and
// a real click on it decides nothing; the subject then keeps the pair,
// declines the scope email and the invoicing documents, lowers the
// automatic charge's maximum by typing, and approves. The token response
// the Miniapp gets, GET {base_url}/authorization and consent.decided carry
// exactly that. The view is written to artifacts/host/consent-per-entry.png.
func TestConsentViewPerEntry(t *testing.T) {
	e := testEnv(t)
	signingProvider(t, e)
	rec := mount(t, publicApp(t, e, nil))
	busFrom := testBus.len()
	authorizeThroughBridge(t, rec, perEntryRequest(e))

	s := viewState(t)
	all := []string{"scope openid", "scope profile", "scope email", "detail 0", "detail 1", "detail 2", "detail 3", "detail 4"}
	if !slices.Equal(s.Checked, all) || !slices.Equal(s.Disabled, []string{"scope openid"}) || !s.Approve || s.Maximum != "50000" || s.Rules != "" {
		t.Fatalf("the consent view starts as %+v; want every entry checked, openid alone fixed, approve on, maximum 50000", s)
	}
	text := hostString(t, `document.body.innerText`)
	for _, want := range []string{"For the company Comercial Andes SpA", "Largest charge you allow", "Account to share", "Cuenta empresa", "Needed to sign you in"} {
		if !strings.Contains(text, want) {
			t.Errorf("the consent view lacks %q", want)
		}
	}

	// company-addresses alone declined: the catalog's rule, said before
	// approving; Approve is off and a real click on it decides nothing.
	clickHost(t, `input.grant[value="detail 1"]`)
	s = waitView(t, "the rule's warning", func(s grantState) bool { return s.Rules != "" })
	if s.Approve || !strings.Contains(s.Rules, "company-identity") || !strings.Contains(s.Rules, "company-addresses") {
		t.Fatalf("with company-addresses declined the view shows %+v; want approve off and the pair named", s)
	}
	n := len(waitPresses(t, 1))
	if err := os.MkdirAll(artifactDir(t), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testWin.Snapshot(ctx, filepath.Join(artifactDir(t), "consent-per-entry-rule.png")); err != nil {
		t.Fatal(err)
	}
	clickHost(t, "#approve")
	waitPresses(t, n+1)
	if s := viewState(t); s.Decided != "" || len(rec.All(kind(host.EventConsentDecided))) != 0 {
		t.Fatalf("a click on the disabled Approve decided: %+v", s)
	}

	// Keep the pair, decline email and the documents, lower the maximum.
	clickHost(t, `input.grant[value="detail 1"]`)
	waitView(t, "the warning gone", func(s grantState) bool { return s.Rules == "" && s.Approve })
	clickHost(t, `input.grant[value="scope email"]`)
	waitView(t, "email declined", func(s grantState) bool { return !slices.Contains(s.Checked, "scope email") })
	clickHost(t, `input.grant[value="detail 3"]`)
	waitView(t, "the documents declined", func(s grantState) bool { return !slices.Contains(s.Checked, "detail 3") })
	clickHost(t, "#maximum-2")
	xdotool(t, "key", "ctrl+a")
	xdotool(t, "type", "20000")
	s = waitView(t, "the choices", func(s grantState) bool { return s.Maximum == "20000" && len(s.Checked) == 6 })
	if want := []string{"scope openid", "scope profile", "detail 0", "detail 1", "detail 2", "detail 4"}; !slices.Equal(s.Checked, want) || !s.Approve {
		t.Fatalf("after the choices the view shows %+v; want %v checked and approve on", s, want)
	}
	hostString(t, `(document.getElementById("maximum-2").scrollIntoView({block: "center"}), "")`)
	if err := testWin.Snapshot(ctx, filepath.Join(artifactDir(t), "consent-per-entry.png")); err != nil {
		t.Fatal(err)
	}
	clickHost(t, "#approve")
	rec.Wait(t, "the decision", kind(host.EventConsentDecided))

	scope, details, token := tokenResult(t)
	const wantDetails = "company-identity, company-addresses, automatic-charge max 20000, signing-key"
	if scope != "openid profile" || detailSummary(details) != wantDetails {
		t.Errorf("token response: scope %q, details %s; want openid profile and %s", scope, detailSummary(details), wantDetails)
	}
	gs, gd := readGrant(t, e, token)
	if strings.Join(gs, " ") != "openid profile" || detailSummary(gd) != wantDetails {
		t.Errorf("GET /authorization: scopes %v, details %s; want openid profile and %s", gs, detailSummary(gd), wantDetails)
	}
	ev := testBus.find(busFrom, func(ev bridge.Event) bool { _, ok := ev.(bridge.ConsentDecidedEvent); return ok })
	d, _ := ev.(bridge.ConsentDecidedEvent)
	if d.Decision != bridge.ConsentApproved || !slices.Equal(d.DeclinedScopes, []string{"email"}) || !slices.Equal(d.DeclinedDetails, []int{3}) ||
		len(d.LoweredMaximums) != 1 || d.LoweredMaximums[0] != (bridge.LoweredMaximum{Index: 2, Maximum: "20000"}) || d.Account == "" {
		t.Errorf("consent.decided %+v; want approved, email and detail 3 declined, detail 2 at 20000, an account", d)
	}
}

// TestConsentAutomationPerEntry is the automation channel's
// consent.approve with per-entry decisions (what the WebDriver front's
// approve sends): an entry the screen does not have and openid are
// refused as invalid params, a rest that breaks the company pair as
// consent_refused with the rule, and a valid choice grants exactly the
// rest.
func TestConsentAutomationPerEntry(t *testing.T) {
	e := testEnv(t)
	signingProvider(t, e)
	rec := mount(t, publicApp(t, e, nil))
	authorizeThroughBridge(t, rec, perEntryRequest(e))
	ctl := testWin.Controller(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range []struct {
		name    string
		choices bridge.ConsentChoices
		code    bridge.Code
		msg     string
	}{
		{"a scope not on the screen", bridge.ConsentChoices{DeclinedScopes: []string{"phone"}}, bridge.CodeInvalidParams, `declined_scopes[0] "phone" is not a scope on the screen`},
		{"openid", bridge.ConsentChoices{DeclinedScopes: []string{"openid"}}, bridge.CodeInvalidParams, "cannot be declined"},
		{"a detail not on the screen", bridge.ConsentChoices{DeclinedDetails: []int{9}}, bridge.CodeInvalidParams, "declined_details[0] 9"},
		{"a maximum on no charge", bridge.ConsentChoices{LoweredMaximums: []bridge.LoweredMaximum{{Index: 0, Maximum: "5"}}}, bridge.CodeInvalidParams, "is not an automatic charge"},
		{"the pair broken", bridge.ConsentChoices{DeclinedDetails: []int{0}}, host.CodeConsentRefused, "company-addresses) is granted only together with authorization_details/0 (company-identity)"},
		{"a maximum above the request", bridge.ConsentChoices{LoweredMaximums: []bridge.LoweredMaximum{{Index: 2, Maximum: "60000"}}}, host.CodeConsentRefused, "from 1000 to 50000"},
	} {
		err := ctl.ApproveConsent(ctx, bridge.ApproveCommand{Choices: &c.choices})
		be, ok := err.(*bridge.Error)
		if !ok || be.Code != c.code || !strings.Contains(be.Message, c.msg) {
			t.Errorf("%s: %v; want %s with %q", c.name, err, c.code, c.msg)
		}
	}
	if d := rec.All(kind(host.EventConsentDecided)); len(d) != 0 {
		t.Fatalf("a refused choice decided: %v", d)
	}
	err := ctl.ApproveConsent(ctx, bridge.ApproveCommand{Account: "c0ffee00-1234-4abc-9def-0123456789ab", Choices: &bridge.ConsentChoices{
		DeclinedScopes: []string{"profile", "email"}, DeclinedDetails: []int{0, 1}, LoweredMaximums: []bridge.LoweredMaximum{{Index: 2, Maximum: "7500"}}}})
	if err != nil {
		t.Fatal(err)
	}
	scope, details, token := tokenResult(t)
	const wantDetails = "automatic-charge max 7500, documents, signing-key"
	if scope != "openid" || detailSummary(details) != wantDetails {
		t.Errorf("token response: scope %q, details %s; want openid and %s", scope, detailSummary(details), wantDetails)
	}
	gs, gd := readGrant(t, e, token)
	if strings.Join(gs, " ") != "openid" || detailSummary(gd) != wantDetails {
		t.Errorf("GET /authorization: scopes %v, details %s; want openid and %s", gs, detailSummary(gd), wantDetails)
	}
	if !strings.Contains(detailJSON(gd), "c0ffee00-1234-4abc-9def-0123456789ab") {
		t.Errorf("the charge is not bound to the chosen account: %s", detailJSON(gd))
	}
}

func detailJSON(d []map[string]any) string {
	b, _ := json.Marshal(d)
	return string(b)
}

// TestConsentPerEntryHandWrittenMiniapp runs a Miniapp the project did not
// write (testdata/perentry-miniapp: a manifest, a page and a few lines of
// script, nothing of miniapp-host new) under dev in the playground's
// window: its own request for three scopes and a bank account shows the
// host's per-entry consent view, the subject declines email with a real
// click and approves, and the page gets a token response with openid,
// profile and the bank account bound to the chosen account.
func TestConsentPerEntryHandWrittenMiniapp(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"miniapp.webmanifest", "index.html", "app.js"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "perentry-miniapp", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), string(b))
	}
	app, err := devapp.Start(devapp.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	pw := playground.NewWindow(testWin, "test")
	bus := bridge.NewBus(nil)
	testBus.forwardTo(t, bus)
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	p, err := playground.Start(sctx, playground.Config{Opener: pw, Bus: bus})
	scancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("playground: close: %v", err)
		}
	})
	rec := record(t)
	launched := make(chan playground.DevEvent, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Dev(ctx, app, func(ev playground.DevEvent) {
			if ev.Kind == playground.DevLaunched || ev.Kind == playground.DevFailed {
				launched <- ev
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case ev := <-launched:
		if ev.Kind == playground.DevFailed || ev.Launch.Report.Outcome != resolver.OutcomeAccepted || !ev.Launch.Window.Opened {
			t.Fatalf("the hand-written Miniapp was not opened: %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("dev never launched the hand-written Miniapp")
	}
	appHost := strings.TrimPrefix(app.Origin().String(), "http://")
	rec.Wait(t, "its page loaded", func(e host.Event) bool { return e.Kind == host.EventLoadFinished && strings.Contains(e.URL, appHost) })
	var clicked bool
	evalJSON(t, `(document.getElementById("ask").click(), true)`, &clicked)
	rec.Wait(t, "the consent view", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	pollHost(t, `document.getElementById("approve").dataset.inert`, "false")
	s := viewState(t)
	if want := []string{"scope openid", "scope profile", "scope email", "detail 0"}; !slices.Equal(s.Checked, want) {
		t.Fatalf("the consent view offers %v, want %v", s.Checked, want)
	}
	clickHost(t, `input.grant[value="scope email"]`)
	waitView(t, "email declined", func(s grantState) bool { return !slices.Contains(s.Checked, "scope email") && s.Approve })
	clickHost(t, "#approve")
	pollJS(t, `document.body.dataset.state`, "signed-in")
	var raw string
	evalJSON(t, `document.getElementById("result").textContent`, &raw)
	var r struct {
		Scope   string           `json:"scope"`
		Details []map[string]any `json:"authorization_details"`
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil || r.Scope != "openid profile" || len(r.Details) != 1 || r.Details[0]["type"] != "bank_account" || r.Details[0]["identifiers"] == nil {
		t.Errorf("the Miniapp got %s; want scope openid profile and the bank account bound to an account", raw)
	}
}
