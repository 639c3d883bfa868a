package authserver_test

import (
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// BenchmarkEventsCost is BenchmarkMetricsCost for the audit events alone:
// a browser flow and a native flow on two servers without metrics, one
// recording no event (Config.EventsOff) and one recording them, in turn
// and in a random order within every iteration (docs/deploy.md, "Audit
// events").
func BenchmarkEventsCost(b *testing.B) {
	off := func(c *authserver.Config) { c.EventsOff = true }
	servers := map[bool]*benchServer{false: newBenchServer(b, "", off), true: newBenchServer(b, "")}
	type key struct{ native, events bool }
	cpu, wall := map[key]time.Duration{}, map[key]time.Duration{}
	order := []key{{false, false}, {false, true}, {true, false}, {true, true}}
	n := 0
	for b.Loop() {
		for _, j := range mrand.Perm(len(order)) {
			k := order[j]
			c0, w0 := cpuTime(b), time.Now()
			if err := servers[k.events].flow(k.native); err != nil {
				b.Fatal(err)
			}
			wall[k] += time.Since(w0)
			cpu[k] += cpuTime(b) - c0
		}
		n++
	}
	// What was recorded is stored before the CPU is read: its writes are
	// the cost too.
	servers[true].srv.Events().Flush()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	for _, f := range []struct {
		name   string
		native bool
	}{{"browser", false}, {"native", true}} {
		off, on := key{f.native, false}, key{f.native, true}
		b.ReportMetric(per(cpu[off]), "cpu-µs/"+f.name+"-off")
		b.ReportMetric(per(cpu[on]), "cpu-µs/"+f.name+"-on")
		b.ReportMetric(per(wall[off]), "wall-µs/"+f.name+"-off")
		b.ReportMetric(per(wall[on]), "wall-µs/"+f.name+"-on")
		b.ReportMetric(100*(float64(cpu[on])/float64(cpu[off])-1), "cpu-%/"+f.name+"-on-vs-off")
	}
}
