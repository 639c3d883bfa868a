package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// startGen is loadgen's server and client on a new SQLite database.
func startGen(tb testing.TB) *gen {
	g, closeAll, err := newGen(context.Background(), filepath.Join(tb.TempDir(), "load.db"), 1, 1)
	tb.Cleanup(closeAll)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// TestFAPIFlow: the fapi phase's credential is registered through the
// dashboard, and its flow (PAR with a client assertion and a DPoP proof,
// consent, a DPoP-bound token) succeeds, as does the plain flow beside it.
func TestFAPIFlow(t *testing.T) {
	g := startGen(t)
	fc, err := g.setupFAPI(g.operatorKey)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := g.fapiFlow(fc); err != nil {
			t.Fatalf("FAPI flow: %v", err)
		}
	}
	cs, err := g.codes("bank_accounts:read", 1)
	if err == nil {
		err = g.exchange(cs[0])
	}
	if err != nil {
		t.Fatalf("plain flow: %v", err)
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFlow times one whole flow, client and server in one process on
// loopback, one at a time: the plain flow (native request,
// client_secret_basic, Bearer token) and the FAPI 2.0 flow (PAR +
// private_key_jwt + DPoP, the fapi2 profile), interleaved per iteration so
// that both see the same machine load. Besides ns/op (wall time) it
// reports cpu-µs/op, the process's CPU per flow, which a loaded shared
// machine inflates less. BENCHMARKS.md, "FAPI 2.0", has the figures.
func BenchmarkFlow(b *testing.B) {
	g := startGen(b)
	fc, err := g.setupFAPI(g.operatorKey)
	if err != nil {
		b.Fatal(err)
	}
	plain := func() error {
		cs, err := g.codes("bank_accounts:read", 1)
		if err != nil {
			return err
		}
		return g.exchange(cs[0])
	}
	fapi := func() error { return g.fapiFlow(fc) }
	var wall, cpu [2]time.Duration
	n := 0
	for b.Loop() {
		for i, flow := range []func() error{plain, fapi} {
			t0, c0 := time.Now(), processCPU()
			if err := flow(); err != nil {
				b.Fatal(err)
			}
			wall[i] += time.Since(t0)
			cpu[i] += processCPU() - c0
		}
		n++
	}
	for i, name := range []string{"plain", "fapi2"} {
		b.ReportMetric(float64(wall[i].Microseconds())/float64(n), name+"-µs/flow")
		b.ReportMetric(float64(cpu[i].Microseconds())/float64(n), name+"-cpu-µs/flow")
	}
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "fapi2/plain-cpu")
}
