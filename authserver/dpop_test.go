package authserver_test

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/oauth"
)

// proof is a DPoP proof (RFC 9449 §4.2) of the key for a request, as a
// client builds it; change edits the claims.
func (s signer) proof(e *env, method, htu, token, nonce string, change ...func(map[string]any)) string {
	e.t.Helper()
	b := make([]byte, 16)
	rand.Read(b)
	c := map[string]any{"jti": base64.RawURLEncoding.EncodeToString(b), "htm": method, "htu": htu, "iat": e.clock.Now().Unix()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		c["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		c["nonce"] = nonce
	}
	for _, f := range change {
		f(c)
	}
	return s.sign(e.t, c, "dpop+jwt", true)
}

// thumbprint is the key's jkt (RFC 7638).
func (s signer) thumbprint(t *testing.T) string {
	jwk := s.public()
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(tp)
}

// grantDPoP calls the grant endpoint as the token's client would, with a
// scheme and optional proof.
func (e *env) grantWith(scheme, token, proof, clientID, secret string) (int, map[string]any, http.Header) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
	req.Header.Set("Authorization", scheme+" "+token)
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	req.Header.Set("X-Client-Id", clientID)
	req.Header.Set("X-Client-Secret", secret)
	return e.do(req)
}

// dpopTokens runs a flow of the public client (or the confidential one)
// with dpop_jkt in the authorization request and a proof at the token
// endpoint, and returns the token response.
func (e *env) dpopTokens(key signer, confidential bool) map[string]any {
	e.t.Helper()
	verifier, challenge := pkce(e.t)
	q, redirect, user, pass := e.authParams(challenge), publicRedir, "", ""
	if confidential {
		q, redirect, user, pass = e.confAuthParams(challenge), confRedir, confID, e.confSecret
	}
	q.Set("dpop_jkt", key.thumbprint(e.t))
	rq := e.nativeCode(q, subAna, map[string]string{"action": "approve"})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {redirect},
		"code_verifier": {verifier}}
	if !confidential {
		form.Set("client_id", publicID)
	}
	st, m, h := e.post(e.u.Token, form, user, pass, "DPoP", key.proof(e, "POST", e.u.Token, "", ""))
	if st != http.StatusOK || m["token_type"] != "DPoP" || h.Get("DPoP-Nonce") == "" {
		e.t.Fatalf("token with a proof: want 200 token_type DPoP with a DPoP-Nonce, got %d %v", st, m)
	}
	return m
}

// TestDPoP: a public client binds its code with dpop_jkt and redeems it
// with a proof of that key (RFC 9449): the access token is DPoP-bound
// (token_type DPoP, cnf.jkt the key's thumbprint, also in introspection),
// the grant endpoint answers it with a proof and refuses it as Bearer or
// without a proof (401, WWW-Authenticate: DPoP error=...), and the
// refresh token is bound too: it refreshes only with a proof of the key.
// The code refuses a proof of another key.
func TestDPoP(t *testing.T) {
	e := start(t)
	if md := e.metadata(); jsonOf(t, md["dpop_signing_alg_values_supported"]) != `["ES256","PS256","EdDSA"]` {
		t.Fatalf("discovery: dpop_signing_alg_values_supported=%v", md["dpop_signing_alg_values_supported"])
	}
	key := newSigner(t, jose.ES256)
	// The confidential client reads its own grant with its secret.
	at := e.dpopTokens(key, true)["access_token"].(string)
	jws, err := jose.ParseSignedCompact(at, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(jws.UnsafePayloadWithoutVerification()), `"cnf":{"jkt":"`+key.thumbprint(t)+`"}`) {
		t.Fatalf("access token claims lack cnf.jkt: %s", jws.UnsafePayloadWithoutVerification())
	}
	if st, in := e.introspect(at, confID, e.confSecret); st != 200 || in["token_type"] != "DPoP" || jsonOf(t, in["cnf"]) != `{"jkt":"`+key.thumbprint(t)+`"}` {
		t.Fatalf("introspection: %d %v", st, in)
	}
	if st, g, _ := e.grantWith("DPoP", at, key.proof(e, "GET", e.u.Grant, at, ""), confID, e.confSecret); st != http.StatusOK || g["subject"] != subAna {
		t.Fatalf("grant with the proof: want 200, got %d %v", st, g)
	}
	for _, tc := range []struct {
		name, scheme, proof, code, challenge string
	}{
		{"as Bearer", "Bearer", "", "invalid_token", `DPoP error="invalid_token"`},
		{"without proof", "DPoP", "", "invalid_dpop_proof", `DPoP error="invalid_dpop_proof"`},
		{"wrong htu", "DPoP", key.proof(e, "GET", e.u.Issuer+"/elsewhere", at, ""), "invalid_dpop_proof", "htu"},
		{"wrong htm", "DPoP", key.proof(e, "POST", e.u.Grant, at, ""), "invalid_dpop_proof", "htm"},
		{"no ath", "DPoP", key.proof(e, "GET", e.u.Grant, "", ""), "invalid_dpop_proof", "ath"},
		{"stale iat", "DPoP", key.proof(e, "GET", e.u.Grant, at, "", func(c map[string]any) { c["iat"] = e.clock.Now().Add(-90 * time.Second).Unix() }), "invalid_dpop_proof", "old"},
		{"iat ahead", "DPoP", key.proof(e, "GET", e.u.Grant, at, "", func(c map[string]any) { c["iat"] = e.clock.Now().Add(30 * time.Second).Unix() }), "invalid_dpop_proof", "ahead"},
		{"another key", "DPoP", newSigner(t, jose.ES256).proof(e, "GET", e.u.Grant, at, ""), "invalid_dpop_proof", "another key"},
		{"typ JWT", "DPoP", key.sign(t, map[string]any{"jti": "x", "htm": "GET", "htu": e.u.Grant, "iat": e.clock.Now().Unix()}, "JWT", true), "invalid_dpop_proof", "dpop+jwt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			st, m, h := e.grantWith(tc.scheme, at, tc.proof, confID, e.confSecret)
			if st != http.StatusUnauthorized || m["code"] != tc.code || !strings.Contains(h.Get("WWW-Authenticate")+" "+m["message"].(string), tc.challenge) ||
				!strings.HasPrefix(h.Get("WWW-Authenticate"), "DPoP ") {
				t.Fatalf("want 401 %s with a DPoP challenge (%q), got %d %v %q", tc.code, tc.challenge, st, m, h.Get("WWW-Authenticate"))
			}
		})
	}
	// A public client's refresh token is bound to the key.
	rt := e.dpopTokens(key, false)["refresh_token"].(string)
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}
	if st, m, _ := e.post(e.u.Token, form, "", ""); st != http.StatusBadRequest || m["error"] != "invalid_grant" ||
		!strings.Contains(m["error_description"].(string), "bound to a DPoP key") {
		t.Fatalf("refresh without proof: want 400 invalid_grant, got %d %v", st, m)
	}
	if st, m, _ := e.post(e.u.Token, form, "", "", "DPoP", newSigner(t, jose.ES256).proof(e, "POST", e.u.Token, "", "")); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("refresh with another key: want 400 invalid_grant, got %d %v", st, m)
	}
	if st, m, _ := e.post(e.u.Token, form, "", "", "DPoP", key.proof(e, "POST", e.u.Token, "", "")); st != http.StatusOK || m["token_type"] != "DPoP" {
		t.Fatalf("refresh with the key: want 200 DPoP, got %d %v", st, m)
	}
	// A code bound by dpop_jkt refuses a proof of another key.
	verifier, challenge := pkce(t)
	q := e.authParams(challenge)
	q.Set("dpop_jkt", key.thumbprint(t))
	rq := e.nativeCode(q, subAna, map[string]string{"action": "approve"})
	code := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {publicRedir}, "code_verifier": {verifier}, "client_id": {publicID}}
	if st, m, _ := e.post(e.u.Token, code, "", "", "DPoP", newSigner(t, jose.EdDSA).proof(e, "POST", e.u.Token, "", "")); st != http.StatusBadRequest ||
		!strings.Contains(m["error_description"].(string), "bound to a DPoP key (dpop_jkt)") {
		t.Fatalf("code bound by dpop_jkt, proof of another key: want 400 invalid_grant, got %d %v", st, m)
	}
}

// TestDPoPProofRefusals: at the token endpoint a proof that breaks a rule
// is 400 invalid_dpop_proof naming it: a replayed jti, a stale iat, a
// wrong htu, HS256; nothing is issued.
func TestDPoPProofRefusals(t *testing.T) {
	e := start(t)
	key := newSigner(t, jose.ES256)
	used := key.proof(e, "POST", e.u.Token, "", "")
	e.post(e.u.Token, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {publicID}}, "", "", "DPoP", used)
	hs := func() string {
		sg, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("a shared secret of 32 bytes ....")},
			(&jose.SignerOptions{}).WithType("dpop+jwt"))
		jws, _ := sg.Sign([]byte(`{"jti":"a","htm":"POST","htu":"` + e.u.Token + `","iat":` + jsonOf(t, e.clock.Now().Unix()) + `}`))
		s, _ := jws.CompactSerialize()
		return s
	}
	for _, tc := range []struct{ name, proof, desc string }{
		{"replayed jti", used, "jti was used before"},
		{"stale iat", key.proof(e, "POST", e.u.Token, "", "", func(c map[string]any) { c["iat"] = e.clock.Now().Add(-61 * time.Second).Unix() }), "old"},
		{"wrong htu", key.proof(e, "POST", e.u.Issuer+"/oauth/par", "", ""), "is not the URL of this request"},
		{"HS256", hs(), "HS256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			verifier, challenge := pkce(t)
			rq := e.nativeCode(e.authParams(challenge), subAna, map[string]string{"action": "approve"})
			form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {publicRedir}, "code_verifier": {verifier}, "client_id": {publicID}}
			st, r, _ := e.post(e.u.Token, form, "", "", "DPoP", tc.proof)
			if st != http.StatusBadRequest || r["error"] != "invalid_dpop_proof" || !strings.Contains(r["error_description"].(string), tc.desc) || r["access_token"] != nil {
				t.Fatalf("want 400 invalid_dpop_proof (%q), got %d %v", tc.desc, st, r)
			}
		})
	}
}

// TestDPoPNonceAcrossInstances: on two instances sharing a PostgreSQL
// database, a credential that requires DPoP-bound tokens and server
// nonces has a token request without a proof refused, then one without a
// nonce refused with use_dpop_nonce and a DPoP-Nonce; the nonce one
// instance gave is good at the other; and a proof used at one instance is
// refused at the other as a replay.
func TestDPoPNonceAcrossInstances(t *testing.T) {
	e, _, srvs := twoInstances(t, oauth.Config{})
	if srvs[1].OperatorKey() != "" {
		e.srv = srvs[1]
	}
	prj, key := e.fapiProject()
	const redirect = "https://nonce.example/cb"
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key, map[string]any{
		"type": "public", "redirect_uris": []string{redirect}, "dpop_bound_access_tokens": true, "require_dpop_nonce": true})
	id := c["client_id"].(string)
	dk := newSigner(t, jose.EdDSA)
	verifier, challenge := pkce(t)
	q := e.authParams(challenge)
	q.Set("client_id", id)
	q.Set("redirect_uri", redirect)
	rq := e.nativeCode(q, subAna, map[string]string{"action": "approve"})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {redirect}, "code_verifier": {verifier}, "client_id": {id}}
	at := func(i int) string { return "http://" + srvs[i].ListenAddrs().Service + "/oauth/token" }
	if st, m, _ := e.post(at(0), form, "", ""); st != http.StatusBadRequest || m["error"] != "invalid_dpop_proof" ||
		!strings.Contains(m["error_description"].(string), "must send a DPoP proof") {
		t.Fatalf("no proof: want 400 invalid_dpop_proof, got %d %v", st, m)
	}
	st, m, h := e.post(at(0), form, "", "", "DPoP", dk.proof(e, "POST", e.u.Token, "", ""))
	nonce := h.Get("DPoP-Nonce")
	if st != http.StatusBadRequest || m["error"] != "use_dpop_nonce" || nonce == "" {
		t.Fatalf("no nonce: want 400 use_dpop_nonce with a DPoP-Nonce, got %d %v %q", st, m, nonce)
	}
	proof := dk.proof(e, "POST", e.u.Token, "", nonce)
	if st, m, _ := e.post(at(1), form, "", "", "DPoP", proof); st != http.StatusOK || m["token_type"] != "DPoP" {
		t.Fatalf("the other instance's nonce: want 200 DPoP, got %d %v", st, m)
	}
	if st, m, _ := e.post(at(0), form, "", "", "DPoP", proof); st != http.StatusBadRequest || m["error"] != "invalid_dpop_proof" ||
		!strings.Contains(m["error_description"].(string), "jti was used before") {
		t.Fatalf("proof replayed at the other instance: want 400 invalid_dpop_proof, got %d %v", st, m)
	}
}
