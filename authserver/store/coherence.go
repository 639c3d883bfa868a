package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
)

// Cache coherence between processes. Each process keeps caches of what the
// database holds (grants, access tokens, the world tables, policies in this
// package; clients, keys and the catalog above it). On SQLite one process
// owns the database, every write goes through it, and its caches are
// updated after each commit. On PostgreSQL other processes write too: a
// write that changes something a cache may hold sends a notification in
// its transaction (PostgreSQL's NOTIFY, delivered to every listening
// session when the transaction commits, never before), and each process
// keeps one connection listening and applies what it hears. A revocation
// through one instance thus reaches every other within the time of one
// notification (milliseconds on one network), not at the expiry of a
// cache entry.
//
// When the listening connection is lost, notifications may be lost with
// it: until it is back, the caches of this package are bypassed (every
// read goes to the database), and once it is back every cache is emptied
// (ChangedAll) before they are used again.

// Kinds of Change.
const (
	ChangedGrant   = "grant"   // Key: the id of a revoked grant
	ChangedToken   = "token"   // Key: the hash (hex) of a revoked access token
	ChangedClient  = "client"  // Key: a client id; "" for several clients
	ChangedWorld   = "world"   // projects, subjects, companies, memberships, accounts
	ChangedReview  = "review"  // a submission decided: policies, and the catalog when a Resource Server was approved
	ChangedKeys    = "keys"    // a signing key added
	ChangedConsent = "consent" // Key: ConsentKey(subject, client); "" for several
	ChangedAll     = "all"     // anything may have changed (the listener reconnected)
)

// ChangedGrantEntries is the Kind of a Change whose Key is the id of a
// grant whose scopes or authorization_details its subject narrowed
// (NarrowGrant): caches drop the grant.
const ChangedGrantEntries = "grant_entries"

// Change names what a committed write of another process changed.
type Change struct {
	Kind string
	Key  string
	// At is when a grant was revoked (ChangedGrant).
	At time.Time
}

// notifyChannel is the PostgreSQL notification channel of the Store.
const notifyChannel = "miniapp_host_changes"

// coherence is the Store's state for the notifications.
type coherence struct {
	instance string // this process's id in payloads, to ignore its own

	mu        sync.Mutex // guards listeners
	listeners []func(Change)
	live      atomic.Bool // the listening connection is up and caches may be used
}

// OnChange registers fn to hear of the changes that other processes commit
// to a shared (PostgreSQL) database, and ChangedAll after a lost listening
// connection came back. fn runs on the listener's goroutine, one change at
// a time; it must not block. On SQLite it is never called.
func (s *Store) OnChange(fn func(Change)) {
	s.coh.mu.Lock()
	s.coh.listeners = append(s.coh.listeners, fn)
	s.coh.mu.Unlock()
}

// Shared reports whether other processes may use the database at the same
// time (PostgreSQL): state that must survive a request going to another
// instance then lives in the database.
func (s *Store) Shared() bool { return s.pg != nil }

// cacheable reports whether the in-process caches may answer a read: always
// on SQLite, and on PostgreSQL while the listening connection is up.
func (s *core) cacheable() bool {
	return s.pg == nil || s.coh.live.Load()
}

// Cacheable reports whether a cache of the database's content kept above
// the Store may answer a read now: false on a shared database while
// changes by other processes may go unheard (the listening connection is
// down). OnChange says ChangedAll when they are heard again.
func (s *Store) Cacheable() bool { return s.cacheable() }

// announce tells the other processes, when tx commits, what it changed.
// On SQLite it does nothing: no other process has the database.
func (s *core) announce(tx *sql.Tx, c Change) error {
	if s.pg == nil {
		return nil
	}
	p := s.coh.instance + s.metrics.Stamp() + " " + c.Kind
	if c.Kind == ChangedGrant {
		p += " " + strconv.FormatInt(c.At.Unix(), 10)
	}
	p += " " + c.Key
	s.metrics.NotificationSent(c.Kind)
	_, err := tx.Exec(`SELECT pg_notify(?, ?)`, notifyChannel, p)
	return wrap("notify", err)
}

// parseChange reads a payload of announce; ok is false for this process's
// own changes and for payloads it does not understand.
func (s *core) parseChange(p string) (Change, bool) {
	inst, rest, _ := strings.Cut(p, " ")
	inst, sent := metrics.SplitStamp(inst) // the sender's Stamp, when it has metrics
	if inst == s.coh.instance {
		return Change{}, false
	}
	kind, key, _ := strings.Cut(rest, " ")
	c := Change{Kind: kind, Key: key}
	if kind == ChangedGrant {
		at, id, _ := strings.Cut(key, " ")
		sec, err := strconv.ParseInt(at, 10, 64)
		if err != nil {
			return Change{}, false
		}
		c.At, c.Key = time.Unix(sec, 0), id
	}
	s.metrics.NotificationReceived(kind, sent)
	return c, true
}

// apply brings this package's caches in line with a change, then tells the
// listeners.
func (s *core) apply(c Change) {
	switch c.Kind {
	case ChangedGrant:
		s.cache.revokedGrant(c.Key, c.At)
	case ChangedGrantEntries:
		s.cache.forgetGrant(c.Key)
	case ChangedToken:
		if h, err := hex.DecodeString(c.Key); err == nil {
			s.cache.revokedToken(h)
		}
	case ChangedWorld:
		s.forgetWorld()
	case ChangedReview:
		s.policies.gen.Add(1)
	case ChangedConsent:
		sub, client, ok := strings.Cut(c.Key, " ")
		sub, err1 := url.QueryUnescape(sub)
		client, err2 := url.QueryUnescape(client)
		if !ok || err1 != nil || err2 != nil {
			s.consents.clear() // "" (several) or unreadable: forget them all
		} else {
			s.consents.forget(sub, client)
		}
	case ChangedAll:
		s.cache.clear()
		s.consents.clear()
		s.forgetWorld()
		s.policies.gen.Add(1)
	}
	s.coh.mu.Lock()
	ls := s.coh.listeners
	s.coh.mu.Unlock()
	for _, fn := range ls {
		fn(c)
	}
}

// startListener connects the listening session and starts the goroutine
// that applies notifications; it returns once the first LISTEN is in
// place, so that no change committed after Open is missed.
func (s *core) startListener(ctx context.Context, o Options) error {
	var id [8]byte
	rand.Read(id[:])
	s.coh.instance = hex.EncodeToString(id[:])
	conn, err := s.listen(ctx)
	if err != nil {
		return err
	}
	s.coh.live.Store(true)
	lctx, cancel := context.WithCancel(context.Background())
	s.pg.cancel, s.pg.listenerDone = cancel, make(chan struct{})
	go s.listenLoop(lctx, conn, o.Logger)
	return nil
}

func (s *core) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pg.cfg)
	if err != nil {
		return nil, wrap("listen", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(context.Background())
		return nil, wrap("listen", err)
	}
	return conn, nil
}

// listenLoop applies notifications until the Store closes. On a lost
// connection it bypasses the caches, reconnects (at most every 100 ms),
// and empties every cache once listening again.
func (s *core) listenLoop(ctx context.Context, conn *pgx.Conn, log *slog.Logger) {
	defer close(s.pg.listenerDone)
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			if c, ok := s.parseChange(n.Payload); ok {
				s.apply(c)
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		s.coh.live.Store(false)
		if log != nil {
			log.Warn("store: lost the PostgreSQL notification connection; caches off until it is back", "err", err)
		}
		conn.Close(context.Background())
		conn = nil
		t := time.NewTicker(100 * time.Millisecond)
		for conn == nil {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			conn, _ = s.listen(ctx)
		}
		t.Stop()
		// Listening again: what changed meanwhile is unknown.
		s.apply(Change{Kind: ChangedAll})
		s.coh.live.Store(true)
		if log != nil {
			log.Info("store: PostgreSQL notification connection back; caches emptied")
		}
	}
}

// announceRevoked announces the revocation of grants, and then cs.
func (s *core) announceRevoked(tx *sql.Tx, grants []string, at time.Time, cs ...Change) error {
	for _, g := range grants {
		if err := s.announce(tx, Change{Kind: ChangedGrant, Key: g, At: at}); err != nil {
			return err
		}
	}
	for _, c := range cs {
		if err := s.announce(tx, c); err != nil {
			return err
		}
	}
	return nil
}

// ConsentKey is the Key of a ChangedConsent: the subject and client ids,
// each query-escaped, joined by a space.
func ConsentKey(subjectID, clientID string) string {
	return url.QueryEscape(subjectID) + " " + url.QueryEscape(clientID)
}
