package store

import (
	"context"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// TestPing: an open database answers; a closed one says so instead.
func TestPing(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, storetest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping of an open database: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err == nil {
		t.Fatal("ping of a closed database succeeded")
	}
}
