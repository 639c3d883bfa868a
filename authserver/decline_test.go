package authserver_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// perEntryRequest asks for three scopes and three details of three
// providers, for Company Andes: bank_account (index 0), the signing
// provider's signing-key (1) and the invoicing provider's documents (2).
func perEntryRequest(e *env, challenge string) url.Values {
	q := e.confAuthParams(challenge)
	q.Set("scope", "openid profile email")
	q.Set("org_id", orgAndes)
	q["resource"] = []string{e.u.BaseURL, e.u.SigningBaseURL, e.u.InvoicingBaseURL}
	q.Set("authorization_details", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["`+anaAccount1+`"]},`+
		`{"type":"`+strings.TrimSuffix(e.u.SigningBaseURL, "/api")+`/authorization-details/signing-key","actions":["read"],"locations":["`+e.u.SigningBaseURL+`"]},`+
		`{"type":"`+strings.TrimSuffix(e.u.InvoicingBaseURL, "/api")+`/authorization-details/documents","actions":["read"],"locations":["`+e.u.InvoicingBaseURL+`"]}]`)
	return q
}

// detailTypes lists the `type` of each object of an authorization_details
// array, with the invoicing and signing origins cut off.
func detailTypes(t *testing.T, v any) string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("authorization_details is not an array: %v", v)
	}
	var out []string
	for _, el := range arr {
		ty, _ := el.(map[string]any)["type"].(string)
		out = append(out, ty[strings.LastIndex(ty, "/")+1:])
	}
	return strings.Join(out, " ")
}

// assertGranted redeems a code of the confidential client and checks that
// the token response, GET {base_url}/authorization and introspection carry
// exactly the scopes openid and profile and the details bank_account and
// documents, and that the signing provider, whose detail was declined, is
// not in the audience.
func assertGranted(t *testing.T, e *env, code, verifier string) {
	t.Helper()
	st, tr := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {verifier}}, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, tr)
	}
	if tr["scope"] != "openid profile" || detailTypes(t, tr["authorization_details"]) != "bank_account documents" {
		t.Fatalf("token response: scope %q, authorization_details %v; want openid profile and bank_account documents", tr["scope"], tr["authorization_details"])
	}
	at := tr["access_token"].(string)
	st, g := e.grant(at, confID, e.confSecret)
	if st != http.StatusOK || jsonOf(t, g["scopes"]) != `["openid","profile"]` || detailTypes(t, g["authorizationDetails"]) != "bank_account documents" {
		t.Fatalf("grant endpoint: %d %v", st, g)
	}
	if !strings.Contains(jsonOf(t, g["authorizationDetails"]), anaAccount1) {
		t.Fatalf("grant endpoint: the bank_account detail lost its account: %v", g["authorizationDetails"])
	}
	st, in := e.introspect(at, confID, e.confSecret)
	if st != http.StatusOK || in["active"] != true || in["scope"] != "openid profile" || detailTypes(t, in["authorization_details"]) != "bank_account documents" {
		t.Fatalf("introspection: %d %v", st, in)
	}
	if st, m := e.grant(at, signingID, signingSecret); st != http.StatusForbidden || m["code"] != "client_not_allowed" {
		t.Fatalf("the signing provider read a grant without its detail: %d %v", st, m)
	}
}

// TestPerEntryConsentNative: through the native-consent API the subject
// declines the scope email and the signing-key detail; the code, the token
// response, the grant endpoint and introspection carry exactly the rest,
// and the same request asks again, since the declined entries were not
// consented to.
func TestPerEntryConsentNative(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	q := perEntryRequest(e, c)
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusCreated {
		t.Fatalf("native submit: %d %v", st, m)
	}
	perms := m["consent"].(map[string]any)["permissions"].([]any)
	if len(perms) != 6 || perms[0].(map[string]any)["fixed"] != true || perms[1].(map[string]any)["fixed"] != nil {
		t.Fatalf("permissions: want 6 with openid fixed, got %v", perms)
	}
	id := m["request_id"].(string)
	st, m = e.decide(id, map[string]any{"action": "approve", "declined_scopes": []string{"openid"}, "account_id": anaAccount1})
	if st != http.StatusBadRequest || m["error"] != "invalid_request" || !strings.Contains(m["error_description"].(string), "declined_scopes[0] 'openid'") {
		t.Fatalf("declining openid: want 400 invalid_request naming openid, got %d %v", st, m)
	}
	st, m = e.decide(id, map[string]any{"action": "approve", "declined_scopes": []string{"email"}, "declined_details": []int{1}, "account_id": anaAccount1})
	if st != http.StatusOK {
		t.Fatalf("decision: %d %v", st, m)
	}
	assertGranted(t, e, redirectQuery(t, m["redirect_url"].(string)).Get("code"), v)

	_, c2 := pkce(t)
	st, m = e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + perEntryRequest(e, c2).Encode(), "subject": subAna})
	if st != http.StatusCreated || m["consent"].(map[string]any)["remembered"] == true {
		t.Fatalf("the same request again: want the screen (the declined entries were not consented to), got %d %v", st, m)
	}
}

// TestPerEntryConsentBrowser: on the consent page the subject unchecks the
// scope email and the signing-key detail; the grant is exactly the rest.
func TestPerEntryConsentBrowser(t *testing.T) {
	e := start(t)
	b := newBrowser(t, e.u.Issuer)
	v, c := pkce(t)
	p := b.get(e.u.Authorization + "?" + perEntryRequest(e, c).Encode())
	f := parseForm(t, p)
	f.values.Set("subject", subAna)
	p = b.post(f.action, f.values)
	if p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/consent") {
		t.Fatalf("sign-in: want the consent page, got %d %s", p.status, p.url)
	}
	f = parseForm(t, p)
	// A browser sends the checked boxes; openid's is fixed (disabled).
	if got := f.values["grant"]; !slices.Equal(got, []string{"scope profile", "scope email", "detail 0", "detail 1", "detail 2"}) {
		t.Fatalf("the page's checkboxes: %q", got)
	}
	f.values["grant"] = []string{"scope profile", "detail 0", "detail 2"}
	f.values.Set("action", "approve")
	p = b.post(f.action, f.values)
	if p.status != http.StatusSeeOther {
		t.Fatalf("consent: want a redirect to the client, got %d: %s", p.status, p.body)
	}
	assertGranted(t, e, redirectQuery(t, p.header.Get("Location")).Get("code"), v)
}

// TestPerEntryConsentRules: a decision that keeps company-identity and
// declines company-addresses is refused, naming both, and the request
// stays pending; declining both is granted; and an approval declining
// every entry of a request without openid is a denial.
func TestPerEntryConsentRules(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	q := e.confAuthParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", `[{"type":"`+e.u.BaseURL+`/authorization-details/company-identity","actions":["read"],"locations":["`+e.u.BaseURL+`"]},`+
		`{"type":"`+e.u.BaseURL+`/authorization-details/company-addresses","actions":["read"],"locations":["`+e.u.BaseURL+`"]}]`)
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusCreated {
		t.Fatalf("native submit: %d %v", st, m)
	}
	perms := m["consent"].(map[string]any)["permissions"].([]any)
	if req := jsonOf(t, perms[len(perms)-2].(map[string]any)["requires"]); !strings.Contains(req, "company-addresses") {
		t.Fatalf("company-identity's requires: %s", req)
	}
	id := m["request_id"].(string)
	st, m = e.decide(id, map[string]any{"action": "approve", "declined_details": []int{1}})
	if desc, _ := m["error_description"].(string); st != http.StatusBadRequest || m["error"] != "invalid_request" ||
		!strings.Contains(desc, "company-identity") || !strings.Contains(desc, "company-addresses") {
		t.Fatalf("identity without addresses: want 400 naming both, got %d %v", st, m)
	}
	st, m = e.decide(id, map[string]any{"action": "approve", "declined_details": []int{0, 1}})
	if st != http.StatusOK || redirectQuery(t, m["redirect_url"].(string)).Get("code") == "" {
		t.Fatalf("declining the pair: want a code, got %d %v", st, m)
	}

	_, c = pkce(t)
	q = e.confAuthParams(c)
	q.Set("scope", "profile email")
	st, m = e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusCreated {
		t.Fatalf("native submit: %d %v", st, m)
	}
	st, m = e.decide(m["request_id"].(string), map[string]any{"action": "approve", "declined_scopes": []string{"profile", "email"}})
	if st != http.StatusOK || redirectQuery(t, m["redirect_url"].(string)).Get("error") != "access_denied" {
		t.Fatalf("declining everything: want access_denied, got %d %v", st, m)
	}
}

// TestPerEntryConsentLowerMaximum: the subject allows an automatic charge
// less than it asked (docs/service.md §2.4); a maximum above the request
// is refused naming the member and the bounds, the token's grant carries
// the lowered maximum, a charge above it is refused, and the same request
// asks again, since its maximum was not consented to.
func TestPerEntryConsentLowerMaximum(t *testing.T) {
	e := start(t)
	base := e.u.BaseURL
	v, c := pkce(t)
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", `[{"type":"`+base+`/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["`+base+`"],`+
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"}}]`)
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusCreated {
		t.Fatalf("native submit: %d %v", st, m)
	}
	id := m["request_id"].(string)
	st, m = e.decide(id, map[string]any{"action": "approve", "account_id": andesAcct, "lowered_maximums": []map[string]any{{"index": 0, "maximum": "60000"}}})
	if desc, _ := m["error_description"].(string); st != http.StatusBadRequest || m["error"] != "invalid_request" ||
		!strings.Contains(desc, "lowered_maximums[0].maximum 60000") || !strings.Contains(desc, "1000") {
		t.Fatalf("a maximum above the request: want 400 naming the member and the bounds, got %d %v", st, m)
	}
	st, m = e.decide(id, map[string]any{"action": "approve", "account_id": andesAcct, "lowered_maximums": []map[string]any{{"index": 0, "maximum": "20000"}}})
	if st != http.StatusOK {
		t.Fatalf("decision: %d %v", st, m)
	}
	st, tr := e.exchange(redirectQuery(t, m["redirect_url"].(string)).Get("code"), v)
	if st != http.StatusOK || !strings.Contains(jsonOf(t, tr["authorization_details"]), `"maximum":"20000"`) {
		t.Fatalf("token: %d %v; want the charge at 20000", st, tr)
	}
	for _, tc := range []struct {
		amount string
		status int
	}{{"20000", http.StatusCreated}, {"20001", http.StatusForbidden}} {
		req, _ := http.NewRequest(http.MethodPost, base+"/automatic-charges", strings.NewReader(`{"amount":"`+tc.amount+`","currency":"CLP"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tr["access_token"].(string))
		if st, m, _ := e.do(req); st != tc.status {
			t.Fatalf("a charge of %s: want %d, got %d %v", tc.amount, tc.status, st, m)
		}
	}
	_, c2 := pkce(t)
	q.Set("code_challenge", c2)
	st, m = e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusCreated || m["consent"].(map[string]any)["remembered"] == true {
		t.Fatalf("the same request again: want the screen (50000 was not consented to), got %d %v", st, m)
	}
}

// TestPerEntryConsentLowerMaximumBrowser: on the consent page the subject
// types a lower maximum for an automatic charge. One above the request is
// refused on the page, naming the bounds, with the typed amount shown
// again; a lower one is granted and the token carries it.
func TestPerEntryConsentLowerMaximumBrowser(t *testing.T) {
	e := start(t)
	base := e.u.BaseURL
	b := newBrowser(t, e.u.Issuer)
	v, c := pkce(t)
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", `[{"type":"`+base+`/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["`+base+`"],`+
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"}}]`)
	p := b.get(e.u.Authorization + "?" + q.Encode())
	f := parseForm(t, p)
	f.values.Set("subject", subAna)
	p = b.post(f.action, f.values)
	if p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/consent") {
		t.Fatalf("sign-in: want the consent page, got %d %s", p.status, p.url)
	}
	f = parseForm(t, p)
	if got := f.values.Get("maximum_0"); got != "50000" {
		t.Fatalf("the maximum field holds %q, want the requested 50000", got)
	}
	f.values.Set("maximum_0", "60000")
	f.values.Set("action", "approve")
	p = b.post(f.action, f.values)
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "lowered_maximums[0].maximum 60000") || !strings.Contains(p.body, "1000") {
		t.Fatalf("a maximum above the request: want the page again naming the bounds, got %d: %s", p.status, p.body)
	}
	f = parseForm(t, p)
	if got := f.values.Get("maximum_0"); got != "60000" {
		t.Errorf("the refused page shows %q in the maximum field, want the typed 60000", got)
	}
	f.values.Set("maximum_0", "20000")
	f.values.Set("action", "approve")
	p = b.post(f.action, f.values)
	if p.status != http.StatusSeeOther {
		t.Fatalf("consent: want a redirect to the client, got %d: %s", p.status, p.body)
	}
	st, tr := e.exchange(redirectQuery(t, p.header.Get("Location")).Get("code"), v)
	if st != http.StatusOK || !strings.Contains(jsonOf(t, tr["authorization_details"]), `"maximum":"20000"`) {
		t.Fatalf("token: %d %v; want the charge at 20000", st, tr)
	}
}
