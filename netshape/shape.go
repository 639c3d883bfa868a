package netshape

import (
	"net"
	"sync"
	"time"
)

// Clock is the time the shaping paces itself by.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// pacer holds one direction of a connection to a bandwidth: the bytes
// sent since start may not run ahead of start + bytes/rate. A pause (an
// idle connection) earns no credit: once the bytes are behind the clock,
// the count starts again from now, so a burst after a pause is paced like
// any other. Over n bytes sent in one burst at rate r it waits at least
// (n - chunk)/r: that lower bound is what the shaping guarantees.
type pacer struct {
	mu    sync.Mutex
	rate  int64
	start time.Time
	bytes int64
}

// chunk is how many bytes may go at once at rate: a twentieth of a
// second's worth, at least 256 bytes.
func chunk(rate int64) int { return int(max(rate/20, 256)) }

// next is how many of want bytes may go now at rate, and how long to wait
// before they go.
func (pc *pacer) next(clock Clock, rate int64, want int) (int, time.Duration) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	now := clock.Now()
	if rate != pc.rate {
		pc.rate, pc.start, pc.bytes = rate, now, 0
	}
	due := pc.start.Add(time.Duration(float64(pc.bytes) / float64(rate) * float64(time.Second)))
	if now.After(due) {
		pc.start, pc.bytes, due = now, 0, now
	}
	return min(want, chunk(rate)), due.Sub(now)
}

// sent counts n bytes gone.
func (pc *pacer) sent(n int) {
	pc.mu.Lock()
	pc.bytes += int64(n)
	pc.mu.Unlock()
}

// shapedConn is a client's connection: what it reads is the upload,
// paced at Throttle.Up; what it writes the download, at Throttle.Down.
// Offline ends it at its next read or write.
type shapedConn struct {
	net.Conn
	p        *Proxy
	up, down pacer
}

// Close closes the connection and forgets it.
func (c *shapedConn) Close() error {
	c.p.done(c.Conn)
	return c.Conn.Close()
}

func (c *shapedConn) abort() {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}

// wait waits d; false when the proxy closed meanwhile.
func (c *shapedConn) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-c.p.clock.After(d):
		return true
	case <-c.p.closed:
		return false
	}
}

func (c *shapedConn) Read(b []byte) (int, error) {
	t := c.p.throttle()
	if t.Offline {
		c.abort()
		c.Conn.Close()
		return 0, ErrOffline
	}
	if t.Up <= 0 || len(b) == 0 {
		return c.Conn.Read(b)
	}
	n, d := c.up.next(c.p.clock, t.Up, len(b))
	if !c.wait(d) {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(b[:n])
	c.up.sent(n)
	return n, err
}

func (c *shapedConn) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		t := c.p.throttle()
		if t.Offline {
			c.abort()
			c.Conn.Close()
			return written, ErrOffline
		}
		if t.Down <= 0 {
			n, err := c.Conn.Write(b[written:])
			return written + n, err
		}
		n, d := c.down.next(c.p.clock, t.Down, len(b)-written)
		if !c.wait(d) {
			return written, net.ErrClosed
		}
		n, err := c.Conn.Write(b[written : written+n])
		c.down.sent(n)
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}
