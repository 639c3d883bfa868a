package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The state of flows in progress, for server instances that share a
// database (Shared): browser sessions and pending authorization requests,
// which a flow carries from one request to the next, and a request may
// reach any instance. One process that owns its database keeps them in
// memory instead (package oauth); these methods work on both databases.
//
// Both kinds of row are bounded by quotas (a source address, a client, a
// host, all of them), counted in quota_counts: a row adds one to each of
// its quotas' counts for the period that ends at its expiry rounded up to
// a multiple of Charge.Period, and a quota's use is the sum of its counts
// whose period has not ended. With Period a sixteenth of the rows'
// lifetime, that is at most 17 counts per quota, whatever the number of
// rows: the work of an admission is bounded, never a count of rows. A row
// counts until its period ends, at most Period past its expiry; removing
// it earlier (a decision, a sign-in) gives its place back at once. Purge
// deletes rows and counts whose period has ended.

// Quota is a limit on rows: at most Limit rows charged to Key at a time.
type Quota struct {
	Key   string
	Limit int
}

// Charge is what admitting a row costs: one unit of each of Quotas, held
// until the row's expiry rounded up to a multiple of Period.
type Charge struct {
	Quotas []Quota
	Period time.Duration
	// Evict is the Key of one of Quotas, or "". When that quota is used
	// up, its oldest session gives way to the new one instead of the new
	// one being refused (sessions only).
	Evict string
}

// QuotaError is the refusal of a row whose quota Key is used up.
type QuotaError struct {
	Key   string
	Limit int
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("store: quota %q of %d is used up", e.Key, e.Limit)
}

// endOf is the end of the period in which a row expiring at exp stops
// counting: exp rounded up to a multiple of period, in Unix nanoseconds.
func endOf(exp time.Time, period time.Duration) int64 {
	p := max(int64(period), 1)
	e := exp.UnixNano()
	if r := e % p; r != 0 {
		e += p - r
	}
	return e
}

// quotaShards is how many rows at most one quota's count is spread over
// in each period. Concurrent admissions to one quota (every native
// request of one host, every browser request of one client) each add to
// one row of it, and on PostgreSQL an admission holds its row's lock until
// it commits: on one row they would take turns, one commit at a time.
const quotaShards = 32

// shards is how many rows a quota of limit is spread over: quotaShards,
// or fewer for a small limit, so that every shard admits at least one.
func shards(limit int) int { return max(1, min(quotaShards, limit)) }

// shardLimit is shard i's part of limit: the parts add up to limit.
func shardLimit(limit, n, i int) int {
	l := limit / n
	if i < limit%n {
		l++
	}
	return l
}

// shardKey is the quota_counts key of shard i of quota key: shard 0 is the
// key itself (as counted before counts were spread), shard i "#i " before
// it, which no quota key starts with.
func shardKey(key string, i int) string {
	if i == 0 {
		return key
	}
	return "#" + strconv.Itoa(i) + " " + key
}

// releasedKey is the quota_counts key under which PostgreSQL's
// one-statement decisions (pgwrites.go, pggroup.go) count down the
// requests they consumed of shard key k: a negative count of its own row,
// beside k's, which every reading of k's use adds in. A decision that took
// one from k's own row would hold that row's lock until its durable commit
// (its WAL flush), and every admission to the shard would wait for it
// (BENCHMARKS.md, "PostgreSQL beside SQLite"); the released row is one
// that only decisions change. No quota key starts with "~".
func releasedKey(k string) string { return "~" + k }

// charge adds one to each quota of c for the period ending at end, in
// order, and checks each quota's use after adding: a quota over its limit
// is a *QuotaError, which rolls the transaction back. It returns the keys
// of the counts it added to, which the row records for its release.
//
// A quota's count is spread over shards(Limit) rows (quotaShards), each
// admitting its part of the limit (shardLimit); the row's id (start)
// picks the first shard tried, and a full shard passes the admission on
// to one with room, so that a quota refuses only when all of its shards
// are full: the limit stays exact. The quota named by c.Evict keeps one
// row, as eviction reads its use. Adding before checking makes the check
// exact on PostgreSQL: a concurrent admission adding to the same count
// waits for this transaction's row lock and then sees its result.
func charge(tx *sql.Tx, pg bool, c Charge, start byte, end, now int64) ([]string, error) {
	keys := make([]string, 0, len(c.Quotas))
	for _, q := range c.Quotas {
		n := shards(q.Limit)
		if q.Key == c.Evict {
			n = 1
		}
		k, err := chargeShard(tx, pg, q, n, int(start)%n, end, now)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// chargeShard adds one to shard i of q (of n) and returns its key; when
// that shard is full, to the first other shard with room.
func chargeShard(tx *sql.Tx, pg bool, q Quota, n, i int, end, now int64) (string, error) {
	ok, err := addShard(tx, pg, q, n, i, end, now)
	if ok || err != nil || n == 1 {
		return shardKey(q.Key, i), err
	}
	// Full (or raced to full): the other shards' uses, in one query, then
	// each with room in turn.
	keys := make([]any, 0, n+1)
	for j := range n {
		keys = append(keys, shardKey(q.Key, j))
	}
	for j := range n {
		keys = append(keys, releasedKey(shardKey(q.Key, j)))
	}
	rows, err := tx.Query(`SELECT CASE WHEN quota LIKE '~%' THEN substr(quota, 2) ELSE quota END AS k, CAST(SUM(n) AS BIGINT)
		FROM quota_counts WHERE quota IN (?`+strings.Repeat(", ?", 2*n-1)+`) AND ends_at > ? GROUP BY k`,
		append(keys, now)...)
	if err != nil {
		return "", wrap("quota use", err)
	}
	used := make(map[string]int64, n)
	for rows.Next() {
		var k string
		var u int64
		if err := rows.Scan(&k, &u); err != nil {
			rows.Close()
			return "", wrap("quota use", err)
		}
		used[k] = u
	}
	if err := rows.Close(); err != nil {
		return "", wrap("quota use", err)
	}
	for j := range n {
		if j == i || used[shardKey(q.Key, j)] >= int64(shardLimit(q.Limit, n, j)) {
			continue
		}
		if ok, err := addShard(tx, pg, q, n, j, end, now); ok || err != nil {
			return shardKey(q.Key, j), err
		}
	}
	return "", &QuotaError{Key: q.Key, Limit: q.Limit}
}

// addShard adds one to shard i of q for the period ending at end, and
// takes it back when that shard is then over its part of the limit.
func addShard(tx *sql.Tx, pg bool, q Quota, n, i int, end, now int64) (bool, error) {
	k := shardKey(q.Key, i)
	var used int64
	if pg {
		// One statement: the count as added to, and the shard's other
		// periods as of the statement's start (what a second statement
		// would read, less the commits in between).
		// The shard's released row (releasedKey) is read the same way.
		err := tx.QueryRow(`WITH added AS (INSERT INTO quota_counts(quota, ends_at, n) VALUES(?, ?, 1)
				ON CONFLICT(quota, ends_at) DO UPDATE SET n = quota_counts.n + 1 RETURNING n)
			SELECT (SELECT n FROM added) + COALESCE((SELECT SUM(n) FROM quota_counts
				WHERE ((quota = ? AND ends_at <> ?) OR quota = ?) AND ends_at > ?), 0)`,
			k, end, k, end, releasedKey(k), now).Scan(&used)
		if err != nil {
			return false, wrap("charge quota", err)
		}
	} else {
		if _, err := tx.Exec(`INSERT INTO quota_counts(quota, ends_at, n) VALUES(?, ?, 1)
			ON CONFLICT(quota, ends_at) DO UPDATE SET n = quota_counts.n + 1`, k, end); err != nil {
			return false, wrap("charge quota", err)
		}
		var err error
		if used, err = quotaUse(tx, k, now); err != nil {
			return false, err
		}
	}
	if used <= int64(shardLimit(q.Limit, n, i)) {
		return true, nil
	}
	return false, release(tx, []string{k}, end)
}

// quotaUse is the number of rows charged to key whose period has not ended
// (less those its released row counts down).
func quotaUse(tx *sql.Tx, key string, now int64) (int64, error) {
	var n int64
	err := tx.QueryRow(`SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM quota_counts WHERE quota IN (?, ?) AND ends_at > ?`, key, releasedKey(key), now).Scan(&n)
	return n, wrap("quota use", err)
}

// release gives back one unit of each key for the period ending at end.
func release(tx *sql.Tx, keys []string, end int64) error {
	for _, k := range keys {
		if _, err := tx.Exec(`UPDATE quota_counts SET n = n - 1 WHERE quota = ? AND ends_at = ? AND n > 0`, k, end); err != nil {
			return wrap("release quota", err)
		}
	}
	return nil
}

// releaseRow gives back the charge of a deleted row, read from its quotas
// and ends_at columns.
func releaseRow(tx *sql.Tx, quotas string, end int64) error {
	var keys []string
	if err := json.Unmarshal([]byte(quotas), &keys); err != nil {
		return fmt.Errorf("store: quotas %q: %w", quotas, err)
	}
	return release(tx, keys, end)
}

// quotaKeys is the quotas column of a row: the keys of the counts it was
// charged to, as a JSON array.
func quotaKeys(keys []string) string {
	b, _ := json.Marshal(keys)
	return string(b)
}

// Session is a browser session (Shared).
type Session struct {
	// IDHash is the SHA-256 of the session id, which only the browser's
	// cookie holds.
	IDHash []byte
	// Bind names the browser to its pending requests; it is kept when
	// signing in replaces the session.
	Bind []byte
	// Source is the source address the session was started from.
	Source    []byte
	Subject   string // "" until signed in
	ExpiresAt time.Time
}

// AddSession stores a new session, charged to c; a used-up quota is a
// *QuotaError.
func (s *FlowStore) AddSession(ctx context.Context, se *Session, c Charge, now time.Time) error {
	return s.putSession(ctx, nil, se, c, now)
}

// ReplaceSession deletes the session old (if it is still there) and stores
// se, charged to c, in one transaction: signing in gives the browser a new
// session id (session fixation). A used-up quota is a *QuotaError, and
// nothing changes.
func (s *FlowStore) ReplaceSession(ctx context.Context, old []byte, se *Session, c Charge, now time.Time) error {
	return s.putSession(ctx, old, se, c, now)
}

func (s *FlowStore) putSession(ctx context.Context, old []byte, se *Session, c Charge, now time.Time) error {
	end, ns := endOf(se.ExpiresAt, c.Period), now.UnixNano()
	// A refusal is an error, so that nothing of the transaction is kept:
	// neither the old session's deletion nor an eviction.
	return s.writeFlowState(ctx, func(tx *sql.Tx) error {
		if old != nil {
			if err := deleteRow(tx, `DELETE FROM sessions WHERE id_hash = ? RETURNING quotas, ends_at`, old); err != nil {
				return err
			}
		}
		if err := evict(tx, c, ns); err != nil {
			return err
		}
		keys, err := charge(tx, s.pg != nil, c, se.IDHash[0], end, ns)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO sessions(id_hash, bind, source, subject, evict, quotas, ends_at, expires_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?)`,
			se.IDHash, se.Bind, se.Source, se.Subject, c.Evict, quotaKeys(keys), end, se.ExpiresAt.UnixNano())
		return wrap("add session", err)
	})
}

// evict makes room for a new session when c's Evict quota is used up: its
// oldest session still counted is deleted. A concurrent admission may
// delete the same one first; the next try takes the next oldest.
func evict(tx *sql.Tx, c Charge, now int64) error {
	if c.Evict == "" {
		return nil
	}
	limit := -1
	for _, q := range c.Quotas {
		if q.Key == c.Evict {
			limit = q.Limit
		}
	}
	for range 3 {
		used, err := quotaUse(tx, c.Evict, now)
		if err != nil || used < int64(limit) {
			return err
		}
		var quotas string
		var end int64
		err = tx.QueryRow(`DELETE FROM sessions WHERE id_hash = (SELECT id_hash FROM sessions WHERE evict = ? AND ends_at > ?
			ORDER BY ends_at, expires_at LIMIT 1) RETURNING quotas, ends_at`, c.Evict, now).Scan(&quotas, &end)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		} else if err != nil {
			return wrap("evict session", err)
		}
		if err := releaseRow(tx, quotas, end); err != nil {
			return err
		}
	}
	return nil
}

// deleteRow runs a DELETE ... RETURNING quotas, ends_at of at most one row
// and gives its charge back; no row is no error.
func deleteRow(tx *sql.Tx, query string, args ...any) error {
	_, err := deleteRowFound(tx, query, args...)
	return err
}

func deleteRowFound(tx *sql.Tx, query string, args ...any) (bool, error) {
	var quotas string
	var end int64
	err := tx.QueryRow(query, args...).Scan(&quotas, &end)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, wrap("delete", err)
	}
	return true, releaseRow(tx, quotas, end)
}

// Session returns the live session whose id hashes to idHash, or
// ErrNotFound.
func (s *FlowStore) Session(ctx context.Context, idHash []byte, now time.Time) (*Session, error) {
	se := &Session{IDHash: idHash}
	var exp int64
	err := s.r.QueryRowContext(ctx, `SELECT bind, source, subject, expires_at FROM sessions WHERE id_hash = ? AND expires_at > ?`,
		idHash, now.UnixNano()).Scan(&se.Bind, &se.Source, &se.Subject, &exp)
	if err != nil {
		return nil, wrap("session", err)
	}
	se.ExpiresAt = time.Unix(0, exp)
	return se, nil
}

// PendingRequest is an authorization request waiting for sign-in and a
// decision (Shared).
type PendingRequest struct {
	// IDHash is the SHA-256 of the request id.
	IDHash []byte
	// Params are the authorization request's parameters as received; the
	// server checks them again when it reads the request back.
	Params map[string][]string
	// Bind is the binding of the browser session that started a browser
	// request; empty for a native one.
	Bind []byte
	// Source is the browser's source address; Host the host client of a
	// native request.
	Source, Host string
	// Subject is "" until a subject is chosen.
	Subject   string
	ExpiresAt time.Time
}

// AddPending stores a pending request, charged to c; a used-up quota is a
// *QuotaError.
func (s *FlowStore) AddPending(ctx context.Context, p *PendingRequest, c Charge, now time.Time) error {
	params, err := json.Marshal(p.Params)
	if err != nil {
		return fmt.Errorf("store: pending request: %w", err)
	}
	bind := p.Bind
	if bind == nil {
		bind = []byte{}
	}
	end, ns := endOf(p.ExpiresAt, c.Period), now.UnixNano()
	if s.pg != nil && len(c.Quotas) == 1 && c.Evict == "" {
		// One statement in the common case (pgpending.go).
		if err := s.pgOpen(); err != nil {
			return err
		}
		full, err := s.admitGrouped(ctx, p, string(params), bind, c.Quotas[0], p.IDHash[0], end, ns)
		if err != nil {
			return err
		}
		if !full {
			if p.Host != "" && p.Subject != "" && len(p.Bind) == 0 {
				s.pg.local.put(p, string(params))
			}
			return nil
		}
	}
	return s.writeFlowState(ctx, func(tx *sql.Tx) error {
		keys, err := charge(tx, s.pg != nil, c, p.IDHash[0], end, ns)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO pending_requests(id_hash, params, bind, source, host, subject, quotas, ends_at, expires_at)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)`, p.IDHash, string(params), bind, p.Source, p.Host, p.Subject, quotaKeys(keys), end, p.ExpiresAt.UnixNano())
		return wrap("add pending request", err)
	})
}

// Pending returns the unexpired pending request whose id hashes to idHash,
// or ErrNotFound.
func (s *FlowStore) Pending(ctx context.Context, idHash []byte, now time.Time) (*PendingRequest, error) {
	if s.pg != nil {
		if p, ok, err := s.pg.local.get(idHash, now); ok || err != nil {
			return p, err
		}
	}
	if s.pg != nil {
		switch r, found, alone, err := s.pg.groups.reads.pending.get(s.quit, string(idHash)); {
		case err != nil:
			return nil, err
		case alone:
		case !found || r.exp <= now.UnixNano():
			return nil, fmt.Errorf("store: pending request: %w", ErrNotFound)
		default:
			p := r.p
			if err := json.Unmarshal([]byte(r.params), &p.Params); err != nil {
				return nil, fmt.Errorf("store: pending request parameters: %w", err)
			}
			p.ExpiresAt = time.Unix(0, r.exp)
			return &p, nil
		}
	}
	p := &PendingRequest{IDHash: idHash}
	var params string
	var exp int64
	err := s.r.QueryRowContext(ctx, `SELECT params, bind, source, host, subject, expires_at FROM pending_requests WHERE id_hash = ? AND expires_at > ?`,
		idHash, now.UnixNano()).Scan(&params, &p.Bind, &p.Source, &p.Host, &p.Subject, &exp)
	if err != nil {
		return nil, wrap("pending request", err)
	}
	if err := json.Unmarshal([]byte(params), &p.Params); err != nil {
		return nil, fmt.Errorf("store: pending request parameters: %w", err)
	}
	p.ExpiresAt = time.Unix(0, exp)
	return p, nil
}

// SetPendingSubject records the subject a pending request is decided for;
// ErrNotFound when the request is gone.
func (s *FlowStore) SetPendingSubject(ctx context.Context, idHash []byte, subject string) error {
	if s.pg != nil {
		s.pg.local.drop(idHash)
	}
	var n int64
	err := s.writeFlowState(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE pending_requests SET subject = ? WHERE id_hash = ?`, subject, idHash)
		if err != nil {
			return wrap("set pending subject", err)
		}
		n, err = res.RowsAffected()
		return wrap("set pending subject", err)
	})
	if err == nil && n == 0 {
		return fmt.Errorf("store: pending request: %w", ErrNotFound)
	}
	return err
}

// DeletePending removes a pending request that will not be decided (a
// refused prompt=none), giving its quotas back.
func (s *FlowStore) DeletePending(ctx context.Context, idHash []byte) error {
	if s.pg != nil {
		s.pg.local.drop(idHash)
	}
	return s.writeFlowState(ctx, func(tx *sql.Tx) error {
		return deleteRow(tx, `DELETE FROM pending_requests WHERE id_hash = ? RETURNING quotas, ends_at`, idHash)
	})
}

// DecidePending consumes an unexpired pending request and, for an approval
// (g not nil), stores the grant, its code and the consent to remember as
// CreateGrantRemembering does, in the same transaction: of two decisions
// on one request, even on two instances at once, one consumes it and the
// other gets ErrNotFound, with nothing stored. A subject that is not ""
// must be the one recorded on the request, so that a decision checked for
// one subject is never stored for another.
func (s *FlowStore) DecidePending(ctx context.Context, idHash []byte, subject string, now time.Time, g *Grant, c *Code, remember *Consent) error {
	var ins *grantInsert
	if g != nil {
		ins = s.prepareGrant(g, c, remember)
	}
	if s.pg != nil {
		s.pg.local.drop(idHash)
	}
	if s.pg != nil && ins != nil && ins.remember == nil && g.Supersedes == nil {
		if err := s.pgOpen(); err != nil {
			return err
		}
		found, err := s.decideGrouped(ctx, idHash, subject, now.UnixNano(), ins)
		switch {
		case err == nil && found:
			ins.cache()
			return nil
		case err == nil:
			return fmt.Errorf("store: pending request: %w", ErrNotFound)
		case !retryable(err):
			return err
		}
	}
	var found bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		q := `DELETE FROM pending_requests WHERE id_hash = ? AND expires_at > ? RETURNING quotas, ends_at`
		args := []any{idHash, now.UnixNano()}
		if subject != "" {
			q = `DELETE FROM pending_requests WHERE id_hash = ? AND expires_at > ? AND subject = ? RETURNING quotas, ends_at`
			args = append(args, subject)
		}
		if found, err = deleteRowFound(tx, q, args...); err != nil || !found || ins == nil {
			return err
		}
		return ins.exec(tx)
	})
	switch {
	case err != nil:
		if ins != nil {
			ins.failed()
		}
		return err
	case !found:
		return fmt.Errorf("store: pending request: %w", ErrNotFound)
	case ins != nil:
		ins.cache()
	}
	return nil
}
