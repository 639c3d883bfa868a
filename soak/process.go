package soak

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// playground is the running `miniapp-host playground` process.
type playground struct {
	cmd    *exec.Cmd
	xvfb   *exec.Cmd // its own X server (Config.OwnDisplay), or nil
	xdg    string
	exited chan struct{} // closed when the process has been waited for
	state  *os.ProcessState
	werr   error

	// What it printed (docs/playground.md, printPlayground).
	launcher, automationURL, token string
	demos                          map[string]string // Miniapp id -> origin
	subjects                       []string

	logMu sync.Mutex
	log   io.Writer
	tail  []string // the last lines of stderr, for the report
}

// started is what the playground's stdout said once it was up.
type started struct {
	launcher, automationURL, token string
	demos                          map[string]string
	subjects                       []string
}

// startPlayground starts the binary and returns once it has printed its
// automation channel, its Miniapps and (with a window) that the launcher is
// loaded; it waits on those lines, up to timeout.
func startPlayground(ctx context.Context, cfg Config, logw io.Writer) (*playground, error) {
	xdg, err := os.MkdirTemp("", "miniapp-host-soak-xdg-")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"data", "cache", "config"} {
		if err := os.MkdirAll(filepath.Join(xdg, d), 0o700); err != nil {
			os.RemoveAll(xdg)
			return nil, err
		}
	}
	addr, launcher := "127.0.0.1:0", "127.0.0.1:0"
	if cfg.PickPorts {
		// One range of 14: the service and its next three, then the
		// launcher and its next nine.
		base, err := freeRange(14)
		if err != nil {
			os.RemoveAll(xdg)
			return nil, err
		}
		addr, launcher = net.JoinHostPort("127.0.0.1", strconv.Itoa(base)), net.JoinHostPort("127.0.0.1", strconv.Itoa(base+4))
	}
	args := []string{"playground", "--addr", addr, "--launcher-addr", launcher}
	if cfg.NoWindow {
		args = append(args, "--no-window")
	}
	var xvfb *exec.Cmd
	env := os.Environ()
	if cfg.OwnDisplay {
		var display string
		if xvfb, display, err = startXvfb(); err != nil {
			os.RemoveAll(xdg)
			return nil, err
		}
		env = append(env, "DISPLAY="+display)
	}
	cmd := exec.Command(cfg.Binary, args...)
	cmd.Env = append(env,
		"XDG_DATA_HOME="+filepath.Join(xdg, "data"),
		"XDG_CACHE_HOME="+filepath.Join(xdg, "cache"),
		"XDG_CONFIG_HOME="+filepath.Join(xdg, "config"),
		"WEBKIT_DISABLE_COMPOSITING_MODE=1")
	// Its own process group: a Ctrl-C meant for the driver does not reach
	// it, so the driver's SIGTERM is the only one it gets.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Pipes of its own rather than StdoutPipe: WebKit's processes inherit
	// them and may hold them open after the playground has exited, and
	// the exit must be seen when it happens, not when they let go.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(xdg)
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		os.RemoveAll(xdg)
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		os.RemoveAll(xdg)
		return nil, fmt.Errorf("soak: start %s: %w", cfg.Binary, err)
	}
	p := &playground{cmd: cmd, xvfb: xvfb, xdg: xdg, exited: make(chan struct{}), log: logw, demos: map[string]string{}}
	up := make(chan started, 1)
	go func() { defer stdoutR.Close(); p.readStdout(stdoutR, up, cfg.NoWindow) }()
	go func() { defer stderrR.Close(); p.readStderr(stderrR) }()
	go func() {
		p.werr = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	t := time.NewTimer(cfg.StartTimeout)
	defer t.Stop()
	select {
	case s := <-up:
		p.launcher, p.automationURL, p.token, p.demos, p.subjects = s.launcher, s.automationURL, s.token, s.demos, s.subjects
		return p, nil
	case <-p.exited:
		p.cleanup()
		return nil, fmt.Errorf("soak: the playground exited before it was up (%v); its stderr ends with:\n%s", p.werr, p.stderrTail())
	case <-t.C:
		p.kill()
		return nil, fmt.Errorf("soak: the playground did not print its addresses and \"the launcher is loaded\" within %s; its stderr ends with:\n%s",
			cfg.StartTimeout, p.stderrTail())
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

func (p *playground) writeLog(prefix, line string) {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if p.log != nil {
		fmt.Fprintf(p.log, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, line)
	}
}

// readStdout reads the printed block: "automation channel  ws://…",
// "automation token  …", "demo Miniapp  ORIGIN  --id ID  (demo)",
// "subjects  a, b, c (…)" and, with a window, "window  the launcher is
// loaded". It sends what it read once all of it is there, then drains.
func (p *playground) readStdout(r io.Reader, up chan<- started, noWindow bool) {
	var s started
	s.demos = map[string]string{}
	sent := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		// The token is a secret of this run only; it is not logged.
		if strings.HasPrefix(line, "automation token") || strings.HasPrefix(line, "launcher ") {
			p.writeLog("stdout", strings.SplitN(line, " ", 2)[0]+" …")
		} else {
			p.writeLog("stdout", line)
		}
		s.read(line)
		loaded := noWindow || strings.HasPrefix(line, "window") && strings.Contains(line, "the launcher is loaded")
		if !sent && loaded && s.whole() {
			up <- s
			sent = true
		}
	}
}

// read notes what one line of the printed block says.
func (s *started) read(line string) {
	f := strings.Fields(line)
	switch {
	case strings.HasPrefix(line, "launcher ") && len(f) == 2:
		s.launcher = strings.SplitN(f[1], "#", 2)[0]
	case strings.HasPrefix(line, "automation channel") && len(f) == 3:
		s.automationURL = f[2]
	case strings.HasPrefix(line, "automation token") && len(f) == 3:
		s.token = f[2]
	case strings.HasPrefix(line, "demo Miniapp") && len(f) >= 5 && f[3] == "--id":
		s.demos[f[4]] = f[2]
	case strings.HasPrefix(line, "subjects") && len(f) >= 2:
		rest := strings.TrimSpace(strings.TrimPrefix(line, "subjects"))
		rest = strings.SplitN(rest, "(", 2)[0]
		for _, sub := range strings.Split(rest, ",") {
			if sub = strings.TrimSpace(sub); sub != "" {
				s.subjects = append(s.subjects, sub)
			}
		}
	}
}

// whole reports whether the block has said all a soak needs: the channel,
// its token, two demo Miniapps and the subjects.
func (s *started) whole() bool {
	return s.automationURL != "" && s.token != "" && len(s.demos) >= 2 && len(s.subjects) > 0
}

func (p *playground) readStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		p.writeLog("stderr", line)
		p.logMu.Lock()
		p.tail = append(p.tail, line)
		if len(p.tail) > 20 {
			p.tail = p.tail[len(p.tail)-20:]
		}
		p.logMu.Unlock()
	}
}

func (p *playground) stderrTail() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return strings.Join(p.tail, "\n")
}

func (p *playground) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited yet.
func (p *playground) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// terminate sends SIGTERM and waits up to timeout for the exit. It
// returns whether the process exited in time, its exit code (-1 for a
// signal), and how long it took.
func (p *playground) terminate(timeout time.Duration) (exited bool, code int, took time.Duration) {
	start := time.Now()
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return true, p.state.ExitCode(), time.Since(start)
	case <-t.C:
		return false, 0, time.Since(start)
	}
}

// kill sends SIGKILL to the process and to its process group (the WebKit
// processes it started), waits for it, and removes the XDG folder.
func (p *playground) kill() {
	_ = p.cmd.Process.Kill()
	p.cleanup()
}

// cleanup ends what is left of the process group (WebKit's helpers exit
// with their parent, but not always at once), waits for the process (at
// most 10 s) and removes the XDG folder.
func (p *playground) cleanup() {
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
	os.RemoveAll(p.xdg)
	if p.xvfb != nil {
		_ = p.xvfb.Process.Kill()
		_ = p.xvfb.Wait()
	}
}

// startXvfb starts an X server on a free display (Xvfb -displayfd writes
// the number it took once it accepts connections) and returns it with its
// DISPLAY value.
func startXvfb() (*exec.Cmd, string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	x := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x900x24", "-nolisten", "tcp")
	x.ExtraFiles = []*os.File{w}
	if err := x.Start(); err != nil {
		w.Close()
		return nil, "", fmt.Errorf("soak: start Xvfb (scripts/deps.sh installs it): %w", err)
	}
	w.Close()
	num, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		_ = x.Process.Kill()
		_ = x.Wait()
		return nil, "", fmt.Errorf("soak: Xvfb gave no display number: %w", err)
	}
	return x, ":" + strings.TrimSpace(num), nil
}

// Memory is a sample of resident memory, in bytes.
type Memory struct {
	Host   int64 // the playground process (VmRSS)
	WebKit int64 // its descendant processes (WebKit's web and network processes), summed
	Procs  int   // how many descendants were summed
}

// sampleMemory reads VmRSS of pid and of every descendant of it.
func sampleMemory(pid int) Memory {
	m := Memory{Host: vmRSS(pid)}
	for _, c := range descendants(pid) {
		m.WebKit += vmRSS(c)
		m.Procs++
	}
	return m
}

// vmRSS is VmRSS from /proc/PID/status, in bytes; 0 when unreadable.
func vmRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// descendants lists every process whose parent chain reaches pid.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, err := ppid(n); err == nil {
			children[pp] = append(children[pp], n)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func ppid(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, errors.New("bad stat")
	}
	return strconv.Atoi(f[1])
}

// freeRange returns a loopback port that, with the n-1 after it, was free
// a moment ago, below the kernel's ephemeral range (so that no
// outgoing connection takes one in between).
func freeRange(n int) (int, error) {
	for try := 0; try < 200; try++ {
		base := 20000 + rand.IntN(12000-n)
		var lns []net.Listener
		ok := true
		for i := 0; i < n; i++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			ln.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("soak: no %d consecutive free loopback ports found", n)
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
