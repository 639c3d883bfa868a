package authserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver/devctl"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
	"github.com/miniapp-host/miniapp-host/netlog"
)

// addFault adds a fault through POST /api/dev/faults and returns its id.
func (e *env) addFault(spec map[string]any) string {
	e.t.Helper()
	m := e.mustDash(http.StatusCreated, "POST", "/api/dev/faults", e.srv.OperatorKey(), spec)
	id, _ := m["id"].(string)
	if !strings.HasPrefix(id, "flt_") {
		e.t.Fatalf("add fault: want an id flt_..., got %v", m)
	}
	return id
}

// injected checks the Miniapp-Host-Injected header of an answer a fault made.
func injected(t *testing.T, h http.Header, id, endpoint, effect string) {
	t.Helper()
	want := "fault=" + id + "; endpoint=" + endpoint + "; effect=" + effect
	if got := h.Get("Miniapp-Host-Injected"); got != want {
		t.Fatalf("Miniapp-Host-Injected: want %q, got %q", want, got)
	}
}

// providersToken runs a native flow for a signing-key and a documents
// detail of Andes and returns the public client's access token, good at
// both example Resource Servers.
func (e *env) providersToken() string {
	e.t.Helper()
	v, c := pkce(e.t)
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", strings.TrimSuffix(signingDetails(e), "]")+
		`,{"type":"`+strings.TrimSuffix(e.u.InvoicingBaseURL, "/api")+`/authorization-details/documents","actions":["read"],"locations":["`+e.u.InvoicingBaseURL+`"]}]`)
	q.Add("resource", e.u.SigningBaseURL)
	q.Add("resource", e.u.InvoicingBaseURL)
	return e.publicTokens(q, v)["access_token"].(string)
}

// TestFaultAuthorizationRedirect: an authorization fault answers the
// browser with the error redirect a real refusal makes (RFC 6749
// §4.1.2.1): to the verified redirect_uri, with error, the
// error_description, state and iss (RFC 9207); with times 1 the next
// request is served as usual (the sign-in page).
func TestFaultAuthorizationRedirect(t *testing.T) {
	e := start(t)
	id := e.addFault(map[string]any{"endpoint": "authorization", "client_id": publicID, "times": 1,
		"error": "access_denied", "error_description": "QA says no"})
	_, c := pkce(t)
	authURL := e.u.Authorization + "?" + e.authParams(c).Encode()
	b := newBrowser(t, e.u.Issuer)
	p := b.get(authURL)
	if p.status != http.StatusSeeOther {
		t.Fatalf("want a 303 to the client, got %d %s", p.status, p.body)
	}
	loc := p.header.Get("Location")
	if !strings.HasPrefix(loc, publicRedir+"?") {
		t.Fatalf("want the redirect to %s, got %s", publicRedir, loc)
	}
	q := redirectQuery(t, loc)
	if q.Get("error") != "access_denied" || q.Get("error_description") != "QA says no" || q.Get("state") != "st-123" ||
		q.Get("iss") != e.u.Issuer || q.Get("code") != "" {
		t.Fatalf("want error=access_denied with its description, state and iss, got %v", q)
	}
	injected(t, p.header, id, "authorization", "error")
	if p := b.get(authURL); p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/login") {
		t.Fatalf("times 1 used: want the sign-in page, got %d %s", p.status, p.url)
	}
	if m := e.mustDash(http.StatusOK, "GET", "/api/dev/faults", e.srv.OperatorKey(), nil); len(m["faults"].([]any)) != 0 {
		t.Fatalf("a fault whose times are used is gone: %v", m)
	}
}

// TestFaultAuthorizationNative: the native-consent API answers an
// authorization fault as it answers a real refusal: the JSON error with
// the redirect_url the client must receive. A fault scoped to another
// subject leaves the request alone.
func TestFaultAuthorizationNative(t *testing.T) {
	e := start(t)
	id := e.addFault(map[string]any{"endpoint": "authorization", "client_id": publicID, "subject": subAna,
		"error": "login_required"})
	_, c := pkce(t)
	sub := func(subject string) (int, map[string]any) {
		return e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + e.authParams(c).Encode(), "subject": subject})
	}
	if st, m := sub(subCarla); st != http.StatusCreated {
		t.Fatalf("another subject: want the real answer 201, got %d %v", st, m)
	}
	st, m := sub(subAna)
	if st != http.StatusBadRequest || m["error"] != "login_required" {
		t.Fatalf("want 400 login_required, got %d %v", st, m)
	}
	q := redirectQuery(t, m["redirect_url"].(string))
	if q.Get("error") != "login_required" || q.Get("state") != "st-123" || q.Get("iss") != e.u.Issuer ||
		!strings.Contains(q.Get("error_description"), id) {
		t.Fatalf("redirect_url: want error, state, iss and a description naming the fault, got %v", q)
	}
	if st, _ := sub(subAna); st != http.StatusBadRequest {
		t.Fatalf("without times the fault stays: want 400 again, got %d", st)
	}
}

// TestFaultTokenTimes: a token fault answers the RFC 6749 §5.2 JSON error
// for the next N requests, then the real answer follows: the code, never
// spent by the fault, is redeemed. invalid_client is 401 with its Basic
// challenge, as a real one.
func TestFaultTokenTimes(t *testing.T) {
	e := start(t)
	id := e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "times": 2, "error": "invalid_grant"})
	v, c := pkce(t)
	code := e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {publicRedir},
		"code_verifier": {v}, "client_id": {publicID}}
	for i := range 2 {
		st, m, h := e.post(e.u.Token, form, "", "")
		if st != http.StatusBadRequest || m["error"] != "invalid_grant" || h.Get("Content-Type") != "application/json" ||
			h.Get("Cache-Control") != "no-store" {
			t.Fatalf("request %d: want 400 invalid_grant JSON, got %d %v %v", i+1, st, m, h)
		}
		injected(t, h, id, "token", "error")
	}
	if st, m, h := e.post(e.u.Token, form, "", ""); st != http.StatusOK || h.Get("Miniapp-Host-Injected") != "" {
		t.Fatalf("times used: want the real 200, got %d %v", st, m)
	}
	e.addFault(map[string]any{"endpoint": "token", "client_id": confID, "times": 1, "error": "invalid_client"})
	st, m, h := e.post(e.u.Token, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}}, confID, e.confSecret)
	if st != http.StatusUnauthorized || m["error"] != "invalid_client" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("invalid_client: want 401 with a Basic challenge, got %d %v %v", st, m, h)
	}
}

// TestFaultTokenSubject: a token fault scoped to a subject matches the
// subject of the code's grant, and no other.
func TestFaultTokenSubject(t *testing.T) {
	e := start(t)
	e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "subject": subCarla, "error": "server_error"})
	v, c := pkce(t)
	code := e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	if st, m := e.exchange(code, v); st != http.StatusOK {
		t.Fatalf("sub_ana's code under sub_carla's fault: want 200, got %d %v", st, m)
	}
	v, c = pkce(t)
	code = e.nativeCode(e.authParams(c), subCarla, map[string]string{"action": "approve"}).Get("code")
	if st, m := e.exchange(code, v); st != http.StatusInternalServerError || m["error"] != "server_error" {
		t.Fatalf("sub_carla's code: want 500 server_error, got %d %v", st, m)
	}
}

// TestFaultStatusRetryAfter: a status fault answers that status with the
// endpoint's error body for the closest code and Retry-After.
func TestFaultStatusRetryAfter(t *testing.T) {
	e := start(t)
	id := e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "status": 503, "retry_after": 7})
	st, m, h := e.post(e.u.Token, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {publicID}}, "", "")
	if st != http.StatusServiceUnavailable || m["error"] != "temporarily_unavailable" || h.Get("Retry-After") != "7" {
		t.Fatalf("want 503 temporarily_unavailable with Retry-After 7, got %d %v %v", st, m, h)
	}
	injected(t, h, id, "token", "status")
	e.addFault(map[string]any{"endpoint": "introspection", "client_id": confID, "status": 500})
	if st, m := e.introspect("x", confID, e.confSecret); st != http.StatusInternalServerError || m["error"] != "server_error" {
		t.Fatalf("introspection status 500: want server_error, got %d %v", st, m)
	}
}

// TestFaultPARRevocationUserinfo: PAR and revocation answer the JSON
// error; userinfo answers with its RFC 6750 §3 challenge; a DPoP code at
// the token endpoint carries a DPoP-Nonce (RFC 9449 §8).
func TestFaultPARRevocationUserinfo(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	e.addFault(map[string]any{"endpoint": "par", "client_id": confID, "times": 1, "error": "invalid_request", "error_description": "no PAR today"})
	st, m, _ := e.post(e.parEndpoint(), e.confAuthParams(c), confID, e.confSecret)
	if st != http.StatusBadRequest || m["error"] != "invalid_request" || m["error_description"] != "no PAR today" {
		t.Fatalf("PAR: want 400 invalid_request, got %d %v", st, m)
	}
	e.push(e.confAuthParams(c), confID, e.confSecret)

	v, c := pkce(t)
	tok := e.publicTokens(e.authParams(c), v)["access_token"].(string)
	e.addFault(map[string]any{"endpoint": "revocation", "client_id": publicID, "times": 1, "error": "unsupported_token_type"})
	if st, m, _ := e.post(e.u.Issuer+"/oauth/revoke", url.Values{"token": {tok}, "client_id": {publicID}}, "", ""); st != http.StatusBadRequest ||
		m["error"] != "unsupported_token_type" {
		t.Fatalf("revocation: want 400 unsupported_token_type, got %d %v", st, m)
	}

	id := e.addFault(map[string]any{"endpoint": "userinfo", "client_id": publicID, "subject": subAna, "times": 1, "error": "invalid_token"})
	req, _ := http.NewRequest(http.MethodGet, e.u.Issuer+"/oauth/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	st, m, h := e.do(req)
	if st != http.StatusUnauthorized || m["error"] != "invalid_token" || !strings.HasPrefix(h.Get("WWW-Authenticate"), `Bearer error="invalid_token", error_description="`) {
		t.Fatalf("userinfo: want 401 with a Bearer challenge, got %d %v %v", st, m, h)
	}
	injected(t, h, id, "userinfo", "error")
	req, _ = http.NewRequest(http.MethodGet, e.u.Issuer+"/oauth/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if st, m, _ := e.do(req); st != http.StatusOK || m["sub"] != subAna {
		t.Fatalf("userinfo after the fault: want 200, got %d %v", st, m)
	}
	e.addFault(map[string]any{"endpoint": "userinfo", "client_id": publicID, "times": 1, "status": 503})
	req, _ = http.NewRequest(http.MethodGet, e.u.Issuer+"/oauth/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if st, m, h := e.do(req); st != http.StatusServiceUnavailable || m["error"] != "temporarily_unavailable" || h.Get("WWW-Authenticate") != "" {
		t.Fatalf("userinfo 503: want temporarily_unavailable without a challenge, got %d %v %v", st, m, h)
	}

	e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "times": 1, "error": "use_dpop_nonce"})
	st, m, h = e.post(e.u.Token, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {publicID}}, "", "")
	if st != http.StatusBadRequest || m["error"] != "use_dpop_nonce" || h.Get("DPoP-Nonce") == "" {
		t.Fatalf("use_dpop_nonce: want 400 with a DPoP-Nonce, got %d %v %v", st, m, h)
	}
}

// TestFaultGrantAndProviders: the grant endpoint answers a fault scoped
// to the token's client with its own error object and challenge; each
// example Resource Server answers with its RFC 6750 §3 challenge, and a
// 403 as its real insufficient_authorization.
func TestFaultGrantAndProviders(t *testing.T) {
	e := start(t)
	tok := e.providersToken()
	id := e.addFault(map[string]any{"endpoint": "grant", "client_id": publicID, "times": 1, "error": "expired_token"})
	req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Client-Id", signingID)
	req.Header.Set("X-Client-Secret", signingSecret)
	st, m, h := e.do(req)
	if st != http.StatusUnauthorized || m["code"] != "expired_token" || m["status"] != 401.0 ||
		!strings.HasPrefix(h.Get("WWW-Authenticate"), `Bearer realm="`) {
		t.Fatalf("grant: want 401 expired_token with the Bearer challenge, got %d %v %v", st, m, h)
	}
	injected(t, h, id, "grant", "error")
	if st, m := e.grant(tok, signingID, signingSecret); st != http.StatusOK {
		t.Fatalf("grant after the fault: want 200, got %d %v", st, m)
	}

	target := e.u.SigningBaseURL + "/signing-key"
	call := func() (int, map[string]any, http.Header) {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return e.do(req)
	}
	id = e.addFault(map[string]any{"endpoint": "signing", "client_id": publicID, "times": 1, "error": "invalid_token"})
	st, m, h = call()
	if st != http.StatusUnauthorized || m["error"] != "invalid_token" || !strings.HasPrefix(h.Get("WWW-Authenticate"), `Bearer error="invalid_token"`) {
		t.Fatalf("signing: want 401 invalid_token with its challenge, got %d %v %v", st, m, h)
	}
	injected(t, h, id, "signing", "error")
	e.addFault(map[string]any{"endpoint": "signing", "client_id": publicID, "subject": subAna, "times": 1, "status": 403})
	st, m, h = call()
	if st != http.StatusForbidden || m["error"] != "insufficient_authorization" || h.Get("WWW-Authenticate") != `Bearer error="insufficient_scope"` {
		t.Fatalf("signing 403: want insufficient_authorization with its challenge, got %d %v %v", st, m, h)
	}
	if st, m, _ := call(); st != http.StatusOK {
		t.Fatalf("signing after the faults: want 200, got %d %v", st, m)
	}
	e.addFault(map[string]any{"endpoint": "invoicing", "client_id": publicID, "times": 1, "status": 500})
	req, _ = http.NewRequest(http.MethodGet, e.u.InvoicingBaseURL+"/documents", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if st, m, h := e.do(req); st != http.StatusInternalServerError || m["error"] != "server_error" ||
		!strings.Contains(h.Get("Miniapp-Host-Injected"), "endpoint=invoicing; effect=status") {
		t.Fatalf("invoicing 500: want server_error, got %d %v %v", st, m, h)
	}
}

// TestFaultDropAndDelay: a dropped connection is a connection error at
// the client and the server answers the next request; a delay holds the
// request at least that long, then the real answer comes, marked.
func TestFaultDropAndDelay(t *testing.T) {
	e := start(t)
	e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "times": 1, "drop": true})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {publicID}}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	resp, err := hc.PostForm(e.u.Token, form)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("drop: want a connection error, got %d", resp.StatusCode)
	}
	if st, m, _ := e.post(e.u.Token, form, "", ""); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("after the drop: want the real 400 invalid_grant, got %d %v", st, m)
	}
	id := e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "times": 1, "delay": "300ms"})
	t0 := time.Now()
	st, m, h := e.post(e.u.Token, form, "", "")
	if el := time.Since(t0); el < 300*time.Millisecond {
		t.Fatalf("delay 300ms: answered after %s", el)
	}
	if st != http.StatusBadRequest || m["error"] != "invalid_grant" || !strings.Contains(m["error_description"].(string), "unknown code") {
		t.Fatalf("after the delay: want the real answer, got %d %v", st, m)
	}
	injected(t, h, id, "token", "delay")
}

// TestFaultClear: DELETE /api/dev/faults/{id} removes one, DELETE
// ?client_id= those of a client, DELETE all; requests then get real
// answers.
func TestFaultClear(t *testing.T) {
	e := start(t)
	key := e.srv.OperatorKey()
	a := e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "error": "server_error"})
	e.addFault(map[string]any{"endpoint": "token", "client_id": confID, "error": "server_error"})
	e.addFault(map[string]any{"endpoint": "grant", "client_id": confID, "delay": "1s"})
	e.addFault(map[string]any{"endpoint": "userinfo", "client_id": "other", "drop": true})
	l := e.mustDash(http.StatusOK, "GET", "/api/dev/faults", key, nil)["faults"].([]any)
	if len(l) != 4 || l[0].(map[string]any)["id"] != a || l[0].(map[string]any)["remaining"] != nil {
		t.Fatalf("list: want 4 faults oldest first, until cleared, got %v", l)
	}
	if m := e.mustDash(http.StatusOK, "DELETE", "/api/dev/faults/"+a, key, nil); m["id"] != a {
		t.Fatalf("remove: want the removed fault, got %v", m)
	}
	if st, m := e.dash("DELETE", "/api/dev/faults/"+a, key, nil); st != http.StatusNotFound || m["field"] != "id" {
		t.Fatalf("remove again: want 404 at id, got %d %v", st, m)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {publicID}}
	if st, m, _ := e.post(e.u.Token, form, "", ""); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("removed: want the real answer, got %d %v", st, m)
	}
	if m := e.mustDash(http.StatusOK, "DELETE", "/api/dev/faults?client_id="+confID, key, nil); m["removed"] != 2.0 {
		t.Fatalf("clear a client's: want 2 removed, got %v", m)
	}
	if m := e.mustDash(http.StatusOK, "DELETE", "/api/dev/faults", key, nil); m["removed"] != 1.0 {
		t.Fatalf("clear all: want 1 removed, got %v", m)
	}
}

// TestFaultRestartClears: a fault never outlives its process: a server
// started again on the same database has none, and answers for real.
func TestFaultRestartClears(t *testing.T) {
	db := storetest.DB(t)
	clk := &clock{t: time.Now()}
	e := startAt(t, db, clk)
	e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "error": "server_error"})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {publicID}}
	if st, _, _ := e.post(e.u.Token, form, "", ""); st != http.StatusInternalServerError {
		t.Fatalf("the fault: want 500, got %d", st)
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := startAt(t, db, clk, e.u)
	if st, m, _ := e2.post(e2.u.Token, form, "", ""); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("after a restart: want the real 400 invalid_grant, got %d %v", st, m)
	}
	// On a shared database (PostgreSQL) the second start keeps the key
	// the first one set, and makes none of its own (Config.OperatorKey).
	key := e2.srv.OperatorKey()
	if key == "" {
		key = e.srv.OperatorKey()
	}
	if l := e2.mustDash(http.StatusOK, "GET", "/api/dev/faults", key, nil)["faults"].([]any); len(l) != 0 {
		t.Fatalf("after a restart: want no faults, got %v", l)
	}
}

// TestFaultBadInput: each refusal names the member and the rule, and no
// fault is added.
func TestFaultBadInput(t *testing.T) {
	e := start(t)
	key := e.srv.OperatorKey()
	for _, x := range []struct {
		body        map[string]any
		code, field string
		want        string
	}{
		{map[string]any{"client_id": publicID, "error": "server_error"}, "missing_field", "/endpoint", "authorization, par, token"},
		{map[string]any{"endpoint": "tokn", "client_id": publicID, "error": "server_error"}, "invalid_field", "/endpoint", `"tokn" is no endpoint`},
		{map[string]any{"endpoint": "token", "error": "server_error"}, "missing_field", "/client_id", "client_id"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "error": "access_denied"}, "invalid_field", "/error", "invalid_grant"},
		{map[string]any{"endpoint": "authorization", "client_id": publicID, "error": "use_dpop_nonce"}, "invalid_field", "/error", "interaction_required"},
		{map[string]any{"endpoint": "signing", "client_id": publicID, "error": "invalid_grant"}, "invalid_field", "/error", "insufficient_authorization"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "delay": "soon"}, "invalid_field", "/delay", "not a duration"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "delay": "-1s"}, "invalid_field", "/delay", "more than 0"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "status": 302}, "invalid_field", "/status", "400 to 599"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "status": 503, "retry_after": -1}, "invalid_field", "/retry_after", "seconds"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "error": "server_error", "retry_after": 5}, "invalid_field", "/retry_after", "with status"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "drop": false}, "invalid_field", "/drop", "true"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "error": "server_error", "times": 0}, "invalid_field", "/times", "1 to"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "error": "server_error", "error_description": `say "no"`}, "invalid_field", "/error_description", "RFC 6749"},
		{map[string]any{"endpoint": "token", "client_id": publicID}, "invalid_body", "", "exactly one effect"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "drop": true, "delay": "1s"}, "invalid_body", "", "exactly one effect"},
		{map[string]any{"endpoint": "token", "client_id": publicID, "drop": true, "kind": "x"}, "invalid_body", "/kind", "unknown field"},
	} {
		st, m := e.dash("POST", "/api/dev/faults", key, x.body)
		msg, _ := m["message"].(string)
		if st != http.StatusBadRequest || m["code"] != x.code || (x.field != "" && m["field"] != x.field) || !strings.Contains(msg, x.want) {
			t.Errorf("%v: want 400 %s at %q saying %q, got %d %v", x.body, x.code, x.field, x.want, st, m)
		}
	}
	if st, m := e.dash("DELETE", "/api/dev/faults?client=x", key, nil); st != http.StatusBadRequest || m["field"] != "client" {
		t.Errorf("clear with an unknown parameter: want 400 at client, got %d %v", st, m)
	}
	if l := e.mustDash(http.StatusOK, "GET", "/api/dev/faults", key, nil)["faults"].([]any); len(l) != 0 {
		t.Fatalf("refused faults were added: %v", l)
	}
}

// TestFaultOAuth2Library: a real OAuth client library (golang.org/x/oauth2)
// reads a token exchange under an invalid_grant fault as the server's
// refusal: a *oauth2.RetrieveError with that code.
func TestFaultOAuth2Library(t *testing.T) {
	e := start(t)
	e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "times": 1, "error": "invalid_grant",
		"error_description": "the code has expired"})
	v, c := pkce(t)
	code := e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	cfg := oauth2.Config{ClientID: publicID, RedirectURL: publicRedir,
		Endpoint: oauth2.Endpoint{AuthURL: e.u.Authorization, TokenURL: e.u.Token, AuthStyle: oauth2.AuthStyleInParams}}
	_, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(v))
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || re.ErrorDescription != "the code has expired" ||
		re.Response.StatusCode != http.StatusBadRequest {
		t.Fatalf("want *oauth2.RetrieveError invalid_grant, got %T %v", err, err)
	}
	if tok, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(v)); err != nil || tok.AccessToken == "" {
		t.Fatalf("after the fault the same code is redeemed: %v", err)
	}
}

// TestFaultMarkedInNetworkLog: the host's network log (package netlog)
// marks the exchange a fault answered injected, from the server's own
// header, and leaves the real answer after it unmarked.
func TestFaultMarkedInNetworkLog(t *testing.T) {
	e := start(t)
	id := e.addFault(map[string]any{"endpoint": "token", "client_id": publicID, "times": 1, "error": "temporarily_unavailable"})
	l := netlog.New(netlog.Config{})
	u, _ := url.Parse(e.u.Authorization + "?client_id=" + publicID)
	f := l.BeginLaunch("https://app.example", "app", publicID).BeginFlow(u)
	hc := netlog.Client(&http.Client{})
	for range 2 {
		req, _ := http.NewRequestWithContext(netlog.Into(t.Context(), f, netlog.SourceHost, netlog.KindToken), http.MethodPost, e.u.Token,
			strings.NewReader(url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {publicID}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	x, _ := l.Flow(f.ID())
	want := "fault=" + id + "; endpoint=token; effect=error"
	if len(x.Entries) != 3 || x.Entries[1].Injected != want || x.Entries[1].Response.Status != http.StatusServiceUnavailable ||
		x.Entries[2].Injected != "" {
		t.Fatalf("want the faulty exchange marked %q and the real one not, got %+v", want, x.Entries)
	}
	h, _ := l.HAR(f.ID())
	if h.Log.Entries[1].Injected != want {
		t.Fatalf("HAR: want _injected %q, got %+v", want, h.Log.Entries[1])
	}
}

// TestFaultDPoPKinds: DPoP codes are answered as RFC 9449 §7.1 refusals
// of a resource: 401 with a DPoP challenge at the grant endpoint and at a
// Resource Server, whose use_dpop_nonce carries a nonce of the server's
// own (§8): a proof made with it is accepted, a made-up one is not.
func TestFaultDPoPKinds(t *testing.T) {
	e := start(t)
	tok := e.providersToken()
	e.addFault(map[string]any{"endpoint": "grant", "client_id": publicID, "times": 1, "error": "invalid_dpop_proof"})
	req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Client-Id", signingID)
	req.Header.Set("X-Client-Secret", signingSecret)
	st, m, h := e.do(req)
	if st != http.StatusUnauthorized || m["code"] != "invalid_dpop_proof" || !strings.HasPrefix(h.Get("WWW-Authenticate"), `DPoP error="invalid_dpop_proof"`) {
		t.Fatalf("grant: want 401 invalid_dpop_proof with a DPoP challenge, got %d %v %v", st, m, h)
	}
	e.addFault(map[string]any{"endpoint": "signing", "client_id": publicID, "times": 1, "error": "use_dpop_nonce"})
	req, _ = http.NewRequest(http.MethodGet, e.u.SigningBaseURL+"/signing-key", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	st, m, h = e.do(req)
	nonce := h.Get("DPoP-Nonce")
	if st != http.StatusUnauthorized || m["error"] != "use_dpop_nonce" || nonce == "" || !strings.HasPrefix(h.Get("WWW-Authenticate"), `DPoP error="use_dpop_nonce"`) {
		t.Fatalf("signing: want 401 use_dpop_nonce with a DPoP-Nonce and challenge, got %d %v %v", st, m, h)
	}
	key := newSigner(t, jose.ES256)
	for _, tc := range []struct {
		nonce string
		want  int
	}{{"made-up", http.StatusBadRequest}, {nonce, http.StatusOK}} {
		v, c := pkce(t)
		code := e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {publicRedir},
			"code_verifier": {v}, "client_id": {publicID}}
		if st, m, _ := e.post(e.u.Token, form, "", "", "DPoP", key.proof(e, "POST", e.u.Token, "", tc.nonce)); st != tc.want {
			t.Fatalf("a proof with the nonce %q: want %d, got %d %v", tc.nonce, tc.want, st, m)
		}
	}
}

// TestFaultKindsDocumented: the endpoint table of docs/dashboard.md,
// "Faults", lists exactly the error codes the server takes for each
// endpoint, in its order.
func TestFaultKindsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/dashboard.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) == 4 && strings.HasPrefix(cells[0], "| `") {
			for _, ep := range strings.Split(cells[0][2:], ", ") {
				rows[strings.Trim(ep, "`")] = cells[2]
			}
		}
	}
	for _, ep := range devctl.FaultEndpoints {
		want := "`" + strings.Join(devctl.FaultKinds(ep), "`, `") + "`"
		if rows[ep] != want {
			t.Errorf("docs/dashboard.md lists for %s:\n  %s\nthe server takes:\n  %s", ep, rows[ep], want)
		}
	}
}
