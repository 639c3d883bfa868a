package store

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestKeywordConnectionStringRefused: a libpq keyword/value connection
// string (host=… password=…) is not taken for a SQLite file name: Open
// refuses it, naming the postgres:// URL to give instead, creates no file
// and never repeats the password. A path that merely holds '=' is still a
// SQLite file.
func TestKeywordConnectionStringRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, dsn := range []string{
		"host=127.0.0.1 port=5432 dbname=mh user=mh password=Hunter2-secret",
		"password=Hunter2-secret host=db",
		"  dbname = mh password = 'Hunter2-secret' ",
		"service=mh",
		"host=/var/run/postgresql",
	} {
		_, err := Open(context.Background(), dsn)
		if err == nil {
			t.Fatalf("%q opened as a SQLite file", dsn)
		}
		msg := err.Error()
		if strings.Contains(msg, "Hunter2") {
			t.Errorf("%q: the error repeats the password: %s", dsn, msg)
		}
		for _, w := range []string{"keyword/value", "postgres://"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: error lacks %q: %s", dsn, w, msg)
			}
		}
		if ents, _ := os.ReadDir("."); len(ents) != 0 {
			t.Fatalf("%q: files created: %v", dsn, ents)
		}
	}
	// A file name with '=' that is no keyword/value string stays a file.
	s, err := Open(context.Background(), "./run=1.db")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat("run=1.db"); err != nil {
		t.Fatal(err)
	}
}
