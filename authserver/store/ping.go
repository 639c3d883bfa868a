package store

import (
	"context"
	"fmt"
)

// Ping runs a trivial query on the read pool: the database answers within
// ctx's deadline, or the error says why not. The server's readiness check
// (GET /readyz, docs/authserver.md) calls it.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}
