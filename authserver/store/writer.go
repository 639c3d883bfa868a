package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
)

// errClosed is returned by writes after Close.
var errClosed = errors.New("store: closed")

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// writeOp is one write waiting for the writer goroutine.
type writeOp struct {
	fn     func(tx *sql.Tx) error
	done   chan error
	queued time.Time // metrics.Metrics.Queued
}

// write runs fn in a write transaction and returns once it is committed.
// Writes that arrive while another transaction runs are committed together
// (group commit): SQLite has one writer, and its commit is the expensive
// part, so sharing it is what lets the token endpoint scale with clients.
func (s *core) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.pg != nil {
		return s.writePG(ctx, true, fn)
	}
	return s.writeSQLite(ctx, fn)
}

// writeFlowState is write for flow state whose loss only restarts a
// sign-in: pending requests, browser sessions, their quota counts (and
// any replay rows of the same kind). On PostgreSQL its transaction commits
// without waiting for the WAL flush (synchronous_commit off): a crash of
// the database may lose the last such writes, never a grant, code or
// token, since those commit synchronously and PostgreSQL flushes the WAL
// in order, so an acknowledged grant's commit also makes durable every
// flow-state write before it (docs/authserver.md, "Several instances on
// one database"). On SQLite it is write.
func (s *core) writeFlowState(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.pg != nil {
		return s.writePG(ctx, false, fn)
	}
	return s.writeSQLite(ctx, fn)
}

func (s *core) writeSQLite(ctx context.Context, fn func(tx *sql.Tx) error) error {
	op := &writeOp{fn: fn, done: make(chan error, 1)}
	op.queued = s.metrics.Queued()
	select {
	case s.ops <- op:
	case <-s.quit:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, the outcome is awaited even if ctx ends: the caller must
	// know whether a code was spent.
	return <-op.done
}

// writer is the goroutine that owns the write connection.
func (s *core) writer() {
	defer close(s.writerDone)
	for {
		var op *writeOp
		select {
		case op = <-s.ops:
		case <-s.quit:
			return
		}
		// Let the goroutines that are ready to run go first: requests
		// about to queue their own writes do so now and share this
		// transaction. Each transaction's begin and commit (locks, WAL
		// frames) cost the same for one write as for many, and with few
		// cores the requests otherwise reach the writer one by one: on one
		// CPU the token endpoint's CPU per token fell from ~190 to ~110
		// µs with this yield (BENCHMARKS.md, "Side by side").
		runtime.Gosched()
		batch := []*writeOp{op}
	fill:
		for len(batch) < maxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.metrics.Batch(metrics.BatchSQLiteWrite, len(batch), batch[0].queued)
		s.runBatch(batch)
	}
}

// runBatch commits a batch in one transaction. When any write fails, the
// batch is rolled back and each write is retried in a transaction of its
// own, so that one failure never takes other writes with it, and no
// partial write of the failed one is committed. A write function returns
// an error only for a failure; outcomes such as "code already used" travel
// in the caller's variables, so that what the write did is committed.
func (s *core) runBatch(batch []*writeOp) {
	if len(batch) > 1 && s.runTx(batch) == nil {
		for _, op := range batch {
			op.done <- nil
		}
		return
	}
	for _, op := range batch {
		op.done <- s.runTx([]*writeOp{op})
	}
}

// runTx runs ops in one transaction and commits it, or rolls it back on
// the first error.
func (s *core) runTx(ops []*writeOp) error {
	tx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	for _, op := range ops {
		if err := op.fn(tx); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}
