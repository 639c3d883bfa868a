package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCacheDropsOldest: a full cache drops its oldest record for a new
// one, keeps its size, and replacing a cached record drops nothing.
func TestCacheDropsOldest(t *testing.T) {
	c := newCache(3)
	for i := range 5 {
		c.put(&AccessToken{Hash: []byte(fmt.Sprint("t", i)), GrantID: "g"}, &Grant{ID: fmt.Sprint("g", i)})
		c.put(&AccessToken{Hash: []byte(fmt.Sprint("t", i)), GrantID: "g", JTI: "again"}, nil) // a replacement
	}
	if len(c.tokens) != 3 || len(c.grants) != 3 {
		t.Fatalf("want 3 tokens and 3 grants cached, got %d and %d", len(c.tokens), len(c.grants))
	}
	for i := range 5 {
		_, tok := c.tokens[fmt.Sprint("t", i)]
		_, gr := c.grants[fmt.Sprint("g", i)]
		if want := i >= 2; tok != want || gr != want {
			t.Errorf("record %d: cached token %v, grant %v; want %v (only the newest three)", i, tok, gr, want)
		}
	}
}

// TestCacheEvictionReadsBack: a token and grant dropped from a full cache
// are read from the database again, revocation included.
func TestCacheEvictionReadsBack(t *testing.T) {
	s := open(t)
	s.cache = newCache(2)
	ctx := context.Background()
	now := time.Now()
	for i := range 4 {
		id := fmt.Sprint("g", i)
		newGrant(s, t, id, now)
		if err := s.RedeemCodeFor(ctx, Hash("code-"+id), now, &AccessToken{Hash: Hash("at-" + id), GrantID: id, JTI: id,
			IssuedAt: now, ExpiresAt: now.Add(time.Hour)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RevokeGrant(ctx, "g0", now); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		id := fmt.Sprint("g", i)
		tok, g, err := s.LookupAccessToken(ctx, Hash("at-"+id))
		if err != nil || tok.GrantID != id || g.ID != id || g.Revoked() != (i == 0) {
			t.Fatalf("token of %s: %+v %+v %v; want its grant, revoked only for g0", id, tok, g, err)
		}
	}
	if len(s.cache.tokens) > 2 || len(s.cache.grants) > 2 {
		t.Fatalf("the cache holds %d tokens and %d grants, over its bound of 2", len(s.cache.tokens), len(s.cache.grants))
	}
}

// TestCacheBoundedByBytes: grants with large authorization_details take
// more of the byte bound, so fewer are kept (the oldest dropped first),
// and the bytes counted go back to zero as entries leave.
func TestCacheBoundedByBytes(t *testing.T) {
	c := newCache(1000)
	c.maxGrantBytes = 100 << 10
	details := []byte(`[{"type":"x","note":"` + strings.Repeat("d", 10_000) + `"}]`)
	for i := range 50 {
		c.put(nil, &Grant{ID: fmt.Sprint("g", i), Details: details})
	}
	if c.grantBytes > c.maxGrantBytes {
		t.Fatalf("holds %d bytes, over its bound %d", c.grantBytes, c.maxGrantBytes)
	}
	if n := len(c.grants); n >= 50 || n < 5 {
		t.Fatalf("holds %d of 50 grants of 10 kB", n)
	}
	if _, ok := c.grants["g49"]; !ok {
		t.Fatal("the newest grant was dropped")
	}
	if _, ok := c.grants["g0"]; ok {
		t.Fatal("the oldest grant was kept")
	}
	code := Code{Hash: []byte("h"), RedirectURI: "https://a/cb", ExpiresAt: time.Now().Add(time.Minute)}
	c.putCode(code, time.Now())
	c.spentCode(code.Hash)
	if c.codeBytes != 0 {
		t.Fatalf("%d code bytes counted after the only code was spent", c.codeBytes)
	}
}
