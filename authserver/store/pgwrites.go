package store

import (
	"context"
	"strings"
)

// The hot writes of a flow as one statement each, on PostgreSQL. A
// transaction of several statements costs a round trip to the server per
// statement, plus its BEGIN and COMMIT; on a loaded machine each round
// trip is a wake-up of the server process and of ours, and the round trips,
// not the SQL, were most of a native flow's time (BENCHMARKS.md,
// "PostgreSQL"). A single statement runs in a transaction of its own, and
// its data-modifying WITH clauses see one snapshot and commit together, so
// each of these is the same transaction as the general path beside it,
// which it falls back to for every case it does not cover (a code already
// spent, a quota shard full, a consent to remember): the fallback then
// decides and words the outcome exactly as on SQLite. Concurrent ones are
// sent together, in one statement (pggroup.go).

// decidePG consumes a pending request and stores the grant and its code
// (no consent to remember) in one durable statement. found is false when
// no request was consumed: nothing was stored, and the general path says
// why. The request's quota counts are given back on their released rows
// (releasedKey).
func (s *core) decidePG(ctx context.Context, idHash []byte, subject string, now int64, in *grantInsert) (found bool, err error) {
	g, c := in.g, in.c
	cond, args := ``, []any{idHash, now}
	if subject != "" {
		cond, args = ` AND subject = ?`, append(args, subject)
	}
	args = append(args, g.ID, g.ClientID, g.SubjectID, g.OrgID, strings.Join(g.Scopes, " "), string(g.Details), in.aud, g.InstallationID,
		g.AuthTime.Unix(), g.CreatedAt.Unix(), c.Hash, g.ID, c.ClientID, c.RedirectURI, c.Challenge, c.Nonce, c.ExpiresAt.Unix())
	var n int
	err = s.w.QueryRowContext(context.WithoutCancel(ctx), `WITH
		d AS (DELETE FROM pending_requests WHERE id_hash = ? AND expires_at > ?`+cond+` RETURNING quotas, ends_at),
		r AS (INSERT INTO quota_counts(quota, ends_at, n) SELECT '~' || k.quota, d.ends_at, -1 FROM d, json_array_elements_text(d.quotas::json) AS k(quota)
			ON CONFLICT(quota, ends_at) DO UPDATE SET n = quota_counts.n + excluded.n),
		g AS (INSERT INTO grants(id, client_id, subject_id, org_id, scopes, details, audience, installation_id, auth_time, created_at)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?::bigint, ?::bigint FROM d),
		c AS (INSERT INTO codes(hash, grant_id, client_id, redirect_uri, challenge, nonce, expires_at)
			SELECT ?::bytea, ?, ?, ?, ?, ?, ?::bigint FROM d)
		SELECT count(*) FROM d`, args...).Scan(&n)
	if err != nil {
		return false, wrap("decide pending request", err)
	}
	return n > 0, nil
}

// redeemPG spends an unspent code of grant at.GrantID and stores the
// tokens issued for it in one durable statement. done is false when no
// unspent code of that grant was found: nothing was stored, and the
// general path finds out what happened (a replay, a code that never
// existed) and acts on it.
func (s *core) redeemPG(ctx context.Context, hash []byte, at *AccessToken, rt *RefreshToken) (done bool, err error) {
	q := `WITH u AS (UPDATE codes SET used = 1 WHERE hash = ? AND used = 0 AND grant_id = ? RETURNING grant_id),
		a AS (INSERT INTO access_tokens(hash, grant_id, jti, issued_at, expires_at) SELECT ?::bytea, ?, ?, ?::bigint, ?::bigint FROM u)`
	args := []any{hash, at.GrantID, at.Hash, at.GrantID, at.JTI, at.IssuedAt.Unix(), at.ExpiresAt.Unix()}
	if rt != nil {
		q += `,
		t AS (INSERT INTO refresh_tokens(hash, grant_id, issued_at, expires_at) SELECT ?::bytea, ?, ?::bigint, ?::bigint FROM u)`
		args = append(args, rt.Hash, rt.GrantID, rt.IssuedAt.Unix(), rt.ExpiresAt.Unix())
	}
	var n int
	err = s.w.QueryRowContext(context.WithoutCancel(ctx), q+`
		SELECT count(*) FROM u`, args...).Scan(&n)
	if err != nil {
		return false, wrap("redeem code", err)
	}
	return n > 0, nil
}

// pgOpen is the closed-store check of the one-statement writes, which do
// not go through writePG.
func (s *core) pgOpen() error {
	select {
	case <-s.quit:
		return errClosed
	default:
		return nil
	}
}
