package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// FAPI Grant Management (docs/authserver.md, "Grant management"). Each
// test runs on the store of MINIAPP_HOST_TEST_STORE (SQLite, or
// PostgreSQL), as every test of this package.

// anaAccount2 is Ana's other account (the seed world).
const anaAccount2 = "0b7e9d3c-8a21-4f5e-a6b7-c8d9e0f1a2b3"

// gmDetails are the three details of perEntryRequest, by index.
func gmDetails(e *env) []string {
	return []string{
		`{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["` + anaAccount1 + `"]}`,
		`{"type":"` + strings.TrimSuffix(e.u.SigningBaseURL, "/api") + `/authorization-details/signing-key","actions":["read"],"locations":["` + e.u.SigningBaseURL + `"]}`,
		`{"type":"` + strings.TrimSuffix(e.u.InvoicingBaseURL, "/api") + `/authorization-details/documents","actions":["read"],"locations":["` + e.u.InvoicingBaseURL + `"]}`,
	}
}

// gmRequest is an authorization request of the confidential client for
// Company Andes with the given scopes and details (indexes of gmDetails)
// and grant management parameters.
func gmRequest(e *env, challenge, scope string, details []int, action, grantID string) url.Values {
	q := e.confAuthParams(challenge)
	q.Set("scope", scope)
	q.Set("org_id", orgAndes)
	q["resource"] = []string{e.u.BaseURL}
	var ds []string
	for _, i := range details {
		ds = append(ds, gmDetails(e)[i])
		if i > 0 {
			q["resource"] = append(q["resource"], []string{"", e.u.SigningBaseURL, e.u.InvoicingBaseURL}[i])
		}
	}
	if len(ds) > 0 {
		q.Set("authorization_details", "["+strings.Join(ds, ",")+"]")
	} else {
		q.Del("authorization_details")
	}
	if action != "" {
		q.Set("grant_management_action", action)
	}
	if grantID != "" {
		q.Set("grant_id", grantID)
	}
	return q
}

// gmTokens runs a native flow of Ana deciding decision and redeems the
// code: the token response.
func gmTokens(t *testing.T, e *env, q url.Values, decision map[string]any) map[string]any {
	t.Helper()
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusCreated {
		t.Fatalf("native submit: %d %v", st, m)
	}
	st, m = e.decide(m["request_id"].(string), decision)
	if st != http.StatusOK {
		t.Fatalf("decision: %d %v", st, m)
	}
	return gmRedeem(t, e, m["redirect_url"].(string), q)
}

func gmRedeem(t *testing.T, e *env, redirect string, q url.Values) map[string]any {
	t.Helper()
	code := redirectQuery(t, redirect).Get("code")
	if code == "" {
		t.Fatalf("no code: %s", redirect)
	}
	st, tr := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir},
		"code_verifier": {gmVerifiers[q.Get("code_challenge")]}}, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, tr)
	}
	return tr
}

// gmVerifiers maps each challenge made by gmPKCE to its verifier.
var gmVerifiers = map[string]string{}

func gmPKCE(t *testing.T) string {
	v, c := pkce(t)
	gmVerifiers[c] = v
	return c
}

// gmManager is an access token of the confidential client with both
// grant management scopes, from a grant of its own.
func gmManager(t *testing.T, e *env) string {
	t.Helper()
	q := gmRequest(e, gmPKCE(t), "grant_management_query grant_management_revoke", nil, "create", "")
	q.Del("org_id")
	q["resource"] = []string{e.u.BaseURL}
	return gmTokens(t, e, q, map[string]any{"action": "approve"})["access_token"].(string)
}

// gmCall sends GET or DELETE {grant_management_endpoint}/{id}.
func gmCall(t *testing.T, e *env, method, id, token string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, e.u.Issuer+"/oauth/grants/"+url.PathEscape(id), nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.do(req)
}

// gmScopes is the scope string of the one resource of a grant
// management answer, which must be {base_url}.
func gmScopes(t *testing.T, e *env, m map[string]any) string {
	t.Helper()
	sc, _ := m["scopes"].([]any)
	if len(sc) != 1 {
		t.Fatalf("scopes: want one entry for {base_url}, got %v", m["scopes"])
	}
	entry := sc[0].(map[string]any)
	if jsonOf(t, entry["resource"]) != `["`+e.u.BaseURL+`"]` {
		t.Fatalf("scopes resource: %v", entry["resource"])
	}
	return entry["scope"].(string)
}

// assertGrant checks that the token response tr, GET {base_url}/authorization,
// introspection and GET {grant_management_endpoint}/{grant_id} all carry
// exactly scopes and the details types (in order), and the grant_id.
func assertGrant(t *testing.T, e *env, tr map[string]any, manager, grantID, scopes, types string) {
	t.Helper()
	if tr["grant_id"] != grantID || tr["scope"] != scopes || detailTypes(t, tr["authorization_details"]) != types {
		t.Fatalf("token response: grant_id %v scope %q details %v; want %s, %q, %s", tr["grant_id"], tr["scope"], tr["authorization_details"], grantID, scopes, types)
	}
	at := tr["access_token"].(string)
	st, g := e.grant(at, confID, e.confSecret)
	if st != http.StatusOK || jsonOf(t, g["scopes"]) != jsonOf(t, strings.Fields(scopes)) || detailTypes(t, g["authorizationDetails"]) != types {
		t.Fatalf("GET {base_url}/authorization: %d %v; want %q and %s", st, g, scopes, types)
	}
	st, in := e.introspect(at, confID, e.confSecret)
	if st != http.StatusOK || in["active"] != true || in["scope"] != scopes || in["grant_id"] != grantID || detailTypes(t, in["authorization_details"]) != types {
		t.Fatalf("introspection: %d %v", st, in)
	}
	st, m, h := gmCall(t, e, http.MethodGet, grantID, manager)
	if st != http.StatusOK || gmScopes(t, e, m) != scopes || detailTypes(t, m["authorization_details"]) != types || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET grant_management_endpoint: %d %v %v", st, m, h)
	}
}

// assertEnded checks that the tokens of a token response no longer work:
// the access token at GET {base_url}/authorization and introspection, the
// refresh token at the token endpoint.
func assertEnded(t *testing.T, e *env, tr map[string]any, what string) {
	t.Helper()
	at := tr["access_token"].(string)
	if st, m := e.grant(at, confID, e.confSecret); st != http.StatusUnauthorized || m["code"] != "revoked_token" {
		t.Fatalf("%s: the older access token at the grant endpoint: %d %v", what, st, m)
	}
	if st, in := e.introspect(at, confID, e.confSecret); st != http.StatusOK || in["active"] != false {
		t.Fatalf("%s: the older access token at introspection: %d %v", what, st, in)
	}
	if rt, ok := tr["refresh_token"].(string); ok {
		st, m := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, confID, e.confSecret)
		if st != http.StatusBadRequest || m["error"] != "invalid_grant" {
			t.Fatalf("%s: the older refresh token: %d %v", what, st, m)
		}
	}
}

// TestGrantManagementLifecycle: Ana is asked three scopes and three
// details and declines one of each (email, the signing-key detail); every
// view of the grant carries exactly the rest, and a refresh keeps the
// grant_id. A merge adds what was declined, a replace narrows the grant to
// one scope and one detail, each ending the tokens issued before; a
// revocation at the grant management endpoint ends the grant's tokens at
// the grant endpoint, introspection and the example Resource Server.
func TestGrantManagementLifecycle(t *testing.T) {
	e := start(t)
	manager := gmManager(t, e)

	q := gmRequest(e, gmPKCE(t), "openid offline_access email", []int{0, 1, 2}, "create", "")
	first := gmTokens(t, e, q, map[string]any{"action": "approve", "declined_scopes": []string{"email"}, "declined_details": []int{1}, "account_id": anaAccount1})
	gid, _ := first["grant_id"].(string)
	if gid == "" {
		t.Fatalf("token response without grant_id: %v", first)
	}
	assertGrant(t, e, first, manager, gid, "openid offline_access", "bank_account documents")
	st, refreshed := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first["refresh_token"].(string)}}, confID, e.confSecret)
	if st != http.StatusOK || refreshed["grant_id"] != gid {
		t.Fatalf("refresh: want the same grant_id %s, got %d %v", gid, st, refreshed)
	}

	// merge: what was declined is added.
	q = gmRequest(e, gmPKCE(t), "email", []int{1}, "merge", gid)
	merged := gmTokens(t, e, q, map[string]any{"action": "approve"})
	assertGrant(t, e, merged, manager, gid, "openid offline_access email", "bank_account documents signing-key")
	assertEnded(t, e, refreshed, "after the merge")

	// replace: only what this approval grants.
	q = gmRequest(e, gmPKCE(t), "openid offline_access", []int{2}, "replace", gid)
	replaced := gmTokens(t, e, q, map[string]any{"action": "approve"})
	assertGrant(t, e, replaced, manager, gid, "openid offline_access", "documents")
	assertEnded(t, e, merged, "after the replace")

	// The invoicing provider serves the grant's documents detail...
	provider := func() (int, map[string]any, http.Header) {
		req, _ := http.NewRequest(http.MethodGet, e.u.InvoicingBaseURL+"/documents", nil)
		req.Header.Set("Authorization", "Bearer "+replaced["access_token"].(string))
		return e.do(req)
	}
	if st, m, _ := provider(); st != http.StatusOK {
		t.Fatalf("the invoicing provider before the revocation: %d %v", st, m)
	}
	// ...until the grant is revoked.
	if st, m, _ := gmCall(t, e, http.MethodDelete, gid, manager); st != http.StatusNoContent {
		t.Fatalf("DELETE grant_management_endpoint: %d %v", st, m)
	}
	assertEnded(t, e, replaced, "after the revocation")
	if st, m, h := provider(); st != http.StatusUnauthorized || m["error"] != "invalid_token" || !strings.HasPrefix(h.Get("WWW-Authenticate"), `Bearer error="invalid_token"`) {
		t.Fatalf("the invoicing provider after the revocation: %d %v %v", st, m, h)
	}
	if st, m, _ := gmCall(t, e, http.MethodGet, gid, manager); st != http.StatusNotFound || m["error"] != "invalid_grant_id" {
		t.Fatalf("GET a revoked grant: %d %v", st, m)
	}
	// A revoked grant cannot be merged into.
	q = gmRequest(e, gmPKCE(t), "email", nil, "merge", gid)
	if st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna}); st != http.StatusBadRequest || m["error"] != "invalid_grant_id" {
		t.Fatalf("merge into a revoked grant: %d %v", st, m)
	}
}

// TestGrantManagementErrors: the refusals of the authorization request's
// grant management parameters and of the grant management endpoint.
func TestGrantManagementErrors(t *testing.T) {
	e := start(t)
	manager := gmManager(t, e)
	tr := gmTokens(t, e, gmRequest(e, gmPKCE(t), "openid email", nil, "", ""), map[string]any{"action": "approve"})
	gid := tr["grant_id"].(string)
	submit := func(q url.Values, subject string) (int, map[string]any) {
		return e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subject})
	}
	for _, tc := range []struct {
		name, action, grantID, code, mention string
	}{
		{"create with a grant_id", "create", gid, "invalid_request", "must not carry grant_id"},
		{"merge without grant_id", "merge", "", "invalid_request", "needs the grant_id"},
		{"grant_id without an action", "", gid, "invalid_request", "grant_management_action"},
		{"an unknown action", "update", gid, "invalid_request", "is not one of create, merge, replace"},
		{"an unknown grant_id", "replace", "0190d7a4-0000-7000-8000-000000000000", "invalid_grant_id", "no live grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, m := submit(gmRequest(e, gmPKCE(t), "email", nil, tc.action, tc.grantID), subAna)
			if desc, _ := m["error_description"].(string); st != http.StatusBadRequest || m["error"] != tc.code || !strings.Contains(desc, tc.mention) {
				t.Fatalf("want 400 %s mentioning %q, got %d %v", tc.code, tc.mention, st, m)
			}
		})
	}
	// Another client's grant is unknown to this one.
	v, c := pkce(t)
	pgid, _ := e.publicTokens(e.authParams(c), v)["grant_id"].(string)
	if st, m := submit(gmRequest(e, gmPKCE(t), "email", nil, "merge", pgid), subAna); pgid == "" || st != http.StatusBadRequest || m["error"] != "invalid_grant_id" {
		t.Fatalf("merge of another client's grant %q: %d %v", pgid, st, m)
	}
	if st, m, _ := gmCall(t, e, http.MethodGet, pgid, manager); st != http.StatusNotFound || m["error"] != "invalid_grant_id" {
		t.Fatalf("GET another client's grant: %d %v", st, m)
	}
	// Another subject's grant: the model's grant_id check fails, and the
	// approval is refused with invalid_grant_id.
	st, m := submit(gmRequest(e, gmPKCE(t), "email", nil, "merge", gid), "sub_benjamin")
	if st != http.StatusCreated || !strings.Contains(jsonOf(t, m["consent"]), `"code":"invalid_grant_id"`) {
		t.Fatalf("merge of another subject's grant: want the model's failed grant_id check, got %d %v", st, m)
	}
	if st, m := e.decide(m["request_id"].(string), map[string]any{"action": "approve"}); st != http.StatusBadRequest || m["error"] != "invalid_grant_id" {
		t.Fatalf("approving it: %d %v", st, m)
	}

	// The endpoint: no token, an unknown token, a token without the
	// scope, an unknown grant_id.
	if st, m, h := gmCall(t, e, http.MethodGet, gid, ""); st != http.StatusUnauthorized || m["error"] != "invalid_token" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no token: %d %v %v", st, m, h)
	}
	if st, m, _ := gmCall(t, e, http.MethodGet, gid, "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"); st != http.StatusUnauthorized || m["error"] != "invalid_token" {
		t.Fatalf("unknown token: %d %v", st, m)
	}
	plain := tr["access_token"].(string)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if st, m, h := gmCall(t, e, method, gid, plain); st != http.StatusForbidden || m["error"] != "insufficient_scope" || !strings.Contains(h.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
			t.Fatalf("%s without the scope: %d %v %v", method, st, m, h)
		}
	}
	if st, m, _ := gmCall(t, e, http.MethodDelete, "0190d7a4-0000-7000-8000-000000000000", manager); st != http.StatusNotFound || m["error"] != "invalid_grant_id" {
		t.Fatalf("unknown grant_id: %d %v", st, m)
	}
	// The grant was not touched by any of it.
	if st, g := e.grant(plain, confID, e.confSecret); st != http.StatusOK {
		t.Fatalf("the grant after the refusals: %d %v", st, g)
	}
}

// TestGrantManagementMetadata: discovery names the endpoint and the
// actions; a server that requires an action refuses a request without
// one, and takes one with it.
func TestGrantManagementMetadata(t *testing.T) {
	e := startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(cfg *authserver.Config) {
		cfg.OAuth.FAPI.RequireGrantManagementAction = true
	})
	st, md, _ := e.do(mustGet(t, e.u.Discovery))
	if st != http.StatusOK || md["grant_management_endpoint"] != e.u.Issuer+"/oauth/grants" || md["grant_management_action_required"] != true ||
		jsonOf(t, md["grant_management_actions_supported"]) != `["query","revoke","create","merge","replace"]` {
		t.Fatalf("discovery: %d %v", st, md)
	}
	q := gmRequest(e, gmPKCE(t), "email", nil, "", "")
	if st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna}); st != http.StatusBadRequest ||
		m["error"] != "invalid_request" || !strings.Contains(m["error_description"].(string), "grant_management_action_required") {
		t.Fatalf("without an action: %d %v", st, m)
	}
	tr := gmTokens(t, e, gmRequest(e, gmPKCE(t), "email", nil, "create", ""), map[string]any{"action": "approve"})
	if tr["grant_id"] == "" {
		t.Fatalf("create: %v", tr)
	}
}

func mustGet(t *testing.T, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestGrantRevocationHonouredByOtherInstance: two instances on one
// PostgreSQL database. A grant read through the second (which then holds
// it in its cache) is merged, then revoked at the grant management
// endpoint of the first; the second refuses the older access token once
// the merge's notification arrives, and the merged grant's token once the
// revocation's does, at GET {base_url}/authorization and introspection.
func TestGrantRevocationHonouredByOtherInstance(t *testing.T) {
	db := storetest.Postgres(t)
	shared := sharedConfig(db, "http://service.example.test")
	a := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	b := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	own := func(e *env, u string) string {
		p, _ := url.Parse(u)
		p.Scheme, p.Host = "http", e.srv.ListenAddrs().Service
		return p.String()
	}
	for _, e := range []*env{a, b} {
		e.u.Native, e.u.Token, e.u.Grant, e.u.Issuer = own(e, e.u.Native), own(e, e.u.Token), own(e, e.u.Grant), own(e, e.u.Issuer)
	}
	// b registered the confidential client last: its secret is the one.
	a.confSecret = b.confSecret
	manager := gmManager(t, a)

	first := gmTokens(t, a, gmRequest(a, gmPKCE(t), "openid email", nil, "create", ""), map[string]any{"action": "approve"})
	gid := first["grant_id"].(string)
	for range 2 { // the second answer comes from b's cache
		if st, g := b.grant(first["access_token"].(string), confID, b.confSecret); st != http.StatusOK {
			t.Fatalf("the other instance, before the merge: %d %v", st, g)
		}
	}
	merged := gmTokens(t, a, gmRequest(a, gmPKCE(t), "profile", nil, "merge", gid), map[string]any{"action": "approve"})
	if merged["grant_id"] != gid || merged["scope"] != "openid email profile" {
		t.Fatalf("merge: %v", merged)
	}
	refusedAtB(t, b, first["access_token"].(string), "the merge")
	if st, g := b.grant(merged["access_token"].(string), confID, b.confSecret); st != http.StatusOK || jsonOf(t, g["scopes"]) != `["openid","email","profile"]` {
		t.Fatalf("the other instance, the merged grant: %d %v", st, g)
	}
	if st, m, _ := gmCall(t, a, http.MethodDelete, gid, manager); st != http.StatusNoContent {
		t.Fatalf("DELETE at the first instance: %d %v", st, m)
	}
	refusedAtB(t, b, merged["access_token"].(string), "the revocation")
	if st, in := b.introspect(merged["access_token"].(string), confID, b.confSecret); st != http.StatusOK || in["active"] != false {
		t.Fatalf("introspection at the other instance: %d %v", st, in)
	}
	if st, m, _ := gmCall(t, b, http.MethodGet, gid, manager); st != http.StatusNotFound || m["error"] != "invalid_grant_id" {
		t.Fatalf("GET at the other instance: %d %v", st, m)
	}
}

// refusedAtB waits until instance b refuses an access token at the grant
// endpoint, which it does once the other instance's change notification
// arrived; the time it took is logged.
func refusedAtB(t *testing.T, b *env, at, after string) {
	t.Helper()
	since := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st, m := b.grant(at, confID, b.confSecret)
		if st == http.StatusUnauthorized && m["code"] == "revoked_token" {
			break
		}
		if st != http.StatusOK {
			t.Fatalf("the other instance after %s: %d %v", after, st, m)
		}
		<-tick.C
	}
	t.Logf("the other instance refused the token %v after %s returned", time.Since(since), after)
}

// TestGrantManagementActionRequiredPerCredential: a credential's
// grant_management_action_required, set on the dashboard, refuses that
// client's requests without an action (while discovery says the server
// does not require it of every client); cleared, they pass again.
func TestGrantManagementActionRequiredPerCredential(t *testing.T) {
	e := start(t)
	const redirect, orig = "http://127.0.0.1:5000/cb", "http://127.0.0.1:5000"
	c := e.newSPAClient(redirect, orig)
	path := "/api/projects/" + c.project + "/credentials/" + c.id
	set := func(v bool) {
		t.Helper()
		m := e.mustDash(http.StatusOK, "PATCH", path, c.key, map[string]any{"grant_management_action_required": v})
		if m["grant_management_action_required"] != v {
			t.Fatalf("PATCH: the credential shows %v", m)
		}
	}
	set(true)
	st, md, _ := e.do(mustGet(t, e.u.Discovery))
	if st != http.StatusOK || md["grant_management_action_required"] != false {
		t.Fatalf("discovery: %d %v", st, md["grant_management_action_required"])
	}
	_, ch := pkce(t)
	q := e.spaParams(c, redirect, ch)
	if st, m := e.submitStatus(q); st != http.StatusBadRequest || m["error"] != "invalid_request" ||
		!strings.Contains(m["error_description"].(string), "client "+c.id+" must send grant_management_action") {
		t.Fatalf("without an action: %d %v", st, m)
	}
	q.Set("grant_management_action", "create")
	if st, m := e.submitStatus(q); st != http.StatusCreated {
		t.Fatalf("with create: %d %v", st, m)
	}
	set(false)
	q.Del("grant_management_action")
	if st, m := e.submitStatus(q); st != http.StatusCreated {
		t.Fatalf("without an action, the setting cleared: %d %v", st, m)
	}
}

// TestBankAccountWithAutomaticChargeGranted: a bank_account detail and
// an automatic-charge detail in one request (which failed with
// no_fitting_account) are approved through the native API with the
// subject's account and the Company's, and through the consent page, whose
// two account choices post both; the grant binds each detail to its
// owner's account.
func TestBankAccountWithAutomaticChargeGranted(t *testing.T) {
	e := start(t)
	details := `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}},` +
		`{"type":"` + e.u.BaseURL + `/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["` + e.u.BaseURL + `"],` +
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"}}]`
	request := func() (url.Values, string) {
		v, c := pkce(t)
		q := e.confAuthParams(c)
		q.Set("scope", "openid")
		q.Set("org_id", orgAndes)
		q.Set("authorization_details", details)
		return q, v
	}
	check := func(code, verifier, personal string) {
		t.Helper()
		st, tr := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {verifier}}, confID, e.confSecret)
		if st != http.StatusOK {
			t.Fatalf("token: %d %v", st, tr)
		}
		st, g := e.grant(tr["access_token"].(string), confID, e.confSecret)
		ds, _ := g["authorizationDetails"].([]any)
		if st != http.StatusOK || len(ds) != 2 {
			t.Fatalf("grant: %d %v", st, g)
		}
		if got := jsonOf(t, ds[0].(map[string]any)["identifiers"]); got != `["`+personal+`"]` {
			t.Fatalf("bank_account bound %s", got)
		}
		if got := jsonOf(t, ds[1].(map[string]any)["sources"]); got != `["`+andesAcct+`"]` {
			t.Fatalf("automatic-charge bound %s", got)
		}
	}

	q, v := request()
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusCreated || m["consent"].(map[string]any)["account_required"] != true || strings.Contains(jsonOf(t, m["consent"]), "no_fitting_account") {
		t.Fatalf("native submit: %d %v", st, m)
	}
	id := m["request_id"].(string)
	if st, m := e.decide(id, map[string]any{"action": "approve", "account_id": anaAccount1}); st != http.StatusBadRequest || !strings.Contains(m["error_description"].(string), "company_account_id") {
		t.Fatalf("without the Company's account: %d %v", st, m)
	}
	st, m = e.decide(id, map[string]any{"action": "approve", "account_id": anaAccount1, "company_account_id": andesAcct})
	if st != http.StatusOK {
		t.Fatalf("decision: %d %v", st, m)
	}
	check(redirectQuery(t, m["redirect_url"].(string)).Get("code"), v, anaAccount1)

	q, v = request()
	b := newBrowser(t, e.u.Issuer)
	p := b.get(e.u.Authorization + "?" + q.Encode())
	f := parseForm(t, p)
	f.values.Set("subject", subAna)
	p = b.post(f.action, f.values)
	f = parseForm(t, p)
	// Each choice starts on its owner's first account (Ana's by id).
	if personal := f.values.Get("account_id"); (personal != anaAccount1 && personal != anaAccount2) || f.values.Get("company_account_id") != andesAcct {
		t.Fatalf("the consent page's account choices: account_id %q company_account_id %q", f.values.Get("account_id"), f.values.Get("company_account_id"))
	}
	f.values.Set("action", "approve")
	p = b.post(f.action, f.values)
	if p.status != http.StatusSeeOther {
		t.Fatalf("consent: %d %s", p.status, p.body)
	}
	check(redirectQuery(t, p.header.Get("Location")).Get("code"), v, f.values.Get("account_id"))
}

// TestGrantManagementPAR: a merge pushed to the PAR endpoint (RFC 9126)
// is checked there as at the authorization endpoint: an unknown grant_id
// is 400 invalid_grant_id in JSON, a create with a grant_id 400
// invalid_request; a valid merge pushed and then authorized by reference
// adds to the grant, whose grant_id the token response keeps.
func TestGrantManagementPAR(t *testing.T) {
	e := start(t)
	first := gmTokens(t, e, gmRequest(e, gmPKCE(t), "openid email", nil, "create", ""), map[string]any{"action": "approve"})
	gid := first["grant_id"].(string)
	for _, tc := range []struct{ action, grantID, code string }{
		{"merge", "0190d7a4-0000-7000-8000-000000000000", "invalid_grant_id"},
		{"create", gid, "invalid_request"},
	} {
		form := gmRequest(e, gmPKCE(t), "profile", nil, tc.action, tc.grantID)
		if st, m, _ := e.post(e.parEndpoint(), form, confID, e.confSecret); st != http.StatusBadRequest || m["error"] != tc.code {
			t.Fatalf("PAR of %s with grant_id %s: want 400 %s, got %d %v", tc.action, tc.grantID, tc.code, st, m)
		}
	}
	form := gmRequest(e, gmPKCE(t), "profile", nil, "merge", gid)
	uri := e.push(form, confID, e.confSecret)
	st, m := e.native(map[string]any{"authorization_url": e.byReference(confID, uri), "subject": subAna})
	if st != http.StatusCreated {
		t.Fatalf("native, pushed merge: %d %v", st, m)
	}
	// The host shows what it reads here: the URL it caught holds neither.
	if read, _ := m["request"].(map[string]any); read["grant_management_action"] != "merge" || read["grant_id"] != gid {
		t.Fatalf("native, pushed merge: want request.grant_management_action merge of %s, got %v", gid, m["request"])
	}
	st, m = e.decide(m["request_id"].(string), map[string]any{"action": "approve"})
	if st != http.StatusOK {
		t.Fatalf("decision: %d %v", st, m)
	}
	merged := gmRedeem(t, e, m["redirect_url"].(string), form)
	if merged["grant_id"] != gid || merged["scope"] != "openid email profile" {
		t.Fatalf("pushed merge: %v", merged)
	}
}

// TestGrantManagementFollowsTheGrant: the grant management endpoint reads
// the scope from the token's grant as it is now, and a token manages only
// its own subject's grants. Ana's manager token (openid and both grant
// management scopes) reads and could revoke her other grant of the
// client; Carla's grant of the same client is unknown to it (404, and
// Carla's token keeps working); once Ana revoked grant_management_query,
// then grant_management_revoke, from the manager's grant on the Connected
// Miniapps page, the live token can neither read nor revoke (403
// insufficient_scope), whatever its scope claim says.
func TestGrantManagementFollowsTheGrant(t *testing.T) {
	e := start(t)
	tokensOf := func(subject string, q url.Values) map[string]any {
		t.Helper()
		st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subject})
		if st != http.StatusCreated {
			t.Fatalf("native submit for %s: %d %v", subject, st, m)
		}
		st, m = e.decide(m["request_id"].(string), map[string]any{"action": "approve"})
		if st != http.StatusOK {
			t.Fatalf("decision of %s: %d %v", subject, st, m)
		}
		return gmRedeem(t, e, m["redirect_url"].(string), q)
	}
	mq := gmRequest(e, gmPKCE(t), "openid grant_management_query grant_management_revoke", nil, "create", "")
	mq.Del("org_id")
	mgr := tokensOf(subAna, mq)
	manager, managerGrant := mgr["access_token"].(string), mgr["grant_id"].(string)
	plain := func(subject string) map[string]any {
		q := gmRequest(e, gmPKCE(t), "openid profile", nil, "create", "")
		q.Del("org_id")
		return tokensOf(subject, q)
	}
	ana, carla := plain(subAna), plain(subCarla)
	anaGrant, carlaGrant := ana["grant_id"].(string), carla["grant_id"].(string)

	if st, m, _ := gmCall(t, e, http.MethodGet, anaGrant, manager); st != http.StatusOK || gmScopes(t, e, m) != "openid profile" {
		t.Fatalf("Ana's manager reads Ana's other grant: want 200, got %d %v", st, m)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if st, m, _ := gmCall(t, e, method, carlaGrant, manager); st != http.StatusNotFound || m["error"] != "invalid_grant_id" {
			t.Fatalf("%s Carla's grant with Ana's token: want 404 invalid_grant_id, got %d %v", method, st, m)
		}
	}
	if st, g := e.grant(carla["access_token"].(string), confID, e.confSecret); st != http.StatusOK || g["subject"] != subCarla {
		t.Fatalf("Carla's token after Ana's token tried to revoke her grant: want 200, got %d %v", st, g)
	}

	c := signInConnected(t, e, subAna)
	csrf, _ := c.list()
	revoke := func(entry string) {
		t.Helper()
		if st, m := c.api(http.MethodPost, "/revoke", map[string]string{"grant_id": managerGrant, "entry": entry}, csrf, nil); st != http.StatusOK || m["whole_grant"] != false {
			t.Fatalf("Ana revokes %s from the manager's grant: %d %v", entry, st, m)
		}
	}
	revoke("scope grant_management_query")
	if st, m, h := gmCall(t, e, http.MethodGet, anaGrant, manager); st != http.StatusForbidden || m["error"] != "insufficient_scope" ||
		!strings.Contains(h.Get("WWW-Authenticate"), `scope="grant_management_query"`) {
		t.Fatalf("GET after grant_management_query was revoked from the token's grant: want 403 insufficient_scope, got %d %v", st, m)
	}
	revoke("scope grant_management_revoke")
	if st, m, _ := gmCall(t, e, http.MethodDelete, anaGrant, manager); st != http.StatusForbidden || m["error"] != "insufficient_scope" {
		t.Fatalf("DELETE after grant_management_revoke was revoked from the token's grant: want 403 insufficient_scope, got %d %v", st, m)
	}
	if st, g := e.grant(ana["access_token"].(string), confID, e.confSecret); st != http.StatusOK || g["subject"] != subAna {
		t.Fatalf("Ana's other grant after the refused DELETE: want it live, got %d %v", st, g)
	}
}

// TestMergeRacingEntryRevocation: rounds of a merge approval and, at the
// same moment, the subject revoking an entry of the grant on the Connected
// Miniapps page. Whichever commits first, the outcome is consistent: a
// revocation that went through is never undone by the merge (the merge
// supersedes the grant only as it read it, store.Grant.Supersedes, and is
// refused with invalid_grant_id otherwise), a merge that went through
// holds what it added, and one of the two always goes through. The
// assertions do not depend on the order the race took.
func TestMergeRacingEntryRevocation(t *testing.T) {
	e := start(t)
	manager := gmManager(t, e)
	c := signInConnected(t, e, subAna)
	csrf, _ := c.list()
	const rounds = 40
	revoked, merged := 0, 0
	for round := range rounds {
		q := gmRequest(e, gmPKCE(t), "openid email", nil, "create", "")
		q.Del("org_id")
		gid := gmTokens(t, e, q, map[string]any{"action": "approve"})["grant_id"].(string)
		mq := gmRequest(e, gmPKCE(t), "profile", nil, "merge", gid)
		mq.Del("org_id")
		st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + mq.Encode(), "subject": subAna})
		if st != http.StatusCreated {
			t.Fatalf("round %d: the merge request: %d %v", round, st, m)
		}
		id := m["request_id"].(string)

		var wg sync.WaitGroup
		start := make(chan struct{})
		var mergeSt, revokeSt int
		var mergeAns, revokeAns map[string]any
		wg.Go(func() { <-start; mergeSt, mergeAns = e.decide(id, map[string]string{"action": "approve"}) })
		wg.Go(func() {
			<-start
			revokeSt, revokeAns = c.api(http.MethodPost, "/revoke", map[string]string{"grant_id": gid, "entry": "scope email"}, csrf, nil)
		})
		close(start)
		wg.Wait()

		mergeOK := mergeSt == http.StatusOK && redirectQuery(t, mergeAns["redirect_url"].(string)).Get("code") != ""
		revokeOK := revokeSt == http.StatusOK
		switch {
		case !mergeOK && mergeAns["error"] != "invalid_grant_id":
			t.Fatalf("round %d: the merge: want a code or invalid_grant_id, got %d %v", round, mergeSt, mergeAns)
		case !revokeOK && revokeAns["error"] != "unknown_grant":
			t.Fatalf("round %d: the revocation: want 200 or unknown_grant (changed meanwhile), got %d %v", round, revokeSt, revokeAns)
		case !mergeOK && !revokeOK:
			t.Fatalf("round %d: neither the merge (%v) nor the revocation (%v) went through", round, mergeAns, revokeAns)
		}
		st, live, _ := gmCall(t, e, http.MethodGet, gid, manager)
		if st != http.StatusOK {
			t.Fatalf("round %d: the grant after the race: %d %v", round, st, live)
		}
		scopes := " " + gmScopes(t, e, live) + " "
		if revokeOK && strings.Contains(scopes, " email ") {
			t.Fatalf("round %d: the subject revoked email (%v) and the merge (%d %v) brought it back: the live grant holds %q",
				round, revokeAns, mergeSt, mergeAns, scopes)
		}
		if mergeOK && !strings.Contains(scopes, " profile ") {
			t.Fatalf("round %d: the merge went through but the live grant holds %q", round, scopes)
		}
		if revokeOK {
			revoked++
		}
		if mergeOK {
			merged++
		}
		if st, m, _ := gmCall(t, e, http.MethodDelete, gid, manager); st != http.StatusNoContent {
			t.Fatalf("round %d: revoking the round's grant: %d %v", round, st, m)
		}
	}
	t.Logf("%d rounds: %d revocations and %d merges went through", rounds, revoked, merged)
}
