package pgserver

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A started cluster serves a new database over its socket, and Stop leaves
// no server behind.
func TestClusterServesDatabases(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	dsns := map[string]bool{}
	for range 2 {
		dsn, err := c.NewDatabase(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dsns[dsn] = true
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var one int
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1 = %d, %v", one, err)
		}
		conn.Close(ctx)
	}
	if len(dsns) != 2 {
		t.Fatalf("two databases share a connection string: %v", dsns)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, c.DSN("postgres")); err == nil {
		t.Fatal("the server still answers after Stop")
	}
}
