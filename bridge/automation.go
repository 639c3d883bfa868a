package bridge

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/miniapp-host/miniapp-host/origin"
)

// The automation channel (docs/automation.md).
const (
	// AutomationPath is the one path the server answers.
	AutomationPath = "/automation"
	// AutomationProtocol is the WebSocket subprotocol a client must
	// offer; the server selects it.
	AutomationProtocol = "miniapp-automation.v1"
	// TokenProtocolPrefix prefixes the token as a second offered
	// subprotocol: Sec-WebSocket-Protocol: miniapp-automation.v1, token.<token>.
	// The header is the one place a browser's WebSocket constructor lets
	// a page put a secret, and unlike a query string it stays out of
	// logs and history.
	TokenProtocolPrefix = "token."
)

// AutomationConfig configures an Automation server. Bus and Controller
// are required.
type AutomationConfig struct {
	// Addr is where Listen listens; "" means 127.0.0.1:0 (a free port).
	// It must be a loopback address: the channel can drive consent.
	Addr string
	// AllowedOrigins are the browser origins (bare origins, as
	// origin.Parse reads them) whose pages may connect, such as the
	// playground's. A request without an Origin header (a program, not a
	// browser) is allowed; any other Origin is refused.
	AllowedOrigins []string
	Bus            *Bus
	Controller     Controller
	// Rand is the source of the token; nil means crypto/rand.
	Rand io.Reader
	// Buffer is each client's event buffer; 0 means 256. A client that
	// falls this far behind is disconnected (close code 1008).
	Buffer int
	// MaxInFlight caps the commands one client runs at once; 0 means 8.
	MaxInFlight int
	// WriteTimeout bounds one write to a client; 0 means 10 s.
	WriteTimeout time.Duration
	// Logger records connections and refusals; nil discards.
	Logger *slog.Logger
}

// Automation is the automation and devtools WebSocket server. It is off
// unless the program creates one and calls Listen.
type Automation struct {
	bus          *Bus
	ctl          Controller
	token        string
	allowed      []origin.Origin
	addr         string
	buffer       int
	maxInFlight  int
	writeTimeout time.Duration
	log          *slog.Logger
	upgrader     websocket.Upgrader
	ctx          context.Context
	cancel       context.CancelFunc

	mu    sync.Mutex // guards below
	srv   *http.Server
	ln    net.Listener
	conns map[*websocket.Conn]struct{}
	wg    sync.WaitGroup
}

// NewAutomation checks cfg and draws a fresh 256-bit token.
func NewAutomation(cfg AutomationConfig) (*Automation, error) {
	if cfg.Bus == nil || cfg.Controller == nil {
		return nil, errors.New("bridge: automation: Bus and Controller are required")
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := origin.CheckLoopbackAddr(addr); err != nil {
		return nil, fmt.Errorf("bridge: automation: %w", err)
	}
	var allowed []origin.Origin
	for _, s := range cfg.AllowedOrigins {
		o, err := origin.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("bridge: automation: allowed origin: %w", err)
		}
		allowed = append(allowed, o)
	}
	r := cfg.Rand
	if r == nil {
		r = rand.Reader
	}
	var k [32]byte
	if _, err := io.ReadFull(r, k[:]); err != nil {
		return nil, fmt.Errorf("bridge: automation: token: %w", err)
	}
	a := &Automation{
		bus: cfg.Bus, ctl: cfg.Controller, allowed: allowed, addr: addr,
		token:        base64.RawURLEncoding.EncodeToString(k[:]),
		buffer:       orDefault(cfg.Buffer, 256),
		maxInFlight:  orDefault(cfg.MaxInFlight, 8),
		writeTimeout: cfg.WriteTimeout,
		log:          cfg.Logger,
		conns:        map[*websocket.Conn]struct{}{},
	}
	if a.writeTimeout <= 0 {
		a.writeTimeout = 10 * time.Second
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.upgrader = websocket.Upgrader{
		Subprotocols: []string{AutomationProtocol},
		// ServeHTTP has checked Origin, with the origin policy, before
		// upgrading; gorilla's own same-host check would refuse the
		// allowed playground origin.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a, nil
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// Token is the secret a client must present. Show it only to the user who
// started the host (the terminal, the playground window).
func (a *Automation) Token() string { return a.token }

// Listen starts serving on the configured loopback address and returns at
// once. The address actually bound is in URL.
func (a *Automation) Listen() error {
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		return fmt.Errorf("bridge: automation: %w", err)
	}
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	a.mu.Lock()
	a.srv, a.ln = srv, ln
	a.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("bridge: automation server stopped", "err", err)
		}
	}()
	return nil
}

// URL is the WebSocket URL to connect to, once Listen has returned.
func (a *Automation) URL() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln == nil {
		return ""
	}
	return "ws://" + a.ln.Addr().String() + AutomationPath
}

// Close stops the server and disconnects every client.
func (a *Automation) Close() error {
	a.cancel()
	a.mu.Lock()
	srv := a.srv
	for c := range a.conns {
		c.Close()
	}
	a.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Close()
	}
	a.wg.Wait()
	return err
}

// ServeHTTP (route: GET /automation) is the gate of the channel: path,
// Host, Origin, subprotocol and token are all checked before the upgrade,
// and a refusal is a plain HTTP error with a JSON body naming its code.
func (a *Automation) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != AutomationPath {
		http.NotFound(w, r)
		return
	}
	if e := a.gate(r); e != nil {
		status := map[Code]int{
			CodeBadHost: http.StatusForbidden, CodeBadOrigin: http.StatusForbidden,
			CodeBadProtocol: http.StatusBadRequest, CodeBadToken: http.StatusUnauthorized,
		}[e.Code]
		a.log.Warn("bridge: automation connection refused", "code", e.Code, "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(struct {
			Error replyError `json:"error"`
		}{replyError{Code: e.Code, Message: e.Message}})
		return
	}
	// Subscribe before the handshake completes, so that a client
	// receives every event published after its connection succeeded.
	sub := a.bus.Subscribe(a.buffer)
	conn, err := a.upgrader.Upgrade(w, r, nil)
	if err != nil {
		sub.Close()
		return // Upgrade has answered the client.
	}
	a.mu.Lock()
	if a.ctx.Err() != nil {
		a.mu.Unlock()
		sub.Close()
		conn.Close()
		return
	}
	a.conns[conn] = struct{}{}
	a.wg.Add(1)
	a.mu.Unlock()
	defer a.wg.Done()
	a.serve(conn, sub)
	a.mu.Lock()
	delete(a.conns, conn)
	a.mu.Unlock()
}

// gate checks a connection request: the one loopback gate (origin.Gate:
// a loopback connection and Host, since a DNS-rebound page reaches
// 127.0.0.1 under a name of its own; no Origin or an allowed one, on the
// handshake's GET too), then the subprotocol and the token.
func (a *Automation) gate(r *http.Request) *Error {
	g := origin.Gate{Pages: a.allowed, Reads: true}
	if ref := g.Check(r); ref != nil {
		code := CodeBadHost
		if ref.Rule == origin.RuleOrigin {
			code = CodeBadOrigin
		}
		return Errorf(code, "%s", ref.Error())
	}
	var token string
	offered := false
	for _, p := range websocket.Subprotocols(r) {
		switch {
		case p == AutomationProtocol:
			offered = true
		case strings.HasPrefix(p, TokenProtocolPrefix):
			token = strings.TrimPrefix(p, TokenProtocolPrefix)
		}
	}
	if !offered {
		return Errorf(CodeBadProtocol, "offer the subprotocol %s", AutomationProtocol)
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(a.token)) != 1 {
		return Errorf(CodeBadToken, "missing or wrong token")
	}
	return nil
}

// serve runs one client: this goroutine reads commands, one writer
// goroutine owns the connection's writes (gorilla allows one writer).
func (a *Automation) serve(conn *websocket.Conn, sub *Subscription) {
	a.log.Info("bridge: automation client connected", "remote", conn.RemoteAddr().String())
	ctx, cancel := context.WithCancel(a.ctx)
	replies := make(chan []byte, a.maxInFlight)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer conn.Close() // ends the reader too
		a.write(ctx, conn, sub, replies)
	}()

	sem := make(chan struct{}, a.maxInFlight)
	var running sync.WaitGroup
	for {
		data, tooLarge, err := readCommand(conn)
		if err != nil {
			break
		}
		if tooLarge {
			// No id can be read from a command that was not kept: the
			// reply has id 0 (docs/automation.md, "Errors").
			a.send(ctx, replies, 0, nil, Errorf(CodeTooLarge, "command of more than %d bytes", maxCommandSize))
			continue
		}
		cmd, derr := decodeCommand(data)
		if derr != nil {
			a.send(ctx, replies, cmd.id, nil, derr)
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			a.send(ctx, replies, cmd.id, nil, Errorf(CodeBusy, "%d commands are already running", a.maxInFlight))
			continue
		}
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() { <-sem }()
			result, err := cmd.run(ctx, a.ctl)
			var e *Error
			if err != nil {
				var ok bool
				if e, ok = asError(err); !ok {
					e = Errorf(CodeCommandFailed, "%v", err)
				}
			}
			a.send(ctx, replies, cmd.id, result, e)
		}()
	}
	cancel()
	sub.Close()
	running.Wait()
	<-writerDone
	a.log.Info("bridge: automation client disconnected", "remote", conn.RemoteAddr().String(), "dropped", sub.Dropped())
}

// readCommand reads the next message. One over maxCommandSize is read to
// its end but not kept, and reported as tooLarge, so that the client gets a
// too_large reply on a connection that stays usable. (gorilla's SetReadLimit
// would instead close the connection with 1009.) The client is authenticated
// and on loopback; discarding costs it bandwidth, the host no memory.
func readCommand(conn *websocket.Conn) (data []byte, tooLarge bool, err error) {
	_, r, err := conn.NextReader()
	if err != nil {
		return nil, false, err
	}
	data, err = io.ReadAll(io.LimitReader(r, maxCommandSize+1))
	if err != nil {
		return nil, false, err
	}
	if len(data) <= maxCommandSize {
		return data, false, nil
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, false, err
	}
	return nil, true, nil
}

// send queues a command reply for the writer.
func (a *Automation) send(ctx context.Context, replies chan<- []byte, id int64, result any, e *Error) {
	r := commandReply{Type: "reply", ID: id, OK: e == nil, Result: result}
	if e != nil {
		r.Result = nil
		r.Error = &replyError{Code: e.Code, Message: e.Message}
	}
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(commandReply{Type: "reply", ID: id, Error: &replyError{
			Code: CodeCommandFailed, Message: "the result could not be encoded"}})
	}
	select {
	case replies <- b:
	case <-ctx.Done():
	}
}

// write sends events and replies until the client goes away, the server
// closes, or the bus drops the client for falling behind.
func (a *Automation) write(ctx context.Context, conn *websocket.Conn, sub *Subscription, replies <-chan []byte) {
	put := func(msg []byte) bool {
		conn.SetWriteDeadline(time.Now().Add(a.writeTimeout))
		return conn.WriteMessage(websocket.TextMessage, msg) == nil
	}
	// The consent screen on screen, if any, before anything else: the
	// subscription was made first, so a decision taken meanwhile follows
	// it in sub.
	if cr, ok := a.ctl.(ConsentReporter); ok {
		if ev, on := cr.ConsentOnScreen(); on && !put(a.bus.Replayed(ev)) {
			return
		}
	}
	for {
		select {
		case msg, ok := <-sub.C():
			if !ok {
				if sub.Dropped() {
					conn.SetWriteDeadline(time.Now().Add(time.Second))
					conn.WriteMessage(websocket.CloseMessage,
						websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "too slow: event buffer full"))
				}
				return
			}
			if !put(msg) {
				return
			}
		case msg := <-replies:
			if !put(msg) {
				return
			}
		case <-ctx.Done():
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""))
			return
		}
	}
}
