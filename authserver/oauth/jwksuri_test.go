package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// jwksHost is a client's key host on loopback: it serves what body
// returns and counts the fetches.
type jwksHost struct {
	*httptest.Server
	fetches atomic.Int32
	mu      sync.Mutex
	body    func(w http.ResponseWriter, r *http.Request)
}

func newJWKSHost(t *testing.T) *jwksHost {
	h := &jwksHost{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.fetches.Add(1)
		h.mu.Lock()
		body := h.body
		h.mu.Unlock()
		body(w, r)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *jwksHost) serve(body func(w http.ResponseWriter, r *http.Request)) {
	h.mu.Lock()
	h.body = body
	h.mu.Unlock()
}

// serveKeys serves a JWK Set of one new ES256 public key with kid.
func (h *jwksHost) serveKeys(t *testing.T, kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"}}})
	h.serve(func(w http.ResponseWriter, _ *http.Request) { w.Write(b) })
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestJWKSCache: a jwks_uri's set is fetched once and kept for jwksTTL;
// an unknown kid fetches it again at once (key rotation), but not twice
// within jwksRefetch; the set expires with the clock.
func TestJWKSCache(t *testing.T) {
	h := newJWKSHost(t)
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	c := newJWKSCache(true, clk.now)
	uri := h.URL + "/jwks.json"
	ctx := context.Background()
	h.serveKeys(t, "k1")
	want := func(kid string, fetches int32, has bool) {
		t.Helper()
		set, err := c.keys(ctx, uri, kid)
		if err != nil {
			t.Fatalf("kid %s: %v", kid, err)
		}
		if got := h.fetches.Load(); got != fetches || (len(set.Key(kid)) > 0) != has {
			t.Fatalf("kid %s: %d fetches (want %d), key present %v (want %v)", kid, got, fetches, len(set.Key(kid)) > 0, has)
		}
	}
	want("k1", 1, true)
	want("k1", 1, true) // kept
	h.serveKeys(t, "k2")
	want("k2", 1, false) // unknown kid, but fetched less than jwksRefetch ago
	clk.advance(jwksRefetch)
	want("k2", 2, true) // unknown kid: fetched again (rotation)
	want("k1", 2, false)
	want("nope", 2, false) // rate-limited
	clk.advance(jwksTTL)
	h.serveKeys(t, "k3")
	want("k2", 3, false) // expired: fetched again
	want("k3", 3, true)
}

// TestJWKSFetchRefusals: each fetch that breaks a bound is refused with
// an error naming it: a body over maxJWKSBody, a status other than 200,
// a redirect, a private key, a host slower than the timeout, and, outside
// development, a loopback address.
func TestJWKSFetchRefusals(t *testing.T) {
	h := newJWKSHost(t)
	ctx := context.Background()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	privSet, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: priv, KeyID: "p"}}})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	for _, tc := range []struct {
		name  string
		local bool
		body  func(w http.ResponseWriter, r *http.Request)
		want  string
	}{
		{"too large", true, func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"keys":[` + strings.Repeat(" ", maxJWKSBody) + `]}`))
		}, "serves more than 65536 bytes"},
		{"404", true, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "answered 404 Not Found"},
		{"redirect", true, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, "redirects"},
		{"private key", true, func(w http.ResponseWriter, _ *http.Request) { w.Write(privSet) }, "a private or symmetric key is refused"},
		{"not a set", true, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`<html>`)) }, "does not serve a JWK Set"},
		{"slow", true, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}, "context deadline exceeded"},
		{"loopback outside development", false, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"keys":[]}`)) },
			"127.0.0.1, loopback (127.0.0.0/8, RFC 1122)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.serve(tc.body)
			c := newJWKSCache(tc.local, time.Now)
			if tc.name == "slow" {
				// Only the slow host meets the bound: the others
				// keep the real one, so that a loaded machine does
				// not turn their refusal into a timeout.
				c.timeout = 200 * time.Millisecond
			}
			_, err := c.keys(ctx, h.URL+"/jwks.json", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// TestPublicOnlyDialer: the fetcher's dial-time check (net.Dialer.Control,
// after the name resolved) is the address policy of package origin: it
// refuses the addresses the guard once let through (shared address
// space, benchmarking, protocol assignments, IPv4-compatible, NAT64 and
// 6to4 wrappings of loopback, private and link-local addresses,
// site-local IPv6) and passes public ones, NAT64 of a public address
// included. It is called with the addresses only: nothing is dialed.
func TestPublicOnlyDialer(t *testing.T) {
	for _, addr := range []string{"100.100.100.200:80", "100.64.0.1:443", "198.18.0.1:443", "192.0.0.1:443", "127.0.0.1:443",
		"[::ffff:127.0.0.1]:443", "[::7f00:1]:443", "[::a00:1]:443", "[::a9fe:a9fe]:80", "[64:ff9b::7f00:1]:443", "[64:ff9b::a00:1]:443",
		"[64:ff9b::a9fe:a9fe]:80", "[2002:7f00:1::]:443", "[2002:a9fe:a9fe::1]:80", "[fec0::1]:443", "[fd00::1]:443", "[fe80::1%eth0]:443"} {
		if err := publicOnly("tcp", addr, nil); err == nil || !strings.Contains(err.Error(), "does not fetch outside development") {
			t.Errorf("dialing %s: want a refusal, got %v", addr, err)
		}
	}
	for _, addr := range []string{"8.8.8.8:443", "[2606:4700:4700::1111]:443", "[64:ff9b::808:808]:443", "[::ffff:8.8.8.8]:443"} {
		if err := publicOnly("tcp", addr, nil); err != nil {
			t.Errorf("dialing %s: want it allowed, got %v", addr, err)
		}
	}
}
