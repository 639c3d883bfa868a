package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Browser sessions. A signed-in session lasts SessionTTL (12 hours by
// default), so a busy server holds hundreds of thousands of them. They are
// kept in tables without a single pointer (fixed-size keys and records,
// subjects interned as numbers): Go's garbage collector does not scan such
// maps, so the cost of each collection, and with it the CPU per flow, does
// not grow with the number of live sessions. A table of records with
// strings in them measured a garbage collector's mark work per flow that
// grew fourfold over 60,000 flows. (Instances that share a database keep
// sessions in it instead: dbSessions, flowstate.go.)

// sessionCookie names the browser session cookie.
const sessionCookie = "mh_session"

// sessionKey is a session id's 32 random bytes; the cookie carries them in
// base64url without padding (43 characters).
type sessionKey [32]byte

// sourceKey is a source address as 16 bytes (IPv4 mapped into IPv6), or
// for a remote address that is no IP (never seen from net/http's server)
// the first 16 bytes of its SHA-256.
type sourceKey [16]byte

func sourceKeyOf(src string) sourceKey {
	if a, err := netip.ParseAddr(src); err == nil {
		return a.As16()
	}
	h := sha256.Sum256([]byte(src))
	return sourceKey(h[:16])
}

// sessionRec is what the server keeps of a session.
type sessionRec struct {
	csrf, bind [32]byte
	source     sourceKey
	expires    int64  // Unix nanoseconds
	subject    uint32 // 1 + index into sessionSet.subjects; 0: not signed in
}

// session is a browser's sign-in state, as the handlers see it: a copy of
// the record, made when a request names it.
type session struct {
	id      string
	csrf    string
	bind    string // kept across rotation: what pending requests name the browser by
	expires time.Time
	subj    string
}

func (se *session) subject() string { return se.subj }

// view makes the handlers' copy of the record of k.
func (rec *sessionRec) view(k sessionKey, subj string) *session {
	return &session{id: b64.EncodeToString(k[:]), csrf: b64.EncodeToString(rec.csrf[:]), bind: b64.EncodeToString(rec.bind[:]),
		expires: time.Unix(0, rec.expires), subj: subj}
}

var b64 = base64.RawURLEncoding

// sessionTable holds the sessions of one lifetime (not signed in, or signed
// in) by key, with their expiry queue and the count per source address.
// Every session of a table has the same lifetime, so the order of creation
// is the order of deadlines and expiry only looks at the queue's front:
// admission, lookup, removal and expiry are O(1) amortized, never a scan of
// the live sessions. A removed session leaves its queue entry behind; the
// queue is compacted when such entries outnumber the live ones. Not safe
// for concurrent use: sessionSet's mutex guards it.
type sessionTable struct {
	byKey map[sessionKey]sessionRec
	queue []queued // from head on: oldest first
	head  int
	used  map[sourceKey]int32
	// bySource orders each source's sessions, oldest first, when the
	// table evicts a source's oldest session for its newest (evictOldest).
	// Its queues hold keys of removed sessions too, skipped when met.
	bySource map[sourceKey]*keyQueue
}

// keyQueue is a FIFO of session keys (no pointer inside its array).
type keyQueue struct {
	keys []sessionKey
	head int
}

type queued struct {
	key     sessionKey
	expires int64
}

func newSessionTable() *sessionTable {
	return &sessionTable{byKey: map[sessionKey]sessionRec{}, used: map[sourceKey]int32{}}
}

// newEvictingTable is a table that keeps, per source, the order of its
// sessions, for evictOldest.
func newEvictingTable() *sessionTable {
	t := newSessionTable()
	t.bySource = map[sourceKey]*keyQueue{}
	return t
}

// evictOldest removes src's oldest live session, if it has one. Keys of
// sessions gone meanwhile are skipped, so the cost is amortized O(1).
func (t *sessionTable) evictOldest(src sourceKey) {
	q := t.bySource[src]
	for q != nil && q.head < len(q.keys) {
		k := q.keys[q.head]
		q.head++
		if rec, ok := t.byKey[k]; ok && rec.source == src {
			t.drop(k, rec)
			break
		}
	}
	if q != nil && q.head > 64 && q.head > len(q.keys)/2 {
		n := copy(q.keys, q.keys[q.head:])
		q.keys, q.head = q.keys[:n], 0
	}
}

// expire removes the sessions whose deadline has passed.
func (t *sessionTable) expire(now int64) {
	for t.head < len(t.queue) && t.queue[t.head].expires < now {
		q := t.queue[t.head]
		t.queue[t.head] = queued{}
		t.head++
		if rec, ok := t.byKey[q.key]; ok && rec.expires == q.expires {
			t.drop(q.key, rec)
		}
	}
	if t.head == len(t.queue) {
		t.queue, t.head = t.queue[:0], 0
	} else if t.head > len(t.queue)/2 && t.head > 1024 {
		n := copy(t.queue, t.queue[t.head:])
		t.queue, t.head = t.queue[:n], 0
	}
}

// get returns the live record of k.
func (t *sessionTable) get(k sessionKey, now int64) (sessionRec, bool) {
	rec, ok := t.byKey[k]
	if !ok || rec.expires < now {
		return sessionRec{}, false
	}
	return rec, true
}

// add stores rec under k; the caller has checked the quotas.
func (t *sessionTable) add(k sessionKey, rec sessionRec) {
	if old, ok := t.byKey[k]; ok {
		t.drop(k, old)
	}
	t.byKey[k] = rec
	t.used[rec.source]++
	t.queue = append(t.queue, queued{key: k, expires: rec.expires})
	if t.bySource != nil {
		q := t.bySource[rec.source]
		if q == nil {
			q = &keyQueue{}
			t.bySource[rec.source] = q
		}
		q.keys = append(q.keys, k)
	}
}

// remove deletes k, if present.
func (t *sessionTable) remove(k sessionKey) {
	if rec, ok := t.byKey[k]; ok {
		t.drop(k, rec)
		if live := len(t.queue) - t.head; live > 2*len(t.byKey)+1024 {
			t.compact()
		}
	}
}

func (t *sessionTable) drop(k sessionKey, rec sessionRec) {
	delete(t.byKey, k)
	if t.used[rec.source]--; t.used[rec.source] <= 0 {
		delete(t.used, rec.source)
		delete(t.bySource, rec.source) // its queue holds only gone keys
	}
}

// compact keeps the queue entries of live sessions, in order.
func (t *sessionTable) compact() {
	q := t.queue[:0]
	for _, e := range t.queue[t.head:] {
		if rec, ok := t.byKey[e.key]; ok && rec.expires == e.expires {
			q = append(q, e)
		}
	}
	clear(t.queue[len(q):])
	t.queue, t.head = q, 0
}

// sessionSet holds browser sessions in memory, in two tables: sessions not
// signed in, which last ConsentTTL and exist only for the sign-in of a
// pending request, and signed-in sessions, which last SessionTTL. Each
// table is capped per source address and in all.
type sessionSet struct {
	perSource, total int

	mu       sync.Mutex // guards below
	anon     *sessionTable
	signed   *sessionTable
	subjects []string          // interned subject ids: sessionRec.subject-1
	subjIdx  map[string]uint32 // subject id → sessionRec.subject
}

func newSessionSet(perSource, total int) *sessionSet {
	return &sessionSet{perSource: perSource, total: total, anon: newSessionTable(), signed: newEvictingTable(),
		subjIdx: map[string]uint32{}}
}

// parseSessionCookie returns the session key of the request's cookie.
func parseSessionCookie(r *http.Request) (sessionKey, bool) {
	var k sessionKey
	ck, err := r.Cookie(sessionCookie)
	if err != nil || len(ck.Value) != b64.EncodedLen(len(k)) {
		return k, false
	}
	n, err := b64.Decode(k[:], []byte(ck.Value))
	return k, err == nil && n == len(k)
}

// lookup returns the live session of k, or nil.
func (ss *sessionSet) lookup(_ context.Context, k sessionKey, now time.Time) (*session, error) {
	ns := now.UnixNano()
	ss.mu.Lock()
	rec, ok := ss.signed.get(k, ns)
	if !ok {
		rec, ok = ss.anon.get(k, ns)
	}
	var subj string
	if ok && rec.subject != 0 {
		subj = ss.subjects[rec.subject-1]
	}
	ss.mu.Unlock()
	if !ok {
		return nil, nil
	}
	return rec.view(k, subj), nil
}

// admitLocked adds a session to t under the per-source and total caps. A
// source at its cap in the signed-in table loses its oldest session to its
// newest: signed-in sessions last 12 hours, and a test runner or load tool
// that signs in with a fresh browser profile each time would otherwise be
// locked out for that long; evicting only its own sessions bounds memory
// without touching anyone else's. Sessions not signed in are refused
// instead (they last ConsentTTL).
func (ss *sessionSet) admitLocked(t *sessionTable, k sessionKey, rec sessionRec, now time.Time) error {
	t.expire(now.UnixNano())
	if t.bySource != nil && int(t.used[rec.source]) >= ss.perSource {
		t.evictOldest(rec.source)
	}
	if int(t.used[rec.source]) >= ss.perSource {
		return oauthErr(codeTemporarilyUnavailable, fmt.Sprintf(
			"too many browser sessions from this source address: the quota is %d; retry later", ss.perSource))
	}
	if len(t.byKey) >= ss.total {
		return oauthErr(codeTemporarilyUnavailable, fmt.Sprintf(
			"too many browser sessions in all: the quota is %d; retry later", ss.total))
	}
	t.add(k, rec)
	return nil
}

// internLocked returns the number that stands for subject in records.
// Subjects are the store's seeded subjects: few, so the table stays small.
func (ss *sessionSet) internLocked(subject string) uint32 {
	if i, ok := ss.subjIdx[subject]; ok {
		return i
	}
	ss.subjects = append(ss.subjects, subject)
	i := uint32(len(ss.subjects))
	ss.subjIdx[subject] = i
	return i
}

// browserSessions gives browsers their session cookie and signs them in,
// for the sign-in and consent pages and the Connected Miniapps page.
type browserSessions struct {
	*base
	sessions sessionStore // in memory, or in a shared database (flowstate.go)
}

// newSession makes a session record with fresh id, CSRF token and binding.
func (s *browserSessions) newSession(r *http.Request, expires time.Time) (sessionKey, sessionRec, error) {
	var k sessionKey
	rec := sessionRec{source: sourceKeyOf(s.sourceOf(r)), expires: expires.UnixNano()}
	for _, b := range [][]byte{k[:], rec.csrf[:], rec.bind[:]} {
		if _, err := io.ReadFull(s.cfg.Rand, b); err != nil {
			return k, rec, fmt.Errorf("oauth: random: %w", err)
		}
	}
	return k, rec, nil
}

// create admits a new session, not signed in.
func (ss *sessionSet) create(_ context.Context, k sessionKey, rec sessionRec, now time.Time) (*session, error) {
	ss.mu.Lock()
	err := ss.admitLocked(ss.anon, k, rec, now)
	ss.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return rec.view(k, ""), nil
}

// signIn replaces the session old by k, signed in as subject.
func (ss *sessionSet) signIn(_ context.Context, old, k sessionKey, rec sessionRec, subject string, now time.Time) (*session, error) {
	ss.mu.Lock()
	rec.subject = ss.internLocked(subject)
	ss.anon.remove(old)
	ss.signed.remove(old)
	err := ss.admitLocked(ss.signed, k, rec, now)
	ss.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return rec.view(k, subject), nil
}

// sessionFrom returns the request's live session, or nil.
func (s *browserSessions) sessionFrom(r *http.Request) (*session, error) {
	k, ok := parseSessionCookie(r)
	if !ok {
		return nil, nil
	}
	return s.sessions.lookup(r.Context(), k, s.cfg.Now())
}

// ensureSession returns the request's session, starting one (not signed
// in) if needed.
func (s *browserSessions) ensureSession(w http.ResponseWriter, r *http.Request) (*session, error) {
	if se, err := s.sessionFrom(r); se != nil || err != nil {
		return se, err
	}
	now := s.cfg.Now()
	k, rec, err := s.newSession(r, now.Add(s.cfg.ConsentTTL))
	if err != nil {
		return nil, err
	}
	se, err := s.sessions.create(r.Context(), k, rec, now)
	if err != nil {
		return nil, err
	}
	s.setSessionCookie(w, se)
	return se, nil
}

// setSessionCookie sends the session cookie, scoped to the issuer's path
// so that other applications below the same host never receive it.
func (s *browserSessions) setSessionCookie(w http.ResponseWriter, se *session) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: se.id, Path: s.path("/"), HttpOnly: true,
		Secure: s.issuerURL.Scheme == "https", SameSite: http.SameSiteLaxMode, Expires: se.expires})
}

// signIn replaces a session by a new one signed in as subject, with a new
// id and CSRF token but the same binding, so the browser's pending
// requests follow it without being looked for.
func (s *browserSessions) signIn(w http.ResponseWriter, r *http.Request, old *session, subject string) (*session, error) {
	now := s.cfg.Now()
	k, rec, err := s.newSession(r, now.Add(s.cfg.SessionTTL))
	if err != nil {
		return nil, err
	}
	var oldKey sessionKey
	if n, err := b64.Decode(oldKey[:], []byte(old.id)); err != nil || n != len(oldKey) {
		return nil, fmt.Errorf("oauth: session id %q is not one of ours", old.id)
	}
	if n, err := b64.Decode(rec.bind[:], []byte(old.bind)); err != nil || n != len(rec.bind) {
		return nil, fmt.Errorf("oauth: session binding %q is not one of ours", old.bind)
	}
	ns, err := s.sessions.signIn(r.Context(), oldKey, k, rec, subject, now)
	if err != nil {
		return nil, err
	}
	s.setSessionCookie(w, ns)
	return ns, nil
}
