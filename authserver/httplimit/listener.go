package httplimit

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Listener caps the concurrent connections of each source IP address: a
// connection beyond the cap is closed as soon as it is accepted, before
// any byte is read, so one peer holding many idle or stalled connections
// runs out of its own share and never of the process's file descriptors.
// Admission and release are one map update each.
type Listener struct {
	net.Listener
	max int

	mu sync.Mutex     // guards n
	n  map[string]int // open connections by source address

	trusted Proxies // not capped

	refused atomic.Int64
}

// NewListener wraps ln with a cap of max connections per source address,
// except for the trusted proxies' connections; max <= 0 means
// DefaultMaxConnsPerSource.
func NewListener(ln net.Listener, max int, trusted Proxies) *Listener {
	if max <= 0 {
		max = DefaultMaxConnsPerSource
	}
	return &Listener{Listener: ln, max: max, n: map[string]int{}, trusted: trusted}
}

// Accept returns the next connection whose source is under its cap,
// closing those that are not.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := sourceOf(c.RemoteAddr())
		if a, err := netip.ParseAddr(src); err == nil && l.trusted.Trusted(a) {
			return c, nil
		}
		l.mu.Lock()
		ok := l.n[src] < l.max
		if ok {
			l.n[src]++
		}
		l.mu.Unlock()
		if ok {
			return &conn{Conn: c, l: l, src: src}, nil
		}
		l.refused.Add(1)
		c.Close()
	}
}

// Refused is how many connections were closed at Accept for being over
// their source's cap.
func (l *Listener) Refused() int64 { return l.refused.Load() }

func (l *Listener) release(src string) {
	l.mu.Lock()
	if l.n[src]--; l.n[src] <= 0 {
		delete(l.n, src)
	}
	l.mu.Unlock()
}

// sourceOf is the IP address of a peer, without its port.
func sourceOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// conn gives its source's slot back once, on the first Close.
type conn struct {
	net.Conn
	l    *Listener
	src  string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.src) })
	return err
}
