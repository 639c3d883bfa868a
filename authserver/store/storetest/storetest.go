// Package storetest gives tests a database for the reference server's
// store: a SQLite file in the test's temporary directory, or, when the
// environment says MINIAPP_HOST_TEST_STORE=postgres, a new database on a
// temporary PostgreSQL server that the package's tests share (pgserver).
// `make test` runs the store, OAuth and dashboard tests both ways.
//
// A package that uses it runs its tests through Main, which stops the
// PostgreSQL server when the tests are done:
//
//	func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
package storetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/pgserver"
)

// Env names the environment variable that picks the store of DB.
const Env = "MINIAPP_HOST_TEST_STORE"

var (
	mu      sync.Mutex
	cluster *pgserver.Cluster

	crashTurn sync.Mutex        // held by the test that may crash crashing
	crashing  *pgserver.Cluster // guarded by mu
)

// Main runs the tests, then stops the PostgreSQL server if one was started.
func Main(m *testing.M) int {
	switch v := os.Getenv(Env); v {
	case "", "sqlite", "postgres":
	default:
		fmt.Fprintf(os.Stderr, "storetest: %s=%q: use sqlite (the default) or postgres\n", Env, v)
		return 2
	}
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	for _, c := range []**pgserver.Cluster{&cluster, &crashing} {
		if *c == nil {
			continue
		}
		if err := (*c).Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "storetest:", err)
			if code == 0 {
				code = 1
			}
		}
		*c = nil
	}
	return code
}

// UsesPostgres reports whether DB returns PostgreSQL databases.
func UsesPostgres() bool { return os.Getenv(Env) == "postgres" }

// DB returns a new, empty database for the store under test: a SQLite file
// path, or a PostgreSQL URL when UsesPostgres.
func DB(t testing.TB) string {
	t.Helper()
	if UsesPostgres() {
		return Postgres(t)
	}
	return filepath.Join(t.TempDir(), "store.db")
}

// Postgres returns the URL of a new, empty PostgreSQL database, whatever
// the environment says: for tests of what only a shared database does
// (several server instances on one database).
func Postgres(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if cluster == nil {
		c, err := pgserver.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cluster = c
	}
	dsn, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Crashable returns a PostgreSQL server that the test may crash and
// restart (pgserver.Cluster's Crash and Restart), and the URL of a new, empty
// database on it, whatever the environment says. Its commits are
// synchronous (pgserver.Options.SyncCommit), so a crash keeps what a crash
// of a real server keeps. The server is not the one DB and Postgres share,
// and the tests that use it take turns: Crashable waits until the previous
// one has ended.
func Crashable(t testing.TB) (*pgserver.Cluster, string) {
	t.Helper()
	crashTurn.Lock()
	t.Cleanup(crashTurn.Unlock)
	mu.Lock()
	defer mu.Unlock()
	if crashing == nil {
		c, err := pgserver.StartWith(context.Background(), pgserver.Options{SyncCommit: true})
		if err != nil {
			t.Fatal(err)
		}
		crashing = c
	} else if !crashing.Running() { // a test before ended with it down
		if err := crashing.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	dsn, err := crashing.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return crashing, dsn
}
