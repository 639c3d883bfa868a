//go:build linux && cgo

package host

/*
#cgo pkg-config: gtk+-3.0 webkit2gtk-4.0
#include <stdlib.h>
#include "webkit_linux.h"
*/
import "C"

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"

	webview "github.com/webview/webview_go"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/origin"
)

// HasWebview reports whether this build can open windows.
const HasWebview = true

// Window is the host's one desktop window: the Miniapp's web view with the
// host's own view layered over it. WebKitGTK allows one window per process
// made on the main thread, so a Window is made once (by [NewWindow], on the
// main goroutine) and Miniapps are mounted into it one after another.
//
// Every method is safe from any goroutine unless its comment says
// otherwise: UI work is posted to the main thread with Dispatch and the
// main thread never waits for a goroutine.
type Window struct {
	wv       webview.WebView
	view     *C.WebKitWebView // the Miniapp's view
	hostView *C.WebKitWebView // the host's consent/rejection view, over it
	launcher *C.WebKitWebView // the playground's launcher, in a page of its own; nil outside the playground
	handle   cgo.Handle
	opts     Options
	key      string // proves a bridge message came from the top frame's host script

	// gestures holds the latest real key press, click or touch on the
	// Miniapp's view (not on the host's view), for openExternal.
	gestures bridge.Gestures

	listenMu  sync.Mutex // guards below
	listeners map[int]func(Event)
	nextID    int

	// The host page is loaded once (ensureHostPage); hostReady is closed
	// when it has finished loading.
	hostPage  string
	hostOnce  sync.Once
	hostReady chan struct{}

	stop     chan struct{} // closed by Terminate
	stopOnce sync.Once

	filterMu    sync.Mutex // guards filterRules; held while a filter compiles
	filterRules string     // the content-blocker rules installed in the view

	mu           sync.Mutex // guards below
	app          *Miniapp
	mountGen     int           // bumped by each Mount, so stale flows stop
	topURI       string        // last committed top-level URL of the view, as WebKit reports it
	topURL       *url.URL      // topURI made canonical; nil when url.URL cannot carry it
	seq          uint64        // committed main-frame documents, for the bridge
	flow         *flow         // the consent flow running, if any
	loaded       bool          // the view's page has finished loading and is not loading another
	unresponsive bool          // the web process stopped answering
	hostVisible  bool          // the host's view is shown over the Miniapp
	launcherAt   origin.Origin // the launcher's origin: the only one its view loads
}

// NewWindow creates the window. It must run on the main goroutine, before
// [Window.Run], and only once per process. Point the XDG_* directories at
// the Miniapp's data folder first (see [UseDataDir]).
func NewWindow(opts Options) (*Window, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	w := &Window{opts: opts, listeners: map[int]func(Event){}, hostReady: make(chan struct{})}
	var k [16]byte
	if _, err := rand.Read(k[:]); err != nil {
		return nil, fmt.Errorf("host: bridge key: %w", err)
	}
	w.key = hex.EncodeToString(k[:])
	w.wv = webview.New(opts.Debug)
	if w.wv == nil || w.wv.Window() == nil {
		return nil, errors.New("host: cannot open a window: no display (run under xvfb-run)")
	}
	w.handle = cgo.NewHandle(w)
	w.stop = make(chan struct{})
	w.hostView = C.mh_setup((*C.GtkWindow)(w.wv.Window()), C.uintptr_t(w.handle))
	if w.hostView == nil {
		return nil, errors.New("host: the window has no WebKitWebView")
	}
	w.view = C.mh_main_view((*C.GtkWindow)(w.wv.Window()))
	w.wv.SetTitle(opts.Title)
	w.wv.SetSize(opts.Width, opts.Height, webview.HintNone)
	if !opts.Ephemeral {
		p := cstr(filepath.Join(opts.DataDir, "cookies.sqlite"))
		C.mh_set_persistent_cookies(w.view, p)
		C.free(unsafe.Pointer(p))
	}
	page, err := hostPage()
	if err != nil {
		return nil, err
	}
	// The host page loads after the Miniapp's first page, at mount for a
	// confidential Miniapp, or when a screen is needed first: its web
	// process would compete with the Miniapp's start on a small machine.
	w.hostPage = page
	go w.watchdog()
	return w, nil
}

// watchdog asks the Miniapp's page for a trivial evaluation every half
// HangTimeout. WebKit only notices an unresponsive web process when it is
// waiting on it (input, a load), so a page spinning in a loop on its own
// would hang the view for ever; a page that does not answer within
// HangTimeout has its web process stopped, which shows the host's
// "stopped" screen.
func (w *Window) watchdog() {
	tick := time.NewTicker(w.opts.HangTimeout / 2)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		// Only a loaded page is probed: a load in progress (a web process
		// starting, a slow server) is WebKit's to watch.
		w.mu.Lock()
		idle := w.app != nil && w.loaded
		w.mu.Unlock()
		if !idle {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.HangTimeout)
		_, err := w.EvalResult(ctx, "0")
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			select {
			case <-w.stop:
				return
			default:
			}
			w.emit(Event{Kind: EventUnresponsive})
			w.TerminateWebProcess()
		}
	}
}

// Run runs the GTK main loop until [Window.Terminate]. It must run on the
// main goroutine.
func (w *Window) Run() { w.wv.Run() }

// Terminate stops the main loop.
func (w *Window) Terminate() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.wv.Terminate()
}

// Dispatch runs f on the main thread, after the current callback if
// called from it.
func (w *Window) Dispatch(f func()) { C.mh_dispatch(C.uintptr_t(cgo.NewHandle(f))) }

// OnEvent registers f for every event of the window and returns a function
// that removes it. f runs on the main thread or on a flow's goroutine and
// must not block.
func (w *Window) OnEvent(f func(Event)) (remove func()) {
	w.listenMu.Lock()
	defer w.listenMu.Unlock()
	id := w.nextID
	w.nextID++
	w.listeners[id] = f
	return func() {
		w.listenMu.Lock()
		delete(w.listeners, id)
		w.listenMu.Unlock()
	}
}

// publish sends an event to the automation channel, if there is one.
func (w *Window) publish(e bridge.Event) {
	if w.opts.Events != nil {
		w.opts.Events.Publish(e)
	}
}

func (w *Window) emit(e Event) {
	e.At = time.Now()
	w.listenMu.Lock()
	fs := make([]func(Event), 0, len(w.listeners))
	for _, f := range w.listeners {
		fs = append(fs, f)
	}
	w.listenMu.Unlock()
	for _, f := range fs {
		f(e)
	}
}

// Mount makes app the window's Miniapp: its policy decides every
// navigation from now on, fetch/XHR to the authorization endpoint are
// blocked, and the view loads app.LoadURL. It returns once the load is
// issued; watch [EventLoadFinished] for the page.
func (w *Window) Mount(ctx context.Context, app Miniapp) error {
	if err := app.validate(); err != nil {
		return err
	}
	w.abandonFlow()
	// Input given to the previous Miniapp opens nothing for this one.
	w.gestures.Take(time.Now())
	w.mu.Lock()
	w.mountGen++
	w.app = &app
	w.mu.Unlock()
	rules := app.Policy.filterRules()
	w.Dispatch(func() {
		w.showHostView(false)
		// The Miniapp's scripts: the transport, then its bridge script.
		// Replacing them all drops the previous Miniapp's key.
		js := w.transportScript()
		if app.Bridge != nil {
			js += app.Bridge.Script()
		}
		sc := cstr(js)
		C.mh_register_bridge(w.view, sc)
		C.free(unsafe.Pointer(sc))
	})
	if err := w.installFilter(ctx, rules); err != nil {
		return err
	}
	if app.Confidential {
		// A confidential Miniapp's first page is the consent: its
		// auth_url redirects to the service at once. The host page must
		// be ready by then, so it loads now rather than after a first
		// Miniapp page that never comes.
		w.ensureHostPage()
	}
	w.Navigate(app.LoadURL.String())
	return nil
}

// PrepareFilter compiles and installs the content filter for the service's
// authorization endpoint ahead of Mount, which then finds it in place:
// `open` runs it while the resolver is still at work.
func (w *Window) PrepareFilter(ctx context.Context, authorize *url.URL) error {
	p := Policy{Authorize: authorize}
	if err := p.Validate(); err != nil {
		return err
	}
	return w.installFilter(ctx, p.filterRules())
}

// installFilter compiles rules (WebKit's content-blocker JSON) and makes
// them the view's only filter, unless they are the ones installed.
func (w *Window) installFilter(ctx context.Context, rules string) error {
	w.filterMu.Lock()
	defer w.filterMu.Unlock()
	if w.filterRules == rules {
		return nil
	}
	store := filepath.Join(w.opts.DataDir, "content-filters")
	if err := os.MkdirAll(store, 0o700); err != nil {
		return fmt.Errorf("host: content filter store: %w", err)
	}
	done := make(chan string, 1)
	w.Dispatch(func() {
		cs, cr := cstr(store), cstr(rules)
		C.mh_install_filter(w.view, cs, cr, C.uintptr_t(cgo.NewHandle(func(errMsg string) { done <- errMsg })))
		C.free(unsafe.Pointer(cs))
		C.free(unsafe.Pointer(cr))
	})
	select {
	case msg := <-done:
		if msg != "" {
			return fmt.Errorf("host: content filter for the authorization endpoint: %s", msg)
		}
		w.filterRules = rules
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ShowRejection shows why a Miniapp was not opened, in the host's view; the
// Miniapp's view loads nothing.
func (w *Window) ShowRejection(title, text string) {
	w.abandonFlow()
	w.mu.Lock()
	w.mountGen++
	w.app = nil
	w.mu.Unlock()
	w.showHost(map[string]any{"screen": "rejection", "title": title, "text": text})
}

// Navigate loads u in the Miniapp's view. The policy decides it like any
// other navigation.
func (w *Window) Navigate(u string) { w.Dispatch(func() { w.loadLocked(u) }) }

// loadLocked runs on the main thread.
func (w *Window) loadLocked(u string) {
	s := cstr(u)
	C.mh_load_uri(w.view, s)
	C.free(unsafe.Pointer(s))
}

// Eval runs js in the Miniapp's top frame. js must be built with
// json.Marshal for every value it carries.
func (w *Window) Eval(js string) {
	w.Dispatch(func() {
		s := cstr(js)
		C.mh_eval(w.view, s)
		C.free(unsafe.Pointer(s))
	})
}

// EvalResult evaluates js in the Miniapp's top frame and returns its value
// as JSON. Tests and the automation channel use it; js must be built with
// json.Marshal for every value it carries.
func (w *Window) EvalResult(ctx context.Context, js string) (string, error) {
	return w.evalIn(ctx, w.view, js)
}

// EvalHost is EvalResult in the host's own view (tests press its buttons
// with it).
func (w *Window) EvalHost(ctx context.Context, js string) (string, error) {
	return w.evalIn(ctx, w.hostView, js)
}

func (w *Window) evalIn(ctx context.Context, view *C.WebKitWebView, js string) (string, error) {
	type answer struct{ v, err string }
	ch := make(chan answer, 1)
	w.Dispatch(func() {
		s := cstr(js)
		C.mh_eval_result(view, s, C.uintptr_t(cgo.NewHandle(func(v, e string) { ch <- answer{v, e} })))
		C.free(unsafe.Pointer(s))
	})
	select {
	case a := <-ch:
		if a.err != "" {
			return "", fmt.Errorf("host: eval: %s", a.err)
		}
		return a.v, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// TopURL is the URL of the document committed in the view's top frame.
func (w *Window) TopURL() *url.URL {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.topURL == nil {
		return nil
	}
	u := *w.topURL
	return &u
}

// CloseConsent hides the host's view without deciding; the Miniapp stays
// where it was and the consent request is abandoned.
func (w *Window) CloseConsent() {
	w.abandonFlow()
	w.Dispatch(func() { w.showHostView(false) })
}

// Decide answers the consent on screen as the Approve or Deny button does.
func (w *Window) Decide(d consent.Decision) { go w.decide(d) }

// Cookies returns the Cookie header the view sends to u, HttpOnly cookies
// included.
func (w *Window) Cookies(ctx context.Context, u string) (string, error) {
	type answer struct{ header, err string }
	ch := make(chan answer, 1)
	w.Dispatch(func() {
		s := cstr(u)
		C.mh_get_cookies(w.view, s, C.uintptr_t(cgo.NewHandle(func(h, e string) { ch <- answer{h, e} })))
		C.free(unsafe.Pointer(s))
	})
	select {
	case a := <-ch:
		if a.err != "" {
			return "", fmt.Errorf("host: read cookies: %s", a.err)
		}
		return a.header, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ClearCookies removes every cookie of the view's data store.
func (w *Window) ClearCookies(ctx context.Context) error {
	ch := make(chan string, 1)
	w.Dispatch(func() {
		C.mh_clear_cookies(w.view, C.uintptr_t(cgo.NewHandle(func(e string) { ch <- e })))
	})
	return waitErr(ctx, ch, "clear cookies")
}

// addCookies writes cookies into the view's store and returns once WebKit
// has confirmed every one: a navigation issued earlier could go out
// without them.
func (w *Window) addCookies(ctx context.Context, cookies []viewCookie) error {
	if len(cookies) == 0 {
		return nil
	}
	ch := make(chan string, len(cookies))
	w.Dispatch(func() {
		for _, c := range cookies {
			n, v, d, p := cstr(c.Name), cstr(c.Value), cstr(c.Domain), cstr(c.Path)
			C.mh_add_cookie(w.view, n, v, d, p, C.int(c.MaxAge), cbool(c.HTTPOnly), cbool(c.Secure),
				C.int(c.SameSite), C.uintptr_t(cgo.NewHandle(func(e string) { ch <- e })))
			for _, s := range []*C.char{n, v, d, p} {
				C.free(unsafe.Pointer(s))
			}
		}
	})
	for range cookies {
		if err := waitErr(ctx, ch, "add cookie"); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot writes a PNG of what the host's view shows (the consent screen)
// to path.
func (w *Window) Snapshot(ctx context.Context, path string) error {
	ch := make(chan string, 1)
	w.Dispatch(func() {
		s := cstr(path)
		C.mh_snapshot(w.hostView, s, C.uintptr_t(cgo.NewHandle(func(e string) { ch <- e })))
		C.free(unsafe.Pointer(s))
	})
	return waitErr(ctx, ch, "snapshot")
}

// SnapshotMiniapp writes a PNG of the Miniapp's view to path.
func (w *Window) SnapshotMiniapp(ctx context.Context, path string) error {
	ch := make(chan string, 1)
	w.Dispatch(func() {
		s := cstr(path)
		C.mh_snapshot(w.view, s, C.uintptr_t(cgo.NewHandle(func(e string) { ch <- e })))
		C.free(unsafe.Pointer(s))
	})
	return waitErr(ctx, ch, "snapshot")
}

// miniappCentre returns the centre of the Miniapp's view in screen
// coordinates, where tests click with XTest to give real native input.
func (w *Window) miniappCentre(ctx context.Context) (x, y int, err error) {
	ch := make(chan [2]int, 1)
	w.Dispatch(func() {
		var cx, cy C.int
		C.mh_screen_centre((*C.GtkWidget)(unsafe.Pointer(w.view)), &cx, &cy)
		ch <- [2]int{int(cx), int(cy)}
	})
	select {
	case p := <-ch:
		return p[0], p[1], nil
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

// TerminateWebProcess kills the Miniapp's web process, as the host does
// with a page that hangs.
func (w *Window) TerminateWebProcess() { w.Dispatch(func() { C.mh_terminate_web_process(w.view) }) }

func waitErr(ctx context.Context, ch <-chan string, what string) error {
	select {
	case e := <-ch:
		if e != "" {
			return fmt.Errorf("host: %s: %s", what, e)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ensureHostPage loads the host's page into its view, once.
func (w *Window) ensureHostPage() {
	w.hostOnce.Do(func() {
		w.Dispatch(func() {
			html := cstr(w.hostPage)
			C.mh_load_html(w.hostView, html)
			C.free(unsafe.Pointer(html))
		})
	})
}

// showHost renders a screen of the host's view and shows it over the
// Miniapp. The screen is JSON-encoded, so nothing in it is ever code.
func (w *Window) showHost(screen map[string]any) {
	b, err := json.Marshal(screen)
	if err != nil {
		w.emit(Event{Kind: EventError, Detail: "host: render: " + err.Error()})
		return
	}
	w.ensureHostPage()
	go func() {
		// The host page is loaded once; wait for it before the first
		// render (later renders find it ready at once).
		<-w.hostReady
		w.Dispatch(func() {
			s := cstr("window.hostRender(" + string(b) + ")")
			C.mh_eval(w.hostView, s)
			C.free(unsafe.Pointer(s))
			w.showHostView(true)
		})
	}()
}

// transportScript is injected at document start into the top frame only,
// before the bridge script. It defines the bound function the bridge script
// captures (bridge.PostFunction) over the "miniappHost" message handler,
// with a per-process key in its closure. A subframe gets no copy of it and
// cannot read the top frame's closure across origins; it can still reach
// the raw handler, but without the key: the host then tells the dispatcher
// that the message did not come from the main frame.
func (w *Window) transportScript() string {
	k, _ := json.Marshal(w.key)
	name, _ := json.Marshal(bridge.PostFunction)
	return `(function(){
  var h = window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.miniappHost;
  if (!h || window !== window.top) return;
  var post = h.postMessage.bind(h), key = ` + string(k) + `;
  Object.defineProperty(window, ` + string(name) + `, {
    value: function (msg) { post(key + String(msg)); },
    writable: false, configurable: true, enumerable: false
  });
})();
`
}

// onBridgeMessage runs on the main thread for every message posted to the
// bridge's handler, from any frame.
func (w *Window) onBridgeMessage(raw string) {
	main := len(raw) >= len(w.key) && subtle.ConstantTimeCompare([]byte(raw[:len(w.key)]), []byte(w.key)) == 1
	msg := raw
	if main {
		msg = raw[len(w.key):]
	}
	w.mu.Lock()
	app, doc := w.app, w.docLocked()
	w.mu.Unlock()
	if !main {
		w.emit(Event{Kind: EventBridgeRefused, URL: doc.URL, Detail: "not from the Miniapp's top frame"})
	}
	if app == nil || app.Bridge == nil {
		if main {
			w.emit(Event{Kind: EventBridgeRefused, URL: doc.URL, Detail: "this Miniapp has no bridge"})
		}
		return
	}
	if main {
		w.emit(Event{Kind: EventBridgeMessage, URL: doc.URL})
	}
	// The dispatcher gates (key, origin, document) and never blocks.
	app.Bridge.Receive(bridge.Frame{Document: doc, IsMainFrame: main}, msg)
}

// docLocked is the document in the view's main frame now.
func (w *Window) docLocked() bridge.Document {
	d := bridge.Document{Seq: w.seq}
	// The URL as WebKit reports it: the bridge takes its origin with
	// origin.OfString, which a page at a URL that url.URL cannot carry
	// (https://app.example/#/sale/50%) still has.
	d.URL = w.topURI
	return d
}

// Deliver implements bridge.View: deliver runs on the main thread with the
// main frame's document of that moment, and its script is evaluated in the
// main frame in the same turn.
func (w *Window) Deliver(deliver func(now bridge.Document) string) {
	w.Dispatch(func() {
		w.mu.Lock()
		doc := w.docLocked()
		w.mu.Unlock()
		if js := deliver(doc); js != "" {
			s := cstr(js)
			C.mh_eval(w.view, s)
			C.free(unsafe.Pointer(s))
		}
	})
}

// onHostMessage runs on the main thread for messages of the host's view.
func (w *Window) onHostMessage(raw string) {
	var m struct {
		Action  string `json:"action"`
		Screen  string `json:"screen"`
		Account string `json:"account"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return
	}
	switch m.Action {
	case "shown":
		w.emit(Event{Kind: EventHostShown, Detail: m.Screen})
		if m.Screen == "consent" {
			w.mu.Lock()
			var shown *bridge.ConsentShownEvent
			if w.flow != nil {
				shown = w.flow.shown
			}
			w.mu.Unlock()
			if shown != nil {
				w.publish(*shown)
			}
		}
	case "approve":
		go w.decide(consent.Decision{Action: consent.Approve, AccountID: m.Account})
	case "deny":
		go w.decide(consent.Decision{Action: consent.Deny})
	case "reload":
		w.mu.Lock()
		app := w.app
		w.mu.Unlock()
		w.showHostView(false)
		if app != nil {
			w.loadLocked(app.reloadURL().String())
		}
	case "close":
		w.abandonFlow()
		w.showHostView(false)
	}
}

func (w *Window) onDecide(n Navigation) bool {
	w.mu.Lock()
	app := w.app
	w.mu.Unlock()
	if app == nil {
		w.emit(Event{Kind: EventNavigation, URL: n.URL, Action: Block, Navigation: &n})
		return false
	}
	act, rule, u := app.Policy.DecideRule(n)
	w.emit(Event{Kind: EventNavigation, URL: n.URL, Action: act, Rule: rule, Navigation: &n})
	decision := bridge.NavigationBlocked
	switch act {
	case Allow:
		decision = bridge.NavigationAllowed
	case Consent:
		decision = bridge.NavigationConsent
	}
	w.publish(bridge.NavigationEvent{URL: n.URL, Decision: decision, Rule: rule})
	switch act {
	case Allow:
		if n.NewWindow {
			// No second window: the page loads in the Miniapp's view,
			// once the current signal has returned. Without a canonical
			// URL (see Policy.Decide), WebKit's own spelling is loaded.
			us := n.URL
			if u != nil {
				us = u.String()
			}
			w.Dispatch(func() { w.loadLocked(us) })
			return false
		}
		return true
	case Consent:
		w.startConsent(u)
	case External:
		go w.opts.OpenExternal(u.String())
	}
	return false
}

func (w *Window) onLoadChanged(ev int, uri string) {
	w.mu.Lock()
	w.loaded = ev == C.WEBKIT_LOAD_FINISHED
	w.mu.Unlock()
	switch ev {
	case C.WEBKIT_LOAD_COMMITTED:
		u, err := origin.ParseURL(uri)
		w.mu.Lock()
		w.topURI = uri
		if err == nil {
			w.topURL = u
		} else {
			w.topURL = nil
		}
		w.seq++
		app, doc := w.app, w.docLocked()
		w.mu.Unlock()
		if app != nil && app.Bridge != nil {
			app.Bridge.Navigated(doc)
		}
		w.emit(Event{Kind: EventLoadCommitted, URL: uri})
	case C.WEBKIT_LOAD_FINISHED:
		w.emit(Event{Kind: EventLoadFinished, URL: uri})
		w.ensureHostPage()
	}
}

func (w *Window) onResponsive(ok bool) {
	w.mu.Lock()
	w.unresponsive = !ok
	w.mu.Unlock()
	if ok {
		return
	}
	w.emit(Event{Kind: EventUnresponsive})
	time.AfterFunc(w.opts.HangTimeout, func() {
		w.Dispatch(func() {
			w.mu.Lock()
			hung := w.unresponsive
			w.mu.Unlock()
			if hung {
				C.mh_terminate_web_process(w.view)
			}
		})
	})
}

func (w *Window) onTerminated(reason int) {
	why := map[int]string{
		C.WEBKIT_WEB_PROCESS_CRASHED:               "crashed",
		C.WEBKIT_WEB_PROCESS_EXCEEDED_MEMORY_LIMIT: "used too much memory",
		C.WEBKIT_WEB_PROCESS_TERMINATED_BY_API:     "stopped answering and was stopped",
	}[reason]
	w.mu.Lock()
	w.unresponsive, w.loaded = false, false
	w.mu.Unlock()
	w.emit(Event{Kind: EventWebProcessTerminated, Detail: why})
	w.showHost(map[string]any{"screen": "crashed", "text": "The Miniapp's page " + why + "."})
}

func cstr(s string) *C.char { return C.CString(s) }

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// hideHost hides the host's view; main thread only.
func hideHost(w *Window) { w.showHostView(false) }

// showHostView shows or hides the host's view; main thread only.
func (w *Window) showHostView(show bool) {
	w.mu.Lock()
	w.hostVisible = show
	w.mu.Unlock()
	C.mh_show_host_view(w.hostView, cbool(show))
}
