package authserver_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/providers"
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

// keyedDPoPToken is a DPoP-bound access token of the keyed client kc for
// Ana, redeemed with a client assertion, and the key it is bound to.
func (e *env) keyedDPoPToken(kc keyedClient) (string, signer) {
	e.t.Helper()
	dpopKey := newSigner(e.t, jose.EdDSA)
	verifier, challenge := pkce(e.t)
	rq := e.nativeCode(kc.params(e, challenge), subAna, map[string]string{"action": "approve"})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {keyedRedirect}, "code_verifier": {verifier}}
	st, tok, _ := e.post(e.u.Token, withAssertion(form, kc.assertion(e, e.u.Issuer)), "", "", "DPoP", dpopKey.proof(e, "POST", e.u.Token, "", ""))
	if st != http.StatusOK || tok["token_type"] != "DPoP" {
		e.t.Fatalf("token: want 200 DPoP, got %d %v", st, tok)
	}
	return tok["access_token"].(string), dpopKey
}

// TestGrantClientWithKeys: the providers' GrantClient of a credential with
// keys and no secret (private_key_jwt) reads the grant behind its
// DPoP-bound token with a fresh client assertion each time (a second read
// would fail on a replayed jti), and an assertion it cannot make is its
// error, with nothing sent.
func TestGrantClientWithKeys(t *testing.T) {
	e := start(t)
	kc := e.newKeyedClient(nil)
	at, dpopKey := e.keyedDPoPToken(kc)
	auds := []string{}
	c := &providers.GrantClient{Endpoint: e.u.Grant, ClientID: kc.id, Assertion: func(aud string) (string, error) {
		auds = append(auds, aud)
		return kc.assertion(e, aud), nil
	}}
	for range 2 {
		g, err := c.GrantDPoP(t.Context(), at, dpopKey.proof(e, "GET", e.u.Grant, at, ""))
		if err != nil || g.Subject != subAna {
			t.Fatalf("GrantClient with keys: want Ana's grant, got %+v %v", g, err)
		}
	}
	if len(auds) != 2 || auds[0] != e.u.Grant {
		t.Errorf("the assertions' audiences %q, want the grant endpoint, once a read", auds)
	}
	c.Assertion = func(string) (string, error) { return "", errors.New("the key is gone") }
	if _, err := c.GrantDPoP(t.Context(), at, dpopKey.proof(e, "GET", e.u.Grant, at, "")); err == nil || !strings.Contains(err.Error(), "the key is gone") {
		t.Fatalf("an assertion that cannot be made: %v", err)
	}
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
	at, dpopKey := e.keyedDPoPToken(kc)
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
