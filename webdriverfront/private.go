package webdriverfront

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// A session's private network (docs/webdriver.md, "A private network per
// session"; docs/security.md, the inspector row).
//
// WebKitWebDriver reaches the host through WebKit's remote inspector, which
// listens on the TCP address in WEBKIT_INSPECTOR_SERVER and takes any
// client: on the machine's loopback, every local process (of any user) can
// attach to it, and a second driver attached to it hangs the session. So a
// session's host and driver run in a network namespace of their own
// (bubblewrap --unshare-net, which brings its loopback up): the inspector
// and the driver's port exist there only. The front reaches them through
// a Unix socket in a folder only its user can open (in.sock), and they
// reach the machine's loopback services, listed when the session starts,
// through another (out.sock): the supervisor (RunSession, `miniapp-host
// webdriver-session`) listens on each of those addresses inside and
// carries each connection out to the front, which dials the address it
// names, and no other.

// Network modes of Config.Network.
const (
	// NetworkShared runs a session's host and driver on the machine's
	// loopback: any local process can attach to its inspector.
	NetworkShared = "shared"
	// NetworkPrivate runs them in a network namespace of their own.
	NetworkPrivate = "private"
)

// Names of the session folder's sockets.
const (
	inSocket  = "in.sock"  // the front's way into the session's network
	outSocket = "out.sock" // the session's way out to the machine's loopback
)

// maxTarget bounds the address line of a carried connection.
const maxTarget = 300

// PrivateNetworkCheck tells whether bwrap (bubblewrap's path) can start a
// process in a network namespace of its own here; the error says what is
// missing. It runs `bwrap --unshare-net ... true`.
func PrivateNetworkCheck(bwrap string) error {
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return fmt.Errorf("%s: %w (install Debian's bubblewrap)", bwrap, err)
	}
	cmd := exec.Command(path, append(bwrapArgs(), "true")...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s --unshare-net: %v: %s (user namespaces may be disabled: sysctl kernel.unprivileged_userns_clone, or an AppArmor rule for bwrap)",
			path, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// bwrapArgs are bubblewrap's flags for a session: the whole file system as
// it is, a network namespace of its own, and nothing left behind if the
// front dies.
func bwrapArgs() []string {
	return []string{"--unshare-net", "--die-with-parent", "--dev-bind", "/", "/", "--"}
}

// privateSpec is what the front tells the supervisor, as one JSON line on
// its standard input (which stays open: its end stops the session).
type privateSpec struct {
	// Folder holds in.sock and out.sock.
	Folder string `json:"folder"`
	// Mirror are the machine's loopback addresses the session reaches,
	// each listened on inside and carried out through out.sock.
	Mirror []string `json:"mirror"`
	// Host is the host's command line; it gets the supervisor's
	// descriptors 3 and 4 as its own.
	Host []string `json:"host"`
	// Driver is WebKitWebDriver's path.
	Driver string `json:"driver"`
	// Grace is how long the host and driver may take to exit once asked.
	Grace time.Duration `json:"grace"`
}

// privateReady is the supervisor's one line on its standard output once
// the driver is started: where it listens, inside.
type privateReady struct {
	Driver string `json:"driver"`
}

// RunSession is the supervisor of one private session (`miniapp-host
// webdriver-session`, started by the front inside bubblewrap): it reads
// the spec on stdin, mirrors the machine's loopback services, starts the
// host and its driver, and carries the front's connections in. It ends
// with the host (its exit code), and ends the host when stdin ends (the
// front's Delete Session, its Close, or its death) or the driver exits.
func RunSession(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(io.LimitReader(stdin, 1<<20))
	line, err := in.ReadBytes('\n')
	var spec privateSpec
	if err == nil {
		err = json.Unmarshal(line, &spec)
	}
	if err == nil && (spec.Folder == "" || len(spec.Host) == 0 || spec.Driver == "") {
		err = errors.New("the spec names no folder, host or driver")
	}
	if err != nil {
		fmt.Fprintln(stderr, "miniapp-host webdriver-session: the front's spec on standard input:", err, "(this command is started by `miniapp-host webdriver`)")
		return 2
	}
	s := &supervisor{spec: spec, log: stderr}
	code, err := s.run(ctx, in, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "miniapp-host webdriver-session:", err)
	}
	return code
}

type supervisor struct {
	spec      privateSpec
	log       io.Writer
	listeners []net.Listener
}

func (s *supervisor) run(ctx context.Context, stdin io.Reader, stdout io.Writer) (int, error) {
	defer func() {
		for _, ln := range s.listeners {
			ln.Close()
		}
	}()
	out := filepath.Join(s.spec.Folder, outSocket)
	for _, addr := range s.spec.Mirror {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			// An address family the namespace lacks (no ::1): the
			// session reaches the service by the other one.
			fmt.Fprintf(s.log, "miniapp-host webdriver-session: %s is not reachable in the session: %v\n", addr, err)
			continue
		}
		s.listeners = append(s.listeners, ln)
		go carry(ln, nil, func(context.Context) (string, error) { return addr, nil },
			func(ctx context.Context, target string) (net.Conn, error) { return dialThrough(ctx, out, target) })
	}
	inspector, err := s.freePort()
	if err != nil {
		return 1, err
	}
	port, err := s.freePort()
	if err != nil {
		return 1, err
	}
	inLn, err := net.Listen("unix", filepath.Join(s.spec.Folder, inSocket))
	if err != nil {
		return 1, err
	}
	s.listeners = append(s.listeners, inLn)
	go carry(inLn, nil, readTarget(notTheInspector(inspector)), dialTCP)
	host := exec.Command(s.spec.Host[0], s.spec.Host[1:]...)
	host.Env = append(os.Environ(), "WEBKIT_INSPECTOR_SERVER=127.0.0.1:"+strconv.Itoa(inspector))
	host.Stdout, host.Stderr = s.log, s.log
	host.ExtraFiles = []*os.File{os.NewFile(3, "fd3"), os.NewFile(4, "fd4")}
	host.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	host.WaitDelay = time.Second
	if err := host.Start(); err != nil {
		return 1, fmt.Errorf("start the host %s: %w", s.spec.Host[0], err)
	}
	for _, f := range host.ExtraFiles {
		f.Close() // the host's now: the front sees the automation pipe end with it
	}
	hostDone := watch(host)
	driver := exec.Command(s.spec.Driver, "--host=127.0.0.1", "--port="+strconv.Itoa(port), "--target=127.0.0.1:"+strconv.Itoa(inspector))
	driver.Stdout, driver.Stderr = s.log, s.log
	driver.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	driver.WaitDelay = time.Second
	if err := driver.Start(); err != nil {
		stopProcess(host, hostDone, s.spec.Grace)
		return 1, fmt.Errorf("start %s: %w", s.spec.Driver, err)
	}
	driverDone := watch(driver)
	ready, _ := json.Marshal(privateReady{Driver: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	stdout.Write(append(ready, '\n'))

	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin)
		close(stop)
	}()
	select {
	case <-hostDone:
	case <-driverDone:
		fmt.Fprintln(s.log, "miniapp-host webdriver-session: the driver exited: the session ends")
	case <-stop:
	case <-ctx.Done(): // SIGTERM or SIGINT
	}
	stopProcess(host, hostDone, s.spec.Grace)
	stopProcess(driver, driverDone, s.spec.Grace)
	return host.ProcessState.ExitCode(), nil
}

// freePort is a port of the session's own loopback that no mirror holds.
func (s *supervisor) freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("a port of the session's loopback: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// errNotMirrored refuses a session's connection to an address it was not
// given.
func errNotMirrored(addr string) error {
	return fmt.Errorf("%s was not listening on the machine's loopback when the session started", addr)
}

// dialTCP dials addr over TCP, as a carried connection's far end.
func dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	return (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", addr)
}

// watch waits for cmd in the background; the channel closes when it has
// exited.
func watch(cmd *exec.Cmd) chan struct{} {
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	return done
}

// carried is the connections a carrier holds, both ends of each: a
// session's end closes them (closeAll), so that nothing it carried still
// reaches an address once it has ended, whatever the far end does with
// a half-closed connection. The zero value is ready; a nil one tracks
// nothing.
type carried struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// add tracks c; false (and c closed) once closeAll has run.
func (s *carried) add(c net.Conn) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

// done closes c and forgets it.
func (s *carried) done(c net.Conn) {
	c.Close()
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// closeAll closes every connection held, and every one added later.
func (s *carried) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// carry accepts connections on ln until it is closed; for each, target
// names where it goes (reading it from the connection if need be) and
// dial reaches it, then both are joined until either side ends or held
// (when not nil) closes them all.
func carry(ln net.Listener, held *carried, target func(context.Context) (string, error), dial func(ctx context.Context, addr string) (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !held.add(c) {
			continue
		}
		go func() {
			defer held.done(c)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			addr, err := targetOf(ctx, c, target)
			if err != nil {
				return
			}
			up, err := dial(ctx, addr)
			if err != nil {
				answer(c, err)
				return
			}
			if !held.add(up) {
				return
			}
			defer held.done(up)
			if err := answer(c, nil); err != nil {
				return
			}
			join(c, up)
		}()
	}
}

// targetKey carries the accepted connection to a target function that
// reads the address from it.
type targetKey struct{}

func targetOf(ctx context.Context, c net.Conn, target func(context.Context) (string, error)) (string, error) {
	return target(context.WithValue(ctx, targetKey{}, c))
}

// answer is the carrier's reply to a connection that named its target
// (readTarget): "ok", or the reason on one line. A mirror's connection
// (a plain TCP client) gets no reply.
func answer(c net.Conn, err error) error {
	if _, ok := c.(*net.UnixConn); !ok {
		return nil
	}
	line := "ok\n"
	if err != nil {
		line = "refused: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
	}
	_, werr := io.WriteString(c, line)
	return werr
}

// readTarget reads the address line a Unix-socket client sends first
// (dialThrough) and checks it with allow.
func readTarget(allow func(string) error) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		c := ctx.Value(targetKey{}).(net.Conn)
		deadline, _ := ctx.Deadline()
		c.SetReadDeadline(deadline)
		defer c.SetReadDeadline(time.Time{})
		// Byte by byte: nothing past the line may be read away from
		// the connection it belongs to.
		var b []byte
		one := make([]byte, 1)
		for len(b) <= maxTarget {
			if _, err := c.Read(one); err != nil {
				return "", err
			}
			if one[0] == '\n' {
				addr := string(b)
				if err := allow(addr); err != nil {
					answer(c, err)
					return "", err
				}
				return addr, nil
			}
			b = append(b, one[0])
		}
		answer(c, fmt.Errorf("an address line over %d bytes", maxTarget))
		return "", errors.New("address line too long")
	}
}

// loopbackTarget allows the session's own loopback only (its inspector is
// not among what the front dials, but nothing else is there to reach).
func loopbackTarget(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("%q is not a loopback address and port", addr)
	}
	return nil
}

// notTheInspector allows the session's own loopback but the inspector's
// port: the front needs the driver and the automation channel only, and
// nothing but the session's driver is to attach to the inspector, even
// through the front's folder.
func notTheInspector(inspector int) func(string) error {
	return func(addr string) error {
		if err := loopbackTarget(addr); err != nil {
			return err
		}
		if ap, _ := netip.ParseAddrPort(addr); int(ap.Port()) == inspector {
			return fmt.Errorf("%s is the session's inspector: only its driver attaches to it", addr)
		}
		return nil
	}
}

// dialThrough connects to addr through the carrier listening on the Unix
// socket at path: the address line, then "ok" or the reason it refused.
func dialThrough(ctx context.Context, path, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		c.SetDeadline(deadline)
	}
	if _, err := io.WriteString(c, addr+"\n"); err != nil {
		c.Close()
		return nil, err
	}
	var b []byte
	one := make([]byte, 1)
	for len(b) <= maxTarget+100 {
		if _, err := c.Read(one); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s through %s: %w", addr, path, err)
		}
		if one[0] == '\n' {
			break
		}
		b = append(b, one[0])
	}
	if string(b) != "ok" {
		c.Close()
		return nil, fmt.Errorf("%s through %s: %s", addr, path, b)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// join copies both ways until both directions have ended, passing on each
// side's end of writing.
func join(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// loopbackListeners lists the machine's listening TCP sockets a session
// may need (bound to a loopback or an any address) from /proc/net/tcp and
// tcp6, as the loopback addresses to mirror: 127.0.0.1:P for IPv4 (and
// 127.x.y.z as bound), [::1]:P for IPv6, both for a dual-stack [::]:P.
func loopbackListeners() ([]string, error) {
	var out []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) && file == "/proc/net/tcp6" {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		out = append(out, parseListeners(string(b))...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// parseListeners reads one /proc/net/tcp{,6} table (proc_net_tcp(5)): the
// local address of each socket in state 0A (LISTEN), as hex address and
// port, the address in the kernel's byte order by 32-bit words.
func parseListeners(table string) []string {
	var out []string
	for i, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 4 || f[3] != "0A" {
			continue
		}
		hexAddr, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			continue
		}
		addr, ok := procAddr(hexAddr)
		if !ok {
			continue
		}
		p := strconv.Itoa(int(port))
		switch {
		case addr.Is4() && addr.IsLoopback():
			out = append(out, net.JoinHostPort(addr.String(), p))
		case addr.Is4() && addr.IsUnspecified():
			out = append(out, net.JoinHostPort("127.0.0.1", p))
		case addr.Is6() && addr.IsLoopback():
			out = append(out, net.JoinHostPort("::1", p))
		case addr.Is6() && addr.IsUnspecified():
			out = append(out, net.JoinHostPort("127.0.0.1", p), net.JoinHostPort("::1", p))
		case addr.Is4In6() && addr.Unmap().IsLoopback():
			out = append(out, net.JoinHostPort(addr.Unmap().String(), p))
		}
	}
	return out
}

// procAddr decodes /proc/net/tcp's address: 8 hex digits (IPv4) or 32
// (IPv6), each the kernel's %08X of a 32-bit word of the address as the
// machine reads it (so its bytes in native order).
func procAddr(h string) (netip.Addr, bool) {
	if len(h) != 8 && len(h) != 32 {
		return netip.Addr{}, false
	}
	raw := make([]byte, len(h)/2)
	for w := 0; w < len(h); w += 8 {
		v, err := strconv.ParseUint(h[w:w+8], 16, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		binary.NativeEndian.PutUint32(raw[w/2:], uint32(v))
	}
	a, ok := netip.AddrFromSlice(raw)
	return a, ok
}

// privateSession is a session's private network, on the front's side.
type privateSession struct {
	folder  string         // holds in.sock and out.sock; only the front's user opens it
	lock    *os.File       // the folder's lock file, locked while the session lives (stale.go)
	out     net.Listener   // out.sock: the session's way to the machine's loopback
	carried carried        // the connections carried out through out.sock
	control io.WriteCloser // the supervisor's standard input: closing it ends the session
}

// startPrivate starts the session's supervisor in a network namespace of
// its own (bubblewrap), which starts the host and its driver there, and
// waits for both: the host's automation channel, the driver's /status.
func (f *Front) startPrivate(ctx context.Context, s *session, args []string) (host.AutomationInfo, error) {
	var info host.AutomationInfo
	folder, err := os.MkdirTemp("", folderPrefix) // mode 0700
	if err != nil {
		return info, fmt.Errorf("webdriverfront: the session's folder: %w", err)
	}
	p := &privateSession{folder: folder}
	s.private = p
	if p.lock, err = lockFolder(folder); err != nil {
		return info, fmt.Errorf("webdriverfront: the session's folder: %w", err)
	}
	mirror, err := loopbackListeners()
	if err != nil {
		return info, fmt.Errorf("webdriverfront: the machine's loopback services: %w", err)
	}
	if p.out, err = net.Listen("unix", filepath.Join(folder, outSocket)); err != nil {
		return info, fmt.Errorf("webdriverfront: %w", err)
	}
	go carry(p.out, &p.carried, readTarget(func(addr string) error {
		if !slices.Contains(mirror, addr) {
			return errNotMirrored(addr)
		}
		return nil
	}), dialTCP)
	in := filepath.Join(folder, inSocket)
	s.dial = func(ctx context.Context, _, addr string) (net.Conn, error) { return dialThrough(ctx, in, addr) }
	s.client = &http.Client{Transport: &http.Transport{DialContext: s.dial, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}

	spec, err := json.Marshal(privateSpec{Folder: folder, Mirror: mirror, Host: append([]string{f.cfg.Host}, f.hostArgv(args)...),
		Driver: f.cfg.Driver, Grace: f.cfg.StopTimeout})
	if err != nil {
		return info, err
	}
	cmd := exec.Command(f.cfg.Bwrap, append(bwrapArgs(), f.cfg.Supervisor...)...)
	cmd.Env = f.cfg.Env
	if p.control, err = cmd.StdinPipe(); err != nil {
		return info, fmt.Errorf("webdriverfront: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return info, fmt.Errorf("webdriverfront: %w", err)
	}
	defer readyR.Close()
	cmd.Stdout = readyW
	ready := make(chan privateReady, 1)
	info, err = f.startHost(ctx, s, args, cmd, func() {
		readyW.Close()
		p.control.Write(append(spec, '\n'))
		go func() {
			var r privateReady
			if line, err := bufio.NewReader(readyR).ReadBytes('\n'); err == nil && json.Unmarshal(line, &r) == nil {
				ready <- r
			}
		}()
	})
	if err != nil {
		readyW.Close() // when the host never started
		return info, err
	}
	var r privateReady
	select {
	case r = <-ready:
	case <-s.hostDone:
		return info, errors.New("webdriverfront: the session's supervisor exited before its driver started")
	case <-ctx.Done():
		return info, fmt.Errorf("webdriverfront: the session's driver did not start within %s: %w", f.cfg.StartTimeout, ctx.Err())
	}
	u := &url.URL{Scheme: "http", Host: r.Driver}
	if err := waitReady(ctx, s.client, u, s.hostDone); err != nil {
		return info, fmt.Errorf("webdriverfront: %s did not listen in the session's network: %w", f.cfg.Driver, err)
	}
	s.drvURL = u
	return info, nil
}

// stop ends the session: the supervisor, told by the end of its standard
// input, stops the host and then the driver (each given grace, as
// stopProcess does); killed if it takes longer. Then the folder goes.
func (p *privateSession) stop(s *session, grace time.Duration) {
	if p.control != nil {
		p.control.Close()
	}
	if s.host != nil && s.host.Process != nil {
		t := time.NewTimer(2*grace + 5*time.Second)
		select {
		case <-s.hostDone:
		case <-t.C:
			s.host.Process.Kill() // bubblewrap: its --die-with-parent kills the supervisor, whose Pdeathsig kills the host and driver
			<-s.hostDone
		}
		t.Stop()
	}
	if p.out != nil {
		p.out.Close()
	}
	// What the session carried out ends with it: a connection whose
	// far side ignores the session's end of it would otherwise keep the
	// front's descriptors, and a process of the session's that outlived
	// it its way to the machine's loopback.
	p.carried.closeAll()
	os.RemoveAll(p.folder)
	if p.lock != nil {
		p.lock.Close()
	}
}
