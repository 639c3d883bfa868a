package authserver_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// explain posts a dry run to the development controls and fails the test
// unless it is answered 200.
func (e *env) explain(body map[string]any) map[string]any {
	e.t.Helper()
	return e.mustDash(http.StatusOK, "POST", "/api/dev/explain", e.srv.OperatorKey(), body)
}

// checkOf returns the explained check named name, or fails the test.
func checkOf(t *testing.T, rep map[string]any, name string) map[string]any {
	t.Helper()
	for _, c := range rep["checks"].([]any) {
		if c := c.(map[string]any); c["name"] == name {
			return c
		}
	}
	t.Fatalf("no check %q in %s", name, jsonOf(t, rep["checks"]))
	return nil
}

// refusedBy checks that rep is refused by the check name of group check
// with code, and returns that check.
func refusedBy(t *testing.T, rep map[string]any, name, group, code string) map[string]any {
	t.Helper()
	r, _ := rep["refused_by"].(map[string]any)
	if rep["verdict"] != "refused" || r == nil || r["name"] != name || r["check"] != group || r["code"] != code || r["outcome"] != "fail" {
		t.Fatalf("want refused by %s (%s) with %s, got %s", name, group, code, jsonOf(t, rep))
	}
	if c := checkOf(t, rep, name); c["outcome"] != "fail" || c["rule"] == "" {
		t.Fatalf("check %s in checks: %v", name, c)
	}
	if rep["grant"] != nil || rep["tokens"] != nil {
		t.Fatalf("a refused request has no grant or tokens: %s", jsonOf(t, rep))
	}
	return r
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestExplainProjectNotApproved: a scope outside the project's approved
// policy is refused by the project approval, which names the scope, the
// rule and the approved scopes it compared.
func TestExplainProjectNotApproved(t *testing.T) {
	e := start(t)
	c := e.newSPAClient("https://spa.example/cb", "https://spa.example")
	rep := e.explain(map[string]any{"client_id": c.id, "subject": subAna, "scope": "openid profile addresses:write"})
	r := refusedBy(t, rep, "project_approval", "project_approval", "project_not_approved")
	msg, rule := r["message"].(string), r["rule"].(string)
	if !strings.Contains(msg, `scope "addresses:write"`) || !strings.Contains(msg, c.project) || !strings.Contains(rule, "approved scope policy") {
		t.Fatalf("project_approval: want the scope, the project and the rule named, got %v", r)
	}
	vals := r["values"].(map[string]any)
	if got := strs(vals["approved_scopes"]); !slices.Equal(got, []string{"openid", "profile"}) || vals["project"] != c.project ||
		vals["not_approved"] != `scope "addresses:write"` {
		t.Fatalf("project_approval values: %v", vals)
	}
	for _, name := range []string{"request", "catalog"} {
		if c := checkOf(t, rep, name); c["outcome"] != "pass" {
			t.Fatalf("%s: want pass, got %v", name, c)
		}
	}
	// The consent screen is still described: what the subject would have
	// been asked.
	if m, _ := rep["consent"].(map[string]any); m == nil || len(m["permissions"].([]any)) != 3 {
		t.Fatalf("consent model: %v", rep["consent"])
	}
}

// TestExplainCompanyScopedWithoutOrgID: a Company-scoped detail without
// org_id is refused by the catalog, at /org_id, naming the detail and the
// rule; the three checks after it are skipped.
func TestExplainCompanyScopedWithoutOrgID(t *testing.T) {
	e := start(t)
	base := e.u.BaseURL
	details := `[{"type":"` + base + `/authorization-details/company-identity","actions":["read"],"locations":["` + base + `"]},` +
		`{"type":"` + base + `/authorization-details/company-addresses","actions":["read"],"locations":["` + base + `"]}]`
	// As a string holding the array, the query parameter's form.
	rep := e.explain(map[string]any{"client_id": publicID, "subject": subAna, "authorization_details": details})
	r := refusedBy(t, rep, "catalog", "catalog", "org_id_missing")
	if msg := r["message"].(string); !strings.Contains(msg, "authorization_details/0") || !strings.Contains(msg, "Company-scoped") ||
		!strings.Contains(msg, "add org_id") {
		t.Fatalf("catalog refusal: %v", r)
	}
	vs := r["values"].(map[string]any)["violations"].([]any)
	if v := vs[0].(map[string]any); v["pointer"] != "/org_id" || v["code"] != "org_id_missing" {
		t.Fatalf("violations: %v", vs)
	}
	for _, g := range []string{"project_approval", "subject_consent", "resource_controls"} {
		if c := checkOf(t, rep, g); c["outcome"] != "skipped" {
			t.Fatalf("%s after a catalog refusal: want skipped, got %v", g, c)
		}
	}
	if rep["consent"] != nil {
		t.Fatalf("a request the catalog refuses has no consent screen: %v", rep["consent"])
	}
}

// TestExplainResourceControls: the resource's controls refuse what the
// catalog and the project allow, each naming its control and the values
// compared: an automatic charge's beneficiary that is no account of the
// project's operator, and the signing provider's Company-scoped key for a
// Company the subject may not act for.
func TestExplainResourceControls(t *testing.T) {
	e := start(t)
	base, sign := e.u.BaseURL, e.u.SigningBaseURL
	su, _ := url.Parse(sign)
	signOrigin := su.Scheme + "://" + su.Host

	t.Run("beneficiaries", func(t *testing.T) {
		charge := `[{"type":"` + base + `/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["` + base + `"],` +
			`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"},"beneficiaries":["` + andesAcct + `"]}]`
		rep := e.explain(map[string]any{"client_id": publicID, "subject": subAna, "authorization_details": jsonRaw(charge), "org_id": orgAndes})
		r := refusedBy(t, rep, "beneficiaries", "resource_controls", "beneficiary_not_allowed")
		vals := r["values"].(map[string]any)
		if vals["not_allowed"] != andesAcct || vals["operator_company"] != "org_pacifico" || len(vals["operator_accounts"].([]any)) == 0 ||
			!strings.Contains(r["rule"].(string), "operator Company") || !strings.Contains(r["message"].(string), andesAcct) {
			t.Fatalf("beneficiaries: %v", r)
		}
		// The transaction limits are the control applied at each charge.
		if c := checkOf(t, rep, "transaction_limits"); c["outcome"] != "deferred" || c["check"] != "resource_controls" ||
			c["values"].(map[string]any)["maximum"] != "50000" || !strings.Contains(c["rule"].(string), "automatic-charges") {
			t.Fatalf("transaction_limits: %v", c)
		}
	})
	t.Run("company access at the signing provider", func(t *testing.T) {
		key := `[{"type":"` + signOrigin + `/authorization-details/company-key","actions":["create"],"locations":["` + sign + `"]}]`
		rep := e.explain(map[string]any{"client_id": publicID, "subject": subAna, "authorization_details": jsonRaw(key), "org_id": "org_pacifico"})
		r := refusedBy(t, rep, "company_access", "resource_controls", "company_access_denied")
		vals := r["values"].(map[string]any)
		if vals["org_id"] != "org_pacifico" || vals["subject"] != subAna || vals["member"] != false || !strings.Contains(r["rule"].(string), "member") {
			t.Fatalf("company_access: %v", r)
		}
		// The same request for a Company she acts for passes, with the
		// signing provider as the token's audience.
		rep = e.explain(map[string]any{"client_id": publicID, "subject": subAna, "authorization_details": jsonRaw(key), "org_id": orgAndes})
		if rep["verdict"] != "approvable" {
			t.Fatalf("for org_andes: %s", jsonOf(t, rep))
		}
		if aud := rep["tokens"].(map[string]any)["access_token"].(map[string]any)["aud"]; aud != sign {
			t.Fatalf("aud: want %s, got %v", sign, aud)
		}
	})
}

// jsonRaw is JSON text sent as JSON, not as a string holding it.
type jsonRaw string

func (j jsonRaw) MarshalJSON() ([]byte, error) { return []byte(j), nil }

// TestExplainAccepted: a request every check passes shows the consent
// screen and the grant and claims an approval would give, with the
// server's lifetimes; the grant is the one a real approval then gives.
func TestExplainAccepted(t *testing.T) {
	e := start(t)
	bank := `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"min":1,"max":1}}]`
	rep := e.explain(map[string]any{"client_id": confID, "subject": subAna, "scope": "openid profile offline_access",
		"authorization_details": jsonRaw(bank)})
	if rep["verdict"] != "approvable" || rep["refused_by"] != nil {
		t.Fatalf("want approvable, got %s", jsonOf(t, rep))
	}
	for _, c := range rep["checks"].([]any) {
		c := c.(map[string]any)
		if o := c["outcome"]; o != "pass" && o != "ask" || c["rule"] == "" {
			t.Fatalf("check %v", c)
		}
	}
	if c := checkOf(t, rep, "consent"); c["outcome"] != "ask" || c["check"] != "subject_consent" {
		t.Fatalf("consent: %v", c)
	}
	if rep["consent_remembered"] == true {
		t.Fatal("nothing was consented to yet")
	}
	m := rep["consent"].(map[string]any)
	if m["client"].(map[string]any)["id"] != confID || m["subject"].(map[string]any)["id"] != subAna || m["account_required"] != true ||
		len(m["accounts"].([]any)) == 0 {
		t.Fatalf("consent model: %s", jsonOf(t, m))
	}
	// The grant binds the first offered account, as the screen offers it
	// first.
	first := m["accounts"].([]any)[0].(map[string]any)["id"].(string)
	g := rep["grant"].(map[string]any)
	if !slices.Equal(strs(g["scopes"]), []string{"openid", "profile", "offline_access"}) || g["subject"] != subAna || g["client_id"] != confID ||
		g["account_id"] != first || !strings.Contains(jsonOf(t, g["authorization_details"]), first) ||
		!slices.Equal(strs(g["audience"]), []string{e.u.BaseURL}) {
		t.Fatalf("grant: %s", jsonOf(t, g))
	}
	tk := rep["tokens"].(map[string]any)
	at := tk["access_token"].(map[string]any)
	if tk["token_type"] != "Bearer" || tk["code_lifetime_seconds"] != 60.0 || at["iss"] != e.u.Issuer || at["sub"] != subAna ||
		at["aud"] != e.u.BaseURL || at["client_id"] != confID || at["scope"] != "openid profile offline_access" || at["lifetime_seconds"] != 600.0 {
		t.Fatalf("access token: %s", jsonOf(t, tk))
	}
	if id := tk["id_token"].(map[string]any); id["aud"] != confID || id["sub"] != subAna || id["lifetime_seconds"] != 600.0 {
		t.Fatalf("id token: %v", id)
	}
	if rt := tk["refresh_token"].(map[string]any); rt["lifetime_seconds"] != 30*24*3600.0 {
		t.Fatalf("refresh token: %v", rt)
	}

	// The real approval grants what the dry run said.
	v, c := pkce(t)
	q := e.confAuthParams(c)
	q.Set("authorization_details", bank)
	code := e.nativeCode(q, subAna, map[string]string{"action": "approve", "account_id": anaAccount1}).Get("code")
	// Bound to another account than the first: the remembered one is
	// then the one the dry run binds.
	st, toks := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {v}}, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("exchange: %d %v", st, toks)
	}
	st, real := e.grant(toks["access_token"].(string), confID, e.confSecret)
	if st != http.StatusOK || real["consumerInstallationId"] != g["consumer_installation_id"] ||
		strings.ReplaceAll(jsonOf(t, real["authorizationDetails"]), anaAccount1, first) != jsonOf(t, g["authorization_details"]) || toks["scope"] != at["scope"] {
		t.Fatalf("the real grant %v differs from the explained one %v", real, g)
	}
	// Now remembered: the dry run says no screen would be shown.
	rep = e.explain(map[string]any{"client_id": confID, "subject": subAna, "scope": "openid profile offline_access", "authorization_details": jsonRaw(bank)})
	if c := checkOf(t, rep, "consent"); c["outcome"] != "pass" || rep["consent_remembered"] != true || rep["grant"].(map[string]any)["account_id"] != anaAccount1 {
		t.Fatalf("after the approval: %v %v", c, rep["consent_remembered"])
	}
}

// TestExplainAuthorizeURL: a whole authorize URL is read as the
// authorization endpoint reads it: a valid one explains as its fields do,
// and an unregistered redirect_uri is the request check's refusal naming
// the URI sent and those registered.
func TestExplainAuthorizeURL(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	q := e.authParams(c)
	rep := e.explain(map[string]any{"authorize_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if rep["verdict"] != "approvable" || rep["request"].(map[string]any)["redirect_uri"] != publicRedir {
		t.Fatalf("a valid URL: %s", jsonOf(t, rep))
	}
	// authorization_details that is no JSON, in the query: the catalog's
	// refusal, as at the endpoint, and the text sent shown as it came.
	bad := url.Values{}
	for k, v := range q {
		bad[k] = v
	}
	bad.Set("authorization_details", `[{"type":`)
	rep = e.explain(map[string]any{"authorize_url": e.u.Authorization + "?" + bad.Encode(), "subject": subAna})
	if r := refusedBy(t, rep, "catalog", "catalog", "malformed_json"); rep["request"].(map[string]any)["authorization_details"] != `[{"type":` ||
		!strings.Contains(r["message"].(string), "not valid JSON") {
		t.Fatalf("malformed authorization_details in the URL: %s", jsonOf(t, rep))
	}
	q.Set("redirect_uri", "https://evil.example/cb")
	rep = e.explain(map[string]any{"authorize_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	r := refusedBy(t, rep, "request", "request", "invalid_request")
	vals := r["values"].(map[string]any)
	if vals["redirect_uri"] != "https://evil.example/cb" || !slices.Equal(strs(vals["registered_redirect_uris"]), []string{publicRedir}) ||
		!strings.Contains(r["message"].(string), "redirect_uri") {
		t.Fatalf("request refusal: %v", r)
	}
}

// rowCounts counts the rows of the tables where an authorization leaves
// state.
func rowCounts(t *testing.T, dsn string) map[string]int {
	t.Helper()
	driver := "sqlite"
	if strings.HasPrefix(dsn, "postgres") {
		driver = "pgx"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]int{}
	for _, tbl := range []string{"grants", "codes", "consents", "access_tokens", "refresh_tokens", "sessions", "pending_requests", "quota_counts"} {
		var n int
		if err := db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+tbl).Scan(&n); err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		out[tbl] = n
	}
	return out
}

// TestExplainWritesNothing: dry runs leave no pending request (the quota
// of one per client is still free for a real request), no grant, code or
// consent; the next real authorization asks the subject on the consent
// screen, as if no dry run had happened.
func TestExplainWritesNothing(t *testing.T) {
	e := startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(c *authserver.Config) {
		c.OAuth.MaxPendingPerClient = 1
	})
	before := rowCounts(t, e.db)
	_, c := pkce(t)
	q := e.authParams(c)
	for range 3 {
		e.explain(map[string]any{"client_id": publicID, "subject": subAna, "scope": "openid profile offline_access"})
		e.explain(map[string]any{"authorize_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	}
	if after := rowCounts(t, e.db); jsonOf(t, after) != jsonOf(t, before) {
		t.Fatalf("dry runs wrote state: before %v, after %v", before, after)
	}
	if st, m := e.dash("GET", "/api/dev/clock", e.srv.OperatorKey(), nil); st != http.StatusOK || m["offset"] != "0s" {
		t.Fatalf("clock: %d %v", st, m)
	}
	// A real request of the client is admitted (the one pending place is
	// free) and the subject sees the consent screen: nothing was
	// remembered.
	b := newBrowser(t, e.u.Issuer)
	got := b.browserCode(e.u.Authorization+"?"+q.Encode(), subAna, map[string]string{"action": "approve"})
	if got.Get("code") == "" {
		t.Fatalf("the real authorization after the dry runs: %v", got)
	}
}

// TestExplainBadInput: input a dry run cannot read is refused 400 with
// the member named and what to send.
func TestExplainBadInput(t *testing.T) {
	e := start(t)
	key := e.srv.OperatorKey()
	other := "http://127.0.0.1:1/oauth/authorize?client_id=" + publicID
	for _, x := range []struct {
		name              string
		body              map[string]any
		code, field, want string
	}{
		{"no client", map[string]any{"subject": subAna, "scope": "openid"}, "missing_field", "/client_id", "name the client"},
		{"unknown client", map[string]any{"client_id": "nobody", "subject": subAna, "scope": "openid"}, "invalid_field", "/client_id", `no client "nobody"`},
		{"no subject", map[string]any{"client_id": publicID, "scope": "openid"}, "missing_field", "/subject", "name the subject"},
		{"unknown subject", map[string]any{"client_id": publicID, "subject": "sub_nobody", "scope": "openid"}, "invalid_field", "/subject", "sub_ana, sub_benjamin, sub_carla"},
		{"details not JSON", map[string]any{"client_id": publicID, "subject": subAna, "authorization_details": "[{not json"}, "invalid_field", "/authorization_details", "JSON array"},
		{"details an object", map[string]any{"client_id": publicID, "subject": subAna, "authorization_details": map[string]any{"type": "bank_account"}}, "invalid_field", "/authorization_details", "JSON array"},
		{"details a number", map[string]any{"client_id": publicID, "subject": subAna, "authorization_details": 5}, "invalid_field", "/authorization_details", "JSON array"},
		{"both forms", map[string]any{"client_id": publicID, "subject": subAna, "authorize_url": e.u.Authorization}, "invalid_field", "/authorize_url", "either"},
		{"another endpoint", map[string]any{"authorize_url": other, "subject": subAna}, "invalid_field", "/authorize_url", e.u.Authorization},
		{"URL without client", map[string]any{"authorize_url": e.u.Authorization + "?scope=openid", "subject": subAna}, "invalid_field", "/authorize_url", "no client_id"},
		{"URL of an unknown client", map[string]any{"authorize_url": e.u.Authorization + "?client_id=nobody", "subject": subAna}, "invalid_field", "/authorize_url", `"nobody" names no client`},
		{"pushed request", map[string]any{"authorize_url": e.u.Authorization + "?client_id=" + publicID + "&request_uri=urn:ietf:params:oauth:request_uri:abc", "subject": subAna}, "invalid_field", "/authorize_url", "pushed"},
		{"unknown member", map[string]any{"client_id": publicID, "subject": subAna, "scopes": "openid"}, "invalid_body", "/scopes", "unknown field"},
	} {
		st, m := e.dash("POST", "/api/dev/explain", key, x.body)
		msg, _ := m["message"].(string)
		if st != http.StatusBadRequest || m["code"] != x.code || m["field"] != x.field || !strings.Contains(msg, x.want) {
			t.Errorf("%s: want 400 %s at %s saying %q, got %d %v", x.name, x.code, x.field, x.want, st, m)
		}
	}
}
