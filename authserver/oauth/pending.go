package oauth

import (
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/consent"
)

// pending is an authorization request waiting for sign-in and a decision.
// Pending requests live in memory only: they last minutes, and a restart
// simply asks the subject again.
type pending struct {
	id      string
	v       *validated
	expires time.Time
	host    string // host client that submitted it (native flow)

	mu      sync.Mutex // guards below
	session string     // browser session that started it (browser flow)
	subject string
	model   *consent.Model
}

// sessionID returns the browser session the request belongs to.
func (p *pending) sessionID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.session
}

// state returns the subject and model under the lock.
func (p *pending) state() (string, *consent.Model) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.subject, p.model
}

// pendingSet holds pending requests by id, bounded in number.
type pendingSet struct {
	mu    sync.Mutex // guards m
	m     map[string]*pending
	max   int
	swept time.Time
}

func newPendingSet(max int) *pendingSet { return &pendingSet{m: map[string]*pending{}, max: max} }

// add stores p; false when the set is full even after dropping the expired.
func (ps *pendingSet) add(p *pending, now time.Time) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.m) >= ps.max || now.Sub(ps.swept) > time.Minute {
		ps.sweepLocked(now)
	}
	if len(ps.m) >= ps.max {
		return false
	}
	ps.m[p.id] = p
	return true
}

func (ps *pendingSet) sweepLocked(now time.Time) {
	for id, p := range ps.m {
		if now.After(p.expires) {
			delete(ps.m, id)
		}
	}
	ps.swept = now
}

// get returns an unexpired pending request, or nil.
func (ps *pendingSet) get(id string, now time.Time) *pending {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[id]
	if p == nil || now.After(p.expires) {
		return nil
	}
	return p
}

// take removes and returns an unexpired pending request, or nil; of two
// concurrent decisions on one request only one gets it.
func (ps *pendingSet) take(id string, now time.Time) *pending {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[id]
	if p == nil {
		return nil
	}
	delete(ps.m, id)
	if now.After(p.expires) {
		return nil
	}
	return p
}

// rebind moves the pending requests of a browser session to its
// successor after sign-in.
func (ps *pendingSet) rebind(old, nu string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.m {
		p.mu.Lock()
		if p.session == old {
			p.session = nu
		}
		p.mu.Unlock()
	}
}

// put returns a taken request, after a decision that was refused as invalid.
func (ps *pendingSet) put(p *pending) {
	ps.mu.Lock()
	ps.m[p.id] = p
	ps.mu.Unlock()
}
