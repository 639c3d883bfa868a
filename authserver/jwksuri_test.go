package authserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// keyHost is a client's JWK Set published on loopback, as a client with a
// jwks_uri publishes it; the test swaps the keys and counts the fetches.
type keyHost struct {
	srv     *httptest.Server
	fetches atomic.Int32
	mu      sync.Mutex
	set     []byte
}

func newKeyHost(t *testing.T, keys ...jose.JSONWebKey) *keyHost {
	h := &keyHost{}
	h.publish(keys...)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.fetches.Add(1)
		h.mu.Lock()
		defer h.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write(h.set)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *keyHost) publish(keys ...jose.JSONWebKey) {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	h.mu.Lock()
	h.set = b
	h.mu.Unlock()
}

func (h *keyHost) uri() string { return h.srv.URL + "/.well-known/jwks.json" }

// TestJWKSURI: a credential registered with a jwks_uri on loopback (the
// server's issuer is on loopback, so it fetches there) authenticates with
// private_key_jwt; its set is fetched once and kept; a rotated key, named
// by a kid the kept set lacks, is fetched at once; an unknown kid does not
// make the server fetch again within 10 s; the credential shows its
// jwks_uri, and a PATCH with jwks replaces it.
func TestJWKSURI(t *testing.T) {
	e := start(t)
	prj, key := e.fapiProject()
	s1, s2 := newSigner(t, jose.ES256), newSigner(t, jose.EdDSA)
	h := newKeyHost(t, s1.public())
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key, map[string]any{
		"type": "confidential", "redirect_uris": []string{keyedRedirect}, "token_endpoint_auth_method": "private_key_jwt",
		"jwks_uri": h.uri(), "profile": "fapi2"})
	if c["client_secret"] != nil || c["jwks_uri"] != h.uri() || c["jwks"] != nil || c["token_endpoint_auth_method"] != "private_key_jwt" {
		t.Fatalf("credential with a jwks_uri: %v", c)
	}
	kc := keyedClient{id: c["client_id"].(string), project: prj, key: key, signers: []signer{s1}}
	push := func(s signer) (int, map[string]any) {
		t.Helper()
		_, challenge := pkce(t)
		st, m, _ := e.post(e.parEndpoint(), withAssertion(kc.params(e, challenge), s.sign(t, kc.claims(e, e.u.Issuer), "JWT", false)), "", "")
		return st, m
	}
	if st, m := push(s1); st != http.StatusCreated || h.fetches.Load() != 1 {
		t.Fatalf("PAR with the published key: %d %v, %d fetches", st, m, h.fetches.Load())
	}
	if st, m := push(s1); st != http.StatusCreated || h.fetches.Load() != 1 {
		t.Fatalf("second PAR: %d %v, %d fetches (want the kept set)", st, m, h.fetches.Load())
	}
	// Rotation: the client publishes a new key and signs with it.
	h.publish(s2.public())
	e.clock.Advance(11 * time.Second)
	if st, m := push(s2); st != http.StatusCreated || h.fetches.Load() != 2 {
		t.Fatalf("PAR with the rotated key: %d %v, %d fetches", st, m, h.fetches.Load())
	}
	// A made-up kid right after: refused, and no fetch.
	stranger := newSigner(t, jose.ES256)
	stranger.kid = "made-up"
	if st, m := push(stranger); st != http.StatusUnauthorized || m["error"] != "invalid_client" ||
		!strings.Contains(m["error_description"].(string), "no registered key has kid 'made-up'") || h.fetches.Load() != 2 {
		t.Fatalf("unknown kid: want 401 invalid_client and no new fetch, got %d %v, %d fetches", st, m, h.fetches.Load())
	}
	// Replaced by inline keys: the jwks_uri is gone, the inline key works.
	u := e.mustDash(http.StatusOK, "PATCH", "/api/projects/"+prj+"/credentials/"+kc.id, key, map[string]any{
		"jwks": jose.JSONWebKeySet{Keys: []jose.JSONWebKey{s1.public()}}})
	if u["jwks_uri"] != nil || u["jwks"] == nil {
		t.Fatalf("PATCH jwks: %v", u)
	}
	if st, m := push(s1); st != http.StatusCreated || h.fetches.Load() != 2 {
		t.Fatalf("PAR with the inline key: %d %v, %d fetches", st, m, h.fetches.Load())
	}
}

// TestJWKSURIDown: a jwks_uri that does not answer with a set refuses the
// assertion with invalid_client naming the URL and what it answered.
func TestJWKSURIDown(t *testing.T) {
	e := start(t)
	prj, key := e.fapiProject()
	gone := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(gone.Close)
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key, map[string]any{
		"type": "confidential", "redirect_uris": []string{keyedRedirect}, "token_endpoint_auth_method": "private_key_jwt",
		"jwks_uri": gone.URL + "/jwks.json"})
	s := newSigner(t, jose.ES256)
	kc := keyedClient{id: c["client_id"].(string), signers: []signer{s}}
	_, challenge := pkce(t)
	st, m, _ := e.post(e.parEndpoint(), withAssertion(kc.params(e, challenge), kc.assertion(e, e.u.Issuer)), "", "")
	if desc, _ := m["error_description"].(string); st != http.StatusUnauthorized || m["error"] != "invalid_client" ||
		!strings.Contains(desc, gone.URL+"/jwks.json answered 404") {
		t.Fatalf("want 401 invalid_client naming the jwks_uri's 404, got %d %v", st, m)
	}
}
