package webdriverfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/device"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// session is one New Session's host, driver and automation channel.
type session struct {
	id       string
	host     *exec.Cmd
	hostDone chan struct{} // closed when the host has exited
	driver   *exec.Cmd
	drvDone  chan struct{} // closed when the driver has exited
	drvURL   *url.URL
	proxy    *httputil.ReverseProxy
	auto     *client.Client
	ended    sync.Once
	// client reaches the driver, and dial the automation channel:
	// directly on the shared loopback, through the session folder's
	// in.sock in a private network (private.go).
	client *http.Client
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	// private is the session's private network; nil on the shared one.
	private *privateSession
	// viewport is the device the session's Miniapp is shown as
	// (miniapp-host:options); zero for the desktop.
	viewport device.Viewport
}

// frontFlags are the flags of `open` the front passes itself; a session's
// args may not carry them.
var frontFlags = []string{"secret-fd", "automation-fd"}

// boundFlags are the flags of `open` that choose where the host sends its
// secret (docs/webdriver.md, "One service"): the front passes its own
// after the session's, and a session's may only repeat the front's value.
func (f *Front) boundFlags() map[string]string {
	return map[string]string{"dashboard": f.cfg.Dashboard, "service": f.cfg.Service}
}

// sameURL compares a session's --dashboard or --service with the front's
// as the host reads them: without a trailing slash (host.Discover,
// host.ServiceIssuer), otherwise byte for byte (RFC 8414 section 3.3).
func sameURL(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// flagRefusal checks the flags of a session's args (after "open",
// "--webdriver") as `open`'s flag parser reads them: -name, --name,
// -name=value, --name value. An argument that spells a flag of the front's
// is refused wherever it is (even as another flag's value: nothing a client
// needs looks like one). It returns "" when the args pass.
func (f *Front) flagRefusal(args []string) string {
	bound := f.boundFlags()
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		for _, own := range frontFlags {
			if name == own {
				return fmt.Sprintf("%s.args: --%s is the front's own (it passes the host's secret and reads its automation channel); leave it out", browserOptions, own)
			}
		}
		want, isBound := bound[name]
		if !isBound {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return fmt.Sprintf("%s.args: --%s has no value; leave --%s out: the front passes its own, %s", browserOptions, name, name, want)
			}
			value = args[i+1]
		}
		if !sameURL(value, want) {
			return fmt.Sprintf("%s.args: --%s %q is not this front's %s %q: the front gives each host its secret, which goes to the service it was started for only; "+
				"leave --%s out (the front passes its own), or start another front for that %s (miniapp-host webdriver --%s URL)",
				browserOptions, name, value, name, want, name, name, name)
		}
	}
	return ""
}

// sessionArgs checks a New Session's capabilities and returns the host's
// arguments (from webkitgtk:browserOptions) and the body to forward, with
// webkitgtk:browserOptions removed (the driver, with --target, starts
// nothing). A refusal is a message for `invalid argument`.
func (f *Front) sessionArgs(body []byte) (args []string, forward []byte, vp device.Viewport, refusal string) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var req map[string]any
	if err := d.Decode(&req); err != nil || d.More() {
		return nil, nil, vp, "the New Session body is not one JSON object: " + fmt.Sprint(err)
	}
	caps, ok := req["capabilities"].(map[string]any)
	if !ok {
		return nil, nil, vp, `New Session takes W3C capabilities: {"capabilities": {"alwaysMatch": {"webkitgtk:browserOptions": {"args": ["open", "--webdriver", ...]}}}}`
	}
	always, msg := alwaysMatch(caps)
	if msg != "" {
		return nil, nil, vp, msg
	}
	if args, msg = f.browserArgs(always); msg != "" {
		return nil, nil, vp, msg
	}
	more, vp, msg := optionArgs(always)
	if msg != "" {
		return nil, nil, vp, msg
	}
	args = append(args, more...)
	delete(always, browserOptions)
	if desired, ok := req["desiredCapabilities"].(map[string]any); ok {
		delete(desired, browserOptions)
	}
	forward, err := json.Marshal(req)
	if err != nil {
		return nil, nil, vp, "the New Session body cannot be re-encoded: " + err.Error()
	}
	return args, forward, vp, ""
}

// alwaysMatch returns the capabilities' alwaysMatch (empty when absent),
// refusing webkitgtk:browserOptions in any firstMatch: the front starts
// one host per session.
func alwaysMatch(caps map[string]any) (map[string]any, string) {
	always := map[string]any{}
	if v, present := caps["alwaysMatch"]; present {
		var ok bool
		if always, ok = v.(map[string]any); !ok {
			return nil, "capabilities.alwaysMatch is not an object"
		}
	}
	v, present := caps["firstMatch"]
	if !present {
		return always, ""
	}
	list, ok := v.([]any)
	if !ok {
		return nil, "capabilities.firstMatch is not an array"
	}
	for i, m := range list {
		if o, ok := m.(map[string]any); ok {
			if _, has := o[browserOptions]; has {
				return nil, fmt.Sprintf("capabilities.firstMatch[%d] has %s: give it once, in alwaysMatch (the front starts one host per session)", i, browserOptions)
			}
		}
	}
	return always, ""
}

// browserArgs reads alwaysMatch's webkitgtk:browserOptions: this front's
// host binary (or none) and args that are `open --webdriver` and open's
// flags, none of them the front's own (flagRefusal).
func (f *Front) browserArgs(always map[string]any) (args []string, refusal string) {
	opts, ok := always[browserOptions].(map[string]any)
	if !ok {
		return nil, fmt.Sprintf(`capabilities.alwaysMatch.%s is required, an object: {"args": ["open", "--webdriver", "--origin", ORIGIN, "--id", ID, ...]} (the front fills in binary)`, browserOptions)
	}
	for k := range opts {
		if k != "binary" && k != "args" {
			return nil, fmt.Sprintf("%s.%s is not supported by miniapp-host webdriver: give binary (optional) and args only", browserOptions, k)
		}
	}
	if b, present := opts["binary"]; present {
		bin, ok := b.(string)
		if !ok || !sameFile(bin, f.cfg.Host) {
			return nil, fmt.Sprintf("%s.binary %v: this front starts %s only; leave binary out and the front fills it in", browserOptions, b, f.cfg.Host)
		}
	}
	raw, _ := opts["args"].([]any)
	for _, a := range raw {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Sprintf("%s.args holds %v, not a string", browserOptions, a)
		}
		args = append(args, s)
	}
	if len(args) < 2 || args[0] != "open" || args[1] != "--webdriver" {
		return nil, fmt.Sprintf(`%s.args %q: they must start with "open", "--webdriver" (the front starts miniapp-host open --webdriver only), then open's flags (docs/webdriver.md)`, browserOptions, args)
	}
	if msg := f.flagRefusal(args[2:]); msg != "" {
		return nil, msg
	}
	return args, ""
}

// startError is why a session could not start: status and code of the
// W3C error the client receives.
type startError struct {
	status int
	code   string
	msg    string
}

func (e *startError) Error() string { return e.msg }

func (f *Front) newSession(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, errInvalidArgument, "reading the New Session body: "+err.Error())
		return
	}
	args, forward, vp, refusal := f.sessionArgs(body)
	if refusal != "" {
		fmt.Fprintf(f.log, "miniapp-host webdriver: refused New Session: %s\n", refusal)
		writeError(w, http.StatusBadRequest, errInvalidArgument, refusal)
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		writeError(w, http.StatusInternalServerError, errSessionNotMade, "miniapp-host webdriver is stopping")
		return
	}
	f.starting.Add(1)
	f.mu.Unlock()
	defer f.starting.Done()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(f.ctx, cancel)
	defer stop()

	s, status, answer, err := f.start(ctx, args, forward)
	if err != nil {
		var se *startError
		if !errors.As(err, &se) {
			se = &startError{http.StatusInternalServerError, errSessionNotMade, err.Error()}
		}
		fmt.Fprintf(f.log, "miniapp-host webdriver: New Session failed: %s\n", se.msg)
		writeError(w, se.status, se.code, se.msg)
		return
	}
	if s == nil { // the driver refused: its answer goes back as it came
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		w.Write(answer)
		return
	}
	s.viewport = vp
	f.mu.Lock()
	f.sessions[s.id] = s
	f.mu.Unlock()
	// A host that exits (its window closed, a crash) ends its session.
	go func() {
		<-s.hostDone
		f.end(s)
	}()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(answer)
}

// start starts the host and its driver and forwards New Session. It
// returns the session, or nil and the driver's refusal (status and body),
// or an error; on anything but a session, what it started is stopped.
func (f *Front) start(ctx context.Context, args []string, forward []byte) (_ *session, status int, answer []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.StartTimeout)
	defer cancel()
	s := &session{hostDone: make(chan struct{}), drvDone: make(chan struct{})}
	defer func() {
		if err != nil || s.id == "" {
			f.stop(s)
		}
	}()
	var info host.AutomationInfo
	if f.cfg.Network == NetworkPrivate {
		info, err = f.startPrivate(ctx, s, args)
	} else {
		info, err = f.startShared(ctx, s, args)
	}
	if err != nil {
		return nil, 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.drvURL.String()+"/session", bytes.NewReader(forward))
	if err != nil {
		return nil, 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	ans, err := jsonhttp.Do(s.client, req, maxBody)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("webdriverfront: New Session to the session's driver: %w", err)
	}
	answer = ans.Body
	if ans.Status != http.StatusOK {
		return nil, ans.Status, answer, nil
	}
	var made struct {
		Value struct {
			SessionID string `json:"sessionId"`
		} `json:"value"`
	}
	if err := json.Unmarshal(answer, &made); err != nil || made.Value.SessionID == "" {
		return nil, 0, nil, fmt.Errorf("webdriverfront: the driver's New Session answer names no session: %.200s", answer)
	}
	auto, err := client.DialVia(ctx, info.URL, info.Token, s.dial)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("webdriverfront: the host's automation channel: %w", err)
	}
	s.auto = auto
	s.id = made.Value.SessionID
	s.proxy = &httputil.ReverseProxy{
		Transport: s.client.Transport,
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(s.drvURL); pr.Out.Host = s.drvURL.Host },
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, http.StatusInternalServerError, errUnknown, "the session's driver did not answer: "+err.Error())
		},
	}
	return s, ans.Status, answer, nil
}

// startShared starts the session's host and driver on the machine's
// loopback (NetworkShared).
func (f *Front) startShared(ctx context.Context, s *session, args []string) (host.AutomationInfo, error) {
	s.client = http.DefaultClient
	inspector, err := freePort()
	if err != nil {
		return host.AutomationInfo{}, err
	}
	cmd := exec.Command(f.cfg.Host, f.hostArgv(args)...)
	cmd.Env = append(append([]string(nil), f.cfg.Env...), "WEBKIT_INSPECTOR_SERVER=127.0.0.1:"+strconv.Itoa(inspector))
	info, err := f.startHost(ctx, s, args, cmd, nil)
	if err != nil {
		return info, err
	}
	return info, f.startDriver(ctx, s, inspector)
}

// hostArgv is the host's command line after its binary: `open
// --webdriver ...`. The front's descriptors come first, before any of the
// session's flags; its dashboard and service last, so that they are the
// ones the host reads (the last of a flag wins) whatever the session
// spelled.
func (f *Front) hostArgv(args []string) []string {
	own := []string{"open", "--automation-fd", "4"}
	if f.cfg.Secret != "" {
		own = append(own, "--secret-fd", "3")
	}
	return append(append(own, args[1:]...), "--dashboard", f.cfg.Dashboard, "--service", f.cfg.Service)
}

// startHost starts cmd, the host (or, in a private network, the
// supervisor that starts it), with the secret on its descriptor 3 and
// waits (bounded by ctx) for the automation channel's address on its
// descriptor 4, which the host writes once its window exists (and with it
// the inspector server the driver connects to). started, if not nil, runs
// once cmd has started.
func (f *Front) startHost(ctx context.Context, s *session, args []string, cmd *exec.Cmd, started func()) (host.AutomationInfo, error) {
	var info host.AutomationInfo
	secretR, secretW, err := os.Pipe()
	if err != nil {
		return info, fmt.Errorf("webdriverfront: %w", err)
	}
	autoR, autoW, err := os.Pipe()
	if err != nil {
		secretR.Close()
		secretW.Close()
		return info, fmt.Errorf("webdriverfront: %w", err)
	}
	defer autoR.Close()
	files := []*os.File{secretR, autoW}
	reason := &tail{}
	if cmd.Stdout == nil {
		cmd.Stdout = f.log
	}
	cmd.Stderr = io.MultiWriter(f.log, reason)
	cmd.ExtraFiles = files
	// WebKit's processes keep the host's output open a moment after it
	// exits: Wait does not wait for them.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	secretR.Close()
	autoW.Close()
	if err != nil {
		secretW.Close()
		return info, fmt.Errorf("webdriverfront: start the host %s: %w", f.cfg.Host, err)
	}
	s.host = cmd
	go func() {
		cmd.Wait()
		close(s.hostDone)
	}()
	if started != nil {
		started()
	}
	if f.cfg.Secret != "" {
		secretW.Write([]byte(f.cfg.Secret))
	}
	secretW.Close()
	line := make(chan []byte, 1)
	go func() {
		b, _ := bufio.NewReader(autoR).ReadBytes('\n')
		line <- b
	}()
	var b []byte
	select {
	case b = <-line:
	case <-ctx.Done():
		return info, fmt.Errorf("webdriverfront: the host's window was not ready within %s: %w", f.cfg.StartTimeout, ctx.Err())
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		<-s.hostDone
		code := cmd.ProcessState.ExitCode()
		msg := fmt.Sprintf("the host (miniapp-host %s) exited with code %d before its window ran: %s", strings.Join(args, " "), code, reason.String())
		if code == 2 { // a usage error: the session's args
			return info, &startError{http.StatusBadRequest, errInvalidArgument, msg}
		}
		return info, &startError{http.StatusInternalServerError, errSessionNotMade, msg}
	}
	if err := json.Unmarshal(b, &info); err != nil || info.URL == "" || info.Token == "" {
		return info, fmt.Errorf("webdriverfront: the host's automation channel: %q is not its address", b)
	}
	return info, nil
}

// startDriver starts WebKitWebDriver on a free loopback port with --target
// the host's inspector server, and waits until it answers /status. A port
// taken meanwhile makes it exit: another is tried.
func (f *Front) startDriver(ctx context.Context, s *session, inspector int) error {
	var last error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return err
		}
		cmd := exec.Command(f.cfg.Driver, "--host=127.0.0.1", "--port="+strconv.Itoa(port),
			"--target=127.0.0.1:"+strconv.Itoa(inspector))
		cmd.Env = f.cfg.Env
		cmd.Stdout, cmd.Stderr = f.log, f.log
		cmd.WaitDelay = time.Second
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("webdriverfront: start %s: %w", f.cfg.Driver, err)
		}
		done := make(chan struct{})
		go func() {
			cmd.Wait()
			close(done)
		}()
		u := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		if err := waitReady(ctx, s.client, u, done); err == nil {
			s.driver, s.drvDone, s.drvURL = cmd, done, u
			return nil
		} else {
			last = err
		}
		stopProcess(cmd, done, f.cfg.StopTimeout)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("webdriverfront: %s did not listen: %w", f.cfg.Driver, last)
}

// waitReady asks the driver's /status until it answers, the driver exits
// or ctx ends. The driver says nothing when it listens.
func waitReady(ctx context.Context, c *http.Client, u *url.URL, exited <-chan struct{}) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+"/status", nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("it exited (its port may have been taken)")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("webdriverfront: a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// deleteSession forwards Delete Session, then ends the host as its user
// closing it would (SIGTERM: an ephemeral data folder is removed; killed
// after StopTimeout) and stops the driver, before it answers. A driver
// with --target does not close the host's window itself.
func (f *Front) deleteSession(w http.ResponseWriter, r *http.Request, s *session) {
	rec := &recorder{header: http.Header{}}
	s.proxy.ServeHTTP(rec, r)
	f.end(s)
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	w.Write(rec.body.Bytes())
}

// end removes the session and stops its processes. Only the first call
// does anything.
func (f *Front) end(s *session) {
	s.ended.Do(func() {
		f.mu.Lock()
		delete(f.sessions, s.id)
		f.mu.Unlock()
		f.stop(s)
	})
}

// stop ends what a session started, the host first (the driver then sees
// its target go).
func (f *Front) stop(s *session) {
	if s.auto != nil {
		s.auto.Close()
	}
	if s.private != nil {
		s.private.stop(s, f.cfg.StopTimeout)
	} else if s.host != nil {
		stopProcess(s.host, s.hostDone, f.cfg.StopTimeout)
	}
	if s.driver != nil {
		stopProcess(s.driver, s.drvDone, f.cfg.StopTimeout)
	}
}

// stopProcess sends SIGTERM, then SIGKILL after grace, and waits for the
// process to have exited (done closed).
func stopProcess(cmd *exec.Cmd, done <-chan struct{}, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		cmd.Process.Kill()
		<-done
	}
}

// recorder keeps a response to relay it later.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
