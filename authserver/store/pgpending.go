package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A native flow's pending request on PostgreSQL: admitted in one
// statement, and read back from the memory of the instance that admitted
// it (BENCHMARKS.md, "PostgreSQL beside SQLite").
//
// Admission. The general path (AddPending) is a transaction of a charge
// per quota and the insertion: with its BEGIN and COMMIT, four round trips
// for the one quota of a native request (its host's). addPendingPG does
// the same in one statement, for a charge of one quota: it adds to the
// quota's shard, reads the shard's use, inserts the request, and fails
// with a division by zero when the shard is then over its part of the
// limit, which takes the statement's every change back; the general path
// then spreads the admission over the other shards or refuses it, as it
// decides and words it.
//
// Reading back. A native request is decided by the host that submitted
// it, usually a moment later, and often through the same instance. The
// instance that admitted it keeps a copy (localPending), which Pending
// answers from; the database stays the truth: another instance reads the
// row, and a decision consumes the row whatever this copy says. A copy is
// dropped when this instance changes or consumes its row; one whose row
// another instance consumed stays until it expires or is pushed out, and
// a decision through this instance then finds the row gone (ErrNotFound),
// as it would have by reading it. Only native requests are copied: their
// subject is set on admission, and nothing but their decision or removal
// changes their row.

// errShardFull is the division by zero of addPendingPG's full shard.
const errShardFull = "22012"

// errUniqueViolation is PostgreSQL's unique_violation.
const errUniqueViolation = "23505"

// addPendingPG admits p charged to q (one quota, no eviction) in one
// statement, on the asynchronously committing pool. full is true when the
// shard tried was full: nothing was stored.
//
// A statement whose connection was lost (errConnLost: PostgreSQL restarted
// or ended the session) may or may not have committed, and runs once more
// on another connection. The request's id hash is its primary key and
// random, so a second run that finds the row taken learns that the first
// committed: the request is admitted, and charged once, since the second
// run's charge is taken back with its failed insertion.
func (s *core) addPendingPG(ctx context.Context, p *PendingRequest, params string, bind []byte, q Quota, start byte, end, now int64) (full bool, err error) {
	full, err = s.addPendingPGOnce(ctx, p, params, bind, q, start, end, now)
	if !errors.Is(err, errConnLost) {
		return full, err
	}
	return s.addPendingPGAgain(ctx, p, params, bind, q, start, end, now)
}

// addPendingPGAgain runs p's admission once more after a statement that
// admitted it (alone or in a batch, pggroup.go) lost its connection: a
// taken id proves that statement committed.
func (s *core) addPendingPGAgain(ctx context.Context, p *PendingRequest, params string, bind []byte, q Quota, start byte, end, now int64) (full bool, err error) {
	full, err = s.addPendingPGOnce(ctx, p, params, bind, q, start, end, now)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == errUniqueViolation && pe.TableName == "pending_requests" {
		return false, nil
	}
	return full, err
}

func (s *core) addPendingPGOnce(ctx context.Context, p *PendingRequest, params string, bind []byte, q Quota, start byte, end, now int64) (full bool, err error) {
	n := shards(q.Limit)
	i := int(start) % n
	k := shardKey(q.Key, i)
	var one int
	err = s.pg.async.QueryRowContext(context.WithoutCancel(ctx), `WITH
		a AS (INSERT INTO quota_counts(quota, ends_at, n) VALUES(?, ?, 1)
			ON CONFLICT(quota, ends_at) DO UPDATE SET n = quota_counts.n + 1 RETURNING n),
		u AS (SELECT CAST((SELECT n FROM a) + COALESCE((SELECT SUM(n) FROM quota_counts
			WHERE ((quota = ? AND ends_at <> ?) OR quota = ?) AND ends_at > ?), 0) AS BIGINT) AS used),
		r AS (INSERT INTO pending_requests(id_hash, params, bind, source, host, subject, quotas, ends_at, expires_at)
			SELECT ?::bytea, ?, ?::bytea, ?, ?, ?, ?, ?::bigint, ?::bigint FROM u WHERE used <= ?::bigint)
		SELECT 1 / CAST(used <= ?::bigint AS INT) FROM u`,
		k, end, k, end, releasedKey(k), now,
		p.IDHash, params, bind, p.Source, p.Host, p.Subject, quotaKeys([]string{k}), end, p.ExpiresAt.UnixNano(), shardLimit(q.Limit, n, i),
		shardLimit(q.Limit, n, i)).Scan(&one)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == errShardFull {
		return true, nil
	}
	if err != nil {
		return false, wrap("add pending request", err)
	}
	return false, nil
}

// maxLocalPending bounds the requests an instance keeps a copy of.
const maxLocalPending = 1 << 14

// localPending is an instance's copies of the native requests it
// admitted, by id hash.
type localPending struct {
	mu sync.Mutex
	m  map[string]localRequest
}

// localRequest is a copy of a pending request; its parameters as stored,
// so that each reader gets a map of its own.
type localRequest struct {
	p      PendingRequest
	params string
}

func (l *localPending) put(p *PendingRequest, params string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[string]localRequest)
	}
	if len(l.m) >= maxLocalPending {
		// Push out an eighth, expired or not: a copy pushed out is read
		// from the database.
		drop := maxLocalPending / 8
		for k := range l.m {
			delete(l.m, k)
			if drop--; drop == 0 {
				break
			}
		}
	}
	c := *p
	c.Params = nil
	l.m[string(p.IDHash)] = localRequest{p: c, params: params}
}

// get returns the copy of an unexpired request, or false.
func (l *localPending) get(idHash []byte, now time.Time) (*PendingRequest, bool, error) {
	l.mu.Lock()
	r, ok := l.m[string(idHash)]
	if ok && !r.p.ExpiresAt.After(now) {
		delete(l.m, string(idHash))
		ok = false
	}
	l.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	p := r.p
	if err := json.Unmarshal([]byte(r.params), &p.Params); err != nil {
		return nil, false, fmt.Errorf("store: pending request parameters: %w", err)
	}
	return &p, true, nil
}

func (l *localPending) drop(idHash []byte) {
	l.mu.Lock()
	delete(l.m, string(idHash))
	l.mu.Unlock()
}
