package store

import (
	"context"
	"strings"
	"testing"
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
