package httplimit

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestListenerCapsEachSource: the connection over a source's cap is closed
// unread, another source is unaffected, and closing a connection gives its
// slot back at once.
func TestListenerCapsEachSource(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(ln, 2, nil)
	defer l.Close()
	accepted := acceptAll(l)
	dial := func(src string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// closedByServer waits for the server's close; the deadline only turns
	// a connection left open into a failure.
	closedByServer := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := c.Read(make([]byte, 1))
		ne, timeout := err.(net.Error)
		return err != nil && !(timeout && ne.Timeout())
	}
	dial("127.0.0.2")
	dial("127.0.0.2")
	first, second := <-accepted, <-accepted
	defer second.Close()
	if over := dial("127.0.0.2"); !closedByServer(over) {
		t.Fatal("the third connection of one source was not closed")
	}
	if l.Refused() != 1 {
		t.Fatalf("Refused() = %d, want 1", l.Refused())
	}
	other := dial("127.0.0.3")
	o := <-accepted
	o.Write([]byte("x"))
	if n, err := other.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("another source: %d %v", n, err)
	}
	first.Close()
	first.Close() // a second Close gives nothing back twice
	again := dial("127.0.0.2")
	a := <-accepted
	a.Write([]byte("y"))
	if n, err := again.Read(make([]byte, 1)); n != 1 || err != io.EOF && err != nil {
		t.Fatalf("after a close, the source gets in again: %d %v", n, err)
	}
	if l.Refused() != 1 {
		t.Fatalf("Refused() = %d after the slot was freed, want still 1", l.Refused())
	}
}

// TestListenerLeavesTrustedProxiesUncapped: a trusted reverse proxy carries
// many users' connections, so it is not held to one source's cap; every
// other source still is.
func TestListenerLeavesTrustedProxiesUncapped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trusted, _ := ParseProxies("127.0.0.2")
	l := NewListener(ln, 1, trusted)
	defer l.Close()
	accepted := acceptAll(l)
	for range 4 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s := <-accepted
		defer s.Close()
	}
	if l.Refused() != 0 {
		t.Fatalf("the trusted proxy's connections were refused %d times", l.Refused())
	}
}

// acceptAll accepts l's connections until it closes, and hands them over.
func acceptAll(l *Listener) <-chan net.Conn {
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	return accepted
}
