package bridge

import (
	"sync"
	"time"
)

// GestureWindow is how long after the user's input a call may still count
// as made in a user gesture: the bridge script's first filter uses the same
// window, and Host.OpenExternal should too (see [Gestures]).
const GestureWindow = 5 * time.Second

// Gestures records the native user input events of one Miniapp view, for
// Host.OpenExternal, which must not take the page's word that the user
// acted: the Miniapp's own scripts can send "gesture": true, and WebKit
// counts the host's own Eval as a user gesture, so only input the host saw
// natively is proof.
//
// The host calls Input from its GTK "key-press-event", "button-press-event"
// and "touch-event" (GDK_TOUCH_BEGIN) handlers on the Miniapp's
// WebKitWebView, skipping events whose send_event is set (sent by another
// X client, not typed), and letting the events through to WebKit. Its
// OpenExternal calls Take and opens nothing when Take is false. The zero
// value is ready to use; methods are safe for concurrent use.
type Gestures struct {
	mu   sync.Mutex // guards last
	last time.Time  // the latest input not yet used up; zero when none
}

// Input records a user input event at time at (time.Now() when it was
// handled; the monotonic reading keeps wall-clock changes out).
func (g *Gestures) Input(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last.IsZero() || at.After(g.last) {
		g.last = at
	}
}

// Take reports whether there was an input within GestureWindow before now,
// and uses it up: one key press or click opens at most one URL, so a page
// cannot turn one click into a stream of windows.
func (g *Gestures) Take(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last.IsZero() {
		return false
	}
	age := now.Sub(g.last)
	if age < 0 || age > GestureWindow {
		return false
	}
	g.last = time.Time{}
	return true
}
