package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Single-use ids: the jti of a client assertion (RFC 7523 §3) and of a
// DPoP proof (RFC 9449 §11.1) are each accepted once while they could be
// accepted at all. One process that owns its database keeps them in
// memory (memReplay); instances sharing a database record them in it
// (store.UseJTI), so that an id used at one is refused at the others.

// errReplayed is useJTI's answer for an id used before.
var errReplayed = errors.New("oauth: this jti was used before")

// maxJTILife bounds how long an id is kept: an assertion's exp is at most
// maxAssertionLife ahead, a proof is accepted at most dpopPast after its
// iat, and both allow the clock skew.
const maxJTILife = maxAssertionLife + clockSkew

// jtiKey is the key of an id within what it is unique in (RFC 7523 §3: an
// issuer; RFC 9449 §11.1: a key).
func jtiKey(kind, within, jti string) []byte {
	h := sha256.Sum256([]byte(kind + "\x00" + within + "\x00" + jti))
	return h[:]
}

// replayGuard accepts each single-use id once: in memory (mem) on a
// server that owns its database, in the database (UsedIDs) while
// instances share it.
type replayGuard struct {
	st  replayStore
	mem memReplay
	now func() time.Time
}

// replayStore is what the replay guard records ids in.
type replayStore interface {
	UsedIDs
	Shared() bool
}

// useJTI records an id until exp (at most maxJTILife from now), or
// returns errReplayed.
func (g *replayGuard) useJTI(ctx context.Context, key []byte, exp time.Time) error {
	now := g.now()
	if g.st.Shared() {
		err := g.st.UseJTI(ctx, key, exp, now)
		if errors.Is(err, store.ErrJTIUsed) {
			return errReplayed
		}
		return err
	}
	return g.mem.use(key, exp, now)
}

// maxReplayEntries bounds the ids held in memory; past it a new one is
// refused (temporarily_unavailable) rather than forgotten, which would let
// a replay through.
const maxReplayEntries = 1 << 20

// memReplay holds ids in two generations of maps: every maxJTILife the
// older is dropped and the newer becomes older, so an id is kept at least
// maxJTILife after it was added, which covers its exp, and at most twice
// that. No scan, no per-entry timer.
type memReplay struct {
	mu        sync.Mutex
	cur, prev map[[sha256.Size]byte]int64 // id -> exp (Unix nanoseconds)
	started   time.Time                   // of cur
}

func (m *memReplay) use(key []byte, exp, now time.Time) error {
	var k [sha256.Size]byte
	copy(k[:], key)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil || now.Sub(m.started) >= maxJTILife {
		// Every id in cur was added before started+maxJTILife, or cur
		// would have been replaced then: none of prev is live any more.
		m.prev, m.cur, m.started = m.cur, map[[sha256.Size]byte]int64{}, now
	}
	ns := now.UnixNano()
	for _, g := range []map[[sha256.Size]byte]int64{m.cur, m.prev} {
		if e, ok := g[k]; ok && e > ns {
			return errReplayed
		}
	}
	if len(m.cur)+len(m.prev) >= maxReplayEntries {
		return oauthErr(codeTemporarilyUnavailable, "too many single-use ids (client assertions, DPoP proofs) are held; retry in a few minutes")
	}
	m.cur[k] = exp.UnixNano()
	return nil
}
