package authserver_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// grantKeyed calls GET {base_url}/authorization with a client assertion in
// X-Client-Assertion (and X-Client-Id, X-Client-Secret when given).
func (e *env) grantKeyed(scheme, token, proof, assertion, id, secret string) (int, map[string]any, http.Header) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
	req.Header.Set("Authorization", scheme+" "+token)
	for h, v := range map[string]string{"DPoP": proof, "X-Client-Assertion": assertion, "X-Client-Id": id, "X-Client-Secret": secret} {
		if v != "" {
			req.Header.Set(h, v)
		}
	}
	return e.do(req)
}

// TestGrantPrivateKeyJWT: a credential that authenticates with
// private_key_jwt (no secret) reads the grant behind its DPoP-bound token
// at GET {base_url}/authorization with a client assertion in
// X-Client-Assertion, aud the issuer or the grant endpoint's URL
// (docs/service.md §4.1; RFC 7523 §3), and the token's DPoP proof; its
// introspection reports token_type DPoP and cnf.jkt (RFC 9449 §6.2). A
// replayed, HS256 or foreign assertion, an assertion beside a secret, and
// the bound token as Bearer or without its proof are refused, each naming
// the rule; a bound token's refusals carry WWW-Authenticate: DPoP (RFC 9449
// §7.1).
func TestGrantPrivateKeyJWT(t *testing.T) {
	e := start(t)
	kc := e.newKeyedClient(nil)
	dpopKey := newSigner(t, jose.EdDSA)
	verifier, challenge := pkce(t)
	rq := e.nativeCode(kc.params(e, challenge), subAna, map[string]string{"action": "approve"})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {keyedRedirect}, "code_verifier": {verifier}}
	st, tok, _ := e.post(e.u.Token, withAssertion(form, kc.assertion(e, e.u.Token)), "", "", "DPoP", dpopKey.proof(e, "POST", e.u.Token, "", ""))
	if st != http.StatusOK || tok["token_type"] != "DPoP" {
		t.Fatalf("token: want 200 DPoP, got %d %v", st, tok)
	}
	at := tok["access_token"].(string)
	proof := func() string { return dpopKey.proof(e, "GET", e.u.Grant, at, "") }
	for _, aud := range []string{e.u.Issuer, e.u.Grant} {
		if st, g, _ := e.grantKeyed("DPoP", at, proof(), kc.assertion(e, aud), "", ""); st != http.StatusOK || g["subject"] != subAna {
			t.Fatalf("grant with an assertion (aud %s): want 200, got %d %v", aud, st, g)
		}
	}
	// Introspection by the keyed client (RFC 7662, private_key_jwt): the
	// token is DPoP-bound, with the key's thumbprint (RFC 9449 §6.2).
	introspect := e.u.Issuer + "/oauth/introspect"
	st, in, _ := e.post(introspect, withAssertion(url.Values{"token": {at}}, kc.assertion(e, introspect)), "", "")
	if cnf, _ := in["cnf"].(map[string]any); st != http.StatusOK || in["active"] != true || in["token_type"] != "DPoP" || cnf["jkt"] != dpopKey.thumbprint(t) {
		t.Fatalf("introspection with private_key_jwt: want active, token_type DPoP and cnf.jkt %s, got %d %v", dpopKey.thumbprint(t), st, in)
	}
	used := kc.assertion(e, e.u.Grant)
	if st, g, _ := e.grantKeyed("DPoP", at, proof(), used, kc.id, ""); st != http.StatusOK {
		t.Fatalf("grant with an assertion and X-Client-Id: want 200, got %d %v", st, g)
	}
	hs := func() string {
		sg, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("a shared secret of 32 bytes ....")}, nil)
		payload, _ := json.Marshal(kc.claims(e, e.u.Grant))
		jws, _ := sg.Sign(payload)
		s, _ := jws.CompactSerialize()
		return s
	}()
	for _, tc := range []struct {
		name, scheme, proof, assertion, id, secret string
		status                                     int
		code, desc, challenge                      string
	}{
		{"replayed assertion", "DPoP", proof(), used, "", "", 401, "invalid_client_credentials", "jti was used before", "Bearer"},
		{"HS256 assertion", "DPoP", proof(), hs, "", "", 401, "invalid_client_credentials", "HS256", "Bearer"},
		{"assertion of another client id", "DPoP", proof(), kc.assertion(e, e.u.Grant), confID, "", 401, "invalid_client_credentials", "client_id differs", "Bearer"},
		{"assertion and secret", "DPoP", proof(), kc.assertion(e, e.u.Grant), kc.id, "a-secret-of-enough-length-000000", 401, "invalid_client_credentials", "not both", "Bearer"},
		{"wrong aud", "DPoP", proof(), kc.assertion(e, e.u.Token+"/x"), "", "", 401, "invalid_client_credentials", "aud must be the issuer", "Bearer"},
		{"bound token as Bearer", "Bearer", "", kc.assertion(e, e.u.Grant), "", "", 401, "invalid_token", "DPoP-bound", `DPoP error="invalid_token"`},
		{"bound token without proof", "DPoP", "", kc.assertion(e, e.u.Grant), "", "", 401, "invalid_dpop_proof", "send a DPoP proof", `DPoP error="invalid_dpop_proof"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			st, m, h := e.grantKeyed(tc.scheme, at, tc.proof, tc.assertion, tc.id, tc.secret)
			msg, _ := m["message"].(string)
			if st != tc.status || m["code"] != tc.code || !strings.Contains(msg, tc.desc) || !strings.HasPrefix(h.Get("WWW-Authenticate"), tc.challenge) {
				t.Fatalf("want %d %s (%q) with WWW-Authenticate %s..., got %d %v %q", tc.status, tc.code, tc.desc, tc.challenge, st, m, h.Get("WWW-Authenticate"))
			}
		})
	}
}
