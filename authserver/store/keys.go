package store

import (
	"context"
	"database/sql"
	"time"
)

// Key is a private signing key, kept in the database so that tokens signed
// before a restart still verify after it.
type Key struct {
	KID       string
	Alg       string // a JWS algorithm name: "ES256", "RS256"
	DER       []byte // PKCS #8
	CreatedAt time.Time
}

// Keys returns every stored key, oldest first.
func (s *KeyStore) Keys(ctx context.Context) ([]Key, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT kid, alg, der, created_at FROM keys ORDER BY created_at, kid`)
	if err != nil {
		return nil, wrap("keys", err)
	}
	defer rows.Close()
	var out []Key
	for rows.Next() {
		var k Key
		var at int64
		if err := rows.Scan(&k.KID, &k.Alg, &k.DER, &at); err != nil {
			return nil, wrap("keys", err)
		}
		k.CreatedAt = time.Unix(at, 0)
		out = append(out, k)
	}
	return out, wrap("keys", rows.Err())
}

// AddKey stores a key.
func (s *KeyStore) AddKey(ctx context.Context, k Key) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO keys(kid, alg, der, created_at) VALUES(?, ?, ?, ?)`, k.KID, k.Alg, k.DER, k.CreatedAt.Unix()); err != nil {
			return wrap("add key", err)
		}
		return s.announce(tx, Change{Kind: ChangedKeys, Key: k.KID})
	})
}
