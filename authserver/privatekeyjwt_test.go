package authserver_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/oauth"
)

// signer is a client's private key, as a client would hold it.
type signer struct {
	alg jose.SignatureAlgorithm
	key crypto.Signer
	kid string
}

func newSigner(t *testing.T, alg jose.SignatureAlgorithm) signer {
	t.Helper()
	var k crypto.Signer
	var err error
	switch alg {
	case jose.ES256:
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.PS256:
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, k, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return signer{alg: alg, key: k, kid: "key-" + string(alg)}
}

// public is the JWK of the signer's public key.
func (s signer) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: s.key.Public(), KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"}
}

// sign signs claims with the given header values (typ, jwk).
func (s signer) sign(t *testing.T, claims any, typ string, embedJWK bool) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(typ))
	key := jose.JSONWebKey{Key: s.key, KeyID: s.kid}
	if embedJWK {
		opts.EmbedJWK = true
		key.KeyID = ""
	}
	sg, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := sg.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// keyedClient is a credential that authenticates with private_key_jwt.
type keyedClient struct {
	id, project, key string
	signers          []signer
}

const keyedRedirect = "https://keyed.example/cb"

// newKeyedClient creates, on the dashboard, a confidential credential
// with private_key_jwt and an ES256, a PS256 and an EdDSA key, plus the
// extra members.
func (e *env) newKeyedClient(extra map[string]any) keyedClient {
	e.t.Helper()
	prj, key := e.fapiProject()
	kc := keyedClient{project: prj, key: key}
	var set jose.JSONWebKeySet
	for _, alg := range []jose.SignatureAlgorithm{jose.ES256, jose.PS256, jose.EdDSA} {
		s := newSigner(e.t, alg)
		kc.signers = append(kc.signers, s)
		set.Keys = append(set.Keys, s.public())
	}
	body := map[string]any{"type": "confidential", "redirect_uris": []string{keyedRedirect},
		"token_endpoint_auth_method": "private_key_jwt", "jwks": set}
	for k, v := range extra {
		body[k] = v
	}
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key, body)
	if c["client_secret"] != nil || c["token_endpoint_auth_method"] != "private_key_jwt" {
		e.t.Fatalf("keyed credential: want no secret and private_key_jwt, got %v", c)
	}
	kc.id = c["client_id"].(string)
	return kc
}

// claims are a client assertion's claims for aud, valid now.
func (kc keyedClient) claims(e *env, aud string) map[string]any {
	now := e.clock.Now()
	b := make([]byte, 16)
	rand.Read(b)
	return map[string]any{"iss": kc.id, "sub": kc.id, "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(b)}
}

// assertion is a fresh client assertion signed with the client's ES256 key.
func (kc keyedClient) assertion(e *env, aud string) string {
	return kc.signers[0].sign(e.t, kc.claims(e, aud), "JWT", false)
}

// authForm adds a client assertion to a form.
func withAssertion(form url.Values, assertion string) url.Values {
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	f.Set("client_assertion", assertion)
	return f
}

// params are an authorization request of the keyed client.
func (kc keyedClient) params(e *env, challenge string) url.Values {
	q := e.authParams(challenge)
	q.Set("client_id", kc.id)
	q.Set("redirect_uri", keyedRedirect)
	return q
}

// TestPrivateKeyJWT: a credential registered with keys and
// private_key_jwt has no secret; it pushes its request and redeems its
// code with client assertions (RFC 7523) whose aud is the issuer (or the
// token endpoint's URL), signed with each of its ES256, PS256 and EdDSA
// keys; discovery lists private_key_jwt and the three algorithms.
func TestPrivateKeyJWT(t *testing.T) {
	e := start(t)
	md := e.metadata()
	if !strings.Contains(jsonOf(t, md["token_endpoint_auth_methods_supported"]), `"private_key_jwt"`) ||
		jsonOf(t, md["token_endpoint_auth_signing_alg_values_supported"]) != `["ES256","PS256","EdDSA"]` {
		t.Fatalf("discovery: %v %v", md["token_endpoint_auth_methods_supported"], md["token_endpoint_auth_signing_alg_values_supported"])
	}
	kc := e.newKeyedClient(nil)
	for _, s := range kc.signers {
		t.Run(string(s.alg), func(t *testing.T) {
			e := e.in(t)
			verifier, challenge := pkce(t)
			st, m, _ := e.post(e.parEndpoint(), withAssertion(kc.params(e, challenge), s.sign(t, kc.claims(e, e.u.Issuer), "JWT", false)), "", "")
			if st != http.StatusCreated {
				t.Fatalf("PAR with %s assertion: %d %v", s.alg, st, m)
			}
			rq := e.nativeCode(url.Values{"client_id": {kc.id}, "request_uri": {m["request_uri"].(string)}}, subAna, map[string]string{"action": "approve"})
			form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {keyedRedirect}, "code_verifier": {verifier}}
			st, tok := e.token(withAssertion(form, s.sign(t, kc.claims(e, e.u.Token), "JWT", false)), "", "")
			if st != http.StatusOK || tok["access_token"] == nil {
				t.Fatalf("token with %s assertion (aud the token endpoint): %d %v", s.alg, st, tok)
			}
		})
	}
}

// TestPrivateKeyJWTRefusals: each assertion that breaks a rule is refused
// with 401 invalid_client and a description naming the rule: HS256 and
// none, an unregistered key, the wrong aud, iss other than sub, no or an
// expired exp, an exp too far ahead, an iat in the future, no jti, and a
// jti used before; a secret is no credential for a keyed client.
func TestPrivateKeyJWTRefusals(t *testing.T) {
	e := start(t)
	kc := e.newKeyedClient(nil)
	_, challenge := pkce(t)
	par := e.parEndpoint()
	sign := func(change func(map[string]any)) func(t *testing.T) string {
		return func(t *testing.T) string {
			c := kc.claims(e, e.u.Issuer)
			change(c)
			return kc.signers[0].sign(t, c, "JWT", false)
		}
	}
	hs256 := func(t *testing.T) string {
		sg, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("a shared secret of 32 bytes ....")}, nil)
		payload, _ := json.Marshal(kc.claims(e, e.u.Issuer))
		jws, _ := sg.Sign(payload)
		s, _ := jws.CompactSerialize()
		return s
	}
	unsigned := func(t *testing.T) string {
		payload, _ := json.Marshal(kc.claims(e, e.u.Issuer))
		return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	}
	stranger := func(t *testing.T) string {
		s := newSigner(t, jose.ES256)
		s.kid = kc.signers[0].kid
		return s.sign(t, kc.claims(e, e.u.Issuer), "JWT", false)
	}
	used := kc.assertion(e, e.u.Issuer)
	if st, m, _ := e.post(par, withAssertion(kc.params(e, challenge), used), "", ""); st != http.StatusCreated {
		t.Fatalf("first use: %d %v", st, m)
	}
	for _, tc := range []struct {
		name      string
		assertion func(t *testing.T) string
		desc      string
	}{
		{"HS256", hs256, "signed with HS256, a shared-secret MAC, which is refused"},
		{"alg none", unsigned, `unsigned (alg 'none')`},
		{"unregistered key", stranger, "does not verify with a key of client"},
		{"wrong aud", sign(func(c map[string]any) { c["aud"] = "https://other.example" }), "aud must be the issuer '" + e.u.Issuer + "' (or the token endpoint's URL '" + e.u.Token + "', or this endpoint's URL '" + par + "'); it is the string 'https://other.example'"},
		{"iss not sub", sign(func(c map[string]any) { c["sub"] = "someone" }), "iss and sub must both be the client_id"},
		{"no exp", sign(func(c map[string]any) { delete(c, "exp") }), "has no exp"},
		{"expired", sign(func(c map[string]any) { c["exp"] = e.clock.Now().Add(-time.Minute).Unix() }), "has expired"},
		{"exp too far", sign(func(c map[string]any) { c["exp"] = e.clock.Now().Add(10 * time.Minute).Unix() }), "this server accepts at most 5m0s"},
		{"iat ahead", sign(func(c map[string]any) { c["iat"] = e.clock.Now().Add(30 * time.Second).Unix() }), "iat is in the future by more than 10s: it is "},
		{"no jti", sign(func(c map[string]any) { delete(c, "jti") }), "has no jti"},
		{"jti used before", func(*testing.T) string { return used }, "jti was used before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, m, h := e.post(par, withAssertion(kc.params(e, challenge), tc.assertion(t)), "", "")
			desc, _ := m["error_description"].(string)
			if st != http.StatusUnauthorized || m["error"] != "invalid_client" || !strings.Contains(desc, tc.desc) || h.Get("WWW-Authenticate") == "" {
				t.Fatalf("want 401 invalid_client (%q), got %d %v", tc.desc, st, m)
			}
		})
	}
	t.Run("secret of a keyed client", func(t *testing.T) {
		if st, m, _ := e.post(par, kc.params(e, challenge), kc.id, "anything-at-all-of-enough-length"); st != http.StatusUnauthorized || m["error"] != "invalid_client" {
			t.Fatalf("want 401 invalid_client, got %d %v", st, m)
		}
	})
	t.Run("assertion and Basic", func(t *testing.T) {
		if st, m, _ := e.post(par, withAssertion(kc.params(e, challenge), kc.assertion(e, e.u.Issuer)), confID, e.confSecret); st != http.StatusBadRequest || m["error"] != "invalid_request" {
			t.Fatalf("want 400 invalid_request, got %d %v", st, m)
		}
	})
}

// TestPrivateKeyJWTCredential: the dashboard refuses keys a client
// assertion may not be verified with, keys without private_key_jwt, and
// private_key_jwt without keys or for a public credential, each naming the
// member; a keyed credential has no secret to rotate.
func TestPrivateKeyJWTCredential(t *testing.T) {
	e := start(t)
	prj, key := e.fapiProject()
	es := newSigner(t, jose.ES256)
	weak, _ := rsa.GenerateKey(rand.Reader, 1024)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	set := func(k ...jose.JSONWebKey) jose.JSONWebKeySet { return jose.JSONWebKeySet{Keys: k} }
	for _, tc := range []struct {
		name        string
		body        map[string]any
		code, field string
	}{
		{"private key", map[string]any{"jwks": set(jose.JSONWebKey{Key: es.key, KeyID: "k"})}, "invalid_field", "/jwks/keys/0"},
		{"RSA 1024", map[string]any{"jwks": set(jose.JSONWebKey{Key: &weak.PublicKey, KeyID: "k"})}, "invalid_field", "/jwks/keys/0"},
		{"P-384", map[string]any{"jwks": set(jose.JSONWebKey{Key: &p384.PublicKey, KeyID: "k"})}, "invalid_field", "/jwks/keys/0"},
		{"alg RS256", map[string]any{"jwks": set(jose.JSONWebKey{Key: &weak.PublicKey, KeyID: "k", Algorithm: "RS256"})}, "invalid_field", "/jwks/keys/0"},
		{"no keys", map[string]any{"jwks": set()}, "invalid_field", "/jwks/keys"},
		{"symmetric key", map[string]any{"jwks": set(jose.JSONWebKey{Key: []byte("a shared secret of 32 bytes ...."), KeyID: "k"})}, "invalid_field", "/jwks/keys/0"},
		{"alg ES512", map[string]any{"jwks": set(jose.JSONWebKey{Key: es.key.Public(), KeyID: "k", Algorithm: "ES512"})}, "invalid_field", "/jwks/keys/0"},
		{"jwks and jwks_uri", map[string]any{"jwks_uri": "https://keys.example/jwks.json"}, "invalid_field", "/jwks_uri"},
		{"http jwks_uri", map[string]any{"jwks": nil, "jwks_uri": "http://keys.example/jwks.json"}, "invalid_field", "/jwks_uri"},
		{"jwks_uri not a URL", map[string]any{"jwks": nil, "jwks_uri": "keys.example/jwks.json"}, "invalid_field", "/jwks_uri"},
		{"jwks_uri without private_key_jwt", map[string]any{"token_endpoint_auth_method": nil, "jwks": nil, "jwks_uri": "https://keys.example/jwks.json"}, "invalid_field", "/jwks_uri"},
		{"keys without private_key_jwt", map[string]any{"token_endpoint_auth_method": "client_secret_basic", "jwks": set(es.public())}, "invalid_field", "/jwks"},
		{"private_key_jwt without keys", map[string]any{"jwks": nil}, "missing_field", "/jwks"},
		{"private_key_jwt for a public credential", map[string]any{"type": "public"}, "invalid_field", "/token_endpoint_auth_method"},
		{"fapi2 with a secret", map[string]any{"token_endpoint_auth_method": "client_secret_basic", "jwks": nil, "profile": "fapi2"}, "invalid_field", "/profile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"type": "confidential", "redirect_uris": []string{keyedRedirect},
				"token_endpoint_auth_method": "private_key_jwt", "jwks": set(es.public())}
			for k, v := range tc.body {
				if v == nil {
					delete(body, k)
				} else {
					body[k] = v
				}
			}
			st, m := e.dash("POST", "/api/projects/"+prj+"/credentials", key, body)
			if st != http.StatusBadRequest || m["code"] != tc.code || m["field"] != tc.field || m["message"] == "" {
				t.Fatalf("want 400 %s at %s, got %d %v", tc.code, tc.field, st, m)
			}
		})
	}
	kc := e.newKeyedClient(nil)
	if st, m := e.dash("POST", "/api/projects/"+kc.project+"/credentials/"+kc.id+"/rotate", kc.key, nil); st != http.StatusBadRequest || m["code"] != "not_confidential" {
		t.Fatalf("rotate a keyed credential: want 400 not_confidential, got %d %v", st, m)
	}
}

// TestPrivateKeyJWTReplayAcrossInstances: on two instances sharing a
// PostgreSQL database, an assertion used at one is refused at the other.
func TestPrivateKeyJWTReplayAcrossInstances(t *testing.T) {
	e, _, srvs := twoInstances(t, oauth.Config{})
	if srvs[1].OperatorKey() != "" { // the one that set it; the other kept it
		e.srv = srvs[1]
	}
	kc := e.newKeyedClient(nil)
	_, challenge := pkce(t)
	a := kc.assertion(e, e.u.Issuer)
	form := withAssertion(kc.params(e, challenge), a)
	for i, srv := range srvs {
		st, m, _ := e.post("http://"+srv.ListenAddrs().Service+"/oauth/par", form, "", "")
		switch {
		case i == 0 && st != http.StatusCreated:
			t.Fatalf("first instance: want 201, got %d %v", st, m)
		case i == 1 && (st != http.StatusUnauthorized || !strings.Contains(m["error_description"].(string), "jti was used before")):
			t.Fatalf("second instance: want 401 saying the jti was used before, got %d %v", st, m)
		}
	}
}
