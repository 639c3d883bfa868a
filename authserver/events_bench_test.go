package authserver_test

import (
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// BenchmarkEventsCost is BenchmarkMetricsCost for the audit events alone:
// a browser flow and a native flow on two servers without metrics, one
// recording no event (Config.EventsOff) and one recording them, in turn
// and in a random order within every iteration (docs/deploy.md, "Audit
// events").
func BenchmarkEventsCost(b *testing.B) {
	off := newBenchServer(b, "", func(c *authserver.Config) { c.EventsOff = true })
	on := newBenchServer(b, "")
	// What was recorded is stored before the CPU is read: its writes are
	// the cost too.
	sideBySide(b, off, on, "on", func() { on.srv.Events().Flush() })
}
