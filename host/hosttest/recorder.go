package hosttest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// Recorder collects a window's events for a test: register Add with
// Window.OnEvent.
type Recorder struct {
	mu     sync.Mutex // guards evs
	evs    []host.Event
	notify chan struct{}
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{notify: make(chan struct{}, 1)} }

// Add records e; it never blocks.
func (r *Recorder) Add(e host.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Wait returns the first recorded event that matches, waiting for it. The
// minute it allows is for a bug to be reported with the events seen, not
// a pace the host must keep: the events it waits for come within
// milliseconds, seconds on a loaded machine.
func (r *Recorder) Wait(t testing.TB, what string, match func(host.Event) bool) host.Event {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for seen := 0; ; {
		r.mu.Lock()
		evs := r.evs
		r.mu.Unlock()
		for ; seen < len(evs); seen++ {
			if match(evs[seen]) {
				return evs[seen]
			}
		}
		select {
		case <-r.notify:
		case <-deadline.C:
			t.Fatalf("waiting for %s, which never came; events: %s", what, r.Dump())
		}
	}
}

// WaitAfter is Wait for an event recorded after from.
func (r *Recorder) WaitAfter(t testing.TB, from host.Event, what string, match func(host.Event) bool) host.Event {
	t.Helper()
	after := false
	return r.Wait(t, what, func(e host.Event) bool {
		if !after {
			after = e.At.Equal(from.At) && e.Kind == from.Kind && e.URL == from.URL
			return false
		}
		return match(e)
	})
}

// All returns the recorded events that match.
func (r *Recorder) All(match func(host.Event) bool) []host.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []host.Event
	for _, x := range r.evs {
		if match(x) {
			out = append(out, x)
		}
	}
	return out
}

// Dump lists the recorded events, one a line.
func (r *Recorder) Dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.evs {
		b.WriteString("\n  " + string(e.Kind) + " " + e.Action.String() + " " + e.URL + " " + e.Detail)
	}
	return b.String()
}

// Kind matches events of kind k.
func Kind(k host.EventKind) func(host.Event) bool {
	return func(e host.Event) bool { return e.Kind == k }
}
