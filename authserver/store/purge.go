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
func (s *Store) Purge(ctx context.Context, now time.Time, keep time.Duration) (int64, error) {
	cutoff := now.Add(-keep).Unix()
	var total int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM codes WHERE expires_at < ?`,
			`DELETE FROM access_tokens WHERE expires_at < ?`,
			`DELETE FROM refresh_tokens WHERE expires_at < ?`,
		} {
			res, err := tx.ExecContext(ctx, q, cutoff)
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
