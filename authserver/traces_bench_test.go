package authserver_test

import (
	"context"
	mrand "math/rand/v2"
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
	servers := map[bool]*benchServer{false: newBenchServerWith(b, func(*authserver.Config) {}),
		true: newBenchServerWith(b, func(c *authserver.Config) { c.Traces = tp })}
	// The host's side: a sampled span whose traceparent the native
	// calls of the traced server carry.
	parent, root := tp.Tracer("bench").Start(context.Background(), "navigation.caught")
	defer root.End()
	servers[true].ctx = parent
	type key struct {
		native, traced bool
	}
	cpu, wall := map[key]time.Duration{}, map[key]time.Duration{}
	order := []key{{false, false}, {false, true}, {true, false}, {true, true}}
	n := 0
	for b.Loop() {
		for _, j := range mrand.Perm(len(order)) {
			k := order[j]
			c0, w0 := cpuTime(b), time.Now()
			if err := servers[k.traced].flow(k.native); err != nil {
				b.Fatal(err)
			}
			wall[k] += time.Since(w0)
			cpu[k] += cpuTime(b) - c0
		}
		n++
	}
	// The spans still queued are the traced flows' too: the CPU of
	// their export is counted, half to each kind of flow.
	c0 := cpuTime(b)
	if err := tp.ForceFlush(context.Background()); err != nil {
		b.Fatal(err)
	}
	flush := cpuTime(b) - c0
	cpu[key{false, true}] += flush / 2
	cpu[key{true, true}] += flush / 2
	if full, failed := tp.Dropped(); full+failed > 0 || tp.Exported() == 0 {
		b.Fatalf("spans exported %d, dropped %d (queue) %d (export): the run did not export every span", tp.Exported(), full, failed)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	for _, f := range []struct {
		name   string
		native bool
	}{{"browser", false}, {"native", true}} {
		off, on := key{f.native, false}, key{f.native, true}
		b.ReportMetric(per(cpu[off]), "cpu-µs/"+f.name+"-off")
		b.ReportMetric(per(cpu[on]), "cpu-µs/"+f.name+"-traced")
		b.ReportMetric(per(wall[off]), "wall-µs/"+f.name+"-off")
		b.ReportMetric(per(wall[on]), "wall-µs/"+f.name+"-traced")
		b.ReportMetric(100*(float64(cpu[on])/float64(cpu[off])-1), "cpu-%/"+f.name+"-traced-vs-off")
	}
}
