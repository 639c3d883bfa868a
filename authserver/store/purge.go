package store

import (
	"context"
	"database/sql"
	"time"
)

// Purge deletes codes, access tokens and refresh tokens that expired
// before now minus keep, and returns how many rows went. Without it a
// long-running server's database grows with every sign-in.
//
// keep is a grace period. While a row is kept, a replayed code is still
// recognised as a replay and revokes its grant (RFC 6749 §4.1.2), and an
// expired token is answered expired_token rather than unknown. Past keep,
// a code had expired long before anyway (RFC 6749 §4.1.2 asks for a short
// lifetime), so it is refused as unknown, which fails closed.
//
// Browser sessions, pending requests and quota counts kept in the
// database (flowstate.go) have no grace period: they go once their quota
// period has ended, at most one Charge.Period after they expired.
//
// It first writes the uses of grants recorded since the last flush
// (FlushGrantUses).
func (s *Store) Purge(ctx context.Context, now time.Time, keep time.Duration) (int64, error) {
	if err := s.flushGrantUses(ctx); err != nil {
		return 0, err
	}
	cutoff := now.Add(-keep).Unix()
	ns := now.UnixNano()
	var total int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		total = 0
		for _, q := range []struct {
			sql string
			arg int64
		}{
			{`DELETE FROM codes WHERE expires_at < ?`, cutoff},
			{`DELETE FROM access_tokens WHERE expires_at < ?`, cutoff},
			{`DELETE FROM refresh_tokens WHERE expires_at < ?`, cutoff},
			{`DELETE FROM sessions WHERE ends_at <= ?`, ns},
			{`DELETE FROM pending_requests WHERE ends_at <= ?`, ns},
			{`DELETE FROM quota_counts WHERE ends_at <= ?`, ns},
			{`DELETE FROM pushed_requests WHERE ends_at <= ?`, ns},
			{`DELETE FROM used_jtis WHERE expires_at <= ?`, ns},
		} {
			res, err := tx.ExecContext(ctx, q.sql, q.arg)
			if err != nil {
				return wrap("purge", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return wrap("purge", err)
			}
			total += n
		}
		return nil
	})
	return total, err
}
