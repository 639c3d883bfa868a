package resolver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// cachingServer serves a manifest (or client config) with the given
// Cache-Control and an ETag, answers If-None-Match with 304, and counts
// full and conditional answers.
type cachingServer struct {
	*httptest.Server
	full, notModified atomic.Int32
}

func newCachingServer(t *testing.T, cacheControl string, body func() string) *cachingServer {
	t.Helper()
	s := &cachingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			s.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		s.full.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body()))
	}))
	t.Cleanup(s.Close)
	return s
}

// TestHTTPCache resolves the same Miniapp three times in one Resolver and
// checks how many requests reach each server, and what the report says.
func TestHTTPCache(t *testing.T) {
	tests := []struct {
		name         string
		cacheControl string
		advance      time.Duration
		wantFull     int32 // per server, over three resolves
		wantNotMod   int32
		wantCache    []string // download stage, per resolve
	}{
		{"max-age keeps it fresh", "max-age=60", time.Second, 1, 0, []string{"miss", "fresh", "fresh"}},
		{"expired max-age revalidates", "max-age=60", 2 * time.Minute, 1, 2, []string{"miss", "revalidated", "revalidated"}},
		{"no-cache revalidates every time", "no-cache", 0, 1, 2, []string{"miss", "revalidated", "revalidated"}},
		{"ETag alone revalidates", "", 0, 1, 2, []string{"miss", "revalidated", "revalidated"}},
		{"no-store is never stored", "no-store", 0, 3, 0, []string{"miss", "miss", "miss"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var app *cachingServer
			dash := newCachingServer(t, tt.cacheControl, func() string {
				return `{"redirect_uris":[],"allowed_origins":["` + app.URL + `"],"client_type":"public"}`
			})
			app = newCachingServer(t, tt.cacheControl, func() string {
				return `{"id":"com.example.notes","name":"Notes","start_url":"/","oauth":{"client_id":"c"}}`
			})
			clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			r, err := New(Config{Dashboard: dash.URL, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				got, err := r.Resolve(context.Background(), "com.example.notes", app.URL)
				if err != nil {
					t.Fatalf("resolve %d: %v", i, err)
				}
				if c := got.Report.stage(StageDownload).Cache; c != tt.wantCache[i] {
					t.Errorf("resolve %d: download cache %q, want %q", i, c, tt.wantCache[i])
				}
				clock.Advance(tt.advance)
			}
			for _, s := range []*cachingServer{app, dash} {
				if s.full.Load() != tt.wantFull || s.notModified.Load() != tt.wantNotMod {
					t.Errorf("%s: %d full and %d not-modified answers, want %d and %d",
						s.URL, s.full.Load(), s.notModified.Load(), tt.wantFull, tt.wantNotMod)
				}
			}
		})
	}
}

func TestFreshness(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		header    string
		wantStore bool
		wantFresh time.Duration
	}{
		{"", true, 0},
		{"max-age=10", true, 10 * time.Second},
		{"public, max-age=\"10\"", true, 10 * time.Second},
		{"max-age=10, no-cache", true, 0},
		{"no-cache, max-age=10", true, 0},
		{"no-store, max-age=10", false, 10 * time.Second},
		{"max-age=-1", true, 0},
		{"max-age=abc", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("Cache-Control", tt.header)
			}
			store, expires := freshness(h, now)
			var fresh time.Duration
			if !expires.IsZero() {
				fresh = expires.Sub(now)
			}
			if store != tt.wantStore || fresh != tt.wantFresh {
				t.Errorf("freshness = %v, %s; want %v, %s", store, fresh, tt.wantStore, tt.wantFresh)
			}
		})
	}
}
