package soak

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestSoakShort is the short soak: it builds miniapp-host, uses the
// playground's window through the automation channel for
// SOAK_TEST_MINUTES (default 3) and asserts liveness only: every command
// answered, no freeze, a clean exit after SIGTERM. The playground gets an
// X server of its own (Config.OwnDisplay): other tests of `go test ./...`
// click at screen coordinates on the shared display, where this window
// would be in their way.
func TestSoakShort(t *testing.T) {
	minutes := 3.0
	if v := os.Getenv("SOAK_TEST_MINUTES"); v != "" {
		m, err := strconv.ParseFloat(v, 64)
		if err != nil || m <= 0 {
			t.Fatalf("SOAK_TEST_MINUTES=%q is not a positive number", v)
		}
		minutes = m
	}
	bin := filepath.Join(t.TempDir(), "miniapp-host")
	build := exec.Command("go", "build", "-o", bin, "github.com/miniapp-host/miniapp-host/cmd/miniapp-host")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var log, plog bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep, err := Run(ctx, Config{Binary: bin, Duration: time.Duration(minutes * float64(time.Minute)),
		PickPorts: true, OwnDisplay: true, Log: &log, ProcessLog: &plog})
	var out bytes.Buffer
	rep.Write(&out)
	t.Logf("progress:\n%s\n%s", log.String(), out.String())
	if err != nil {
		t.Fatalf("Run: %v\nplayground output:\n%s", err, plog.String())
	}
	for _, f := range rep.Freezes {
		t.Errorf("freeze at minute %.1f: %s (id %d) got no answer in %s", f.Minute, f.Command, f.ID, f.Waited)
	}
	if rep.Lost != "" {
		t.Errorf("lost: %s", rep.Lost)
	}
	if rep.Answered != rep.Sent {
		t.Errorf("%d commands sent, %d answered", rep.Sent, rep.Answered)
	}
	if rep.Sent == 0 {
		t.Error("no command was sent")
	}
	if !rep.CleanExit() {
		if rep.ExitedInTime {
			t.Errorf("after SIGTERM the playground exited with code %d", rep.ExitCode)
		} else {
			t.Errorf("after SIGTERM the playground did not exit within %s (killed)", rep.ExitTook.Round(time.Second))
		}
	}
	if t.Failed() {
		t.Logf("playground output:\n%s", tail(plog.String(), 8000))
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
