package resolver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"
)

// BenchmarkResolveWarm resolves the same Miniapp again and again against
// loopback servers with keep-alive and no HTTP caching (Cache-Control:
// no-store), so that each resolve makes both requests over warm
// connections. It reports the median (p50) and p99 of one resolve in ns.
// The target: p50 under 1 ms (BENCHMARKS.md, "Resolver").
func BenchmarkResolveWarm(b *testing.B) {
	var appURL string
	serve := func(body func() string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/manifest+json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write([]byte(body()))
		}))
		b.Cleanup(s.Close)
		return s
	}
	app := serve(func() string {
		return `{"id":"com.example.notes","name":"Notes","short_name":"Notes","icons":[{"src":"/i.png","sizes":"192x192","type":"image/png"}],"start_url":"/app/","display":"standalone","oauth":{"client_id":"notes","auth_url":"/auth/start"}}`
	})
	appURL = app.URL
	dash := serve(func() string {
		return `{"redirect_uris":["` + appURL + `/auth/callback"],"allowed_origins":["` + appURL + `"],"client_type":"confidential"}`
	})
	r, err := New(Config{Dashboard: dash.URL})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.Resolve(ctx, "com.example.notes", appURL); err != nil {
		b.Fatal(err)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := r.Resolve(ctx, "com.example.notes", appURL); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	if n := len(durations); n > 0 {
		b.ReportMetric(float64(durations[n/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(durations[n*99/100].Nanoseconds()), "p99-ns")
	}
}

// BenchmarkResolveCached is the same with Cache-Control max-age: repeated
// resolves in one process make no request at all.
func BenchmarkResolveCached(b *testing.B) {
	var appURL string
	serve := func(body func() string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/manifest+json")
			w.Header().Set("Cache-Control", "max-age=3600")
			_, _ = w.Write([]byte(body()))
		}))
		b.Cleanup(s.Close)
		return s
	}
	app := serve(func() string {
		return `{"id":"com.example.notes","name":"Notes","start_url":"/app/","oauth":{"client_id":"notes"}}`
	})
	appURL = app.URL
	dash := serve(func() string {
		return `{"redirect_uris":[],"allowed_origins":["` + appURL + `"],"client_type":"public"}`
	})
	r, err := New(Config{Dashboard: dash.URL})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Resolve(ctx, "com.example.notes", appURL); err != nil {
			b.Fatal(err)
		}
	}
}
