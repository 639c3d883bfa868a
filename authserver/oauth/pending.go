package oauth

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/consent"
)

// pending is an authorization request waiting for sign-in and a decision.
// On a database of its own the server keeps them in memory (pendingSet):
// they last minutes, and a restart simply asks the subject again. Servers
// sharing a database keep them in it (dbPending, flowstate.go).
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

// Quota keys: a prefix and the client id, address or host client id. No
// prefix is the start of another, so no two quotas share a key.
const (
	keyClient  = "pending client:"
	keySource  = "pending source:"
	keyHost    = "pending host:"
	keyBrowser = "pending browser"
)

// keys are the quota keys a request is charged to, with their limits.
func (q pendingQuotas) keys(p *pending) ([]string, []int) {
	if p.host != "" {
		return []string{keyHost + p.host}, []int{q.perHost}
	}
	return []string{keySource + p.source, keyClient + p.v.client.ID, keyBrowser},
		[]int{q.perSource, q.perClient, q.browser}
}

// add stores p, first dropping the expired requests; when one of p's
// quotas is used up it is refused with temporarily_unavailable naming the
// quota.
func (ps *pendingSet) add(p *pending, now time.Time) error {
	keys, limits := ps.q.keys(p)
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

// put returns a taken request, after a decision that turned out not to be
// its own (memPending.decide); it is charged to its quotas again, even if
// that goes over them for an instant, since it held its place a moment ago.
func (ps *pendingSet) put(p *pending) {
	keys, _ := ps.q.keys(p)
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

// memPending is the pendingStore of a server that owns its database: the
// requests in a pendingSet, their models with them.
type memPending struct {
	set *pendingSet
	st  grantWriter
}

// grantWriter is what an approval decided in memory stores.
type grantWriter interface {
	CreateGrantRemembering(ctx context.Context, g *store.Grant, c *store.Code, remember *store.Consent) error
}

func (m *memPending) add(_ context.Context, p *pending, now time.Time) error {
	return m.set.add(p, now)
}

func (m *memPending) get(_ context.Context, id string, now time.Time) (*pending, error) {
	return m.set.get(id, now), nil
}

func (m *memPending) record(_ context.Context, p *pending, subject string, model *consent.Model) error {
	p.mu.Lock()
	p.subject, p.model = subject, model
	p.mu.Unlock()
	return nil
}

func (m *memPending) drop(_ context.Context, p *pending) error {
	m.set.take(p.id, time.Time{})
	return nil
}

func (m *memPending) decide(ctx context.Context, p *pending, subject string, g *store.Grant, c *store.Code, remember *store.Consent, now time.Time) error {
	tp := m.set.take(p.id, now)
	if tp == nil {
		return errDecided
	}
	if subj, _ := tp.state(); subj != subject {
		// Recorded for another subject since the decision was checked (the
		// browser signed in again in another tab): not this decision's.
		m.set.put(tp)
		return errDecided
	}
	if g == nil {
		return nil
	}
	return m.st.CreateGrantRemembering(ctx, g, c, remember)
}
