package playground

import (
	"net/http"
	"strings"
	"testing"
)

// explainReport is what the tests read of a dry run's report.
type explainReport struct {
	Verdict   string `json:"verdict"`
	RefusedBy *struct {
		Name, Check, Code, Rule, Message string
	} `json:"refused_by"`
	Tokens *struct {
		AccessToken struct {
			Sub      string `json:"sub"`
			ClientID string `json:"client_id"`
			Scope    string `json:"scope"`
		} `json:"access_token"`
	} `json:"tokens"`
}

// TestExplainAPI: the launcher's POST /api/explain is the embedded
// server's dry run: a refusal names its check and rule, an accepted
// request has its claims, and input the dry run cannot read is refused 400
// naming the member.
func TestExplainAPI(t *testing.T) {
	p := start(t, Config{})
	base := p.Services().BaseURL
	var rep explainReport
	st := call(t, p, "POST", "/api/explain", map[string]any{"client_id": DemoPublicID, "subject": "sub_ana",
		"authorization_details": `[{"type":"` + base + `/authorization-details/company-identity","actions":["read"],"locations":["` + base + `"]},` +
			`{"type":"` + base + `/authorization-details/company-addresses","actions":["read"],"locations":["` + base + `"]}]`}, &rep)
	if st != http.StatusOK || rep.Verdict != "refused" || rep.RefusedBy == nil || rep.RefusedBy.Name != "catalog" || rep.RefusedBy.Code != "org_id_missing" ||
		!strings.Contains(rep.RefusedBy.Rule, "org_id") {
		t.Fatalf("a Company-scoped detail without org_id: %d %+v %+v", st, rep, rep.RefusedBy)
	}
	rep = explainReport{}
	if st := call(t, p, "POST", "/api/explain", map[string]any{"client_id": DemoPublicID, "subject": "sub_carla", "scope": "openid profile"}, &rep); st != http.StatusOK ||
		rep.Verdict != "approvable" || rep.Tokens == nil || rep.Tokens.AccessToken.Sub != "sub_carla" || rep.Tokens.AccessToken.Scope != "openid profile" {
		t.Fatalf("an accepted request: %d %+v", st, rep)
	}
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if st := call(t, p, "POST", "/api/explain", map[string]any{"client_id": "nobody", "subject": "sub_ana"}, &e); st != http.StatusBadRequest ||
		e.Error.Code != "invalid_field" || !strings.HasPrefix(e.Error.Message, "/client_id: ") {
		t.Fatalf("an unknown client: %d %+v", st, e)
	}
	if st := call(t, p, "POST", "/api/explain", map[string]any{"client_id": DemoPublicID, "subject": "sub_ana", "authorization_details": "{"}, &e); st != http.StatusBadRequest ||
		!strings.HasPrefix(e.Error.Message, "/authorization_details: ") {
		t.Fatalf("authorization_details that is no JSON: %d %+v", st, e)
	}
}

// TestExplainInChromium: the launcher's Explain panel in headless Chromium
// shows a refused request's checks, the refusing one with its rule and
// values, then an accepted one's consent screen and claims; what the page
// writes of the report stays text.
func TestExplainInChromium(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	openLauncher(t, ctx, p)
	poll(t, ctx, "the panel's subjects", `document.querySelectorAll("#explain-subject option").length === 3`)
	base := p.Services().BaseURL
	set := func(name, value string) {
		t.Helper()
		eval[bool](t, ctx, `(() => { document.querySelector('#explain-form [name="`+name+`"]').value = `+jsString(value)+`; return true; })()`)
	}
	charge := `[{"type":"` + base + `/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["` + base + `"],` +
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"},"beneficiaries":["a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"]}]`
	set("client_id", DemoPublicID)
	set("subject", "sub_ana")
	set("authorization_details", charge)
	set("org_id", "org_andes")
	click(t, ctx, `#explain-form button[type=submit]`)
	poll(t, ctx, "the refused report", `document.getElementById("explain-report").dataset.state === "done"`)
	if v := eval[string](t, ctx, `document.querySelector("#explain-report .explain-verdict").dataset.verdict`); v != "refused" {
		t.Fatalf("verdict %q", v)
	}
	item := `document.querySelector('#explain-report li[data-name="beneficiaries"]')`
	if got := eval[string](t, ctx, item+`.dataset.outcome`); got != "fail" {
		t.Fatalf("beneficiaries: outcome %q", got)
	}
	text := eval[string](t, ctx, item+`.textContent`)
	for _, want := range []string{"REFUSED beneficiaries (resource controls) beneficiary_not_allowed", "rule: each account in the beneficiaries",
		"operator_company=org_pacifico", "does not belong to the operator of project prj_demo"} {
		if !strings.Contains(text, want) {
			t.Errorf("the refusing check does not say %q: %q", want, text)
		}
	}
	if eval[bool](t, ctx, `document.querySelector("#explain-report .explain-tokens") !== null`) {
		t.Error("a refused request shows token claims")
	}

	// Accepted: the consent screen and the claims. The scope typed is
	// markup, which stays text in the catalog's refusal first.
	set("authorization_details", "")
	set("org_id", "")
	set("scope", `<img src=x onerror="document.body.dataset.pwned=1">`)
	click(t, ctx, `#explain-form button[type=submit]`)
	poll(t, ctx, "the catalog's refusal", `document.getElementById("explain-report").dataset.state === "done" &&
		document.querySelector('#explain-report li[data-name="catalog"][data-outcome="fail"]') !== null`)
	if eval[bool](t, ctx, `document.querySelector("#explain-report img") !== null || document.body.dataset.pwned === "1"`) {
		t.Fatal("a value of the report became markup")
	}
	set("scope", "openid profile offline_access")
	set("subject", "sub_carla")
	click(t, ctx, `#explain-form button[type=submit]`)
	poll(t, ctx, "the accepted report", `document.getElementById("explain-report").dataset.state === "done" &&
		document.querySelector("#explain-report .explain-verdict").dataset.verdict === "approvable"`)
	claims := eval[string](t, ctx, `document.querySelector("#explain-report .explain-tokens").textContent`)
	if !strings.Contains(claims, `"sub": "sub_carla"`) || !strings.Contains(claims, `"client_id": "`+DemoPublicID+`"`) ||
		!strings.Contains(claims, `"refresh_token"`) {
		t.Fatalf("claims: %s", claims)
	}
	if who := eval[string](t, ctx, `document.querySelector("#explain-report .explain-who").textContent`); !strings.Contains(who, "(sub_carla)") {
		t.Fatalf("consent screen: %q", who)
	}

	// Input the dry run cannot read: the member named.
	set("client_id", "nobody")
	click(t, ctx, `#explain-form button[type=submit]`)
	poll(t, ctx, "the refusal", `document.getElementById("explain-report").dataset.state === "error"`)
	if got := eval[string](t, ctx, `document.getElementById("explain-report").textContent`); !strings.Contains(got, `/client_id: no client "nobody"`) {
		t.Fatalf("an unknown client shows %q", got)
	}
}
