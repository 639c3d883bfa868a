package authserver_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// TestPARNativeReadsThePushedRequest: a host submits to the native-consent
// API a caught URL that holds only client_id and the request_uri of a
// fapi2 credential's pushed request (RFC 9126 §4). The answer's model
// shows the pushed permissions (a signing-key authorization_details
// object), and its request member says what the server read: pushed, the
// redirect_uri, the authorization_details and the dpop_jkt the client
// pushed, none of which the caught URL holds. The request_uri is then used
// up. The approved code redeems with a proof of that key, and the
// client reads the grant behind its DPoP-bound token at GET
// {base_url}/authorization with its client assertion in
// X-Client-Assertion (a private_key_jwt client has no secret) and a proof;
// a replayed assertion, a secret beside it and a bound token without a
// proof are refused.
func TestPARNativeReadsThePushedRequest(t *testing.T) {
	e := start(t)
	prj, key := e.project("FAPI host")
	signingType := strings.TrimSuffix(e.u.SigningBaseURL, "/api") + "/authorization-details/signing-key"
	sub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/policy", key, map[string]any{
		"scopes": []string{"openid"}, "types": []string{signingType}})
	e.mustDash(http.StatusOK, "POST", "/api/review/"+sub["id"].(string)+"/approve", e.srv.OperatorKey(), nil)
	s := newSigner(t, jose.ES256)
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key, map[string]any{
		"type": "confidential", "redirect_uris": []string{keyedRedirect}, "token_endpoint_auth_method": "private_key_jwt",
		"jwks": jose.JSONWebKeySet{Keys: []jose.JSONWebKey{s.public()}}, "profile": "fapi2"})
	kc := keyedClient{id: c["client_id"].(string), signers: []signer{s}}
	dpopKey := newSigner(t, jose.ES256)
	details := `[{"type":"` + signingType + `","actions":["read"],"locations":["` + e.u.SigningBaseURL + `"]}]`

	verifier, challenge := pkce(t)
	q := kc.params(e, challenge)
	q.Set("scope", "openid")
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", details)
	q.Set("dpop_jkt", dpopKey.thumbprint(t))
	st, m, _ := e.post(e.parEndpoint(), withAssertion(q, kc.assertion(e, e.u.Issuer)), "", "")
	if st != http.StatusCreated {
		t.Fatalf("PAR: %d %v", st, m)
	}
	uri := m["request_uri"].(string)
	caught := e.byReference(kc.id, uri)
	st, m = e.native(map[string]any{"authorization_url": caught, "subject": subAna})
	if st != http.StatusCreated {
		t.Fatalf("native submit of %s: %d %v", caught, st, m)
	}
	read, _ := m["request"].(map[string]any)
	if read["pushed"] != true || read["request_uri"] != uri || read["client_id"] != kc.id || read["redirect_uri"] != keyedRedirect ||
		read["dpop_jkt"] != dpopKey.thumbprint(t) || read["scope"] != "openid" || read["org_id"] != orgAndes || read["code_challenge_method"] != "S256" ||
		jsonOf(t, read["authorization_details"]) != jsonOf(t, mustJSON(t, details)) || read["state"] != nil {
		t.Fatalf("request read: want the pushed one (pushed, its redirect_uri, details, dpop_jkt; no state), got %v", read)
	}
	perms := jsonOf(t, m["consent"].(map[string]any)["permissions"])
	if !strings.Contains(perms, `"name":"`+signingType+`"`) || !strings.Contains(perms, `"name":"openid"`) {
		t.Fatalf("consent model: want the pushed permissions (openid and the signing-key detail), got %s", perms)
	}
	id := m["request_id"].(string)
	if st, m := e.native(map[string]any{"authorization_url": caught, "subject": subAna}); st != http.StatusBadRequest || m["error"] != "invalid_request_uri" {
		t.Fatalf("the request_uri submitted again: want 400 invalid_request_uri, got %d %v", st, m)
	}
	st, m = e.decide(id, map[string]string{"action": "approve"})
	if st != http.StatusOK {
		t.Fatalf("decision: %d %v", st, m)
	}
	rq := redirectQuery(t, m["redirect_url"].(string))
	form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {keyedRedirect}, "code_verifier": {verifier}}
	st, tok, _ := e.post(e.u.Token, withAssertion(form, kc.assertion(e, e.u.Issuer)), "", "", "DPoP", dpopKey.proof(e, "POST", e.u.Token, "", ""))
	if st != http.StatusOK || tok["token_type"] != "DPoP" {
		t.Fatalf("token: want 200 DPoP, got %d %v", st, tok)
	}
	at := tok["access_token"].(string)

	grant := func(hdr ...string) (int, map[string]any, http.Header) {
		req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
		req.Header.Set("Authorization", "DPoP "+at)
		req.Header.Set("X-Client-Id", kc.id)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return e.do(req)
	}
	assertion := kc.assertion(e, e.u.Issuer)
	st, g, _ := grant("X-Client-Assertion", assertion, "DPoP", dpopKey.proof(e, "GET", e.u.Grant, at, ""))
	if st != http.StatusOK || !strings.Contains(jsonOf(t, g["authorizationDetails"]), signingType) || g["subject"] != subAna {
		t.Fatalf("grant with the client's assertion and a proof: want 200 with the signing-key detail, got %d %v", st, g)
	}
	refusals := []struct {
		name string
		hdr  []string
		code string
	}{
		{"replayed assertion", []string{"X-Client-Assertion", assertion, "DPoP", dpopKey.proof(e, "GET", e.u.Grant, at, "")}, "invalid_client_credentials"},
		{"secret beside the assertion", []string{"X-Client-Assertion", kc.assertion(e, e.u.Issuer), "X-Client-Secret", "s", "DPoP", dpopKey.proof(e, "GET", e.u.Grant, at, "")}, "invalid_client_credentials"},
		{"no credential", []string{"DPoP", dpopKey.proof(e, "GET", e.u.Grant, at, "")}, "missing_client_credentials"},
		{"no proof", []string{"X-Client-Assertion", kc.assertion(e, e.u.Issuer)}, "invalid_dpop_proof"},
	}
	for _, r := range refusals {
		st, g, _ := grant(r.hdr...)
		if st != http.StatusUnauthorized || g["code"] != r.code {
			t.Errorf("grant, %s: want 401 %s, got %d %v", r.name, r.code, st, g)
		}
	}
}

// mustJSON decodes a JSON text.
func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
