package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/consent"
)

// The state a flow carries from one request to the next: the browser's
// session (its sign-in, its CSRF token, the binding its pending requests
// name it by) and the pending authorization request (its parameters, the
// browser or host it belongs to, the subject it is decided for). Where it
// lives depends on the store:
//
//   - One process owns the database (SQLite, !Store.Shared): in memory,
//     in sessionSet and pendingSet, where lookups cost no query and a busy
//     server's hundreds of thousands of sessions cost the garbage
//     collector nothing (sessions.go).
//   - Several instances share the database (PostgreSQL, Store.Shared): in
//     the database (dbSessions, dbPending on store's flowstate.go), so
//     that every step of a flow may reach any instance.
//
// The quotas are the same either way (docs/authserver.md, Limits).

// sessionStore keeps browser sessions.
type sessionStore interface {
	// lookup returns the live session of k, or nil.
	lookup(ctx context.Context, k sessionKey, now time.Time) (*session, error)
	// create admits a new session, not signed in, under the quotas.
	create(ctx context.Context, k sessionKey, rec sessionRec, now time.Time) (*session, error)
	// signIn replaces the session old by k, signed in as subject, with
	// old's binding (rec.bind), under the quotas of signed-in sessions.
	signIn(ctx context.Context, old, k sessionKey, rec sessionRec, subject string, now time.Time) (*session, error)
}

// pendingStore keeps pending authorization requests.
type pendingStore interface {
	// add stores p under the quotas (pendingQuotas).
	add(ctx context.Context, p *pending, now time.Time) error
	// get returns the unexpired pending request id, or nil.
	get(ctx context.Context, id string, now time.Time) (*pending, error)
	// record notes on p the subject its consent model m was built for.
	record(ctx context.Context, p *pending, subject string, m *consent.Model) error
	// drop removes a request that will not be decided.
	drop(ctx context.Context, p *pending) error
	// decide consumes p and, for an approval (g not nil), stores the
	// grant, its code and the consent to remember, in one step: of
	// concurrent decisions on one request, one is stored and the others
	// get errDecided. subject is the one the decision was checked for; a
	// request recorded for another meanwhile is not decided.
	decide(ctx context.Context, p *pending, subject string, g *store.Grant, c *store.Code, remember *store.Consent, now time.Time) error
}

// errDecided says that a pending request was decided, or expired, before
// this decision.
var errDecided = errors.New("oauth: the pending request was decided or has expired")

// flowStateStore is where flow state lives: the database's FlowState
// while instances share it, and the grants an approval decided in memory
// stores otherwise.
type flowStateStore interface {
	FlowState
	grantWriter
	Shared() bool
}

// newFlowState picks where sessions and pending requests live. A request
// read back from a shared database is checked again with validate
// (authzRequests.validateAuthorize).
func newFlowState(cfg Config, st flowStateStore, validate validateFunc) (sessionStore, pendingStore) {
	q := pendingQuotas{perClient: cfg.MaxPendingPerClient, perSource: cfg.MaxPendingPerSource,
		browser: cfg.MaxPending, perHost: cfg.MaxPendingPerHost, ttl: cfg.ConsentTTL}
	if !st.Shared() {
		return newSessionSet(cfg.MaxSessionsPerSource, cfg.MaxSessions), &memPending{set: newPendingSet(q), st: st}
	}
	return &dbSessions{st: st, perSource: cfg.MaxSessionsPerSource, total: cfg.MaxSessions,
			anonPeriod: cfg.ConsentTTL / quotaPeriods, signedPeriod: cfg.SessionTTL / quotaPeriods},
		&dbPending{st: st, q: q, validate: validate}
}

// validateFunc checks an authorization request's parameters
// (authzRequests.validateAuthorize).
type validateFunc func(ctx context.Context, q map[string][]string) (v *validated, redirect bool, err error)

// quotaPeriods is how many quota periods a row's lifetime spans in the
// database (store.Charge): a row counts against its quotas at most a
// sixteenth of its lifetime past its expiry, and a quota's use is the sum
// of at most 17 counts.
const quotaPeriods = 16

// dbSessions keeps browser sessions in the database. The id is the
// cookie's secret, so the database holds only its SHA-256; the CSRF token
// is derived from the id (csrfOf) rather than stored, so that what the
// database holds lets no one forge a form for a browser.
type dbSessions struct {
	st                       FlowState
	perSource, total         int
	anonPeriod, signedPeriod time.Duration
}

// csrfOf is a session's CSRF token: a hash of its id, unknown to anyone
// without the cookie.
func csrfOf(k sessionKey) string {
	h := sha256.Sum256(append([]byte("miniapp-host csrf\x00"), k[:]...))
	return b64.EncodeToString(h[:])
}

func hashKey(k sessionKey) []byte {
	h := sha256.Sum256(k[:])
	return h[:]
}

// Session quota keys in the database, by kind: per source address and in
// all.
const (
	keyAnonSessions   = "session anon"
	keySignedSessions = "session signed"
	keyPerSource      = " source:"
)

func (d *dbSessions) charge(kind string, src sourceKey, period time.Duration, evict bool) store.Charge {
	perSource := kind + keyPerSource + hex.EncodeToString(src[:])
	c := store.Charge{Period: period, Quotas: []store.Quota{{Key: perSource, Limit: d.perSource}, {Key: kind, Limit: d.total}}}
	if evict {
		c.Evict = perSource
	}
	return c
}

func (d *dbSessions) lookup(ctx context.Context, k sessionKey, now time.Time) (*session, error) {
	row, err := d.st.Session(ctx, hashKey(k), now)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &session{id: b64.EncodeToString(k[:]), csrf: csrfOf(k), bind: b64.EncodeToString(row.Bind),
		expires: row.ExpiresAt, subj: row.Subject}, nil
}

func (d *dbSessions) create(ctx context.Context, k sessionKey, rec sessionRec, now time.Time) (*session, error) {
	se := &store.Session{IDHash: hashKey(k), Bind: rec.bind[:], Source: rec.source[:], ExpiresAt: time.Unix(0, rec.expires)}
	if err := d.st.AddSession(ctx, se, d.charge(keyAnonSessions, rec.source, d.anonPeriod, false), now); err != nil {
		return nil, d.refusal(err)
	}
	return &session{id: b64.EncodeToString(k[:]), csrf: csrfOf(k), bind: b64.EncodeToString(rec.bind[:]), expires: se.ExpiresAt}, nil
}

func (d *dbSessions) signIn(ctx context.Context, old, k sessionKey, rec sessionRec, subject string, now time.Time) (*session, error) {
	se := &store.Session{IDHash: hashKey(k), Bind: rec.bind[:], Source: rec.source[:], Subject: subject, ExpiresAt: time.Unix(0, rec.expires)}
	// Signed-in sessions evict their source's oldest, as sessionSet does.
	if err := d.st.ReplaceSession(ctx, hashKey(old), se, d.charge(keySignedSessions, rec.source, d.signedPeriod, true), now); err != nil {
		return nil, d.refusal(err)
	}
	return &session{id: b64.EncodeToString(k[:]), csrf: csrfOf(k), bind: b64.EncodeToString(rec.bind[:]), expires: se.ExpiresAt, subj: subject}, nil
}

// refusal words a used-up session quota as sessionSet does.
func (d *dbSessions) refusal(err error) error {
	var qe *store.QuotaError
	if !errors.As(err, &qe) {
		return err
	}
	if strings.Contains(qe.Key, keyPerSource) {
		return oauthErr(codeTemporarilyUnavailable, fmt.Sprintf(
			"too many browser sessions from this source address: the quota is %d; retry later", qe.Limit))
	}
	return oauthErr(codeTemporarilyUnavailable, fmt.Sprintf("too many browser sessions in all: the quota is %d; retry later", qe.Limit))
}

// dbPending keeps pending requests in the database: the request's
// parameters as received, and what binds it (the browser session's
// binding and source address, or the host client) and the subject once
// chosen. The consent model is not stored: it is built again for the
// recorded subject when needed. Reading a request back checks its
// parameters again (validateAuthorize), against the client and the
// catalog in force then: a request whose client was removed meanwhile, or
// changed its redirect URIs, is no longer valid.
type dbPending struct {
	st       FlowState
	q        pendingQuotas
	validate validateFunc // checks a request read back
}

func (d *dbPending) add(ctx context.Context, p *pending, now time.Time) error {
	keys, limits := d.q.keys(p)
	c := store.Charge{Period: d.q.ttl / quotaPeriods}
	for i, k := range keys {
		c.Quotas = append(c.Quotas, store.Quota{Key: k, Limit: limits[i]})
	}
	err := d.st.AddPending(ctx, &store.PendingRequest{IDHash: store.Hash(p.id), Params: p.v.params, Bind: []byte(p.session),
		Source: p.source, Host: p.host, Subject: p.subject, ExpiresAt: p.expires}, c, now)
	var qe *store.QuotaError
	if errors.As(err, &qe) {
		return quotaErr(qe.Key, qe.Limit, d.q.ttl)
	}
	return err
}

func (d *dbPending) get(ctx context.Context, id string, now time.Time) (*pending, error) {
	row, err := d.st.Pending(ctx, store.Hash(id), now)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	v, _, err := d.validate(ctx, row.Params)
	if err != nil {
		var oe *Error
		if errors.As(err, &oe) {
			return nil, oauthErr(codeInvalidRequest, "the authorization request is no longer valid ("+oe.Description+"); start again from the application")
		}
		return nil, err
	}
	return &pending{id: id, v: v, expires: row.ExpiresAt, host: row.Host, source: row.Source, session: string(row.Bind), subject: row.Subject}, nil
}

func (d *dbPending) record(ctx context.Context, p *pending, subject string, m *consent.Model) error {
	p.mu.Lock()
	same := p.subject == subject
	p.subject, p.model = subject, m
	p.mu.Unlock()
	if same {
		return nil
	}
	err := d.st.SetPendingSubject(ctx, store.Hash(p.id), subject)
	if errors.Is(err, store.ErrNotFound) {
		return nil // decided meanwhile: the decision after this one says so
	}
	return err
}

func (d *dbPending) drop(ctx context.Context, p *pending) error {
	return d.st.DeletePending(ctx, store.Hash(p.id))
}

func (d *dbPending) decide(ctx context.Context, p *pending, subject string, g *store.Grant, c *store.Code, remember *store.Consent, now time.Time) error {
	err := d.st.DecidePending(ctx, store.Hash(p.id), subject, now, g, c, remember)
	if errors.Is(err, store.ErrNotFound) {
		return errDecided
	}
	return err
}
