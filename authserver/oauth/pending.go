package oauth

import (
	"fmt"
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
	source  string // address of the browser that sent it (browser flow)

	mu      sync.Mutex // guards below
	session string     // binding of the browser session that started it (browser flow)
	subject string
	model   *consent.Model
}

// sessionID returns the binding of the browser session the request
// belongs to.
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

// pendingQuotas bound the pending requests. A browser request counts
// against its client, its source address and the browser total; a native
// request against its host client only, so that no flood of browser
// requests ever refuses the host's native-consent API, and one source or
// one client never refuses another.
type pendingQuotas struct {
	perClient, perSource, browser, perHost int
	ttl                                    time.Duration
}

// pendingSet holds pending requests by id, under pendingQuotas.
type pendingSet struct {
	q  pendingQuotas
	mu sync.Mutex // guards set
	// set is ordered by deadline: every request gets the same ConsentTTL.
	set *expirySet[*pending]
}

func newPendingSet(q pendingQuotas) *pendingSet {
	return &pendingSet{q: q, set: newExpirySet[*pending]()}
}

// Quota key prefixes; the NUL cannot appear in a client id or address.
const (
	keyClient  = "client\x00"
	keySource  = "source\x00"
	keyHost    = "host\x00"
	keyBrowser = "browser"
)

// keys are the quota keys a request is charged to, with their limits.
func (ps *pendingSet) keys(p *pending) ([]string, []int) {
	if p.host != "" {
		return []string{keyHost + p.host}, []int{ps.q.perHost}
	}
	return []string{keySource + p.source, keyClient + p.v.client.ID, keyBrowser},
		[]int{ps.q.perSource, ps.q.perClient, ps.q.browser}
}

// add stores p, first dropping the expired requests; when one of p's
// quotas is used up it is refused with temporarily_unavailable naming the
// quota.
func (ps *pendingSet) add(p *pending, now time.Time) error {
	keys, limits := ps.keys(p)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.set.expire(now)
	if k, lim, full := ps.set.full(keys, limits); full {
		return quotaErr(k, lim, ps.q.ttl)
	}
	ps.set.add(p.id, keys, p.expires, p)
	return nil
}

// quotaErr is the refusal of a request over a quota.
func quotaErr(key string, limit int, ttl time.Duration) *Error {
	var who string
	switch {
	case len(key) > len(keySource) && key[:len(keySource)] == keySource:
		who = "from this source address"
	case len(key) > len(keyClient) && key[:len(keyClient)] == keyClient:
		who = "for this client"
	case len(key) > len(keyHost) && key[:len(keyHost)] == keyHost:
		who = "from this host"
	default:
		who = "from browsers in all"
	}
	return oauthErr(codeTemporarilyUnavailable, fmt.Sprintf(
		"too many authorization requests %s are waiting for consent: the quota is %d, each held up to %s; retry later", who, limit, ttl))
}

// get returns an unexpired pending request, or nil.
func (ps *pendingSet) get(id string, now time.Time) *pending {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e, ok := ps.set.get(id, now)
	if !ok {
		return nil
	}
	return e.v
}

// take removes and returns an unexpired pending request, or nil; of two
// concurrent decisions on one request only one gets it.
func (ps *pendingSet) take(id string, now time.Time) *pending {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e, ok := ps.set.remove(id)
	if !ok || now.After(e.expires) {
		return nil
	}
	return e.v
}

// put returns a taken request, after a decision that was refused as
// invalid; it is charged to its quotas again, even if that goes over them
// for an instant, since it held its place a moment ago.
func (ps *pendingSet) put(p *pending) {
	keys, _ := ps.keys(p)
	ps.mu.Lock()
	ps.set.add(p.id, keys, p.expires, p)
	ps.mu.Unlock()
}

// len is the number of requests held.
func (ps *pendingSet) len() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.set.len()
}
