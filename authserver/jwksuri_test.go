package authserver_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
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
// assertion with invalid_client, in words that say nothing of what the
// fetch met: the caller is not authenticated yet, and the addresses, ports
// and answers of the client's key host are no business of its. The
// server's log has what went wrong.
func TestJWKSURIDown(t *testing.T) {
	var log syncBuffer
	e := startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(c *authserver.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
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
	desc, _ := m["error_description"].(string)
	if st != http.StatusUnauthorized || m["error"] != "invalid_client" || !strings.Contains(desc, "could not be read from its jwks_uri; the server's log says why") {
		t.Fatalf("want 401 invalid_client saying the keys could not be read, got %d %v", st, m)
	}
	for _, detail := range []string{"404", gone.Listener.Addr().String(), "127.0.0.1"} {
		if strings.Contains(desc, detail) {
			t.Errorf("the refusal tells an unauthenticated caller %q: %s", detail, desc)
		}
	}
	if l := log.String(); !strings.Contains(l, "jwks_uri fetch failed") || !strings.Contains(l, "answered 404 Not Found") {
		t.Errorf("the log lacks the fetch's failure: %s", l)
	}
}

// syncBuffer is a bytes.Buffer that a server's goroutines may write at
// once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestJWKSURIAddressPolicy: a deployed server (its issuer not on
// loopback) refuses, at registration on the dashboard, a jwks_uri on any
// host the address policy does not call public (origin.HostRule): the
// special-purpose blocks netip does not know (a cloud's metadata address
// in 100.64.0.0/10, benchmarking, protocol assignments), IPv6 forms that
// carry a loopback, private or link-local IPv4 address (IPv4-mapped,
// IPv4-compatible, NAT64, 6to4), site-local IPv6, and loopback spelled as
// a browser or resolver reads it (127.1, 0177.0.0.1, localhost.). Each
// refusal is 400 invalid_field at /jwks_uri naming the rule; a public
// host is registered (and never fetched here).
func TestJWKSURIAddressPolicy(t *testing.T) {
	e := startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(c *authserver.Config) { c.Issuer = "https://id.example" })
	prj, key := e.fapiProject()
	register := func(uri string) (int, map[string]any) {
		t.Helper()
		return e.dash("POST", "/api/projects/"+prj+"/credentials", key, map[string]any{
			"type": "confidential", "redirect_uris": []string{keyedRedirect}, "token_endpoint_auth_method": "private_key_jwt", "jwks_uri": uri})
	}
	for uri, rule := range map[string]string{
		"https://100.100.100.200/latest/jwks": "shared address space",
		"https://100.64.0.1/jwks.json":        "shared address space",
		"https://198.18.0.1/jwks.json":        "benchmarking",
		"https://192.0.0.170/jwks.json":       "IETF protocol assignments",
		"https://[::ffff:a9fe:a9fe]/jwks":     "carries 169.254.169.254: link-local",
		"https://[::7f00:1]/jwks.json":        "IPv4-compatible",
		"https://[::a00:1]/jwks.json":         "IPv4-compatible",
		"https://[64:ff9b::7f00:1]/jwks.json": "carries 127.0.0.1: loopback",
		"https://[64:ff9b::a00:1]/jwks.json":  "carries 10.0.0.1: private",
		"https://[64:ff9b::a9fe:a9fe]/jwks":   "carries 169.254.169.254: link-local",
		"https://[2002:7f00:1::]/jwks.json":   "carries 127.0.0.1: loopback",
		"https://[fec0::1]/jwks.json":         "site-local",
		"https://127.1/jwks.json":             `write the host as "127.0.0.1"`,
		"https://0177.0.0.1/jwks.json":        `write the host as "127.0.0.1"`,
		"https://localhost./jwks.json":        "loopback name",
	} {
		st, m := register(uri)
		if msg, _ := m["message"].(string); st != http.StatusBadRequest || m["code"] != "invalid_field" || m["field"] != "/jwks_uri" || !strings.Contains(msg, rule) {
			t.Errorf("jwks_uri %s: want 400 invalid_field at /jwks_uri naming %q, got %d %v", uri, rule, st, m)
		}
	}
	if st, m := register("https://keys.example.com/jwks.json"); st != http.StatusCreated {
		t.Fatalf("a public jwks_uri: want 201, got %d %v", st, m)
	}
}
