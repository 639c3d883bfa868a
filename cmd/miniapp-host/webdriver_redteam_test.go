package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The attacks on a session's private network (webdriverfront.NetworkPrivate,
// docs/webdriver.md "A private network per session") made as a process on
// the same machine makes them, against the running front, supervisor and
// host.

// countingServer is a loopback HTTP server that counts the connections it
// accepts.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		io.WriteString(w, "reached")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// sessionFolder is the one session folder in the rig's $TMPDIR.
func (r *privateRig) sessionFolder(t *testing.T) string {
	t.Helper()
	folders, err := filepath.Glob(filepath.Join(os.TempDir(), "miniapp-host-webdriver-*"))
	if err != nil || len(folders) != 1 {
		t.Fatalf("session folders %q (%v), want the one of the session", folders, err)
	}
	return folders[0]
}

// sessionProcess is the pid of the rig's process whose command line
// holds all of words (the host: "open", "--webdriver"; the driver:
// "WebKitWebDriver"), and that command line.
func (r *privateRig) sessionProcess(t *testing.T, words ...string) (int, []string) {
	t.Helper()
	for _, p := range markedProcesses(t, r.marker) {
		pid, _ := strconv.Atoi(strings.Fields(p)[0])
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		all := true
		for _, w := range words {
			found := false
			for _, a := range args {
				found = found || a == w || filepath.Base(a) == w
			}
			all = all && found
		}
		if all {
			return pid, args
		}
	}
	t.Fatalf("no process of the session runs %q (the rig's: %q)", words, markedProcesses(t, r.marker))
	return 0, nil
}

// ask connects to the Unix socket at path, sends line as is and returns
// the carrier's one-line answer ("" if it closed without one) and the
// connection, open when the answer is "ok".
func ask(t *testing.T, path, line string) (string, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("connect to %s: %v", path, err)
	}
	if _, err := io.WriteString(c, line); err != nil {
		c.Close()
		return "write: " + err.Error(), nil
	}
	answer, _ := bufio.NewReader(io.LimitReader(c, 4096)).ReadString('\n')
	answer = strings.TrimSuffix(answer, "\n")
	if answer != "ok" {
		c.Close()
		return answer, nil
	}
	return answer, c
}

// TestPrivateNetworkFromInside attacks a session's way out, as its
// Miniapp page and a process in its network can: a loopback service
// started after the session started (so not listed) is out of reach of
// the page, of a process in the session's network, and of anyone naming
// it to the front's out.sock; out.sock refuses an address line over its
// bound and garbage; a service listed at the session's start is reached
// (so the probes work).
func TestPrivateNetworkFromInside(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	listed, listedConns := countingServer(t)
	r := newPrivateRig(t, ctx, "demo-confidential")
	sid := r.newSession(r.wd, "demo-confidential", "sub_ana")
	late, lateConns := countingServer(t)
	// The page fetches once it has settled: a navigation cancels a fetch.
	r.signIn(r.wd, sid)
	listedAddr, lateAddr := listed.Listener.Addr().String(), late.Listener.Addr().String()

	// The page: fetch is the Miniapp's way to a loopback service.
	fetch := func(u string) string {
		status, v := r.wd.do("POST", "/session/"+sid+"/execute/async", map[string]any{"args": []any{u}, "script": `
			const done = arguments[arguments.length - 1];
			fetch(arguments[0], {mode: "no-cors", cache: "no-store"}).then(() => done("reached"), e => done("failed: " + e));`})
		var s string
		if json.Unmarshal(v, &s); status != 200 {
			t.Fatalf("Execute Async Script fetching %s: %d %s", u, status, v)
		}
		return s
	}
	if got := fetch(listed.URL + "/from-page"); got != "reached" || listedConns.Load() == 0 {
		t.Fatalf("the page fetching a listed service %s: %q, %d connections: the probe reaches nothing", listed.URL, got, listedConns.Load())
	}
	// What the page's fetch resolves to is WebKit's (an error page
	// counts as an answer); the service's connections are what it got.
	if got := fetch(late.URL + "/from-page"); lateConns.Load() != 0 {
		t.Errorf("the page fetching %s, which was not listening when the session started: %q, %d connections; want it out of reach", late.URL, got, lateConns.Load())
	}

	// A process in the session's network (nsenter into the host's):
	// bash's /dev/tcp connects.
	hostPid, _ := r.sessionProcess(t, "open", "--webdriver")
	inside := func(addr string) error {
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.CommandContext(ctx, "nsenter", "--net=/proc/"+strconv.Itoa(hostPid)+"/ns/net", "--", "bash", "-c", `exec 3<>"/dev/tcp/$1/$2"`, "probe", host, port)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if os.Geteuid() != 0 {
		t.Logf("not root: no process can be started in the session's network (nsenter needs CAP_SYS_ADMIN); the page's and out.sock's probes stand")
	} else {
		if err := inside(listedAddr); err != nil {
			t.Fatalf("a process in the session's network connecting to the listed %s: %v: the probe reaches nothing", listedAddr, err)
		}
		before := lateConns.Load()
		if err := inside(lateAddr); err == nil || lateConns.Load() != before {
			t.Errorf("a process in the session's network connected to %s, not listed (%d connections)", lateAddr, lateConns.Load()-before)
		}
	}

	// out.sock, as any process that can open the folder: the supervisor
	// is not the only one that can name an address to the front.
	out := filepath.Join(r.sessionFolder(t), "out.sock")
	answer, c := ask(t, out, listedAddr+"\n")
	if answer != "ok" {
		t.Fatalf("out.sock to the listed %s: %q, want ok", listedAddr, answer)
	}
	fmt.Fprintf(c, "GET /through-out HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", listedAddr)
	if b, _ := io.ReadAll(c); !strings.Contains(string(b), "reached") {
		t.Errorf("a request through out.sock to %s: %q", listedAddr, b)
	}
	c.Close()
	before := lateConns.Load()
	for _, c := range []struct{ name, line, want string }{
		{"an address not listed", lateAddr + "\n", "was not listening on the machine's loopback when the session started"},
		{"the unspecified address", "0.0.0.0:" + strings.Split(lateAddr, ":")[1] + "\n", "was not listening"},
		{"a name", "localhost:" + strings.Split(lateAddr, ":")[1] + "\n", "was not listening"},
		{"a long line", lateAddr + strings.Repeat(" ", 5000) + "\n", "an address line over 300 bytes"},
		{"a listed address padded", strings.Repeat("0", 400) + listedAddr + "\n", "an address line over 300 bytes"},
		{"garbage", "\x16\x03\x01\x00\xff\xfe GET / HTTP/1.1\n", "was not listening"},
		{"an empty line", "\n", "was not listening"},
	} {
		if answer, conn := ask(t, out, c.line); conn != nil || !strings.HasPrefix(answer, "refused: ") || !strings.Contains(answer, c.want) {
			t.Errorf("out.sock given %s: %q, want refused naming %q", c.name, answer, c.want)
			if conn != nil {
				conn.Close()
			}
		}
	}
	// Garbage without an end of line, then the end of the connection.
	conn, err := net.Dial("unix", out)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "\x00\x01\x02 no end of line")
	conn.(*net.UnixConn).CloseWrite()
	if b, _ := io.ReadAll(conn); len(b) != 0 {
		t.Errorf("out.sock given garbage with no end of line: answered %q, want the connection closed", b)
	}
	conn.Close()
	if n := lateConns.Load() - before; n != 0 {
		t.Errorf("the service that was not listed got %d connections through out.sock", n)
	}
	// The session is unharmed.
	if status, v := r.wd.script(sid, `return "still here"`); status != 200 || v != "still here" {
		t.Errorf("Execute Script after the attacks: %d %q", status, v)
	}
	if status, v := r.wd.do("DELETE", "/session/"+sid, nil); status != 200 {
		t.Errorf("Delete Session: %d %s", status, v)
	}
}

// TestPrivateNetworkFromOutside attacks a session from outside its
// network: its folder (in.sock, out.sock) is its user's only (mode 0700:
// another user cannot list it or reach a socket in it, checked as nobody
// when the test runs as root), and in.sock, the front's way in, reaches
// the session's loopback only: the unspecified address (which reaches
// every address of the network), a name, garbage, are refused; the
// driver's loopback address is reached (so the probe works).
func TestPrivateNetworkFromOutside(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	r := newPrivateRig(t, ctx, "demo-public")
	// $TMPDIR as /tmp is: anyone may look in it.
	if err := os.Chmod(os.TempDir(), 0o1777); err != nil {
		t.Fatal(err)
	}
	sid := r.newSession(r.wd, "demo-public", "sub_ana")
	folder := r.sessionFolder(t)
	fi, err := os.Stat(folder)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Errorf("the session folder %s: mode %v, owner %d; want 0700, owned by the front's user %d", folder, perm, fi.Sys().(*syscall.Stat_t).Uid, os.Getuid())
	}
	if os.Geteuid() != 0 {
		t.Logf("not root: another user's process cannot be started; the folder's mode and owner stand for it")
	} else {
		// As nobody: the folder is seen (the probe runs), not entered.
		asNobody := func(args ...string) (string, error) {
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		if out, err := asNobody("stat", "-c", "%a", folder); err != nil {
			t.Fatalf("nobody's stat of %s: %q %v: the probe sees nothing", folder, out, err)
		}
		for _, args := range [][]string{{"ls", folder}, {"stat", filepath.Join(folder, "in.sock")}, {"stat", filepath.Join(folder, "out.sock")}} {
			if out, err := asNobody(args...); err == nil || !strings.Contains(out, "Permission denied") {
				t.Errorf("as nobody, %q: %q %v; want Permission denied", args, out, err)
			}
		}
	}

	in := filepath.Join(folder, "in.sock")
	_, driverArgs := r.sessionProcess(t, "WebKitWebDriver")
	port, inspector := "", ""
	for _, a := range driverArgs {
		if p, ok := strings.CutPrefix(a, "--port="); ok {
			port = p
		}
		if t, ok := strings.CutPrefix(a, "--target="); ok {
			inspector = t
		}
	}
	if port == "" || inspector == "" {
		t.Fatalf("the session's WebKitWebDriver names no --port or --target: %q", driverArgs)
	}
	answer, c := ask(t, in, "127.0.0.1:"+port+"\n")
	if answer != "ok" {
		t.Fatalf("in.sock to the driver's 127.0.0.1:%s: %q, want ok", port, answer)
	}
	fmt.Fprintf(c, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n", port)
	if b, _ := io.ReadAll(c); !strings.Contains(string(b), `"ready"`) {
		t.Errorf("the driver's /status through in.sock: %q", b)
	}
	c.Close()
	for _, c := range []struct{ name, line, want string }{
		{"the unspecified address", "0.0.0.0:" + port + "\n", "is not a loopback address and port"},
		{"the unspecified IPv6 address", "[::]:" + port + "\n", "is not a loopback address and port"},
		{"a name", "localhost:" + port + "\n", "is not a loopback address and port"},
		{"an address without a port", "127.0.0.1\n", "is not a loopback address and port"},
		{"garbage", "\x16\x03\x01\x00\xff\xfe\n", "is not a loopback address and port"},
		{"a long line", "127.0.0.1:" + port + strings.Repeat(" ", 5000) + "\n", "an address line over 300 bytes"},
		{"the inspector", inspector + "\n", "is the session's inspector"},
	} {
		if answer, conn := ask(t, in, c.line); conn != nil || !strings.HasPrefix(answer, "refused: ") || !strings.Contains(answer, c.want) {
			t.Errorf("in.sock given %s: %q, want refused naming %q", c.name, answer, c.want)
			if conn != nil {
				conn.Close()
			}
		}
	}
	if status, v := r.wd.script(sid, `return "still here"`); status != 200 || v != "still here" {
		t.Errorf("Execute Script after the attacks: %d %q", status, v)
	}
	if status, v := r.wd.do("DELETE", "/session/"+sid, nil); status != 200 {
		t.Errorf("Delete Session: %d %s", status, v)
	}
}

// TestPrivateSessionLeavesNothing: a session's folder (with its sockets)
// and processes go when it ends, however it ends: Delete Session, the
// host killed (kill -9 of the host inside: the session ends, its commands
// answer invalid session id), the front's Close.
func TestPrivateSessionLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	echo := echoServer(t)
	r := newPrivateRig(t, ctx, "demo-public")
	start := func(t *testing.T) (string, string) {
		wd := wdClient{t: t, ctx: ctx, url: r.f.URL()}
		sid := r.newSession(wd, "demo-public", "sub_ana")
		folder := r.sessionFolder(t)
		for _, s := range []string{"in.sock", "out.sock"} {
			if fi, err := os.Stat(filepath.Join(folder, s)); err != nil || fi.Mode().Type() != os.ModeSocket {
				t.Fatalf("the session folder lacks its %s: %v", s, err)
			}
		}
		return sid, folder
	}
	t.Run("delete", func(t *testing.T) {
		wd := wdClient{t: t, ctx: ctx, url: r.f.URL()}
		sid, folder := start(t)
		// A process of the session's (one that outlives it) holds a
		// connection carried out through out.sock to a service listed
		// at the start: an echo.
		answer, carried := ask(t, filepath.Join(folder, "out.sock"), echo+"\n")
		if answer != "ok" {
			t.Fatalf("out.sock to the listed echo %s: %q", echo, answer)
		}
		defer carried.Close()
		line := bufio.NewReader(carried)
		io.WriteString(carried, "before\n")
		if got, err := line.ReadString('\n'); got != "before\n" {
			t.Fatalf("the echo through out.sock: %q %v", got, err)
		}
		if status, v := wd.do("DELETE", "/session/"+sid, nil); status != 200 {
			t.Fatalf("Delete Session: %d %s", status, v)
		}
		// The session's end cuts what it carried: nothing of it still
		// reaches the machine's loopback.
		io.WriteString(carried, "after\n")
		if got, err := line.ReadString('\n'); err == nil {
			t.Errorf("after Delete Session, the connection the session carried out still reaches %s: it echoed %q", echo, got)
		}
		// Delete Session answers once the session has ended.
		if _, err := os.Stat(folder); !os.IsNotExist(err) {
			t.Errorf("the session folder %s after Delete Session: %v, want it removed", folder, err)
		}
		r.settle(t, "after Delete Session", 0, nil)
	})
	t.Run("host killed", func(t *testing.T) {
		wd := wdClient{t: t, ctx: ctx, url: r.f.URL()}
		sid, folder := start(t)
		pid, _ := r.sessionProcess(t, "open", "--webdriver")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Until the front has seen the host go, its driver answers.
		wd.until("the session's end", "GET", "/session/"+sid+"/url", nil, func(s int, v json.RawMessage) bool {
			code, _ := errorOf(v)
			return s == 404 && code == "invalid session id"
		})
		r.settle(t, "after the host was killed", 0, nil)
		if _, err := os.Stat(folder); !os.IsNotExist(err) {
			t.Errorf("the session folder %s after the host was killed: %v, want it removed", folder, err)
		}
	})
	t.Run("front closed", func(t *testing.T) {
		_, folder := start(t)
		if err := r.f.Close(); err != nil {
			t.Fatal(err)
		}
		// Close returns once every session has ended.
		if _, err := os.Stat(folder); !os.IsNotExist(err) {
			t.Errorf("the session folder %s after the front's Close: %v, want it removed", folder, err)
		}
		r.settle(t, "after the front's Close", 0, nil)
	})
}

// echoServer is a loopback TCP service that echoes each connection until
// it is closed; its address.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}
