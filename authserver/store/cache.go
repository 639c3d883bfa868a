package store

import (
	"sync"
	"time"
)

// maxCached bounds the cached access tokens and grants; past it the cache
// starts again empty, which costs one database read per entry.
const maxCached = 200_000

// cache keeps access tokens and grants in memory for the hot read paths
// (GET {base_url}/authorization, introspection, the token endpoint). It is
// coherent because every write goes through this Store: writes fill it
// after commit, revocations update it after commit, and a read that missed
// the cache stores what it read only if no revocation happened meanwhile
// (the epoch), so a stale row can never be cached after its revocation.
//
// Unspent codes are cached from their creation to their redemption, so the
// token endpoint reads a code without a query; spending a code is always
// the conditional UPDATE in the database, so the cache never decides
// single use.
type cache struct {
	mu     sync.Mutex // guards below
	epoch  uint64     // incremented by every revocation
	tokens map[string]AccessToken
	grants map[string]Grant
	codes  map[string]Code
}

func newCache() *cache {
	return &cache{tokens: map[string]AccessToken{}, grants: map[string]Grant{}, codes: map[string]Code{}}
}

// putCode caches a new code, dropping expired ones when the map is full.
func (c *cache) putCode(code Code, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.codes) >= maxCached {
		for k, v := range c.codes {
			if now.After(v.ExpiresAt) {
				delete(c.codes, k)
			}
		}
		if len(c.codes) >= maxCached {
			return // read from the database instead
		}
	}
	c.codes[string(code.Hash)] = code
}

// code returns a cached unspent code.
func (c *cache) code(hash []byte) (Code, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	code, ok := c.codes[string(hash)]
	return code, ok
}

// spentCode forgets a code once a redemption was attempted.
func (c *cache) spentCode(hash []byte) {
	c.mu.Lock()
	delete(c.codes, string(hash))
	c.mu.Unlock()
}

// lookup returns a cached token with its grant, or the epoch to pass to
// fill after reading the database.
func (c *cache) lookup(hash []byte) (*AccessToken, *Grant, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tokens[string(hash)]; ok {
		if g, ok := c.grants[t.GrantID]; ok {
			return &t, &g, 0
		}
	}
	return nil, nil, c.epoch
}

// grant returns a cached grant, or the epoch to pass to fill.
func (c *cache) grant(id string) (*Grant, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.grants[id]; ok {
		return &g, 0
	}
	return nil, c.epoch
}

// fill stores what a read found, unless a revocation happened since the
// read began.
func (c *cache) fill(epoch uint64, t *AccessToken, g *Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return
	}
	c.putLocked(t, g)
}

// put stores freshly written records; nothing can have revoked them yet.
func (c *cache) put(t *AccessToken, g *Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(t, g)
}

func (c *cache) putLocked(t *AccessToken, g *Grant) {
	if len(c.tokens) >= maxCached || len(c.grants) >= maxCached {
		c.tokens, c.grants = map[string]AccessToken{}, map[string]Grant{}
	}
	if t != nil {
		c.tokens[string(t.Hash)] = *t
	}
	if g != nil {
		gc := *g
		gc.raw = nil
		c.grants[g.ID] = gc
	}
}

// revokedGrant records a committed grant revocation.
func (c *cache) revokedGrant(id string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if g, ok := c.grants[id]; ok {
		g.RevokedAt = at
		c.grants[id] = g
	}
}

// revokedToken records a committed access token revocation.
func (c *cache) revokedToken(hash []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if t, ok := c.tokens[string(hash)]; ok {
		t.Revoked = true
		c.tokens[string(hash)] = t
	}
}
