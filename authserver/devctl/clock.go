package devctl

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the development server's clock: real time plus an offset that
// QA moves forward (Advance), sets (Set) or removes (Reset). It keeps
// running at the real rate. The server reads it through Config.Now, the
// one clock of every lifetime check (codes, access and refresh tokens,
// PAR request_uris, DPoP nonces and proofs, sessions, pending requests,
// grants), so an expiry reached by moving it is the same path as one
// reached by waiting. A zero Clock is real time.
//
// The offset is this process's: instances sharing a database each have
// their own, and a restart starts at real time.
type Clock struct {
	offset atomic.Int64 // nanoseconds
	real   func() time.Time

	mu      sync.Mutex // guards watches, and orders the calls to them
	watches []func(ClockState)
}

// OnChange calls f with the clock's state after every change (Advance,
// Set, Reset); the calls do not overlap, and the last one has the state
// the clock is in: the playground shows the offset in its inspector. f
// must not change the clock.
func (c *Clock) OnChange(f func(ClockState)) {
	c.mu.Lock()
	c.watches = append(c.watches, f)
	c.mu.Unlock()
}

// changed tells the watchers the state now. It reads the state under mu,
// after the change it follows, so the last watcher call of two changes
// made at once tells the state both left.
func (c *Clock) changed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.watches) == 0 {
		return
	}
	st := c.State()
	for _, f := range c.watches {
		f(st)
	}
}

// NewClock returns a clock at real time.
func NewClock() *Clock { return &Clock{} }

// NewClockOn returns a clock over real, the time it offsets (nil means
// time.Now): a test's own clock stays the base of the server's.
func NewClockOn(real func() time.Time) *Clock { return &Clock{real: real} }

func (c *Clock) realNow() time.Time {
	if c.real != nil {
		return c.real()
	}
	return time.Now()
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return c.realNow().Add(c.Offset()) }

// Offset is how far the clock is from real time.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// MaxOffset bounds how far the clock may be moved either way: far enough
// for any lifetime of the server (refresh tokens last 30 days), near
// enough that times stay printable and comparable.
const MaxOffset = 10 * 365 * 24 * time.Hour

// Advance moves the clock forward by d, which must be positive, and
// returns the new offset.
func (c *Clock) Advance(d time.Duration) (time.Duration, error) {
	if d <= 0 {
		return c.Offset(), fmt.Errorf("advance by a positive duration such as 61s or 10m, not %s (move the clock back with set or reset)", d)
	}
	c.mu.Lock()
	old := c.Offset()
	next := old + d
	if next > MaxOffset || next < old {
		c.mu.Unlock()
		return old, fmt.Errorf("advancing by %s would put the clock %s from real time; at most %s is allowed", d, next, MaxOffset)
	}
	c.offset.Store(int64(next))
	c.mu.Unlock()
	c.changed()
	return next, nil
}

// Set puts the clock at t (it runs on from there) and returns the new
// offset.
func (c *Clock) Set(t time.Time) (time.Duration, error) {
	off := t.Sub(c.realNow())
	if off > MaxOffset || off < -MaxOffset {
		return c.Offset(), fmt.Errorf("%s is %s from real time; at most %s either way is allowed", t.Format(time.RFC3339), off.Round(time.Second), MaxOffset)
	}
	c.offset.Store(int64(off))
	c.changed()
	return off, nil
}

// Reset puts the clock back at real time.
func (c *Clock) Reset() {
	c.offset.Store(0)
	c.changed()
}

// ClockState is the clock as GET /api/dev/clock shows it.
type ClockState struct {
	// Now is the clock's time, RFC 3339 with nanoseconds, UTC.
	Now string `json:"now"`
	// Real is real time, likewise.
	Real string `json:"real"`
	// Offset is Now - Real as a Go duration ("1m30s", "0s").
	Offset string `json:"offset"`
	// OffsetSeconds is the offset in seconds.
	OffsetSeconds float64 `json:"offset_seconds"`
}

// State is the clock's state now.
func (c *Clock) State() ClockState {
	real := c.realNow().UTC()
	off := c.Offset()
	return ClockState{Now: real.Add(off).Format(time.RFC3339Nano), Real: real.Format(time.RFC3339Nano),
		Offset: off.String(), OffsetSeconds: off.Seconds()}
}

func (c *Controls) handleClockShow(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, c.cfg.Clock.State())
}

// clockChange is the body of POST /api/dev/clock: exactly one member.
type clockChange struct {
	Advance *string `json:"advance"`
	Set     *string `json:"set"`
	Reset   *bool   `json:"reset"`
}

func (c *Controls) handleClockChange(w http.ResponseWriter, r *http.Request) {
	var b clockChange
	if err := decode(w, r, &b); err != nil {
		c.writeError(w, r, err)
		return
	}
	n := 0
	for _, set := range []bool{b.Advance != nil, b.Set != nil, b.Reset != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		c.writeError(w, r, &Error{Code: CodeInvalidBody, Message: `send exactly one of {"advance": "61s"}, {"set": "2027-01-01T00:00:00Z"} or {"reset": true}`})
		return
	}
	clock := c.cfg.Clock
	switch {
	case b.Advance != nil:
		d, err := time.ParseDuration(*b.Advance)
		if err != nil {
			c.writeError(w, r, &Error{Code: CodeInvalidField, Field: "/advance",
				Message: fmt.Sprintf("%q is not a duration: write a Go duration such as 61s, 10m or 1h30m", *b.Advance)})
			return
		}
		if _, err := clock.Advance(d); err != nil {
			c.writeError(w, r, &Error{Code: CodeInvalidField, Field: "/advance", Message: err.Error()})
			return
		}
	case b.Set != nil:
		t, err := time.Parse(time.RFC3339Nano, *b.Set)
		if err != nil {
			c.writeError(w, r, &Error{Code: CodeInvalidField, Field: "/set",
				Message: fmt.Sprintf("%q is not an RFC 3339 time: write one such as 2027-01-01T00:00:00Z", *b.Set)})
			return
		}
		if _, err := clock.Set(t); err != nil {
			c.writeError(w, r, &Error{Code: CodeInvalidField, Field: "/set", Message: err.Error()})
			return
		}
	case !*b.Reset:
		c.writeError(w, r, &Error{Code: CodeInvalidField, Field: "/reset", Message: `send {"reset": true} to put the clock back at real time`})
		return
	default:
		clock.Reset()
	}
	writeJSON(w, http.StatusOK, clock.State())
}
