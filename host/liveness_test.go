package host_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
)

// TestStalledUILoopIsReported: a UI loop that stops running what is
// dispatched to it is reported on the window's events and the automation
// channel, and its recovery too.
func TestStalledUILoopIsReported(t *testing.T) {
	c := newCore(t, host.Options{StallAfter: 50 * time.Millisecond})
	release := c.eng.Stall()
	stalled := c.rec.Wait(t, "the event", kind(host.EventUIStalled))
	if !strings.Contains(stalled.Detail, "has not answered") {
		t.Errorf("stall detail %q", stalled.Detail)
	}
	release()
	c.rec.Wait(t, "the event", kind(host.EventUIRecovered))
	kinds := strings.Join(c.bus.kinds(), " ")
	if !strings.Contains(kinds, "ui.stalled") || !strings.Contains(kinds, "ui.recovered") {
		t.Errorf("the automation channel got %v, want ui.stalled and ui.recovered", kinds)
	}
}

// TestRunUntilEndsWhenAsked: when the context ends, a running loop stops and
// RunUntil returns; a stalled one cannot, and stuck is called instead,
// which in the command ends the process.
func TestRunUntilEndsWhenAsked(t *testing.T) {
	for _, stall := range []bool{false, true} {
		name := map[bool]string{false: "healthy loop", true: "stalled loop"}[stall]
		t.Run(name, func(t *testing.T) {
			var eng *hosttest.Engine
			w, err := host.NewWindow(hosttest.Factory(&eng), host.Options{DataDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			release := func() {}
			if stall {
				release = eng.Stall()
			}
			ctx, cancel := context.WithCancel(context.Background())
			stuck := make(chan struct{})
			returned := make(chan struct{})
			go func() {
				w.RunUntil(ctx, 50*time.Millisecond, func() { close(stuck) })
				close(returned)
			}()
			cancel()
			if stall {
				<-stuck
				release() // the loop runs the quit it was sent
				<-returned
				return
			}
			<-returned
			select {
			case <-stuck:
				t.Error("stuck was called for a loop that stopped")
			default:
			}
		})
	}
}
