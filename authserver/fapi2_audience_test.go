package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// TestFAPI2AssertionAudience: a credential of the fapi2 profile
// authenticates only with a client assertion whose aud is the issuer
// identifier, alone and as a JSON string (FAPI 2.0 Security Profile;
// draft-ietf-oauth-rfc7523bis). An attacker who got the client to sign an
// assertion for another audience (the token or PAR endpoint's URL, an
// array naming the issuer beside the attacker's own server) cannot use it
// here, at the PAR endpoint, the token endpoint or the grant endpoint.
// Another keyed credential keeps the wider rule of RFC 7523 §3 and RFC
// 9126 §2 (docs/fapi.md, "private_key_jwt").
func TestFAPI2AssertionAudience(t *testing.T) {
	e := start(t)
	fapi := e.newKeyedClient(map[string]any{"profile": "fapi2"})
	plain := e.newKeyedClient(nil)
	par := e.parEndpoint()
	_, challenge := pkce(t)
	const attacker = "https://attacker.example/token"
	wide := []struct {
		name string
		aud  any
	}{
		{"the token endpoint's URL", e.u.Token},
		{"the PAR endpoint's URL", par},
		{"[issuer]", []string{e.u.Issuer}},
		{"[issuer, attacker]", []string{e.u.Issuer, attacker}},
		{"[attacker, issuer]", []string{attacker, e.u.Issuer}},
	}
	signed := func(kc keyedClient, aud any) string {
		c := kc.claims(e, "")
		c["aud"] = aud
		return kc.signers[0].sign(t, c, "JWT", false)
	}
	for _, tc := range wide {
		t.Run("fapi2 refuses "+tc.name, func(t *testing.T) {
			st, m, h := e.post(par, withAssertion(fapi.params(e, challenge), signed(fapi, tc.aud)), "", "")
			desc, _ := m["error_description"].(string)
			if st != http.StatusUnauthorized || m["error"] != "invalid_client" || !strings.Contains(desc, "alone and as a JSON string") ||
				h.Get("WWW-Authenticate") == "" {
				t.Fatalf("PAR with aud %v: want 401 invalid_client naming the rule, got %d %v", tc.aud, st, m)
			}
			st, m, _ = e.post(e.u.Token, withAssertion(url.Values{"grant_type": {"authorization_code"}, "code": {"no-such-code"},
				"redirect_uri": {keyedRedirect}, "code_verifier": {strings.Repeat("v", 43)}}, signed(fapi, tc.aud)), "", "")
			if st != http.StatusUnauthorized || m["error"] != "invalid_client" {
				t.Fatalf("token endpoint with aud %v: want 401 invalid_client, got %d %v", tc.aud, st, m)
			}
		})
		t.Run("another credential accepts "+tc.name, func(t *testing.T) {
			// RFC 7523 §3 takes an array that holds the issuer, an
			// attacker's audience beside it included.
			if st, m, _ := e.post(par, withAssertion(plain.params(e, challenge), signed(plain, tc.aud)), "", ""); st != http.StatusCreated {
				t.Fatalf("PAR of a keyed credential without the profile, aud %v: want 201, got %d %v", tc.aud, st, m)
			}
		})
	}
	if st, m, _ := e.post(par, withAssertion(fapi.params(e, challenge), signed(fapi, e.u.Issuer)), "", ""); st != http.StatusCreated {
		t.Fatalf("PAR of the fapi2 credential with aud the issuer, a string: want 201, got %d %v", st, m)
	}

	// At the grant endpoint, the assertion in X-Client-Assertion follows
	// the same rule: the grant endpoint's URL is no audience of a fapi2
	// credential's assertion.
	code, verifier := e.keyedCode(fapi)
	dpopKey := newSigner(t, jose.ES256)
	st, tok, _ := e.post(e.u.Token, withAssertion(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {keyedRedirect},
		"code_verifier": {verifier}}, signed(fapi, e.u.Issuer)), "", "", "DPoP", dpopKey.proof(e, "POST", e.u.Token, "", ""))
	if st != http.StatusOK || tok["token_type"] != "DPoP" {
		t.Fatalf("token of the fapi2 credential, aud the issuer: want 200 DPoP, got %d %v", st, tok)
	}
	at := tok["access_token"].(string)
	if st, g, _ := e.grantKeyed("DPoP", at, dpopKey.proof(e, "GET", e.u.Grant, at, ""), signed(fapi, e.u.Grant), "", ""); st != http.StatusUnauthorized ||
		g["code"] != "invalid_client_credentials" || !strings.Contains(jsonOf(t, g), "alone and as a JSON string") {
		t.Fatalf("grant endpoint, a fapi2 assertion for the grant endpoint's URL: want 401 invalid_client_credentials, got %d %v", st, g)
	}
	if st, g, _ := e.grantKeyed("DPoP", at, dpopKey.proof(e, "GET", e.u.Grant, at, ""), signed(fapi, e.u.Issuer), "", ""); st != http.StatusOK || g["subject"] != subAna {
		t.Fatalf("grant endpoint, a fapi2 assertion for the issuer: want 200 with Ana's grant, got %d %v", st, g)
	}
}
