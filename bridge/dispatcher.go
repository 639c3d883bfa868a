package bridge

import (
	"bytes"
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
	"time"

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
	// Authorize runs an authorization for a public client (docs/bridge.md: PKCE
	// with golang.org/x/oauth2, consent, code exchange). A denial is
	// Errorf(CodeAccessDenied, ...).
	Authorize(ctx context.Context, req AuthorizeRequest) (AuthorizeResult, error)
	// OpenExternal opens url, an absolute http or https URL in canonical
	// form, in the user's browser.
	//
	// The page's word that the user acted ("gesture": true) is not proof:
	// the Miniapp's own scripts can forge it, and WebKit counts the host's
	// Eval as a user gesture. Before opening anything, OpenExternal MUST
	// confirm that the user pressed a key or a pointer button (or began a
	// touch) on the Miniapp's view within GestureWindow, as the host saw it
	// natively: GTK key-press, button-press or touch-begin events on the
	// WebKitWebView, recorded in Go (see [Gestures]), ignoring events sent
	// by other clients (send_event set). Each such input opens at most one
	// URL. Without one, it returns Errorf(CodeNoUserGesture, ...) and
	// opens nothing. The dispatcher refuses calls whose script saw no
	// gesture before asking, but that check is only a first filter.
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
	// Events receives a BridgeCallEvent for every call of the Miniapp's
	// bridge script, and at most one BridgeRefusedEvent per RefusedInterval
	// for the messages that cannot be attributed to it; nil for none.
	Events Publisher
	// Logger records refusals and host failures; nil discards.
	Logger *slog.Logger
	// Rand is the source of the per-view key; nil means crypto/rand.
	Rand io.Reader
	// MaxInFlight caps the calls running at once, so that a page cannot
	// start goroutines without bound; 0 means 16.
	MaxInFlight int
	// Now is the clock that spaces BridgeRefusedEvents; nil means time.Now.
	Now func() time.Time
}

// RefusedInterval is the least time between two BridgeRefusedEvents of one
// view. A frame can post as fast as it likes; one event per interval keeps
// it from filling the automation clients' buffers (and so disconnecting
// them) and the host's log.
const RefusedInterval = time.Second

// Dispatcher serves the bridge of one Miniapp view: it decodes page
// messages, gates them, calls the Host and delivers replies and events.
// Its methods are safe for concurrent use. Receive, Navigated and the Emit
// methods never block, so the host calls them on the UI thread.
type Dispatcher struct {
	origin origin.Origin
	host   Host
	view   View
	events Publisher
	log    *slog.Logger
	key    string
	// script is the bridge script around its configuration, which
	// Script fills in at each call with the page facts of the moment.
	scriptHead, scriptTail string
	maxInFlight            int
	now                    func() time.Time
	// after schedules f in d; time.AfterFunc, replaced by tests.
	after func(d time.Duration, f func()) (stop func() bool)

	mu      sync.Mutex // guards below
	closed  bool
	latest  uint64 // highest document Seq seen
	calls   map[*call]struct{}
	refused refusals
	page    Page // what the page is told of its host: Script's and SetPage's
}

// Page are the facts of its host a Miniapp's page reads as properties
// (docs/bridge.md, "Viewport and theme"): window.miniapp.viewport and
// window.miniapp.theme, each a JSON object the host makes (package
// device's Viewport and PageTheme), or absent.
type Page struct {
	Viewport json.RawMessage
	Theme    json.RawMessage
}

// refusals counts the untrusted messages not yet reported.
type refusals struct {
	count     int
	reasons   map[Code]int
	published bool        // an event was published at last
	last      time.Time   // when, by d.now
	stop      func() bool // stops the pending flush; nil when none
	// gen numbers the flushes, so that one that was already running when
	// it was stopped or replaced does nothing.
	gen uint64
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
	head, tail, err := scriptParts()
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
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Dispatcher{
		origin: cfg.Origin, host: cfg.Host, view: cfg.View, events: cfg.Events, log: log,
		key: key, scriptHead: head, scriptTail: tail, maxInFlight: max, calls: map[*call]struct{}{}, now: now,
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
	}, nil
}

// scriptParts are the bridge script before and after its configuration's
// placeholder.
func scriptParts() (head, tail string, err error) {
	src, err := assets.FS.ReadFile("bridge/miniapp.js")
	if err != nil {
		return "", "", fmt.Errorf("bridge: script: %w", err)
	}
	s := string(src)
	if strings.Count(s, scriptPlaceholder) != 1 {
		return "", "", errors.New("bridge: script: configuration placeholder not found exactly once")
	}
	head, tail, _ = strings.Cut(s, scriptPlaceholder)
	return head, tail, nil
}

// scriptConfig is the bridge script's configuration. The key is hex, the
// origin canonical ASCII and the names constants; json.Marshal escapes the
// rest (the page facts too), so the configuration cannot break out of the
// script.
func scriptConfig(key, miniappOrigin string, page Page) (string, error) {
	cfg, err := json.Marshal(struct {
		Key      string          `json:"key"`
		Origin   string          `json:"origin"`
		Post     string          `json:"post"`
		Receive  string          `json:"receive"`
		Max      int             `json:"max"` // the script refuses larger requests itself
		Viewport json.RawMessage `json:"viewport,omitempty"`
		Theme    json.RawMessage `json:"theme,omitempty"`
	}{key, miniappOrigin, PostFunction, ReceiveFunction, MaxMessageSize, page.Viewport, page.Theme})
	if err != nil {
		return "", fmt.Errorf("bridge: script: %w", err)
	}
	return string(cfg), nil
}

// Script is the bridge script for this view, with its key and the page
// facts set last (SetPage). The host injects it into the top frame only,
// at document start, after the script that defines PostFunction (package
// host's transport script). It must never be injected into the consent
// view or any other host-owned page.
func (d *Dispatcher) Script() string {
	d.mu.Lock()
	page := d.page
	d.mu.Unlock()
	cfg, err := scriptConfig(d.key, d.origin.String(), page)
	if err != nil {
		// Facts that are no JSON are the host's bug: the page gets none.
		d.log.Error("bridge: page facts not encoded", "err", err)
		cfg, _ = scriptConfig(d.key, d.origin.String(), Page{})
	}
	return d.scriptHead + cfg + d.scriptTail
}

// SetPage makes p what the page is told of its host: documents loaded from
// now on read it at once (Script), and the document shown gets a
// viewportchanged or themechanged event for what changed.
func (d *Dispatcher) SetPage(p Page) {
	d.mu.Lock()
	old := d.page
	d.page = p
	d.mu.Unlock()
	if !bytes.Equal(old.Viewport, p.Viewport) && p.Viewport != nil {
		d.emit(EventViewportChanged, p.Viewport)
	}
	if !bytes.Equal(old.Theme, p.Theme) && p.Theme != nil {
		d.emit(EventThemeChanged, p.Theme)
	}
}

// Receive handles one message that arrived through the bound function.
// It returns at once: the reply, if any, is delivered later through the
// View. It never panics on any input.
//
// Only a trusted sender is ever answered: a JSON object with this view's
// key, from the main frame, whose document is on the Miniapp's origin.
// Anything else gets nothing, not even an error: a reply is a host Eval in
// the sender's page, where a foreign page may have defined the receive
// function itself, and WebKit counts that Eval as a user gesture. Such
// messages are only counted and reported now and then (refuseUntrusted),
// never with anything they contain.
func (d *Dispatcher) Receive(f Frame, msg string) {
	req, decodeErr := decodeRequest([]byte(msg))
	switch {
	case !f.IsMainFrame:
		d.refuseUntrusted(CodeSubframe)
		return
	case !req.object:
		// Too large, or not a JSON object: decodeRequest said which.
		d.refuseUntrusted(decodeErr.Code)
		return
	case subtle.ConstantTimeCompare([]byte(req.key), []byte(d.key)) != 1:
		// A subframe posting straight to the message handler, which the
		// host could not tell from the main frame, or another page.
		d.refuseUntrusted(CodeSubframe)
		return
	}
	// The main frame's bridge script, if its document is the Miniapp's.
	var invoke invocation
	var reqErr *Error
	if decodeErr != nil {
		reqErr = decodeErr
	} else {
		invoke, reqErr = d.bind(req)
	}
	d.mu.Lock()
	gateErr := d.gateLocked(f.Document)
	if gateErr == nil && reqErr == nil && len(d.calls) >= d.maxInFlight {
		reqErr = Errorf(CodeBusy, "%d calls are already in flight", d.maxInFlight)
	}
	if gateErr != nil || reqErr != nil {
		d.mu.Unlock()
		switch {
		case gateErr != nil && gateErr.Code == CodeWrongOrigin:
			// The key in a document that is not the Miniapp's: the
			// script never keeps it there, so this is a leaked key or a
			// navigation the host has not reported yet. Not trusted.
			d.refuseUntrusted(CodeWrongOrigin)
		case gateErr != nil:
			// Closed, or a document no longer shown: nobody is left to
			// answer.
			d.log.Info("bridge: call refused", "method", apiMethod(req.method), "code", gateErr.Code)
			d.publish(req.method, DecisionRefused, gateErr.Code)
		default:
			// An id that could not be read is 0, which settles no call.
			d.refuse(f.Document, req.id, req.method, reqErr)
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &call{id: req.id, method: req.method, doc: f.Document, cancel: cancel}
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

// refuse answers a request of a trusted sender that is not run. The error
// reply goes to the calling document only, and only while it is still on
// the Miniapp's origin: if the view has moved on, nobody is left to hear.
func (d *Dispatcher) refuse(doc Document, id int64, method string, e *Error) {
	d.log.Info("bridge: call refused", "method", apiMethod(method), "code", e.Code, "message", e.Message)
	d.publish(method, DecisionRefused, e.Code)
	msg := encodeReply(id, nil, e)
	d.view.Deliver(func(now Document) string {
		if now.Seq != doc.Seq || d.isClosed() || !d.isMiniappOrigin(now.URL) {
			return ""
		}
		return receiveScript(msg)
	})
}

// refuseUntrusted counts a message that cannot be attributed to the
// Miniapp's bridge script. Nothing is delivered, and nothing the message
// holds is logged or published: the first refusal after a quiet
// RefusedInterval is reported at once, later ones are counted and reported
// together when the interval ends, so a flood costs one event and one log
// line per second.
func (d *Dispatcher) refuseUntrusted(reason Code) {
	now := d.now()
	d.mu.Lock()
	r := &d.refused
	if r.reasons == nil {
		r.reasons = map[Code]int{}
	}
	r.count++
	r.reasons[reason]++
	var ev BridgeRefusedEvent
	ok := false
	switch elapsed := now.Sub(r.last); {
	case !r.published || elapsed >= RefusedInterval:
		ev, ok = d.takeRefusedLocked()
	case r.stop == nil:
		r.gen++
		gen := r.gen
		r.stop = d.after(RefusedInterval-elapsed, func() { d.flushRefused(gen) })
	}
	d.mu.Unlock()
	if ok {
		d.reportRefused(ev)
	}
}

// flushRefused reports the refusals counted since the last report; it runs
// when an interval with refusals in it ends.
func (d *Dispatcher) flushRefused(gen uint64) {
	d.mu.Lock()
	if d.refused.stop == nil || d.refused.gen != gen {
		d.mu.Unlock()
		return
	}
	d.refused.stop = nil
	ev, ok := d.takeRefusedLocked()
	d.mu.Unlock()
	if ok {
		d.reportRefused(ev)
	}
}

// takeRefusedLocked returns the counted refusals as an event, if there are
// any, and starts a new interval.
func (d *Dispatcher) takeRefusedLocked() (BridgeRefusedEvent, bool) {
	r := &d.refused
	if r.count == 0 {
		return BridgeRefusedEvent{}, false
	}
	ev := BridgeRefusedEvent{Count: r.count, Reasons: r.reasons}
	r.count, r.reasons = 0, nil
	r.published, r.last = true, d.now()
	return ev, true
}

func (d *Dispatcher) reportRefused(ev BridgeRefusedEvent) {
	d.log.Info("bridge: messages refused", "count", ev.Count, "reasons", ev.Reasons)
	if d.events != nil {
		d.events.Publish(ev)
	}
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
	d.closed = true
	for c := range d.calls {
		c.cancel()
	}
	// Report what is still counted now rather than from a timer that
	// would outlive the view.
	if d.refused.stop != nil {
		d.refused.stop()
		d.refused.stop = nil
	}
	ev, ok := d.takeRefusedLocked()
	d.mu.Unlock()
	if ok {
		d.reportRefused(ev)
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
	// EventViewportChanged carries window.miniapp.viewport's new value.
	EventViewportChanged = "viewportchanged"
)

// EmitShown tells the page that its view was shown.
func (d *Dispatcher) EmitShown() { d.emit(EventShown, struct{}{}) }

// EmitHidden tells the page that its view was hidden.
func (d *Dispatcher) EmitHidden() { d.emit(EventHidden, struct{}{}) }

// EmitThemeChanged tells the page that the host's theme changed, with
// nothing but its name; SetPage tells it the colours too.
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

// publish reports a call of the Miniapp's bridge script. Only the API's own
// method names reach the channel: any other string the page sent becomes
// "", so that nothing a page chose is shown to a test driver as if the
// host had said it.
func (d *Dispatcher) publish(method string, decision string, code Code) {
	if d.events == nil {
		return
	}
	d.events.Publish(BridgeCallEvent{Method: apiMethod(method), Decision: decision, Code: code})
}

// apiMethod returns method if it names a method of the API, else "".
func apiMethod(method string) string {
	switch method {
	case MethodReady, MethodClose, MethodGetContext, MethodAuthorize, MethodOpenExternal:
		return method
	}
	return ""
}
