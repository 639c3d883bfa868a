package webdriverfront

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCarriedEndWithTheSession: a connection carried out through
// out.sock to a service that never ends it (an echo) is cut when the
// session's carrier closes what it holds, and one that comes after is
// refused: nothing of an ended session still reaches the machine's
// loopback (docs/webdriver.md, "A private network per session").
func TestCarriedEndWithTheSession(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	echo := up.Addr().String()
	path := filepath.Join(t.TempDir(), outSocket)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held carried
	go carry(ln, &held, readTarget(func(string) error { return nil }), dialTCP)
	ctx := t.Context()
	c, err := dialThrough(ctx, path, echo)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	io.WriteString(c, "before\n")
	if got, err := r.ReadString('\n'); got != "before\n" {
		t.Fatalf("the echo through the carrier: %q %v", got, err)
	}
	held.closeAll()
	io.WriteString(c, "after\n")
	if got, err := r.ReadString('\n'); err == nil {
		t.Errorf("after the session's end the carried connection still echoes %q", got)
	}
	// One that comes after: closed before it names its address.
	late, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	io.WriteString(late, echo+"\n")
	// A bound, not a wait: the carrier closes it at once (EOF, or a
	// reset for the line it did not read).
	late.SetReadDeadline(time.Now().Add(time.Minute))
	if b, err := io.ReadAll(late); len(b) != 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a connection after the session's end: answered %q (%v), want it closed", b, err)
	}
}
