package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesKeywordDSN: `serve --db 'host=… password=…'` (or the same
// in MINIAPP_HOST_DB) is a usage error naming where it came from and the
// postgres:// URL to give instead; nothing is printed on stdout, no SQLite
// file of that name is created, and the password appears nowhere.
func TestServeRefusesKeywordDSN(t *testing.T) {
	const dsn = "host=127.0.0.1 port=5432 dbname=mh user=mh password=Hunter2-secret"
	for _, tc := range []struct {
		name    string
		args    []string
		environ map[string]string
		source  string
	}{
		{"flag", []string{"--db", dsn}, nil, "--db"},
		{"environment", nil, map[string]string{"MINIAPP_HOST_DB": dsn}, "MINIAPP_HOST_DB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var out, errs bytes.Buffer
			args := append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)
			// Before the fix serve took the string for a SQLite file and
			// served on: the deadline ends that run instead of the test's.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			code := run(ctx, env{args: args, stdout: &out, stderr: &errs, getenv: func(k string) string { return tc.environ[k] }})
			if code != exitUsage || out.Len() != 0 {
				t.Fatalf("exit %d, want %d and nothing on stdout; stdout:\n%s\nstderr:\n%s", code, exitUsage, out.String(), errs.String())
			}
			if strings.Contains(out.String()+errs.String(), "Hunter2") {
				t.Errorf("the password is printed:\n%s%s", out.String(), errs.String())
			}
			for _, w := range []string{tc.source, "keyword/value", "postgres://"} {
				if !strings.Contains(errs.String(), w) {
					t.Errorf("error lacks %q:\n%s", w, errs.String())
				}
			}
			if ents, _ := os.ReadDir("."); len(ents) != 0 {
				t.Errorf("files created: %v", ents)
			}
		})
	}
}
