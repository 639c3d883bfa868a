package webdriverfront

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A real /proc/net/tcp6 and tcp: listeners on 127.0.0.1:8601, 0.0.0.0:22,
// [::1]:5432, [::]:80, 10.0.0.5:9000 (not loopback), and a connection.
const (
	procTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2199 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 0500000A:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0
   3: 0100007F:2199 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0
`
	procTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1538 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6 1 0000000000000000 100 0 0 10 0
`
)

func TestParseListeners(t *testing.T) {
	got := append(parseListeners(procTCP), parseListeners(procTCP6)...)
	slices.Sort(got)
	want := []string{"127.0.0.1:22", "127.0.0.1:80", "127.0.0.1:8601", "[::1]:5432", "[::1]:80"}
	if !slices.Equal(got, want) {
		t.Errorf("parseListeners:\n got %q\nwant %q", got, want)
	}
}

// TestLoopbackListenersSeesAServer: a server the test starts on the
// machine's loopback is among what a session reaches.
func TestLoopbackListenersSeesAServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	got, err := loopbackListeners()
	if err != nil {
		t.Fatal(err)
	}
	if addr := srv.Listener.Addr().String(); !slices.Contains(got, addr) {
		t.Errorf("loopbackListeners %q lacks the test's server %s", got, addr)
	}
}

// TestCarryOnlyWhatItMirrors: the front's out.sock carries a session's
// connection to a loopback address it was told of, and refuses any other
// with the reason, without dialling it.
func TestCarryOnlyWhatItMirrors(t *testing.T) {
	listed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "listed") }))
	defer listed.Close()
	unlisted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the carrier dialled an address it was not told of: %s", r.URL)
	}))
	defer unlisted.Close()
	path := filepath.Join(t.TempDir(), outSocket)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	mirror := []string{listed.Listener.Addr().String()}
	go carry(ln, nil, readTarget(func(addr string) error {
		if !slices.Contains(mirror, addr) {
			return errNotMirrored(addr)
		}
		return nil
	}), dialTCP)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return dialThrough(ctx, path, addr)
	}}}
	resp, err := client.Get(listed.URL)
	if err != nil {
		t.Fatalf("GET the listed server through the carrier: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "listed" {
		t.Errorf("the listed server through the carrier: %q", b)
	}
	if _, err := dialThrough(ctx, path, unlisted.Listener.Addr().String()); err == nil || !strings.Contains(err.Error(), "was not listening") {
		t.Errorf("an unlisted address through the carrier: %v, want the refusal", err)
	}
	if _, err := dialThrough(ctx, path, strings.Repeat("a", maxTarget+1)); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("an address line too long: %v, want the refusal", err)
	}
}

// TestSessionNeedsItsSpec: the supervisor run by hand says what it is for.
func TestSessionNeedsItsSpec(t *testing.T) {
	for _, in := range []string{"", "{}\n", "not json\n"} {
		var errs strings.Builder
		if code := RunSession(t.Context(), strings.NewReader(in), io.Discard, &errs); code != 2 || !strings.Contains(errs.String(), "started by `miniapp-host webdriver`") {
			t.Errorf("RunSession(%q): %d %q", in, code, errs.String())
		}
	}
}
