// Package webdriverfront is `miniapp-host webdriver`: a W3C WebDriver
// intermediary in front of WebKitWebDriver (docs/webdriver.md).
//
// WebKitWebDriver runs whatever binary a New Session names in its
// webkitgtk:browserOptions, and it reads any request: a web page can send
// it a New Session as a "simple" cross-origin request (text/plain, no
// preflight). The front listens on loopback and refuses what no WebDriver
// client sends: a request with an Origin header, a Host that is not a
// loopback name, a body that is not application/json. A New Session may
// only start this miniapp-host binary with `open --webdriver`: the front
// starts that host itself, with the host's secret on a pipe (never in an
// environment WebKit's processes inherit), then a WebKitWebDriver of the
// session's own with --target, which connects to that host's inspector
// server and never starts a process. The front is started for one
// dashboard and one authorization server (Config.Dashboard, Config.Service):
// each host gets them after the session's flags, and a session that names
// another is refused, so the host's secret goes to that service only.
// Every other command of the session
// goes to that driver (httputil.ReverseProxy), except the front's
// extension commands, which answer the host's consent screen through the
// host's automation channel:
//
//	GET  /session/{id}/miniapp-host/consent          the consent shown, or no such alert
//	POST /session/{id}/miniapp-host/consent/approve  {"account", "declined_scopes", "declined_details", "lowered_maximums"} each optional
//	POST /session/{id}/miniapp-host/consent/deny
//	POST /session/{id}/miniapp-host/service/{control}  a development control of the service (service.go)
//	POST /session/{id}/miniapp-host/network[/clear]    the host's network conditions
package webdriverfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/origin"
)

// VendorPrefix is the prefix of the front's extension commands (W3C
// WebDriver, "Extensions"): /session/{id}/miniapp-host/...
const VendorPrefix = "miniapp-host"

// browserOptions is WebKitGTK's capability that names the browser to
// start and its arguments.
const browserOptions = "webkitgtk:browserOptions"

// maxBody bounds a request's body: New Session and every command are a
// few kilobytes (Element Send Keys of a file at most a few hundred).
const maxBody = 8 << 20

// Config is what the front needs.
type Config struct {
	// Addr is the loopback address to listen on: "127.0.0.1:4444" (port
	// 0: a free port). Any address that is not loopback is refused.
	Addr string
	// Driver is WebKitWebDriver's path.
	Driver string
	// Host is the miniapp-host binary a New Session starts (the running
	// one: os.Executable). A session's binary, when given, must be it.
	Host string
	// Secret is the host's secret, written to each host on a pipe
	// (`open --secret-fd`); "" starts hosts without one (they cannot
	// complete a consent).
	Secret string
	// OperatorKey is the service's operator credential, for the
	// development controls (POST /session/{id}/miniapp-host/service/...);
	// "" refuses them. It goes to Dashboard only, never to a host.
	OperatorKey string
	// Dashboard and Service are the dashboard ({dashboard_url}) and the
	// authorization server's issuer the front is started for, the one
	// service the hosts' secret may go to (docs/webdriver.md, "One
	// service"): each host gets `--dashboard Dashboard --service Service`
	// after the session's flags (the last of a flag wins), and a New
	// Session whose args name another dashboard or service is refused.
	// Both are required, absolute http(s) URLs.
	Dashboard, Service string
	// Env is the environment of the hosts and drivers the front starts;
	// it must hold no secret (the front's caller removes them: the
	// WebKit processes of the host inherit it). Nil: an empty one.
	Env []string
	// Log receives the output of the hosts and drivers and one line per
	// refused request; io.Discard when nil.
	Log io.Writer
	// StartTimeout bounds a session's start-up: the host's window ready,
	// its driver listening. 60 s when zero.
	StartTimeout time.Duration
	// StopTimeout bounds how long a host or driver may take to exit once
	// asked to (SIGTERM, at Delete Session or the front's Close) before it
	// is killed. 10 s when zero.
	StopTimeout time.Duration
	// Network is where a session's host and driver run: NetworkPrivate,
	// a network namespace of their own, so that no other local process
	// reaches the host's inspector (private.go); NetworkShared ("" too),
	// the machine's loopback.
	Network string
	// Bwrap is bubblewrap's path, for NetworkPrivate ("bwrap" on PATH when
	// empty).
	Bwrap string
	// Supervisor is the command line that runs RunSession, for
	// NetworkPrivate: `miniapp-host webdriver-session`.
	Supervisor []string
}

// Front is a running front. Close stops it and every session.
type Front struct {
	cfg Config
	ln  net.Listener
	srv *http.Server
	log *syncWriter

	ctx    context.Context // ends with Close: sessions starting stop
	cancel context.CancelFunc

	mu       sync.Mutex // guards below
	sessions map[string]*session
	closed   bool
	starting sync.WaitGroup // New Sessions under way
}

// New checks cfg and returns a front that does not listen yet.
func New(cfg Config) (*Front, error) {
	if cfg.Driver == "" || cfg.Host == "" {
		return nil, errors.New("webdriverfront: Config.Driver and Config.Host are required")
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("webdriverfront: address %q: %w", cfg.Addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("webdriverfront: address %q: listen on a loopback IP address (127.0.0.1): a WebDriver server runs programs for whoever reaches it", cfg.Addr)
	}
	for _, c := range []struct{ field, value string }{{"Dashboard", cfg.Dashboard}, {"Service", cfg.Service}} {
		if u, err := url.Parse(c.value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("webdriverfront: Config.%s %q: the %s the hosts' secret goes to must be an absolute http(s) URL without query or fragment (RFC 8414 section 2)",
				c.field, c.value, strings.ToLower(c.field))
		}
	}
	switch cfg.Network {
	case "", NetworkShared:
		cfg.Network = NetworkShared
	case NetworkPrivate:
		if cfg.Bwrap == "" {
			cfg.Bwrap = "bwrap"
		}
		if len(cfg.Supervisor) == 0 {
			return nil, errors.New("webdriverfront: Config.Network private needs Config.Supervisor, the command that runs RunSession")
		}
	default:
		return nil, fmt.Errorf("webdriverfront: Config.Network %q: %q or %q", cfg.Network, NetworkPrivate, NetworkShared)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Front{cfg: cfg, log: &syncWriter{w: cfg.Log}, ctx: ctx, cancel: cancel, sessions: map[string]*session{}}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 30 * time.Second}
	if cfg.Network == NetworkPrivate {
		for _, folder := range removeStaleFolders(os.TempDir()) {
			fmt.Fprintf(f.log, "webdriver: removed %s, a session folder left by a front that was killed\n", folder)
		}
	}
	return f, nil
}

// Listen binds the front's address.
func (f *Front) Listen() error {
	ln, err := net.Listen("tcp", f.cfg.Addr)
	if err != nil {
		return fmt.Errorf("webdriverfront: listen: %w", err)
	}
	f.ln = ln
	return nil
}

// URL is the front's base URL, once it listens: http://127.0.0.1:PORT.
func (f *Front) URL() string { return "http://" + f.ln.Addr().String() }

// Serve answers requests until Close; it returns nil after Close.
func (f *Front) Serve() error {
	if err := f.srv.Serve(f.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webdriverfront: %w", err)
	}
	return nil
}

// Close stops listening and ends every session: its host is asked to stop
// (SIGTERM, killed after StopTimeout) and its driver stopped.
func (f *Front) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.StopTimeout)
	defer cancel()
	err := f.srv.Shutdown(ctx)
	f.starting.Wait()
	f.mu.Lock()
	all := make([]*session, 0, len(f.sessions))
	for _, s := range f.sessions {
		all = append(all, s)
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() { defer wg.Done(); f.end(s) }()
	}
	wg.Wait()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("webdriverfront: close: %w", err)
	}
	return nil
}

// Sessions returns the ids of the sessions running.
func (f *Front) Sessions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, 0, len(f.sessions))
	for id := range f.sessions {
		ids = append(ids, id)
	}
	return ids
}

// ServeHTTP implements http.Handler: the checks every request passes,
// then the front's own commands or the session's driver.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := refusal(r); msg != "" {
		fmt.Fprintf(f.log, "miniapp-host webdriver: refused %s %s: %s\n", r.Method, r.URL.Path, msg)
		writeError(w, http.StatusBadRequest, errInvalidArgument, msg)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "status" && r.Method == http.MethodGet:
		writeValue(w, map[string]any{"ready": true, "message": "miniapp-host webdriver: each New Session starts `miniapp-host open --webdriver` and a WebKitWebDriver of its own"})
	case len(parts) == 1 && parts[0] == "session" && r.Method == http.MethodPost:
		f.newSession(w, r)
	case len(parts) >= 2 && parts[0] == "session":
		s := f.session(parts[1])
		if s == nil {
			writeError(w, http.StatusNotFound, errInvalidSessionID, fmt.Sprintf("no session %q: it ended, or was never made by this front", parts[1]))
			return
		}
		switch rest := parts[2:]; {
		case len(rest) == 0 && r.Method == http.MethodDelete:
			f.deleteSession(w, r, s)
		case len(rest) >= 1 && rest[0] == VendorPrefix:
			f.extension(w, r, s, rest[1:])
		case len(rest) == 2 && rest[0] == "window" && rest[1] == "rect" && r.Method == http.MethodGet && s.viewport.Width > 0:
			s.windowRect(w)
		default:
			s.proxy.ServeHTTP(w, r)
		}
	default:
		writeError(w, http.StatusNotFound, errUnknownCommand, fmt.Sprintf("%s %s is not a WebDriver command of this front", r.Method, r.URL.Path))
	}
}

// refusal says why a request is refused before it is read, or "" when it
// passes: what a web page can send and no WebDriver client does, by the
// one loopback gate (origin.Gate): a connection or Host that is not
// loopback, any Origin header (WebDriver clients send none), a POST or a
// body that is not application/json.
func refusal(r *http.Request) string {
	g := origin.Gate{Reads: true, JSON: true}
	if ref := g.Check(r); ref != nil {
		return ref.Error()
	}
	return ""
}

func (f *Front) session(id string) *session {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[id]
}

// The errors of W3C WebDriver's error table the front answers with.
const (
	errInvalidArgument  = "invalid argument"      // 400
	errInvalidSessionID = "invalid session id"    // 404
	errUnknownCommand   = "unknown command"       // 404
	errNoSuchAlert      = "no such alert"         // 404
	errElementState     = "invalid element state" // 400
	errSessionNotMade   = "session not created"   // 500
	errUnknown          = "unknown error"         // 500
	// 500 too; W3C WebDriver's error for a command that cannot be run as configured.
	errUnsupportedOperation = "unsupported operation"
)

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"value": map[string]string{"error": code, "message": msg, "stacktrace": ""}})
}

func writeValue(w http.ResponseWriter, v any) {
	writeJSON(w, http.StatusOK, map[string]any{"value": v})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"value":{"error":"unknown error","message":"webdriverfront: encoding the answer failed","stacktrace":""}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	w.Write(b)
}

// syncWriter serializes the lines of several processes and the front.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// tail keeps the last bytes written to it: the end of a host's stderr,
// the reason it gives when it exits before its window runs.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4096

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = t.buf[len(t.buf)-tailSize:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// sameFile reports whether the paths name one file (a symbolic link to the
// host binary is the host binary).
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}
