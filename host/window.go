package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
)

// Window is the host's one desktop window: the Miniapp's view with the
// host's own view layered over it, driven through an [Engine]. The engine
// allows one window per process, made on the main goroutine, so a Window is
// made once (by [NewWindow]) and Miniapps are mounted into it one after
// another.
//
// Every exported method is safe from any goroutine: engine work is posted
// to the UI thread with Dispatch, and the UI thread never waits for a
// goroutine.
type Window struct {
	// The Window's jobs are types of their own, each with its own lock
	// (or none where it keeps no state another goroutine writes): the
	// engine's reports (engineSink), the consent flows (consentFlows),
	// the host's own view (hostView), the calls that drive and read the
	// views (webViews) and the network conditions (network). The only
	// nesting of their locks is Window.mu before consentFlows.mu.

	eng  Engine
	opts Options
	// tracer records the sign-ins' spans (tracing.go): Options.Traces',
	// a no-op one without.
	tracer trace.Tracer
	key    string // proves a bridge message came from the top frame's host script

	// sink receives the engine's reports (EngineEvents) and keeps the
	// Miniapp view's page as the engine reported it, under its own lock.
	// The engine is given it, never the Window.
	sink *engineSink
	// flows runs the consent flows; its lock guards the running flow and
	// the network log's flow of the view.
	flows *consentFlows
	// hv is the host's own view: its page and the screens it shows
	// (UI-thread state), and whether it is shown (its lock).
	hv *hostView
	// webViews drives and reads the views for other goroutines (eval,
	// cookies, snapshots); it has no state to lock. Its exported methods
	// are the Window's.
	*webViews
	// network is the Miniapp view's network conditions (SetNetwork); its
	// lock guards the proxy. Its exported methods are the Window's.
	*network

	// gestures holds the latest real key press, click or touch on the
	// Miniapp's view (not on the host's view), for openExternal; it has a
	// lock of its own.
	gestures bridge.Gestures

	// dev is the device the Miniapp is shown as (SetDevice), under its
	// own lock.
	dev *devices

	stop     chan struct{} // closed by Terminate
	stopOnce sync.Once
	live     liveness // the UI loop's liveness, under its own lock

	listenMu  sync.Mutex // guards listeners and nextID
	listeners map[int]func(Event)
	nextID    int

	filterMu    sync.Mutex // guards filterRules; held while a filter compiles
	filterRules string     // the content-blocker rules installed in the view

	// mu guards the mount: the Miniapp mounted, the number of its mount
	// and the launcher's origin. It is held before consentFlows.mu where
	// both are (a flow begins for its mount; Mount and the view's
	// requests read the network log's flow with the Miniapp).
	mu         sync.Mutex
	app        *Miniapp
	mountGen   int           // bumped by each Mount, so stale flows stop
	launcherAt origin.Origin // the launcher's origin: the only one its view loads
}

// NewWindow makes the window with the engine newEngine makes. It must run
// on the main goroutine, before [Window.Run], and only once per process.
// Point the XDG_* directories at the Miniapp's data folder first (see
// [UseDataDir]).
func NewWindow(newEngine NewEngine, opts Options) (*Window, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	page, err := hostPage()
	if err != nil {
		return nil, err
	}
	capture, err := consoleScript()
	if err != nil {
		return nil, err
	}
	if err := opts.Device.validate(); err != nil {
		return nil, err
	}
	dev, err := newDevices()
	if err != nil {
		return nil, err
	}
	dev.set(opts.Device)
	w := &Window{opts: opts, listeners: map[int]func(Event){}, stop: make(chan struct{}), dev: dev, tracer: opts.Traces.Tracer(tracerScope)}
	w.hv = &hostView{page: page, emit: w.emit}
	var k [16]byte
	if _, err := rand.Read(k[:]); err != nil {
		return nil, fmt.Errorf("host: bridge key: %w", err)
	}
	w.key = hex.EncodeToString(k[:])
	w.sink = &engineSink{w: w}
	w.flows = &consentFlows{w: w}
	var first MiniappData
	if opts.FirstOrigin != "" {
		if first, err = w.opts.dataOf(opts.FirstOrigin, opts.FirstID); err != nil {
			return nil, err
		}
	}
	w.eng, err = newEngine(EngineConfig{Title: opts.Title, Width: opts.Width, Height: opts.Height, DataDir: opts.DataDir,
		Miniapp: first, Launcher: opts.Launcher, Layout: opts.Layout, DevTools: opts.DevTools, WebDriver: opts.WebDriver}, w.sink)
	if err != nil {
		return nil, err
	}
	w.hv.eng = w.eng
	w.webViews = &webViews{eng: w.eng, emit: w.emit, launcher: opts.Launcher}
	w.network = &network{eng: w.eng, always: opts.NetworkProxy, loopbackOnly: opts.NetworkLoopbackOnly, viewNet: w.viewNet}
	w.Dispatch(func() {
		w.eng.SetConsoleScript(capture)
		w.eng.SetDevice(engineDevice(opts.Device))
	})
	go w.watchdog()
	go w.live.watch(w)
	return w, nil
}

// watchdog asks the Miniapp's web process a trivial question (Engine.Probe)
// every half HangTimeout. Engines only notice an unresponsive web process
// when they wait on it (input, a load), so a page spinning in a loop on its
// own would hang the view for ever; a page that does not answer within
// HangTimeout has its web process stopped, which shows the host's
// "stopped" screen. The probe runs no script: WebKitGTK evaluates with a
// forced user gesture and uses up the page's transient activation when
// the evaluation ends, so an evaluation landing between a user's press and
// click would make the click look like no gesture to the page.
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
		// starting, a slow server) is the engine's to watch.
		idle := w.mounted() != nil && w.sink.pageLoaded()
		if !idle {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.HangTimeout)
		err := awaitErr(ctx, w.eng, "probe", w.eng.Probe)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && w.live.ok() {
			// A stalled UI loop answers nothing either: that is the
			// liveness monitor's to report, not the page's fault.
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

// Run runs the UI loop until [Window.Terminate]. It must run on the main
// goroutine.
func (w *Window) Run() { w.eng.Run() }

// Size is the window's last size in its normal state (not maximized or
// full screen), as the user left it, for the next window to open with;
// 0, 0 if it is not known. Call it on the UI thread or after Run has
// returned.
func (w *Window) Size() (width, height int) { return w.eng.WindowSize() }

// Terminate stops the UI loop.
func (w *Window) Terminate() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.closeNetwork()
	})
	w.eng.Terminate()
}

// Dispatch runs f on the UI thread, after the current callback if called
// from it.
func (w *Window) Dispatch(f func()) { w.eng.Dispatch(f) }

// OnEvent registers f for every event of the window and returns a function
// that removes it. f runs on the UI thread or on a flow's goroutine and
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
// issued; watch [EventLoadFinished] for the page. The previous Miniapp's
// bridge calls end with it.
func (w *Window) Mount(ctx context.Context, app Miniapp) error {
	if err := app.validate(); err != nil {
		return err
	}
	if err := w.installFilter(ctx, app.Policy.FilterRules()); err != nil {
		return err
	}
	// The Miniapp's own data (cookies, storage), before anything of it
	// loads: never the previous Miniapp's (docs/host.md, "Each Miniapp's
	// data").
	data, err := w.opts.appData(&app)
	if err != nil {
		return err
	}
	if err := awaitErr(ctx, w.eng, "data", func(done func(error)) {
		err := w.eng.UseData(data)
		if err == nil {
			// A new view has no page yet: the watchdog has nothing to probe.
			w.sink.setLoaded(false)
		}
		done(err)
	}); err != nil {
		return err
	}
	// The launch's own network conditions, before anything of it loads:
	// never the previous launch's.
	if err := w.SetNetwork(ctx, app.Network); err != nil {
		return err
	}
	w.flows.abandon()
	// Input given to the previous Miniapp opens nothing for this one.
	w.gestures.Take(time.Now())
	w.mu.Lock()
	w.mountGen++
	prev := w.app
	w.app = &app
	w.flows.clearNet()
	w.mu.Unlock()
	if prev != nil && prev.Bridge != nil {
		prev.Bridge.Close()
	}
	// The Miniapp's scripts: the device's, the transport, then its
	// bridge script. Replacing them all drops the previous Miniapp's key.
	dev := w.dev.get()
	if app.Bridge != nil {
		app.Bridge.SetPage(pageFacts(dev))
	}
	devJS, err := w.dev.script(dev)
	if err != nil {
		return err
	}
	js := w.miniappScript(devJS, &app)
	load := app.LoadURL.String()
	w.Dispatch(func() {
		w.hv.showUI(false)
		w.eng.SetMiniappScript(js)
		if app.Confidential {
			// A confidential Miniapp's first page is the consent: its
			// auth_url redirects to the service at once. The host page
			// must be ready by then, so it loads now rather than after a
			// first Miniapp page that never comes.
			w.hv.ensurePageUI()
		}
		w.eng.Load(ViewMiniapp, load)
	})
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
	return w.installFilter(ctx, p.FilterRules())
}

// installFilter compiles rules and makes them the view's only filter,
// unless they are the ones installed.
func (w *Window) installFilter(ctx context.Context, rules string) error {
	w.filterMu.Lock()
	defer w.filterMu.Unlock()
	if w.filterRules == rules {
		return nil
	}
	_, err := await(ctx, w.eng, func(done func(struct{}, error)) {
		w.eng.SetContentFilter(rules, func(err error) { done(struct{}{}, err) })
	})
	if err != nil {
		return fmt.Errorf("host: content filter for the authorization endpoint: %w", err)
	}
	w.filterRules = rules
	return nil
}

// await starts an engine call on the UI thread and waits for its done
// callback or ctx.
func await[T any](ctx context.Context, eng Engine, start func(done func(T, error))) (T, error) {
	type answer struct {
		v   T
		err error
	}
	ch := make(chan answer, 1)
	eng.Dispatch(func() { start(func(v T, err error) { ch <- answer{v, err} }) })
	select {
	case a := <-ch:
		return a.v, a.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// awaitErr is await for calls that only succeed or fail.
func awaitErr(ctx context.Context, eng Engine, what string, start func(done func(error))) error {
	_, err := await(ctx, eng, func(done func(struct{}, error)) {
		start(func(err error) { done(struct{}{}, err) })
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("host: %s: %w", what, err)
	}
	return err
}

// ShowRejection shows why a Miniapp was not opened, in the host's view; the
// Miniapp's view loads nothing.
func (w *Window) ShowRejection(title, text string) {
	w.flows.abandon()
	w.mu.Lock()
	w.mountGen++
	w.app = nil
	w.mu.Unlock()
	w.hv.show(map[string]any{"screen": "rejection", "title": title, "text": text})
	if w.opts.WebDriver {
		page, err := webdriverRejectionPage(title, text)
		if err != nil {
			page = "<!doctype html><title>" + template.HTMLEscapeString(title) + "</title>"
		}
		w.Dispatch(func() { w.eng.LoadHTML(ViewMiniapp, page) })
	}
}

// Reload loads the Miniapp's page again from its URL, as the user's F5
// does: through the navigation policy, with the view's cookies and storage
// kept.
func (w *Window) Reload(ctx context.Context) error {
	w.mu.Lock()
	mounted := w.app != nil
	w.mu.Unlock()
	if !mounted {
		return errors.New("host: reload: no Miniapp is mounted")
	}
	_, err := w.EvalResult(ctx, "location.reload(), true")
	return err
}

// TopURL is the URL of the document committed in the view's top frame.
func (w *Window) TopURL() *url.URL { return w.sink.top() }

// mounted is the Miniapp mounted now; nil when none is.
func (w *Window) mounted() *Miniapp {
	app, _ := w.mount()
	return app
}

// mount is the Miniapp mounted now (nil when none is) and the number of
// its mount.
func (w *Window) mount() (app *Miniapp, gen int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.app, w.mountGen
}

// stale reports whether the mount numbered gen has been replaced.
func (w *Window) stale(gen int) bool {
	_, now := w.mount()
	return gen != now
}

// viewNet is the mounted Miniapp and the network log's flow its view's
// requests belong to now, with when the page that flow led to loaded
// (zero before), read together.
func (w *Window) viewNet() (app *Miniapp, nf *netlog.Flow, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	nf, until = w.flows.viewNet()
	return w.app, nf, until
}

// CloseConsent hides the host's view without deciding; the Miniapp stays
// where it was and the consent request is abandoned.
func (w *Window) CloseConsent() {
	w.flows.abandon()
	w.hv.hide()
}

// Decide answers the consent on screen as the Approve or Deny button does.
func (w *Window) Decide(d consent.Decision) { go w.flows.decide(d) }

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

// Deliver implements bridge.View: deliver runs on the UI thread with the
// main frame's document of that moment, and its script is evaluated in the
// main frame in the same turn.
func (w *Window) Deliver(deliver func(now bridge.Document) string) {
	w.Dispatch(func() {
		if js := deliver(w.sink.doc()); js != "" {
			w.eng.Eval(ViewMiniapp, js, nil)
		}
	})
}

// UseDataDir points WebKit's XDG_DATA_HOME, XDG_CACHE_HOME and
// XDG_CONFIG_HOME at folders under dir, so that everything the engine keeps
// for a Miniapp (local storage, caches, IndexedDB) is its own. It must run
// before the window is made, because engines read them once.
func UseDataDir(dir string) error {
	for env, sub := range map[string]string{"XDG_DATA_HOME": "data", "XDG_CACHE_HOME": "cache", "XDG_CONFIG_HOME": "config"} {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("host: data dir: %w", err)
		}
		if err := os.Setenv(env, p); err != nil {
			return fmt.Errorf("host: data dir: %w", err)
		}
	}
	return nil
}
