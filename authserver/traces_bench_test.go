package authserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/telemetry"
	"github.com/miniapp-host/miniapp-host/telemetry/telemetrytest"
)

// BenchmarkTracingCost is BenchmarkMetricsCost for traces: a browser flow
// and a native flow, each to its token, on two servers side by side in
// one run, one without tracing and one with it on and every span sampled
// (the default parentbased_always_on; the native flow's calls carry a
// sampled traceparent, as the host's do), exporting over OTLP/HTTP to a
// receiver on loopback in this process (telemetrytest.NewDiscardSink,
// whose reading of the exports is counted against the traced server).
// The four run in a random order within every iteration. It reports the
// process's CPU time and the wall time per flow, and how much more the
// traced flows cost (docs/deploy.md, "Traces"; BENCHMARKS.md, "Tracing
// off and on").
func BenchmarkTracingCost(b *testing.B) {
	sink := telemetrytest.NewDiscardSink(b)
	tp, err := telemetry.Start(context.Background(), telemetry.Options{Service: telemetry.ServerService, Getenv: func(k string) string {
		return map[string]string{telemetry.EnvTracesEndpoint: sink.URL}[k]
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tp.Shutdown(ctx)
	})
	off := newBenchServerWith(b, func(*authserver.Config) {})
	on := newBenchServerWith(b, func(c *authserver.Config) { c.Traces = tp })
	// The host's side: a sampled span whose traceparent the native
	// calls of the traced server carry.
	parent, root := tp.Tracer("bench").Start(context.Background(), "navigation.caught")
	defer root.End()
	on.ctx = parent
	// The spans still queued are the traced flows' too: the CPU of
	// their export is counted.
	sideBySide(b, off, on, "traced", func() {
		if err := tp.ForceFlush(context.Background()); err != nil {
			b.Fatal(err)
		}
	})
	if full, failed := tp.Dropped(); full+failed > 0 || tp.Exported() == 0 {
		b.Fatalf("spans exported %d, dropped %d (queue) %d (export): the run did not export every span", tp.Exported(), full, failed)
	}
}
