package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// A PostgreSQL URL that cannot be used is refused with what to write or
// where it failed, and never with the password in it.
func TestPostgresURLErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ db, want string }{
		{"postgres://miniapp:s3cret@db.example:notaport/miniapp", "postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"},
		{"postgres://miniapp:s3cret@/miniapp?host=/nonexistent-socket-dir&connect_timeout=5", "connect to PostgreSQL at /nonexistent-socket-dir"},
	} {
		s, err := Open(ctx, tc.db)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded", tc.db)
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q): %v\nwant it to say %q and not the password", tc.db, err, tc.want)
		}
	}
}

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT a FROM t WHERE x = ? AND y = ?`:                             `SELECT a FROM t WHERE x = $1 AND y = $2`,
		`SELECT '?' , "q?" FROM t WHERE x = ? -- why?` + "\n" + `AND z = ?`: `SELECT '?' , "q?" FROM t WHERE x = $1 -- why?` + "\n" + `AND z = $2`,
		`SELECT 'it''s', ?`:      `SELECT 'it''s', $1`,
		`SELECT 'unterminated ?`: `SELECT 'unterminated ?`,
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedact: a database name is printed without its password, wherever
// the password sits.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/.local/share/miniapp-host/authserver.db":                   "/home/me/.local/share/miniapp-host/authserver.db",
		"postgres://miniapp@db.internal/miniapp":                             "postgres://miniapp@db.internal/miniapp",
		"postgres://miniapp:s3cret@db.internal/miniapp":                      "postgres://miniapp:xxxxx@db.internal/miniapp",
		"postgres://miniapp@db.internal/miniapp?password=s3cret":             "postgres://miniapp@db.internal/miniapp?password=xxxxx",
		"postgresql://db.internal/m?sslmode=verify-full&PassWord=s3cret&x=1": "postgresql://db.internal/m?sslmode=verify-full&PassWord=xxxxx&x=1",
		"postgres://db.internal/m?sslpassword=s3cret":                        "postgres://db.internal/m?sslpassword=xxxxx",
		"postgres://u:s3c@ret@db.internal/m":                                 "postgres://u:xxxxx@db.internal/m",
		"cannot parse `host=db password=s3cret user=u`: failed":              "cannot parse `host=db password=xxxxx user=u`: failed",
		"host=db password='s3 cret' user=u":                                  "host=db password=xxxxx user=u",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPostgresLostConnectionsReplaced: every pooled connection dies at
// once (PostgreSQL restarted, or its sessions terminated) right after it
// was used; the next reads (a query's and a prepared statement's),
// flow-state writes and durable writes each succeed on a new connection
// instead of failing on a dead one.
func TestPostgresLostConnectionsReplaced(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.Postgres(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Unix(1_000_000, 0)
	charge := Charge{Period: time.Minute / 16, Quotas: []Quota{{"host:h", 1000}}}
	// round adds, reads and decides n requests at once, so that both
	// pools hold several connections, each used a moment ago.
	round := func(name string, n int) error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := Hash(fmt.Sprint(name, i))
				if err := s.AddPending(ctx, &PendingRequest{IDHash: id, Params: map[string][]string{"client_id": {"c"}},
					Host: "h", ExpiresAt: now.Add(time.Minute)}, charge, now); err != nil {
					errs[i] = fmt.Errorf("add pending request %d: %w", i, err)
					return
				}
				if _, err := s.Pending(ctx, id, now); err != nil {
					errs[i] = fmt.Errorf("read pending request %d: %w", i, err)
					return
				}
				if err := s.DecidePending(ctx, id, "", now, nil, nil, nil); err != nil {
					errs[i] = fmt.Errorf("decide pending request %d: %w", i, err)
					return
				}
				// A prepared statement's read.
				if _, _, err := s.PeekCode(ctx, id); !errors.Is(err, ErrNotFound) {
					errs[i] = fmt.Errorf("read a code that does not exist %d: %v, want ErrNotFound", i, err)
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := round("before", 16); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	// Every session is signalled at once, then each awaited: a second
	// pg_terminate_backend with a timeout returns once its session ended
	// (at once for one already gone, with a warning).
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM unnest($1::int[]) AS p(pid) WHERE pg_terminate_backend(pid)`, pids).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM unnest($1::int[]) AS p(pid)`, pids); err != nil {
		t.Fatal(err)
	}
	if killed < 4 {
		t.Fatalf("%d sessions terminated, want the store's pools' (at least 4)", killed)
	}
	for i := range 3 {
		if err := round(fmt.Sprint("after", i), 16); err != nil {
			t.Fatalf("round %d after %d sessions were terminated: %v", i+1, killed, err)
		}
	}
}
