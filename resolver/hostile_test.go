package resolver

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestHostileServers runs each hostile manifest server with a short
// timeout and checks that the resolve ends within its bound, with the
// download stage and the right code, that no goroutine is left behind, and
// that the same Resolver then resolves a good Miniapp.
func TestHostileServers(t *testing.T) {
	const timeout = 300 * time.Millisecond
	tests := []struct {
		name      string
		spec      serverSpec
		undecided bool
		code      string
	}{
		{"body larger than the cap", serverSpec{Behaviour: "oversized"}, false, CodeTooLarge},
		{"chunked body larger than the cap", serverSpec{Behaviour: "oversized-chunked"}, false, CodeTooLarge},
		{"body that trickles forever", serverSpec{Behaviour: "trickle"}, true, CodeTimeout},
		{"headers that never come", serverSpec{Behaviour: "hang"}, true, CodeTimeout},
		{"redirect loop", serverSpec{Behaviour: "redirect-loop"}, false, CodeRedirectLimit},
		{"redirect to another origin", serverSpec{Status: 302, Location: "http://[::1]:9/miniapp.webmanifest"}, false, CodeRedirectCrossOrigin},
		{"wrong content type", serverSpec{ContentType: ptr("text/html")}, false, CodeContentType},
		{"reset connection", serverSpec{Behaviour: "reset"}, true, CodeNetwork},
	}
	good := newTestServer(t, "/api/oauth/clients/", serverSpec{}, nil, 0)
	app := newTestServer(t, ManifestPath, serverSpec{}, nil, 0)
	app.body = []byte(`{"id":"com.example.notes","name":"Notes","start_url":"/app/","oauth":{"client_id":"c"}}`)
	good.body = []byte(`{"redirect_uris":[],"allowed_origins":["` + app.URL + `"],"client_type":"public"}`)

	// Only the servers that never finish need the short timeout; the
	// others are decided by what they send, and get a timeout a loaded
	// machine never reaches, so that their outcome does not depend on the
	// machine's speed.
	short, err := New(Config{Dashboard: good.URL, Timeout: timeout, MaxBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	patient, err := New(Config{Dashboard: good.URL, Timeout: time.Minute, MaxBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := patient
			if tt.code == CodeTimeout {
				r = short
			}
			before := runtime.NumGoroutine()
			s := newTestServer(t, ManifestPath, tt.spec, []byte(`{}`), 4<<10)
			start := time.Now()
			_, err := r.Resolve(context.Background(), "com.example.notes", s.URL)
			elapsed := time.Since(start)
			// Far more than the bound, far less than the forever a missing
			// bound would take.
			if tt.code == CodeTimeout && elapsed > timeout+20*time.Second {
				t.Errorf("took %s, timeout is %s", elapsed, timeout)
			}
			var stage Stage
			var code string
			var und *Undecided
			var rej *Rejection
			switch {
			case errors.As(err, &und):
				stage, code = und.Stage, und.Code
				if !tt.undecided {
					t.Errorf("undecided (%v), want a rejection", err)
				}
			case errors.As(err, &rej):
				stage, code = rej.Stage, rej.Code
				if tt.undecided {
					t.Errorf("rejected (%v), want undecided", err)
				}
			default:
				t.Fatalf("err = %v", err)
			}
			if stage != StageDownload || code != tt.code {
				t.Errorf("got %s/%s, want download/%s (%v)", stage, code, tt.code, err)
			}
			s.Close()
			// The process stays healthy: no goroutine of the resolve is left.
			deadline := time.Now().Add(2 * time.Second)
			for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before+2 {
				t.Errorf("%d goroutines after, %d before", n, before)
			}
			if _, err := r.Resolve(context.Background(), "com.example.notes", app.URL); err != nil {
				t.Errorf("a good Miniapp after a hostile one: %v", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
