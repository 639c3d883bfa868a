package authserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// TestReadinessOfTheDatabase: readiness is 503 with a one-line reason when
// the database fails its query (a closed store) or does not answer within
// the timeout, and health stays 200: the process is up.
func TestReadinessOfTheDatabase(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// A database that never answers: the query waits for its deadline.
	stuck := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for _, tc := range []struct {
		name string
		ping func(context.Context) error
		want string
	}{
		{"closed", st.Ping, "not ready: the database failed a trivial query (the server's log has the error)\n"},
		{"stuck", stuck, "not ready: the database did not answer within 1ms\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := (&health{ping: tc.ping, timeout: time.Millisecond}).wrap(http.NotFoundHandler())
			srv := httptest.NewServer(h)
			defer srv.Close()
			for path, want := range map[string]struct {
				status int
				body   string
			}{ReadyPath: {http.StatusServiceUnavailable, tc.want}, HealthPath: {http.StatusOK, "ok\n"}} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want.status || string(b) != want.body || strings.Count(string(b), "\n") != 1 {
					t.Errorf("GET %s: %d %q, want %d %q", path, resp.StatusCode, b, want.status, want.body)
				}
			}
		})
	}
}
