package authserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// watch tells when the server, having received marker on a connection of
// the watched listeners, asks that connection for more: the handler is
// reading the rest of the body. Receiving the marker alone is not enough:
// net/http reads the header and the start of the body in one read, and a
// request whose header was still being read when Shutdown began is dropped
// unanswered, as documented for http.Server.Shutdown; only a request whose
// handler runs is one in flight.
type watch struct {
	marker []byte
	once   sync.Once
	seen   chan struct{}
}

type watchListener struct {
	net.Listener
	w *watch
}

func (l *watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchConn{Conn: c, w: l.w}, nil
}

type watchConn struct {
	net.Conn
	w      *watch
	got    []byte
	marked bool
}

func (c *watchConn) Read(p []byte) (int, error) {
	if c.marked {
		c.w.once.Do(func() { close(c.w.seen) })
	}
	n, err := c.Conn.Read(p)
	c.got = append(c.got, p[:n]...)
	c.marked = c.marked || bytes.Contains(c.got, c.w.marker)
	return n, err
}

// heldToken is a token request whose body the test sends in two halves:
// the server's handler has the first (seen is closed) and waits for the
// second, which finish sends.
type heldToken struct {
	seen   chan struct{}
	finish func() (int, map[string]any, error)
}

// startHeld runs a server whose listeners watch for a marker, obtains a
// code, and starts redeeming it with a body of which only the first half
// is sent.
func startHeld(t *testing.T) (*env, *heldToken) {
	t.Helper()
	verifier, challenge := pkce(t)
	w := &watch{marker: []byte(verifier), seen: make(chan struct{})}
	e := startWith(t, filepath.Join(t.TempDir(), "a.db"), &clock{t: time.Now()}, func(c *authserver.Config) {
		c.Listen = func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, err
			}
			return &watchListener{Listener: ln, w: w}, nil
		}
	})
	code := e.nativeCode(e.authParams(challenge), subAna, map[string]string{"action": "approve"}).Get("code")
	first := url.Values{"grant_type": {"authorization_code"}, "client_id": {publicID}, "code_verifier": {verifier}}.Encode()
	second := "&" + url.Values{"code": {code}, "redirect_uri": {publicRedir}}.Encode()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, e.u.Token, pr)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	type result struct {
		status int
		body   map[string]any
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		done <- result{status: resp.StatusCode, body: m}
	}()
	if _, err := io.WriteString(pw, first); err != nil {
		t.Fatal(err)
	}
	return e, &heldToken{seen: w.seen, finish: func() (int, map[string]any, error) {
		io.WriteString(pw, second)
		pw.Close()
		r := <-done
		return r.status, r.body, r.err
	}}
}

// waitRefused waits until a new connection to every role is refused: the
// listeners are closed.
func waitRefused(t *testing.T, la authserver.ListenAddrs, shutdown <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, addr := range []string{la.Service, la.Dashboard, la.Signing, la.Invoicing} {
		for {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				break
			}
			c.Close()
			select {
			case err := <-shutdown:
				t.Fatalf("Shutdown returned %v while a request was in flight", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still accepts connections during the shutdown", addr)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestShutdownLetsRequestsFinish: a token request in flight when Shutdown
// starts completes with 200 and its tokens, while new connections to every
// role are already refused; Shutdown returns once it has, without error.
func TestShutdownLetsRequestsFinish(t *testing.T) {
	e, held := startHeld(t)
	<-held.seen
	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shutdown <- e.srv.Shutdown(ctx)
	}()
	waitRefused(t, e.srv.ListenAddrs(), shutdown)
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned %v while a request was in flight", err)
	default:
	}
	st, m, err := held.finish()
	if err != nil || st != http.StatusOK || m["access_token"] == nil {
		t.Fatalf("the request in flight: %d %v %v, want 200 with tokens", st, m, err)
	}
	if err := <-shutdown; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := http.Get(e.u.Discovery); err == nil {
		t.Fatal("a request after the shutdown was answered")
	}
	// Close after Shutdown returns the same result.
	if err := e.srv.Close(); err != nil {
		t.Fatalf("Close after Shutdown: %v", err)
	}
}

// TestShutdownCutsRequestsAtItsDeadline: when the shutdown's context ends
// with a request still in flight, its connection is cut and Shutdown says
// so.
func TestShutdownCutsRequestsAtItsDeadline(t *testing.T) {
	e, held := startHeld(t)
	<-held.seen
	ctx, cancel := context.WithCancel(context.Background())
	shutdown := make(chan error, 1)
	go func() { shutdown <- e.srv.Shutdown(ctx) }()
	waitRefused(t, e.srv.ListenAddrs(), shutdown)
	cancel()
	err := <-shutdown
	if err == nil || !strings.Contains(err.Error(), "service: requests still running at the shutdown deadline were cut off") {
		t.Fatalf("Shutdown: %v, want the service's requests named as cut off", err)
	}
	if st, m, err := held.finish(); err == nil {
		t.Fatalf("the request cut off was answered: %d %v", st, m)
	}
}
