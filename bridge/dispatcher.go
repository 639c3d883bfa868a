package bridge

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/miniapp-host/miniapp-host/assets"
	"github.com/miniapp-host/miniapp-host/origin"
)

// Document identifies the document shown in the view's main frame.
type Document struct {
	// URL is the main frame's URL as the webview reports it
	// (webkit_web_view_get_uri).
	URL string
	// Seq counts committed main-frame navigations: the host increments
	// it each time a new document commits in the main frame (WebKit's
	// load-changed COMMITTED), same-origin or not. Two documents with
	// the same URL have different Seq, so a reply meant for the first is
	// never given to the second, whose call ids start again at 1.
	Seq uint64
}

// Frame is what the host knows about the caller when a message arrives
// through the bound function.
type Frame struct {
	// Document is the main frame's document when the message arrived.
	Document Document
	// IsMainFrame is false when the host knows that the message came
	// from a subframe. A host that cannot tell sets true: the per-view
	// key that the bridge script sends still keeps subframes out
	// (docs/bridge.md, "Gating").
	IsMainFrame bool
}

// Host is what the dispatcher needs from the desktop shell for the API
// methods. Each method may block (authorize waits for consent); the
// dispatcher calls them off the UI thread and cancels ctx when the calling
// document goes away or the dispatcher is closed. An *Error returned by a
// method reaches the page with its code and message; any other error
// reaches it as host_error, without its text.
type Host interface {
	// Ready records that the page has finished its start-up.
	Ready(ctx context.Context) error
	// Close closes the Miniapp's view.
	Close(ctx context.Context) error
	// Context describes the Miniapp and the host for getContext.
	Context(ctx context.Context) (ContextInfo, error)
	// Authorize runs an authorization for a public client (issue 7: PKCE
	// with golang.org/x/oauth2, consent, code exchange). A denial is
	// Errorf(CodeAccessDenied, ...).
	Authorize(ctx context.Context, req AuthorizeRequest) (AuthorizeResult, error)
	// OpenExternal opens url, an absolute http or https URL in canonical
	// form, in the user's browser.
	OpenExternal(ctx context.Context, url string) error
}

// View is how the dispatcher reaches the page.
type View interface {
	// Deliver runs deliver on the UI thread (webview Dispatch), passes
	// it the main frame's document at that moment, and evaluates the
	// script deliver returns in the main frame unless it is "". Reading
	// the document and evaluating happen in the same UI-thread turn, so
	// no navigation can slip between the check and the delivery. Deliver
	// must not block; the dispatcher holds no lock when it calls it. After
	// the view is destroyed it must drop deliveries.
	Deliver(deliver func(now Document) string)
}

// Publisher receives bridge.call events for the automation channel. *Bus
// implements it.
type Publisher interface {
	Publish(Event)
}

// Config configures a Dispatcher. Origin, Host and View are required.
type Config struct {
	// Origin is the Miniapp's canonical origin (from the resolver).
	// Only a main-frame document on exactly this origin may call.
	Origin origin.Origin
	Host   Host
	View   View
	// Events receives a BridgeCallEvent for every call; nil for none.
	Events Publisher
	// Logger records refusals and host failures; nil discards.
	Logger *slog.Logger
	// Rand is the source of the per-view key; nil means crypto/rand.
	Rand io.Reader
	// MaxInFlight caps the calls running at once, so that a page cannot
	// start goroutines without bound; 0 means 16.
	MaxInFlight int
}

// Dispatcher serves the bridge of one Miniapp view: it decodes page
// messages, gates them, calls the Host and delivers replies and events.
// Its methods are safe for concurrent use. Receive, Navigated and the Emit
// methods never block, so the host calls them on the UI thread.
type Dispatcher struct {
	origin      origin.Origin
	host        Host
	view        View
	events      Publisher
	log         *slog.Logger
	key         string
	script      string
	maxInFlight int

	mu     sync.Mutex // guards below
	closed bool
	latest uint64 // highest document Seq seen
	calls  map[*call]struct{}
}

// call is one admitted request, running on its own goroutine.
type call struct {
	id     int64
	method string
	doc    Document
	cancel context.CancelFunc
}

// scriptPlaceholder is where Script puts the per-view configuration in
// assets/bridge/miniapp.js. Left in place (a page loading the file itself
// in a plain tab), it evaluates to null and the script reports inHost false.
const scriptPlaceholder = "/*@miniapp-host-config*/ null"

// New returns a Dispatcher for one view, with a fresh random key.
func New(cfg Config) (*Dispatcher, error) {
	switch {
	case cfg.Origin.IsOpaque():
		return nil, errors.New("bridge: config: Origin is opaque or unset")
	case cfg.Host == nil:
		return nil, errors.New("bridge: config: Host is nil")
	case cfg.View == nil:
		return nil, errors.New("bridge: config: View is nil")
	case cfg.MaxInFlight < 0:
		return nil, errors.New("bridge: config: MaxInFlight is negative")
	}
	r := cfg.Rand
	if r == nil {
		r = rand.Reader
	}
	var k [32]byte
	if _, err := io.ReadFull(r, k[:]); err != nil {
		return nil, fmt.Errorf("bridge: key: %w", err)
	}
	key := hex.EncodeToString(k[:])
	script, err := buildScript(key, cfg.Origin.String())
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	max := cfg.MaxInFlight
	if max == 0 {
		max = 16
	}
	return &Dispatcher{
		origin: cfg.Origin, host: cfg.Host, view: cfg.View, events: cfg.Events, log: log,
		key: key, script: script, maxInFlight: max, calls: map[*call]struct{}{},
	}, nil
}

// buildScript fills the bridge script's configuration. The key is hex, the
// origin canonical ASCII and the names constants; json.Marshal escapes the
// rest, so the configuration cannot break out of the script.
func buildScript(key, miniappOrigin string) (string, error) {
	src, err := assets.FS.ReadFile("bridge/miniapp.js")
	if err != nil {
		return "", fmt.Errorf("bridge: script: %w", err)
	}
	s := string(src)
	if strings.Count(s, scriptPlaceholder) != 1 {
		return "", errors.New("bridge: script: configuration placeholder not found exactly once")
	}
	cfg, err := json.Marshal(struct {
		Key     string `json:"key"`
		Origin  string `json:"origin"`
		Post    string `json:"post"`
		Receive string `json:"receive"`
	}{key, miniappOrigin, PostFunction, ReceiveFunction})
	if err != nil {
		return "", fmt.Errorf("bridge: script: %w", err)
	}
	return strings.Replace(s, scriptPlaceholder, string(cfg), 1), nil
}

// Script is the bridge script for this view, with its key. The host
// injects it into the top frame only, at document start, after binding
// PostFunction (webview_go: Bind, then Init(Script())). It must never be
// injected into the consent view or any other host-owned page.
func (d *Dispatcher) Script() string { return d.script }

// Receive handles one message that arrived through the bound function.
// It returns at once: the reply, if any, is delivered later through the
// View. It never panics on any input.
func (d *Dispatcher) Receive(f Frame, msg string) {
	req, decodeErr := decodeRequest([]byte(msg))
	// Replies to what cannot be trusted: a reply carries the request's id
	// only when the message provably came from this view's bridge script
	// in the main frame. Otherwise a subframe could post forged ids and
	// settle the main frame's pending promises; id 0 matches no pending
	// call (the script numbers calls from 1).
	keyOK := subtle.ConstantTimeCompare([]byte(req.key), []byte(d.key)) == 1
	trusted := f.IsMainFrame && keyOK
	id := int64(0)
	if trusted {
		id = req.id
	}
	switch {
	case !f.IsMainFrame:
		d.refuse(f.Document, 0, req.method, Errorf(CodeSubframe, "calls from subframes are refused"))
		return
	case decodeErr != nil && !req.object:
		// Too large, or not a JSON object: nothing can be attributed.
		d.refuse(f.Document, 0, "", decodeErr)
		return
	case !keyOK:
		d.refuse(f.Document, 0, req.method, Errorf(CodeSubframe, "the message did not come from the bridge script of the main frame"))
		return
	case decodeErr != nil:
		d.refuse(f.Document, id, req.method, decodeErr)
		return
	}
	invoke, perr := d.bind(req)
	d.mu.Lock()
	gateErr := d.gateLocked(f.Document)
	if gateErr == nil && perr != nil {
		gateErr = perr
	}
	if gateErr == nil && len(d.calls) >= d.maxInFlight {
		gateErr = Errorf(CodeBusy, "%d calls are already in flight", d.maxInFlight)
	}
	if gateErr != nil {
		d.mu.Unlock()
		d.refuse(f.Document, id, req.method, gateErr)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &call{id: id, method: req.method, doc: f.Document, cancel: cancel}
	d.calls[c] = struct{}{}
	d.mu.Unlock()
	d.publish(req.method, DecisionAllowed, "")
	go d.run(ctx, c, invoke)
}

// gateLocked is the call-time gate: the dispatcher is open, the calling
// document is the latest the view has shown, and its origin is exactly
// the Miniapp's.
func (d *Dispatcher) gateLocked(doc Document) *Error {
	if d.closed {
		return Errorf(CodeClosed, "the Miniapp's view is closed")
	}
	if doc.Seq < d.latest {
		return Errorf(CodeNavigatedAway, "the calling document is no longer shown")
	}
	d.advanceLocked(doc.Seq)
	if !d.isMiniappOrigin(doc.URL) {
		return Errorf(CodeWrongOrigin, "the top-level document is not on the Miniapp's origin %s", d.origin)
	}
	return nil
}

// isMiniappOrigin reports whether rawURL is on the Miniapp's origin,
// asking the one origin policy. A URL that does not parse, and any opaque
// origin (about:blank, data:, a sandboxed document), is not.
func (d *Dispatcher) isMiniappOrigin(rawURL string) bool {
	o, err := origin.OfString(rawURL)
	return err == nil && o.Equal(d.origin)
}

// invocation runs an admitted call against the host.
type invocation func(ctx context.Context) (any, error)

// bind checks a request's method and params and returns what to run.
func (d *Dispatcher) bind(req request) (invocation, *Error) {
	switch req.method {
	case MethodReady:
		if e := noParams(req.params); e != nil {
			return nil, e
		}
		return func(ctx context.Context) (any, error) { return nil, d.host.Ready(ctx) }, nil
	case MethodClose:
		if e := noParams(req.params); e != nil {
			return nil, e
		}
		return func(ctx context.Context) (any, error) { return nil, d.host.Close(ctx) }, nil
	case MethodGetContext:
		if e := noParams(req.params); e != nil {
			return nil, e
		}
		return func(ctx context.Context) (any, error) {
			info, err := d.host.Context(ctx)
			if err != nil {
				return nil, err
			}
			info.Origin = d.origin.String()
			info.BridgeVersion = APIVersion
			return info, nil
		}, nil
	case MethodAuthorize:
		if req.params == nil {
			return nil, Errorf(CodeInvalidParams, "authorize needs a scope or authorization_details")
		}
		ar, e := parseAuthorize(req.params)
		if e != nil {
			return nil, e
		}
		return func(ctx context.Context) (any, error) {
			res, err := d.host.Authorize(ctx, ar)
			if err != nil {
				return nil, err
			}
			return res, nil
		}, nil
	case MethodOpenExternal:
		if req.params == nil {
			return nil, Errorf(CodeInvalidParams, "url must be a string")
		}
		u, e := parseOpenExternal(req.params)
		if e != nil {
			return nil, e
		}
		return func(ctx context.Context) (any, error) { return nil, d.host.OpenExternal(ctx, u) }, nil
	}
	return nil, Errorf(CodeUnknownMethod, "no method %s", quote(req.method))
}

// run performs an admitted call and delivers its reply.
func (d *Dispatcher) run(ctx context.Context, c *call, invoke invocation) {
	result, err := invoke(ctx)
	var e *Error
	if err != nil {
		e = d.hostError(ctx, c, err)
	}
	d.mu.Lock()
	delete(d.calls, c)
	d.mu.Unlock()
	c.cancel()
	if d.isClosed() {
		// The view may be gone; the callback below would drop the
		// reply anyway.
		d.publish(c.method, DecisionWithheld, CodeClosed)
		return
	}
	msg := encodeReply(c.id, result, e)
	d.view.Deliver(func(now Document) string {
		// The reply-time gate: the same document, still on the Miniapp's
		// origin. Anything else means the page that asked is gone, and
		// the reply is withheld: nothing is evaluated in the document now
		// shown, which never asked (docs/bridge.md, "Gating").
		code := Code("")
		switch {
		case d.isClosed():
			code = CodeClosed
		case now.Seq != c.doc.Seq:
			code = CodeNavigatedAway
		case !d.isMiniappOrigin(now.URL):
			code = CodeWrongOrigin
		}
		if code != "" {
			d.log.Info("bridge: reply withheld", "method", c.method, "code", code)
			d.publish(c.method, DecisionWithheld, code)
			return ""
		}
		return receiveScript(msg)
	})
}

// hostError turns a Host error into what the page may see.
func (d *Dispatcher) hostError(ctx context.Context, c *call, err error) *Error {
	if e, ok := asError(err); ok {
		return e
	}
	if ctx.Err() != nil {
		return Errorf(CodeCancelled, "%s was cancelled", c.method)
	}
	d.log.Error("bridge: host failed", "method", c.method, "err", err)
	return Errorf(CodeHostError, "the host could not complete %s", c.method)
}

// refuse answers a request that is not run. The error reply goes to the
// calling document only: if the view has moved on, nobody is left to hear.
func (d *Dispatcher) refuse(doc Document, id int64, method string, e *Error) {
	d.log.Info("bridge: call refused", "method", method, "code", e.Code, "message", e.Message)
	d.publish(method, DecisionRefused, e.Code)
	msg := encodeReply(id, nil, e)
	d.view.Deliver(func(now Document) string {
		if now.Seq != doc.Seq || d.isClosed() {
			return ""
		}
		return receiveScript(msg)
	})
}

// Navigated tells the dispatcher that a new document committed in the
// main frame. Calls made by earlier documents are cancelled (their pages
// are gone) and their late messages refused. Calling it is optional, since
// Seq also advances with each Frame, but it cancels sooner.
func (d *Dispatcher) Navigated(doc Document) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.advanceLocked(doc.Seq)
}

// advanceLocked moves the latest document forward and cancels the calls of
// the documents before it.
func (d *Dispatcher) advanceLocked(seq uint64) {
	if seq <= d.latest {
		return
	}
	d.latest = seq
	for c := range d.calls {
		if c.doc.Seq < seq {
			c.cancel()
		}
	}
}

// Close cancels every call in flight and refuses all later ones; nothing
// is delivered to the page afterwards. It does not wait.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for c := range d.calls {
		c.cancel()
	}
}

func (d *Dispatcher) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// Page events (docs/bridge.md, "Events").
const (
	EventShown        = "shown"
	EventHidden       = "hidden"
	EventThemeChanged = "themechanged"
)

// EmitShown tells the page that its view was shown.
func (d *Dispatcher) EmitShown() { d.emit(EventShown, struct{}{}) }

// EmitHidden tells the page that its view was hidden.
func (d *Dispatcher) EmitHidden() { d.emit(EventHidden, struct{}{}) }

// EmitThemeChanged tells the page that the host's theme changed.
func (d *Dispatcher) EmitThemeChanged(t Theme) {
	d.emit(EventThemeChanged, struct {
		Theme Theme `json:"theme"`
	}{t})
}

// emit delivers an event to whatever document is shown, if it is on the
// Miniapp's origin: events are never given to another site.
func (d *Dispatcher) emit(name string, data any) {
	if d.isClosed() {
		return
	}
	b, err := json.Marshal(pageEvent{V: ProtocolVersion, Event: name, Data: data})
	if err != nil {
		d.log.Error("bridge: event not encoded", "event", name, "err", err)
		return
	}
	d.view.Deliver(func(now Document) string {
		if d.isClosed() || !d.isMiniappOrigin(now.URL) {
			return ""
		}
		return receiveScript(b)
	})
}

func (d *Dispatcher) publish(method string, decision string, code Code) {
	if d.events == nil {
		return
	}
	if len(method) > 64 {
		method = method[:64] // the name may come from a hostile message
	}
	d.events.Publish(BridgeCallEvent{Method: method, Decision: decision, Code: code})
}
