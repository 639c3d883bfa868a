package store

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
)

// Group commit on PostgreSQL: the one-statement writes of a native flow
// (an admission, a decision, a code's redemption: pgpending.go,
// pgwrites.go) that arrive while an earlier batch of their kind is running
// are sent together, as one statement over arrays, the way the SQLite
// writer commits the writes that queued during its transaction in one.
// There are two kinds: admissions, which commit without waiting for the
// WAL flush, and the durable writes, decisions and redemptions together,
// which share their flush.
//
// Why. On PostgreSQL a write's cost was mostly its round trip: the wake-up
// of a server process and of ours, a commit and, for a durable write, its
// WAL flush; the rows themselves were a small part (BENCHMARKS.md,
// "PostgreSQL beside SQLite": perf showed the backends' time in the
// kernel's scheduling and in XLogFlush, the process's in its socket's
// system calls). A statement of five flows' writes costs about one round
// trip, one commit and one flush.
//
// What stays the same. Each batch is one statement, so one transaction:
// it commits whole or not at all, with the durability of its kind.
// Every case the batch statement does not cover sends its writes back to
// their callers, each of which then runs the statement of its own as
// before, and that statement, or the general path behind it, decides and
// words the outcome exactly as without batching:
//   - a batch of one write (no concurrency) runs alone at once;
//   - a batch PostgreSQL refused (a quota shard the batch would fill, a
//     deadlock, a constraint) changed nothing, and each write runs alone;
//   - a batch whose connection was lost may or may not have committed: an
//     admission runs alone once more and a taken id proves the first
//     commit (addPendingPG); a decision or a redemption reports the loss,
//     as its own statement would have;
//   - within a batch, a decision the statement did not find (the request
//     expired, was decided, or belongs to another subject) and a code it
//     did not spend go to the general path, as a single statement's would.
//
// One batch of a kind runs at a time (pgGroupWorkers): the writes that
// arrive meanwhile make the next one. Two at a time gave smaller batches
// and no more flows on two cores, at 8 concurrent flows or 32.

// pgGroupWorkers is how many batches of one kind run at once.
const pgGroupWorkers = 1

// maxPGBatch bounds the writes of one batch.
const maxPGBatch = 64

// groupOutcome is what a batch did with one write.
type groupOutcome int

const (
	groupAlone    groupOutcome = iota // not done: run the write's own statement
	groupDone                         // done and committed
	groupNotFound                     // the statement ran and did not find the write's row
	groupLost                         // the connection was lost: committed or not
)

// groupOp is a write waiting in a batch.
type groupOp struct {
	out    groupOutcome
	err    error // with groupLost
	done   chan struct{}
	queued time.Time // metrics.Metrics.Queued
}

func (o *groupOp) finish(out groupOutcome, err error) {
	o.out, o.err = out, err
	close(o.done)
}

// pgGroups are a store's batchers, one per kind of write.
type pgGroups struct {
	admit   chan *admitOp
	durable chan *durableOp
	reads   pgLookups // pglookup.go
	wg      sync.WaitGroup
}

// start starts the batchers' workers; they stop when quit is closed, and
// wg is done once they have.
func (g *pgGroups) start(s *core) {
	g.admit, g.durable = make(chan *admitOp), make(chan *durableOp)
	for range pgGroupWorkers {
		g.wg.Add(2)
		go groupWorker(&g.wg, s.quit, g.admit, s.admitBatch)
		go groupWorker(&g.wg, s.quit, g.durable, s.durableBatch)
	}
	g.reads.start(s, &g.wg)
}

// groupWorker takes a write, lets the goroutines that are about to queue
// theirs do so (as the SQLite writer does), takes every write queued, and
// runs them as one batch; run finishes each of them.
func groupWorker[T any](wg *sync.WaitGroup, quit <-chan struct{}, ops <-chan T, run func([]T)) {
	defer wg.Done()
	for {
		var op T
		select {
		case op = <-ops:
		case <-quit:
			return
		}
		runtime.Gosched()
		batch := []T{op}
	fill:
		for len(batch) < maxPGBatch {
			select {
			case o := <-ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		run(batch)
	}
}

// enqueue hands op to its batcher and waits until its batch has run.
func enqueue[T any](quit <-chan struct{}, ops chan<- T, op T, o *groupOp) error {
	select {
	case ops <- op:
	case <-quit:
		return errClosed
	}
	<-o.done
	return nil
}

// admitOp is a native request's admission (addPendingPG's arguments).
type admitOp struct {
	groupOp
	p          *PendingRequest
	params     string
	bind       []byte
	q          Quota
	start      byte
	end, now   int64
	key, quota string // the shard's key, and the row's quotas
	limit      int64
}

// newAdmitOp is the admission of p to the shard of q that start picks.
func newAdmitOp(p *PendingRequest, params string, bind []byte, q Quota, start byte, end, now int64) *admitOp {
	n := shards(q.Limit)
	i := int(start) % n
	k := shardKey(q.Key, i)
	return &admitOp{groupOp: groupOp{done: make(chan struct{})}, p: p, params: params, bind: bind, q: q, start: start, end: end, now: now,
		key: k, quota: quotaKeys([]string{k}), limit: int64(shardLimit(q.Limit, n, i))}
}

// admitGrouped is addPendingPG, batched with concurrent admissions.
func (s *core) admitGrouped(ctx context.Context, p *PendingRequest, params string, bind []byte, q Quota, start byte, end, now int64) (full bool, err error) {
	op := newAdmitOp(p, params, bind, q, start, end, now)
	op.queued = s.metrics.Queued()
	if err := enqueue(s.quit, s.pg.groups.admit, op, &op.groupOp); err != nil {
		return false, err
	}
	switch op.out {
	case groupDone:
		return false, nil
	case groupLost:
		return s.addPendingPGAgain(ctx, p, params, bind, q, start, end, now)
	}
	return s.addPendingPG(ctx, p, params, bind, q, start, end, now)
}

// admitBatch admits a batch in one asynchronously committed statement:
// each shard's count grows by the batch's admissions to it, and when any
// shard is then over its part of the limit, the division by zero takes the
// statement back and every admission runs alone (addPendingPG), which
// admits those that fit.
func (s *core) admitBatch(batch []*admitOp) {
	s.metrics.Batch(metrics.BatchPGAdmit, len(batch), batch[0].queued)
	if len(batch) == 1 {
		batch[0].finish(groupAlone, nil)
		return
	}
	var (
		ids, binds                                 = make([][]byte, len(batch)), make([][]byte, len(batch))
		params, sources, hosts, subjects, qs, keys = make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch))
		ends, exps, limits, nows                   = make([]int64, len(batch)), make([]int64, len(batch)), make([]int64, len(batch)), make([]int64, len(batch))
	)
	for i, op := range batch {
		ids[i], binds[i] = op.p.IDHash, op.bind
		params[i], sources[i], hosts[i], subjects[i], qs[i], keys[i] = op.params, op.p.Source, op.p.Host, op.p.Subject, op.quota, op.key
		ends[i], exps[i], limits[i], nows[i] = op.end, op.p.ExpiresAt.UnixNano(), op.limit, op.now
	}
	var one int
	err := s.pg.async.QueryRowContext(context.Background(), `WITH
		i AS (SELECT * FROM unnest(?::bytea[], ?::text[], ?::bytea[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[])
			AS t(id_hash, params, bind, source, host, subject, quotas, k, ends_at, expires_at, lim, now)),
		g AS (SELECT k, ends_at, count(*) AS c, min(lim) AS lim, min(now) AS now FROM i GROUP BY k, ends_at),
		a AS (INSERT INTO quota_counts(quota, ends_at, n) SELECT k, ends_at, c FROM g ORDER BY k, ends_at
			ON CONFLICT(quota, ends_at) DO UPDATE SET n = quota_counts.n + excluded.n RETURNING quota, ends_at, n),
		u AS (SELECT bool_and(a.n + COALESCE((SELECT SUM(q.n) FROM quota_counts q
				WHERE ((q.quota = a.quota AND q.ends_at <> a.ends_at) OR q.quota = '~' || a.quota) AND q.ends_at > g.now), 0) <= g.lim) AS fits
			FROM a JOIN g ON g.k = a.quota AND g.ends_at = a.ends_at),
		r AS (INSERT INTO pending_requests(id_hash, params, bind, source, host, subject, quotas, ends_at, expires_at)
			SELECT i.id_hash, i.params, i.bind, i.source, i.host, i.subject, i.quotas, i.ends_at, i.expires_at FROM i, u WHERE u.fits)
		SELECT 1 / CAST(fits AS INT) FROM u`,
		ids, params, binds, sources, hosts, subjects, qs, keys, ends, exps, limits, nows).Scan(&one)
	out := groupDone
	if err != nil {
		out = failed(err)
	}
	for _, op := range batch {
		op.finish(out, err)
	}
}

// durableOp is a decision's or a redemption's one-statement case: the
// arguments of decidePG, or of redeemPG.
type durableOp struct {
	groupOp
	decide *decideArgs
	redeem *redeemArgs
}

type decideArgs struct {
	idHash  []byte
	subject string
	now     int64
	in      *grantInsert
}

type redeemArgs struct {
	hash []byte
	at   *AccessToken
	rt   *RefreshToken
}

// decideGrouped is decidePG, batched with concurrent durable writes.
func (s *core) decideGrouped(ctx context.Context, idHash []byte, subject string, now int64, in *grantInsert) (found bool, err error) {
	op := &durableOp{groupOp: groupOp{done: make(chan struct{})}, decide: &decideArgs{idHash: idHash, subject: subject, now: now, in: in}}
	if found, alone, err := s.durable(op, "decide pending request"); !alone {
		return found, err
	}
	return s.decidePG(ctx, idHash, subject, now, in)
}

// redeemGrouped is redeemPG, batched with concurrent durable writes.
func (s *core) redeemGrouped(ctx context.Context, hash []byte, at *AccessToken, rt *RefreshToken) (done bool, err error) {
	op := &durableOp{groupOp: groupOp{done: make(chan struct{})}, redeem: &redeemArgs{hash: hash, at: at, rt: rt}}
	if done, alone, err := s.durable(op, "redeem code"); !alone {
		return done, err
	}
	return s.redeemPG(ctx, hash, at, rt)
}

// durable runs op in a batch of durable writes: done when the batch did
// it, alone when the caller is to run its own statement, an error (named
// what) when the batch's connection was lost.
func (s *core) durable(op *durableOp, what string) (done, alone bool, err error) {
	op.queued = s.metrics.Queued()
	if err := enqueue(s.quit, s.pg.groups.durable, op, &op.groupOp); err != nil {
		return false, false, err
	}
	switch op.out {
	case groupDone:
		return true, false, nil
	case groupNotFound:
		return false, false, nil
	case groupLost:
		return false, false, wrap(what, op.err)
	}
	return false, true, nil
}

// durableBatch runs a batch of decisions and redemptions in one durable
// statement, so that they share a commit and its WAL flush.
//
// A decision consumes its request (of its subject, when it names one),
// stores its grant and code, and gives the request's quota counts back on
// their released rows (releasedKey), each once for the batch. Two decisions of one request in a batch consume
// it once: the other is not found.
//
// A redemption spends its unspent code of its grant and stores its
// tokens. Two redemptions of one code in a batch spend it once: the other
// is not found, and the general path takes it for the replay it is.
func (s *core) durableBatch(batch []*durableOp) {
	s.metrics.Batch(metrics.BatchPGDurable, len(batch), batch[0].queued)
	if len(batch) == 1 {
		batch[0].finish(groupAlone, nil)
		return
	}
	var decides, redeems []*durableOp
	for _, op := range batch {
		if op.decide != nil {
			decides = append(decides, op)
		} else {
			redeems = append(redeems, op)
		}
	}
	var ctes, selects []string
	var args []any
	if n := len(decides); n > 0 {
		var (
			ids, chashes                                                    = make([][]byte, n), make([][]byte, n)
			nows, authTimes, createdAt, cexps                               = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
			subjects, gids, clients, gsubjects, orgs, scopes, details, auds = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			installs, cclients, redirects, challenges, nonces               = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		)
		for i, op := range decides {
			d := op.decide
			g, c := d.in.g, d.in.c
			ids[i], chashes[i] = d.idHash, c.Hash
			nows[i], authTimes[i], createdAt[i], cexps[i] = d.now, g.AuthTime.Unix(), g.CreatedAt.Unix(), c.ExpiresAt.Unix()
			subjects[i], gids[i], clients[i], gsubjects[i], orgs[i] = d.subject, g.ID, g.ClientID, g.SubjectID, g.OrgID
			scopes[i], details[i], auds[i], installs[i] = strings.Join(g.Scopes, " "), string(g.Details), d.in.aud, g.InstallationID
			cclients[i], redirects[i], challenges[i], nonces[i] = c.ClientID, c.RedirectURI, c.Challenge, c.Nonce
		}
		ctes = append(ctes, `di AS (SELECT * FROM unnest(?::bytea[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[],
				?::bytea[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[]) WITH ORDINALITY
			AS t(id_hash, now, subject, gid, client_id, subject_id, org_id, scopes, details, audience, installation_id, auth_time, created_at,
				chash, cclient, redirect_uri, challenge, nonce, cexp, idx)),
		d AS (DELETE FROM pending_requests p USING di WHERE p.id_hash = di.id_hash AND p.expires_at > di.now AND (di.subject = '' OR p.subject = di.subject)
			RETURNING di.idx, p.quotas, p.ends_at),
		r AS (INSERT INTO quota_counts(quota, ends_at, n)
			SELECT '~' || k.quota, d.ends_at, -count(*) FROM d, json_array_elements_text(d.quotas::json) AS k(quota)
			GROUP BY k.quota, d.ends_at ORDER BY k.quota, d.ends_at
			ON CONFLICT(quota, ends_at) DO UPDATE SET n = quota_counts.n + excluded.n),
		g AS (INSERT INTO grants(id, client_id, subject_id, org_id, scopes, details, audience, installation_id, auth_time, created_at)
			SELECT di.gid, di.client_id, di.subject_id, di.org_id, di.scopes, di.details, di.audience, di.installation_id, di.auth_time, di.created_at
			FROM di JOIN d ON d.idx = di.idx),
		c AS (INSERT INTO codes(hash, grant_id, client_id, redirect_uri, challenge, nonce, expires_at)
			SELECT di.chash, di.gid, di.cclient, di.redirect_uri, di.challenge, di.nonce, di.cexp FROM di JOIN d ON d.idx = di.idx)`)
		selects = append(selects, `SELECT 0 AS kind, idx FROM d`)
		args = append(args, ids, nows, subjects, gids, clients, gsubjects, orgs, scopes, details, auds, installs, authTimes, createdAt,
			chashes, cclients, redirects, challenges, nonces, cexps)
	}
	if n := len(redeems); n > 0 {
		var (
			hashes, atHashes, rtHashes       = make([][]byte, n), make([][]byte, n), make([][]byte, n)
			grants, jtis                     = make([]string, n), make([]string, n)
			atIssued, atExp, rtIssued, rtExp = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
			hasRT                            = make([]bool, n)
		)
		for i, op := range redeems {
			r := op.redeem
			hashes[i], atHashes[i], rtHashes[i] = r.hash, r.at.Hash, []byte{}
			grants[i], jtis[i] = r.at.GrantID, r.at.JTI
			atIssued[i], atExp[i] = r.at.IssuedAt.Unix(), r.at.ExpiresAt.Unix()
			if r.rt != nil {
				rtHashes[i], rtIssued[i], rtExp[i], hasRT[i] = r.rt.Hash, r.rt.IssuedAt.Unix(), r.rt.ExpiresAt.Unix(), true
			}
		}
		ctes = append(ctes, `ri AS (SELECT * FROM unnest(?::bytea[], ?::text[], ?::bytea[], ?::text[], ?::bigint[], ?::bigint[], ?::bool[], ?::bytea[], ?::bigint[], ?::bigint[]) WITH ORDINALITY
			AS t(hash, grant_id, at_hash, jti, at_issued, at_exp, has_rt, rt_hash, rt_issued, rt_exp, idx)),
		u AS (UPDATE codes SET used = 1 FROM ri WHERE codes.hash = ri.hash AND codes.used = 0 AND codes.grant_id = ri.grant_id RETURNING ri.idx),
		a AS (INSERT INTO access_tokens(hash, grant_id, jti, issued_at, expires_at)
			SELECT ri.at_hash, ri.grant_id, ri.jti, ri.at_issued, ri.at_exp FROM ri JOIN u ON u.idx = ri.idx),
		t AS (INSERT INTO refresh_tokens(hash, grant_id, issued_at, expires_at)
			SELECT ri.rt_hash, ri.grant_id, ri.rt_issued, ri.rt_exp FROM ri JOIN u ON u.idx = ri.idx WHERE ri.has_rt)`)
		selects = append(selects, `SELECT 1 AS kind, idx FROM u`)
		args = append(args, hashes, grants, atHashes, jtis, atIssued, atExp, hasRT, rtHashes, rtIssued, rtExp)
	}
	rows, err := s.w.QueryContext(context.Background(), "WITH "+strings.Join(ctes, ",\n\t\t")+"\n\t\t"+strings.Join(selects, " UNION ALL "), args...)
	found, err := batchRows(rows, err, [][]*durableOp{decides, redeems})
	for i, list := range [][]*durableOp{decides, redeems} {
		finishBatch(list, found[i], err, func(op *durableOp) *groupOp { return &op.groupOp })
	}
}

// batchRows reads a batch statement's answer: a row for each write it
// did, naming its part (0 or 1, the list of parts) and its 1-based
// position in it.
func batchRows[T any](rows *sql.Rows, err error, parts [][]T) ([][]bool, error) {
	found := make([][]bool, len(parts))
	for i, p := range parts {
		found[i] = make([]bool, len(p))
	}
	if err != nil {
		return found, err
	}
	defer rows.Close()
	for rows.Next() {
		var kind, idx int64
		if err := rows.Scan(&kind, &idx); err != nil {
			return found, err
		}
		if kind >= 0 && kind < int64(len(parts)) && idx >= 1 && idx <= int64(len(parts[kind])) {
			found[kind][idx-1] = true
		}
	}
	if err := rows.Err(); err != nil {
		return found, err
	}
	return found, rows.Close()
}

// failed is what a batch statement's error means for its writes. An error
// PostgreSQL answered is its refusal of the statement, which then changed
// nothing: each write runs alone. Any other (the connection lost while
// the statement was sent or its answer read) leaves its commit unknown.
func failed(err error) groupOutcome {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return groupAlone
	}
	return groupLost
}

// finishBatch finishes a durable batch's writes: found or not when it
// committed; each alone when PostgreSQL refused it; lost when its
// connection was, since its commit is then unknown.
func finishBatch[T any](batch []T, found []bool, err error, op func(T) *groupOp) {
	for i, b := range batch {
		switch {
		case err != nil:
			op(b).finish(failed(err), err)
		case found[i]:
			op(b).finish(groupDone, nil)
		default:
			op(b).finish(groupNotFound, nil)
		}
	}
}
