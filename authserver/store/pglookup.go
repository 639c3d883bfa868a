package store

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
)

// Grouped reads on PostgreSQL: the reads by key that another instance's
// flows make of this one's rows (a native request admitted elsewhere, a
// code issued elsewhere, its grant) and that arrive while one of their
// kind is running are sent together, as one query over an array of keys
// (one key when none came meanwhile).
// With several instances behind a balancer that spreads a flow's
// requests, these reads were most of a flow's statements (about 1.5 of
// 2 with two instances, BENCHMARKS.md "PostgreSQL beside SQLite"), and a
// statement's cost is mostly its round trip (pggroup.go). A read whose
// batch query fails runs its own query as before: a read changes
// nothing, so running it again is always safe. A code is read with its
// grant, which the token endpoint reads next.

// pgLookups are a store's read batchers.
type pgLookups struct {
	pending *lookup[pendingRow]
	code    *lookup[codeRow]
	grant   *lookup[*Grant]
}

// pendingRow is a pending request as read, before its expiry is checked
// against the reader's clock.
type pendingRow struct {
	p      PendingRequest
	params string
	exp    int64
}

// codeRow is a code as read, with its grant: the token endpoint reads the
// grant of the code it redeems, and the reader's cache gets it from here.
type codeRow struct {
	c    Code
	used bool
	g    *Grant
}

func (l *pgLookups) start(s *core, wg *sync.WaitGroup) {
	l.pending = &lookup[pendingRow]{ops: make(chan *lookupOp[pendingRow]), bytea: true,
		query: `SELECT id_hash, params, bind, source, host, subject, expires_at FROM pending_requests WHERE id_hash = ANY(?::bytea[])`,
		scan: func(rows *sql.Rows) (string, pendingRow, error) {
			var r pendingRow
			err := rows.Scan(&r.p.IDHash, &r.params, &r.p.Bind, &r.p.Source, &r.p.Host, &r.p.Subject, &r.exp)
			return string(r.p.IDHash), r, err
		}}
	l.code = &lookup[codeRow]{ops: make(chan *lookupOp[codeRow]), bytea: true,
		query: `SELECT c.hash, c.grant_id, c.client_id, c.redirect_uri, c.challenge, c.nonce, c.expires_at, c.used, ` + grantCols + `
			FROM codes c JOIN grants g ON g.id = c.grant_id WHERE c.hash = ANY(?::bytea[])`,
		scan: func(rows *sql.Rows) (string, codeRow, error) {
			r := codeRow{g: &Grant{}}
			var exp int64
			dest := append([]any{&r.c.Hash, &r.c.GrantID, &r.c.ClientID, &r.c.RedirectURI, &r.c.Challenge, &r.c.Nonce, &exp, &r.used}, grantDest(r.g)...)
			if err := rows.Scan(dest...); err != nil {
				return "", r, err
			}
			r.c.ExpiresAt = time.Unix(exp, 0)
			return string(r.c.Hash), r, finishGrant(r.g)
		}}
	l.grant = &lookup[*Grant]{ops: make(chan *lookupOp[*Grant]),
		query: `SELECT ` + grantCols + ` FROM grants g WHERE g.id = ANY(?::text[])`,
		scan: func(rows *sql.Rows) (string, *Grant, error) {
			g := &Grant{}
			if err := rows.Scan(grantDest(g)...); err != nil {
				return "", nil, err
			}
			return g.ID, g, finishGrant(g)
		}}
	l.pending.m, l.code.m, l.grant.m = s.metrics, s.metrics, s.metrics
	l.pending.name, l.code.name, l.grant.name = metrics.BatchPGReadPending, metrics.BatchPGReadCode, metrics.BatchPGReadGrant
	wg.Add(3)
	go groupWorker(wg, s.quit, l.pending.ops, func(b []*lookupOp[pendingRow]) { l.pending.run(s.r, b) })
	go groupWorker(wg, s.quit, l.code.ops, func(b []*lookupOp[codeRow]) { l.code.run(s.r, b) })
	go groupWorker(wg, s.quit, l.grant.ops, func(b []*lookupOp[*Grant]) { l.grant.run(s.r, b) })
}

// lookup is a batcher of reads of one kind by key; V is a row as read.
type lookup[V any] struct {
	ops   chan *lookupOp[V]
	query string // the row's columns, its key first, WHERE key = ANY(?)
	bytea bool   // the key is BYTEA (else TEXT)
	scan  func(*sql.Rows) (key string, row V, err error)
	m     *metrics.Metrics // batch sizes and waits, as name; nil records none
	name  string
}

// lookupOp is a read waiting in a batch: found, or alone when the caller
// is to run its own query.
type lookupOp[V any] struct {
	key   string
	row   V
	found bool
	alone bool
	done  chan struct{}
	// queued is when the read entered the queue (metrics.Metrics.Queued).
	queued time.Time
}

// get reads key in a batch of reads of its kind. alone is true when the
// caller is to run its own query.
func (l *lookup[V]) get(quit <-chan struct{}, key string) (row V, found, alone bool, err error) {
	op := &lookupOp[V]{key: key, done: make(chan struct{})}
	op.queued = l.m.Queued()
	select {
	case l.ops <- op:
	case <-quit:
		return row, false, false, errClosed
	}
	<-op.done
	return op.row, op.found, op.alone, nil
}

// run reads a batch's keys in one query.
func (l *lookup[V]) run(db *sql.DB, batch []*lookupOp[V]) {
	l.m.Batch(l.name, len(batch), batch[0].queued)
	finish := func(alone bool) {
		for _, op := range batch {
			op.alone = alone
			close(op.done)
		}
	}
	var arg any
	if l.bytea {
		keys := make([][]byte, len(batch))
		for i, op := range batch {
			keys[i] = []byte(op.key)
		}
		arg = keys
	} else {
		keys := make([]string, len(batch))
		for i, op := range batch {
			keys[i] = op.key
		}
		arg = keys
	}
	rows, err := db.QueryContext(context.Background(), l.query, arg)
	if err != nil {
		finish(true)
		return
	}
	defer rows.Close()
	found := make(map[string]V, len(batch))
	for rows.Next() {
		k, v, err := l.scan(rows)
		if err != nil {
			finish(true)
			return
		}
		found[k] = v
	}
	if rows.Err() != nil {
		finish(true)
		return
	}
	for _, op := range batch {
		op.row, op.found = found[op.key]
	}
	finish(false)
}
