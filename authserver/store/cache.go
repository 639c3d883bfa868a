package store

import (
	"sync"
	"time"
)

// maxCached bounds the cached unspent codes.
const maxCached = 200_000

// Byte bounds of the cache, beside the entry bounds: a grant's
// authorization_details, a code's redirect_uri and nonce are of the
// client's choosing within the request limits, so a bound on entries alone
// would let large ones take far more memory than typical ones (about 500
// bytes a grant, 300 a token or code). Sizes are estimates: the record,
// its strings, its key and its map slot.
const (
	cachedGrantBytes = 16 << 20
	cachedTokenBytes = 8 << 20
	cachedCodeBytes  = 32 << 20
)

// cachedRecords is how many access tokens, and how many grants, the cache
// holds. When it is full, adding one drops the oldest, which costs one
// database read if that one is looked up again (it is then cached anew).
// The hot reads are of recent records: a grant is read by the token
// endpoint seconds after its code was issued, and a token that is used
// again and again is cached again after a miss. A bound well under the
// number of live tokens keeps the heap, and with it the garbage
// collector's work on every cycle, from growing with every sign-in.
const cachedRecords = 16_384

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
	mu         sync.Mutex // guards below
	epoch      uint64     // incremented by every revocation
	tokens     map[string]AccessToken
	tokenOrder fifo // keys of tokens, oldest first
	grants     map[string]Grant
	grantOrder fifo // keys of grants, oldest first
	codes      map[string]Code

	// estimated bytes held, and their bounds
	tokenBytes, grantBytes, codeBytes int
	maxTokenBytes, maxGrantBytes      int
	maxCodeBytes                      int
}

// newCache returns a cache of at most n access tokens and n grants, within
// the byte bounds.
func newCache(n int) *cache {
	return &cache{tokens: map[string]AccessToken{}, tokenOrder: newFIFO(n),
		grants: map[string]Grant{}, grantOrder: newFIFO(n), codes: map[string]Code{},
		maxTokenBytes: cachedTokenBytes, maxGrantBytes: cachedGrantBytes, maxCodeBytes: cachedCodeBytes}
}

// entryOverhead is a map slot, a ring slot and allocation slack.
const entryOverhead = 64

func tokenSize(t *AccessToken) int {
	return entryOverhead + 2*len(t.Hash) + len(t.GrantID) + len(t.JTI) + 96
}

func grantSize(g *Grant) int {
	n := entryOverhead + 2*len(g.ID) + len(g.ClientID) + len(g.SubjectID) + len(g.OrgID) + len(g.Details) + len(g.InstallationID) + len(g.Lineage) + 224
	for _, x := range g.Scopes {
		n += 16 + len(x)
	}
	for _, x := range g.Audience {
		n += 16 + len(x)
	}
	return n
}

func codeSize(c *Code) int {
	return entryOverhead + 2*len(c.Hash) + len(c.GrantID) + len(c.ClientID) + len(c.RedirectURI) + len(c.Challenge) + len(c.Nonce) + 144
}

// fifo is a ring of a map's keys in the order they were added, so that
// when the map is full its oldest entry is found and dropped in O(1).
type fifo struct {
	keys       []string
	head, size int
}

func newFIFO(n int) fifo { return fifo{keys: make([]string, n)} }

// pop removes and returns the oldest key.
func (f *fifo) pop() (string, bool) {
	if f.size == 0 {
		return "", false
	}
	k := f.keys[f.head]
	f.keys[f.head] = ""
	f.head = (f.head + 1) % len(f.keys)
	f.size--
	return k, true
}

// push records k as the newest key; when the ring was full, it returns the
// oldest key, which the caller drops from its map.
func (f *fifo) push(k string) (oldest string, full bool) {
	if f.size == len(f.keys) {
		oldest = f.keys[f.head]
		f.keys[f.head] = k
		f.head = (f.head + 1) % len(f.keys)
		return oldest, true
	}
	f.keys[(f.head+f.size)%len(f.keys)] = k
	f.size++
	return "", false
}

// putCode caches a new code, dropping expired ones when the map is full.
func (c *cache) putCode(code Code, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := codeSize(&code)
	if len(c.codes) >= maxCached || c.codeBytes+size > c.maxCodeBytes {
		for k, v := range c.codes {
			if now.After(v.ExpiresAt) {
				c.codeBytes -= codeSize(&v)
				delete(c.codes, k)
			}
		}
		if len(c.codes) >= maxCached || c.codeBytes+size > c.maxCodeBytes {
			return // read from the database instead
		}
	}
	if old, ok := c.codes[string(code.Hash)]; ok {
		c.codeBytes -= codeSize(&old)
	}
	c.codes[string(code.Hash)] = code
	c.codeBytes += size
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
	if old, ok := c.codes[string(hash)]; ok {
		c.codeBytes -= codeSize(&old)
		delete(c.codes, string(hash))
	}
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

// epochNow is the epoch to pass to fill for a read about to begin.
func (c *cache) epochNow() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
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

// putLocked adds or replaces records. Only a key new to its map enters
// the ring, so the ring holds each cached key exactly once and dropping
// its oldest key drops the oldest entry.
// Past a byte bound, the oldest entries are dropped until it holds.
func (c *cache) putLocked(t *AccessToken, g *Grant) {
	if t != nil {
		k := string(t.Hash)
		if old, ok := c.tokens[k]; ok {
			c.tokenBytes -= tokenSize(&old)
		} else if old, full := c.tokenOrder.push(k); full {
			c.dropToken(old)
		}
		c.tokens[k] = *t
		c.tokenBytes += tokenSize(t)
		for c.tokenBytes > c.maxTokenBytes && c.tokenOrder.size > 1 {
			old, _ := c.tokenOrder.pop()
			c.dropToken(old)
		}
	}
	if g != nil {
		gc := *g
		gc.raw = nil
		if old, ok := c.grants[g.ID]; ok {
			c.grantBytes -= grantSize(&old)
		} else if old, full := c.grantOrder.push(g.ID); full {
			c.dropGrant(old)
		}
		c.grants[g.ID] = gc
		c.grantBytes += grantSize(&gc)
		for c.grantBytes > c.maxGrantBytes && c.grantOrder.size > 1 {
			old, _ := c.grantOrder.pop()
			c.dropGrant(old)
		}
	}
}

func (c *cache) dropToken(k string) {
	if old, ok := c.tokens[k]; ok {
		c.tokenBytes -= tokenSize(&old)
		delete(c.tokens, k)
	}
}

func (c *cache) dropGrant(id string) {
	if old, ok := c.grants[id]; ok {
		c.grantBytes -= grantSize(&old)
		delete(c.grants, id)
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

// forgetGrant drops a grant whose entries changed: the next read of it,
// or of a token of it, goes to the database; a read under way does not
// cache what it read before (the epoch).
func (c *cache) forgetGrant(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.dropGrant(id)
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

// clear drops everything, for when changes may have been missed; a read
// under way does not fill the cache with what it read before (the epoch).
func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	clear(c.tokens)
	clear(c.grants)
	clear(c.codes)
	c.tokenOrder = newFIFO(len(c.tokenOrder.keys))
	c.grantOrder = newFIFO(len(c.grantOrder.keys))
	c.tokenBytes, c.grantBytes, c.codeBytes = 0, 0, 0
}
