package store

import (
	"slices"
	"sync"
	"time"
)

// consentCacheBytes bounds the remembered consents held in memory: a
// typical one takes about 400 bytes, so some 10,000 fit.
const consentCacheBytes = 4 << 20

// consentCache keeps remembered consents, and the knowledge that a subject
// has none for a client, in memory: a browser authorization reads the
// consent of its subject and client twice (docs/service.md §1's consent check, then
// the consent page's pre-selection) and an approval writes it once.
//
// It is coherent as the grant cache is: every consent write goes through
// this Store and updates or drops the entry after its commit, and a read
// that missed stores what it read only if no write happened since it
// began (the epoch), so a row read before a revocation is never cached
// after it. It holds at most consentCacheBytes (key and record sizes
// estimated), dropping the oldest entry first.
type consentCache struct {
	mu    sync.Mutex
	epoch uint64 // incremented by every consent write
	m     map[string]consentEntry
	order []string // keys, oldest first (a queue; entries replaced in place keep their place)
	head  int      // index of the oldest key in order
	bytes int
	max   int
}

// consentEntry is a cached consent, or nil for "none remembered".
type consentEntry struct {
	c    *Consent
	size int
}

func newConsentCache(max int) *consentCache {
	return &consentCache{m: map[string]consentEntry{}, max: max}
}

func consentKey(subjectID, clientID string) string { return subjectID + "\x00" + clientID }

// consentSize estimates the memory an entry holds: map slot and key, the
// record, its strings and its permission slice.
func consentSize(key string, c *Consent) int {
	n := 96 + 2*len(key)
	if c != nil {
		n += 128 + len(c.SubjectID) + len(c.ClientID) + len(c.OrgID) + len(c.AccountID)
		for _, p := range c.Permissions {
			n += 16 + len(p)
		}
	}
	return n
}

// get returns a copy of a cached consent and whether an entry (maybe "none")
// was found; on a miss, the epoch to pass to fill.
func (cc *consentCache) get(subjectID, clientID string) (c *Consent, found bool, epoch uint64) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e, ok := cc.m[consentKey(subjectID, clientID)]
	if !ok {
		return nil, false, cc.epoch
	}
	if e.c == nil {
		return nil, true, 0
	}
	cp := *e.c
	cp.Permissions = slices.Clone(e.c.Permissions)
	return &cp, true, 0
}

// fill stores what a read found (c nil: none), unless a consent was
// written since the read began.
func (cc *consentCache) fill(epoch uint64, subjectID, clientID string, c *Consent) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if epoch != cc.epoch {
		return
	}
	cc.putLocked(consentKey(subjectID, clientID), c)
}

// written records a committed upsert (c) or deletion (c nil) of the
// consent of subjectID for clientID.
func (cc *consentCache) written(subjectID, clientID string, c *Consent) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.epoch++
	if c != nil { // as a read would return it
		cp := *c
		cp.Permissions = append([]string{}, c.Permissions...)
		cp.UpdatedAt = time.Unix(c.UpdatedAt.Unix(), 0).UTC()
		c = &cp
	}
	cc.putLocked(consentKey(subjectID, clientID), c)
}

// forget drops the entry of subjectID and clientID, after another
// process wrote it.
func (cc *consentCache) forget(subjectID, clientID string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.epoch++
	k := consentKey(subjectID, clientID)
	if e, ok := cc.m[k]; ok {
		cc.bytes -= e.size
		delete(cc.m, k) // its queue slot stays until it comes round or the queue is compacted
	}
}

// clear drops every entry, after a write that touched many (a client's
// removal).
func (cc *consentCache) clear() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.epoch++
	clear(cc.m)
	cc.order, cc.head, cc.bytes = nil, 0, 0
}

func (cc *consentCache) putLocked(key string, c *Consent) {
	size := consentSize(key, c)
	if old, ok := cc.m[key]; ok {
		cc.bytes -= old.size
	} else {
		cc.order = append(cc.order, key)
	}
	cc.m[key] = consentEntry{c: c, size: size}
	cc.bytes += size
	for cc.bytes > cc.max && cc.head < len(cc.order) {
		k := cc.order[cc.head]
		cc.order[cc.head] = ""
		cc.head++
		if e, ok := cc.m[k]; ok {
			cc.bytes -= e.size
			delete(cc.m, k)
		}
	}
	// Compact the queue once its dropped prefix is half of it, or once it
	// holds many keys forgotten and added again (forget leaves their old
	// slots): keep each cached key's last slot, in order.
	switch live := len(cc.order) - cc.head; {
	case live > 2*len(cc.m)+1024:
		seen := make(map[string]bool, len(cc.m))
		keep := make([]string, 0, len(cc.m))
		for i := len(cc.order) - 1; i >= cc.head; i-- {
			if k := cc.order[i]; !seen[k] {
				if _, ok := cc.m[k]; ok {
					seen[k] = true
					keep = append(keep, k)
				}
			}
		}
		slices.Reverse(keep)
		cc.order, cc.head = keep, 0
	case cc.head > 1024 && cc.head*2 > len(cc.order):
		cc.order = append([]string(nil), cc.order[cc.head:]...)
		cc.head = 0
	}
}
