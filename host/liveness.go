package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
)

// liveness watches the UI loop: a heartbeat is dispatched to it and, when
// one waits longer than Options.StallAfter, the window reports
// EventUIStalled (and bridge.UIStalledEvent on the automation channel),
// then EventUIRecovered once it runs. A stalled loop answers no click, key
// or command, and cannot process a quit: RunUntil bounds shutdown for that
// reason.
type liveness struct {
	mu      sync.Mutex // guards stalled
	stalled bool
}

// ok reports whether the UI loop answered its last heartbeat in time.
func (l *liveness) ok() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.stalled
}

func (l *liveness) watch(w *Window) {
	interval := w.opts.StallAfter / 4
	for {
		beat := make(chan struct{})
		sent := time.Now()
		w.Dispatch(func() { close(beat) })
		timer := time.NewTimer(w.opts.StallAfter)
		select {
		case <-w.stop:
			timer.Stop()
			return
		case <-beat:
			timer.Stop()
		case <-timer.C:
			l.mu.Lock()
			l.stalled = true
			l.mu.Unlock()
			// Published first: a listener that sees the window's event
			// finds it on the automation channel too.
			secs := time.Since(sent).Seconds()
			w.publish(bridge.UIStalledEvent{Seconds: secs})
			w.emit(Event{Kind: EventUIStalled, Detail: fmt.Sprintf("the UI loop has not answered for %.1fs", secs)})
			select {
			case <-w.stop:
				return
			case <-beat:
			}
			l.mu.Lock()
			l.stalled = false
			l.mu.Unlock()
			secs = time.Since(sent).Seconds()
			w.publish(bridge.UIRecoveredEvent{Seconds: secs})
			w.emit(Event{Kind: EventUIRecovered, Detail: fmt.Sprintf("the UI loop answered again after %.1fs", secs)})
		}
		select {
		case <-w.stop:
			return
		case <-time.After(interval):
		}
	}
}

// RunUntil runs the UI loop until the window is terminated or ctx ends.
// When ctx ends, it asks the loop to stop; a loop that has not stopped
// within grace (it is stalled, so the request cannot be processed) makes
// RunUntil call stuck from another goroutine, which must end the process:
// the main goroutine is inside the loop and cannot return.
func (w *Window) RunUntil(ctx context.Context, grace time.Duration, stuck func()) {
	returned := make(chan struct{})
	go func() {
		select {
		case <-returned:
			return
		case <-ctx.Done():
		}
		w.Terminate()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-returned:
		case <-t.C:
			stuck()
		}
	}()
	w.Run()
	close(returned)
}
