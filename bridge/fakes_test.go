package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/origin"
)

const (
	appOrigin = "https://app.example"
	appURL    = "https://app.example/start?x=1"
)

// memHost is an in-memory Host: it keeps the state a desktop host would
// keep (ready, closed, links opened) and runs authorize against a consent
// decision that the test gives through decide, as a subject would.
type memHost struct {
	info ContextInfo

	mu      sync.Mutex // guards below
	ready   int
	closed  bool
	opened  []string
	asked   []AuthorizeRequest
	failing error // returned by every method when set

	// consent receives the subject's decision for each authorize: true
	// approves, false denies. started signals that authorize is waiting.
	consent chan bool
	started chan AuthorizeRequest
	// cancelled receives ctx.Err() when authorize gives up because ctx
	// was cancelled.
	cancelled chan error
}

func newMemHost() *memHost {
	return &memHost{
		info:      ContextInfo{ID: "com.example.app", Theme: ThemeDark, HostVersion: "0.1.0", Subject: "sub-1"},
		consent:   make(chan bool, 1),
		started:   make(chan AuthorizeRequest, 8),
		cancelled: make(chan error, 8),
	}
}

func (h *memHost) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing
}

func (h *memHost) Ready(context.Context) error {
	if err := h.err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ready++
	return nil
}

func (h *memHost) Close(context.Context) error {
	if err := h.err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}

func (h *memHost) Context(context.Context) (ContextInfo, error) {
	if err := h.err(); err != nil {
		return ContextInfo{}, err
	}
	// The host may not know the origin; the dispatcher must fill it.
	info := h.info
	info.Origin = "https://wrong.example"
	return info, nil
}

func (h *memHost) Authorize(ctx context.Context, req AuthorizeRequest) (AuthorizeResult, error) {
	if err := h.err(); err != nil {
		return AuthorizeResult{}, err
	}
	if len(req.Scopes) == 1 && req.Scopes[0] == "server-refuses" {
		// As package host answers a request the authorization server
		// refused.
		return AuthorizeResult{}, &Error{Code: CodeHostError, Message: "the authorization endpoint refused the request: invalid_scope",
			ServerError: "invalid_scope", ServerErrorDescription: "scope 'server-refuses' is not in the catalog"}
	}
	h.mu.Lock()
	h.asked = append(h.asked, req)
	h.mu.Unlock()
	select {
	case h.started <- req:
	case <-ctx.Done():
		return AuthorizeResult{}, ctx.Err()
	}
	select {
	case ok := <-h.consent:
		if !ok {
			return AuthorizeResult{}, Errorf(CodeAccessDenied, "the subject denied consent")
		}
		return AuthorizeResult{
			AccessToken: "at-" + strings.Join(req.Scopes, "+"), TokenType: "Bearer", ExpiresIn: 300,
			Scope: strings.Join(req.Scopes, " "), AuthorizationDetails: req.AuthorizationDetails,
		}, nil
	case <-ctx.Done():
		h.cancelled <- ctx.Err()
		return AuthorizeResult{}, ctx.Err()
	}
}

func (h *memHost) OpenExternal(_ context.Context, u string) error {
	if err := h.err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opened = append(h.opened, u)
	return nil
}

// memView is an in-memory View: a main frame whose document the test
// changes, and a UI thread (one goroutine) that runs deliveries in order
// and records every script it evaluates.
type memView struct {
	mu  sync.Mutex // guards doc
	doc Document

	qmu     sync.Mutex // guards stopped and sending on queue
	stopped bool       // the view is destroyed: deliveries are dropped, as a real host must

	queue chan func()
	// delivered receives one entry per Deliver: the script evaluated, or
	// "" when the dispatcher chose to evaluate nothing.
	delivered chan string
	done      chan struct{}
}

func newMemView(t testing.TB, url string) *memView {
	t.Helper()
	v := &memView{
		doc:       Document{URL: url, Seq: 1},
		queue:     make(chan func(), 64),
		delivered: make(chan string, 256),
		done:      make(chan struct{}),
	}
	go func() {
		defer close(v.done)
		for f := range v.queue {
			f()
		}
	}()
	t.Cleanup(func() {
		v.qmu.Lock()
		v.stopped = true
		close(v.queue)
		v.qmu.Unlock()
		<-v.done
	})
	return v
}

func (v *memView) Deliver(deliver func(now Document) string) {
	v.qmu.Lock()
	defer v.qmu.Unlock()
	if v.stopped {
		return
	}
	v.queue <- func() {
		v.mu.Lock()
		now := v.doc
		v.mu.Unlock()
		v.delivered <- deliver(now)
	}
}

// navigate commits a new document in the main frame.
func (v *memView) navigate(url string) Document {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.doc = Document{URL: url, Seq: v.doc.Seq + 1}
	return v.doc
}

// replaceURL changes the URL without a new Seq, as a host that does not
// count documents would report it.
func (v *memView) replaceURL(url string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.doc.URL = url
}

func (v *memView) frame() Frame {
	v.mu.Lock()
	defer v.mu.Unlock()
	return Frame{Document: v.doc, IsMainFrame: true}
}

// received is a reply or event as the page's receive function gets it.
type received struct {
	V      int             `json:"v"`
	ID     int64           `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// next waits for the next delivery and decodes it; it fails the test if
// the dispatcher withheld it.
func (v *memView) next(t testing.TB) received {
	t.Helper()
	script := v.nextScript(t)
	if script == "" {
		t.Fatal("a delivery was withheld, want a message")
	}
	return decodeScript(t, script)
}

// nextScript waits for the next delivery, withheld ("") or not.
func (v *memView) nextScript(t testing.TB) string {
	t.Helper()
	select {
	case s := <-v.delivered:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery within 5s")
		return ""
	}
}

// none asserts that nothing more is delivered for a while.
func (v *memView) none(t testing.TB) {
	t.Helper()
	select {
	case s := <-v.delivered:
		t.Fatalf("unexpected delivery %q", s)
	case <-time.After(50 * time.Millisecond):
	}
}

func decodeScript(t testing.TB, script string) received {
	t.Helper()
	prefix := "window." + ReceiveFunction + "("
	if !strings.HasPrefix(script, prefix) || !strings.HasSuffix(script, ")") {
		t.Fatalf("script %q is not a call of %s", script, ReceiveFunction)
	}
	var r received
	dec := json.NewDecoder(strings.NewReader(script[len(prefix) : len(script)-1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("script %q: %v", script, err)
	}
	return r
}

// fixture is a dispatcher for appOrigin with its fakes and an event
// subscription.
type fixture struct {
	d      *Dispatcher
	host   *memHost
	view   *memView
	events *Subscription
}

func newFixture(t testing.TB, maxInFlight int) *fixture {
	t.Helper()
	host := newMemHost()
	view := newMemView(t, appURL)
	bus := NewBus(nil)
	d, err := New(Config{
		Origin: origin.MustParse(appOrigin), Host: host, View: view,
		Events: bus, MaxInFlight: maxInFlight, Rand: strings.NewReader(strings.Repeat("k", 32)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return &fixture{d: d, host: host, view: view, events: bus.Subscribe(1024)}
}

// send posts a request as the bridge script would, with the view's key.
func (fx *fixture) send(id int64, method string, params any) {
	msg := map[string]any{"v": 1, "id": id, "key": fx.d.key, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	fx.d.Receive(fx.view.frame(), string(b))
}

// event waits for the next bridge.call event.
func (fx *fixture) event(t testing.TB) BridgeCallEvent {
	t.Helper()
	select {
	case env := <-fx.events.C():
		var e struct {
			Kind string          `json:"kind"`
			Data BridgeCallEvent `json:"data"`
		}
		if err := json.Unmarshal(env, &e); err != nil || e.Kind != "bridge.call" {
			t.Fatalf("event %s: kind %q, err %v", env, e.Kind, err)
		}
		return e.Data
	case <-time.After(5 * time.Second):
		t.Fatal("no bridge.call event within 5s")
		return BridgeCallEvent{}
	}
}

// refusedWith asserts an error reply with id and code.
func refusedWith(t testing.TB, r received, id int64, code Code) {
	t.Helper()
	if r.OK || r.Error == nil {
		t.Fatalf("reply ok=%v error=%v, want refusal %s", r.OK, r.Error, code)
	}
	if r.ID != id || r.Error.Code != code || r.V != ProtocolVersion {
		t.Fatalf("reply v=%d id=%d code=%s (%s), want v=1 id=%d code=%s", r.V, r.ID, r.Error.Code, r.Error.Message, id, code)
	}
	if r.Error.Message == "" {
		t.Fatal("refusal without a message")
	}
}
