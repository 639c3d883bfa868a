package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ErrJTIUsed is UseJTI's refusal of an id used before and not expired.
var ErrJTIUsed = errors.New("store: this jti was used before")

// UseJTI records a single-use id (a client assertion's or a DPoP proof's
// jti, RFC 7523 §3, RFC 9449 §11.1) until exp. key is the caller's hash of
// the id and of what it is unique within (the client, the key). An id
// recorded before and not yet expired is ErrJTIUsed: of two uses, even at
// two instances at once on a shared database, one is refused (the
// conditional upsert: a concurrent insert of the same key waits for the
// first and then finds it). Purge deletes expired ids.
func (s *FlowStore) UseJTI(ctx context.Context, key []byte, exp, now time.Time) error {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO used_jtis(jti_hash, expires_at) VALUES(?, ?)
			ON CONFLICT(jti_hash) DO UPDATE SET expires_at = excluded.expires_at WHERE used_jtis.expires_at <= ?`,
			key, exp.UnixNano(), now.UnixNano())
		if err != nil {
			return wrap("use jti", err)
		}
		n, err = res.RowsAffected()
		return wrap("use jti", err)
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrJTIUsed
	}
	return nil
}
