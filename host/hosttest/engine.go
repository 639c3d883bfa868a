// Package hosttest holds what the host's tests share: a fake engine that
// needs no display (Engine) and the world of the end-to-end tests, the
// reference authorization server and the demo Miniapps on loopback
// (World).
package hosttest

import (
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// Engine is a host.Engine without a window: its UI thread is a goroutine
// that runs dispatched functions in order, and it records what the core
// asks of it. It behaves as WebKit does where the core depends on it: a
// load is first decided by the core (DecideNavigation), then committed and
// finished; the host page answers a render with its "shown" message; a
// quit is a dispatched function, so a stalled loop does not stop.
type Engine struct {
	cfg    host.EngineConfig
	events host.EngineEvents

	qmu   sync.Mutex // guards queue and quit
	queue []func()
	quit  bool
	wake  chan struct{}

	// Answer, when set, answers Eval of the Miniapp's and the launcher's
	// views (the default answers "null"). It runs on the UI thread.
	Answer func(v host.View, js string) (string, error)

	mu        sync.Mutex // guards below
	hang      bool
	loads     []Load
	evals     []Load
	script    string
	console   string
	inspector int
	filter    string
	hostShown bool
	page      host.Page
	device    host.EngineDevice
	jar       []host.Cookie            // the jar of data
	jars      map[string][]host.Cookie // the other Miniapps' jars, by MiniappData.Key
	data      host.MiniappData         // the Miniapp view's data
	uses      []host.MiniappData       // UseData's calls, in order
	stopped   int
	proxy     string
}

// Load is a load (or an evaluation) the core asked for: which view, what.
type Load struct {
	View host.View
	URL  string
	HTML string // the document of a LoadHTML
}

// Factory returns a host.NewEngine that makes an Engine and stores it in
// *into.
func Factory(into **Engine) host.NewEngine {
	return func(cfg host.EngineConfig, events host.EngineEvents) (host.Engine, error) {
		e := &Engine{cfg: cfg, events: events, wake: make(chan struct{}, 1), page: host.PageLauncher,
			jars: map[string][]host.Cookie{}, data: cfg.Miniapp}
		*into = e
		return e, nil
	}
}

// Run implements host.Engine.
func (e *Engine) Run() {
	for {
		e.qmu.Lock()
		if e.quit {
			e.qmu.Unlock()
			return
		}
		q := e.queue
		e.queue = nil
		e.qmu.Unlock()
		if len(q) == 0 {
			<-e.wake
			continue
		}
		for i, f := range q {
			f()
			e.qmu.Lock()
			quit := e.quit
			if quit {
				e.queue = append(q[i+1:], e.queue...)
			}
			e.qmu.Unlock()
			if quit {
				return
			}
		}
	}
}

// Terminate implements host.Engine: like gtk_main_quit posted to the
// loop, it takes effect when the loop next runs.
func (e *Engine) Terminate() { e.Dispatch(func() { e.qmu.Lock(); e.quit = true; e.qmu.Unlock() }) }

// Dispatch implements host.Engine.
func (e *Engine) Dispatch(f func()) {
	e.qmu.Lock()
	e.queue = append(e.queue, f)
	e.qmu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// onUI runs f on the UI thread and waits for it.
func (e *Engine) onUI(f func()) {
	done := make(chan struct{})
	e.Dispatch(func() { f(); close(done) })
	<-done
}

// Hang makes the Miniapp's page stop answering evaluations and probes (a
// page spinning in a loop), or answer again.
func (e *Engine) Hang(on bool) { e.mu.Lock(); e.hang = on; e.mu.Unlock() }

// Stall blocks the UI thread until release is called, as a UI loop stuck
// in a callback would be.
func (e *Engine) Stall() (release func()) {
	ch := make(chan struct{})
	e.Dispatch(func() { <-ch })
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// Load implements host.Engine: the core decides the navigation first, as
// WebKit asks decide-policy for the host's own loads.
func (e *Engine) Load(v host.View, u string) {
	e.mu.Lock()
	e.loads = append(e.loads, Load{View: v, URL: u})
	e.mu.Unlock()
	e.navigate(v, host.Navigation{URL: u, Method: "GET", Trigger: host.TriggerOther})
}

func (e *Engine) navigate(v host.View, n host.Navigation) bool {
	if !e.events.DecideNavigation(v, n) {
		return false
	}
	e.events.LoadChanged(v, host.LoadStarted, n.URL)
	e.events.LoadChanged(v, host.LoadCommitted, n.URL)
	e.events.LoadChanged(v, host.LoadFinished, n.URL)
	return true
}

// LoadHTML implements host.Engine: a document without a base URI is
// about:blank.
func (e *Engine) LoadHTML(v host.View, html string) {
	e.mu.Lock()
	e.loads = append(e.loads, Load{View: v, URL: "about:blank", HTML: html})
	e.mu.Unlock()
	e.navigate(v, host.Navigation{URL: "about:blank", Method: "GET", Trigger: host.TriggerOther})
}

// Eval implements host.Engine. A render of the host's view
// (window.hostRender) is answered by the host page's "shown" message, as
// assets/host/consent.js posts it.
func (e *Engine) Eval(v host.View, js string, done func(string, error)) {
	e.mu.Lock()
	e.evals = append(e.evals, Load{View: v, URL: js})
	e.mu.Unlock()
	out, err := "null", error(nil)
	e.mu.Lock()
	hang := e.hang && v == host.ViewMiniapp
	e.mu.Unlock()
	if hang {
		return // the page's process never answers
	}
	if v == host.ViewHost {
		if arg, ok := strings.CutPrefix(js, "window.hostRender("); ok {
			// window.hostRender(SCREEN, SEQ)
			var screen struct{ Screen string }
			arg = strings.TrimSuffix(arg, ")")
			i := strings.LastIndex(arg, ", ")
			seq, err := strconv.ParseUint(arg[i+2:], 10, 64)
			if i >= 0 && err == nil && json.Unmarshal([]byte(arg[:i]), &screen) == nil {
				msg, _ := json.Marshal(map[string]any{"action": "shown", "screen": screen.Screen, "seq": seq})
				e.Dispatch(func() { e.events.ScriptMessage(host.ViewHost, string(msg)) })
			}
		}
	} else if e.Answer != nil {
		out, err = e.Answer(v, js)
	}
	if done != nil {
		done(out, err)
	}
}

// SetMiniappScript implements host.Engine.
func (e *Engine) SetMiniappScript(js string) { e.mu.Lock(); e.script = js; e.mu.Unlock() }

// SetConsoleScript implements host.Engine.
func (e *Engine) SetConsoleScript(js string) { e.mu.Lock(); e.console = js; e.mu.Unlock() }

// ShowInspector implements host.Engine: it counts the inspectors shown.
// The fake has no settings of its own: whether the inspector may show in
// the host's views is the WebKitGTK engine's to prove, on real settings.
func (e *Engine) ShowInspector() { e.mu.Lock(); e.inspector++; e.mu.Unlock() }

// SetContentFilter implements host.Engine.
func (e *Engine) SetContentFilter(rules string, done func(error)) {
	var v any
	if err := json.Unmarshal([]byte(rules), &v); err != nil {
		done(fmt.Errorf("the rules are not JSON: %w", err))
		return
	}
	e.mu.Lock()
	e.filter = rules
	e.mu.Unlock()
	done(nil)
}

// SetMiniappProxy implements host.Engine: it records the proxy.
func (e *Engine) SetMiniappProxy(uri string) { e.mu.Lock(); e.proxy = uri; e.mu.Unlock() }

// MiniappProxy is the proxy SetMiniappProxy was last given.
func (e *Engine) MiniappProxy() string { e.mu.Lock(); defer e.mu.Unlock(); return e.proxy }

// ShowHostView implements host.Engine.
func (e *Engine) ShowHostView(show bool) { e.mu.Lock(); e.hostShown = show; e.mu.Unlock() }

// ShowPage implements host.Engine.
func (e *Engine) ShowPage(p host.Page) { e.mu.Lock(); e.page = p; e.mu.Unlock() }

// AddCookies implements host.Engine: a cookie replaces one of the same
// name, domain and path; MaxAge 0 deletes it.
func (e *Engine) AddCookies(cookies []host.Cookie, done func(error)) {
	e.mu.Lock()
	for _, c := range cookies {
		kept := e.jar[:0]
		for _, o := range e.jar {
			if o.Name != c.Name || o.Domain != c.Domain || o.Path != c.Path {
				kept = append(kept, o)
			}
		}
		e.jar = kept
		if c.MaxAge != 0 {
			e.jar = append(e.jar, c)
		}
	}
	e.mu.Unlock()
	done(nil)
}

// CookieHeader implements host.Engine: the cookies of u's host whose path
// is a prefix of u's.
func (e *Engine) CookieHeader(raw string, done func(string, error)) {
	u, err := url.Parse(raw)
	if err != nil {
		done("", err)
		return
	}
	e.mu.Lock()
	var parts []string
	for _, c := range e.jar {
		if c.Domain == u.Hostname() && strings.HasPrefix(u.Path+"/", strings.TrimSuffix(c.Path, "/")+"/") {
			parts = append(parts, c.Name+"="+c.Value)
		}
	}
	e.mu.Unlock()
	done(strings.Join(parts, "; "), nil)
}

// ClearCookies implements host.Engine.
func (e *Engine) ClearCookies(done func(error)) { e.mu.Lock(); e.jar = nil; e.mu.Unlock(); done(nil) }

// UseData implements host.Engine: each Miniapp has a jar of its own, as
// WebKit gives each a data manager of its own.
func (e *Engine) UseData(d host.MiniappData) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.uses = append(e.uses, d)
	if d.Key == e.data.Key {
		return nil
	}
	e.jars[e.data.Key] = e.jar
	e.jar = e.jars[d.Key]
	delete(e.jars, d.Key)
	e.data = d
	return nil
}

// DataUses returns the data UseData was given, in order.
func (e *Engine) DataUses() []host.MiniappData {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]host.MiniappData(nil), e.uses...)
}

// ForgetData implements host.Engine.
func (e *Engine) ForgetData(d host.MiniappData, done func(error)) {
	e.mu.Lock()
	if d.Key == e.data.Key {
		e.jar = nil
	} else {
		delete(e.jars, d.Key)
	}
	e.mu.Unlock()
	done(nil)
}

// Snapshot implements host.Engine: a 2x2 PNG.
func (e *Engine) Snapshot(_ host.View, path string, done func(error)) { done(writePNG(path)) }

// SetDevice implements host.Engine: the device is kept for Device.
func (e *Engine) SetDevice(d host.EngineDevice) { e.mu.Lock(); e.device = d; e.mu.Unlock() }

// Device is the device the core last asked for.
func (e *Engine) Device() host.EngineDevice {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.device
}

// Reload implements host.Engine: the Miniapp view's last load again.
func (e *Engine) Reload() {
	e.mu.Lock()
	last := ""
	for _, l := range e.loads {
		if l.View == host.ViewMiniapp {
			last = l.URL
		}
	}
	e.mu.Unlock()
	if last != "" {
		e.navigate(host.ViewMiniapp, host.Navigation{URL: last, Method: "GET", Trigger: host.TriggerReload})
	}
}

// SnapshotDevice implements host.Engine: a 2x2 PNG.
func (e *Engine) SnapshotDevice(path string, done func(error)) { done(writePNG(path)) }

// SnapshotWindow implements host.Engine: a 2x2 PNG.
func (e *Engine) SnapshotWindow(path string, done func(error)) { done(writePNG(path)) }

func writePNG(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TerminateWebProcess implements host.Engine: the view's web process ends
// as WebKit reports one the host stopped.
func (e *Engine) TerminateWebProcess() {
	e.mu.Lock()
	e.stopped++
	e.mu.Unlock()
	e.Dispatch(func() { e.events.WebProcessTerminated(host.TerminationByHost) })
}

// WindowSize implements host.Engine: the size the window was made with.
func (e *Engine) WindowSize() (int, int) { return e.cfg.Width, e.cfg.Height }

// Probe implements host.Engine: answered at once, unless the page hangs.
func (e *Engine) Probe(done func(error)) {
	e.mu.Lock()
	hang := e.hang
	e.mu.Unlock()
	if !hang {
		done(nil)
	}
}

// What a page or the user does; each runs on the UI thread and returns
// once the core has decided.

// Navigate plays a navigation of v that a page started, and reports
// whether the core let it load.
func (e *Engine) Navigate(v host.View, n host.Navigation) bool {
	var ok bool
	e.onUI(func() { ok = e.navigate(v, n) })
	return ok
}

// Post plays a page's message to the host.
func (e *Engine) Post(v host.View, raw string) {
	e.onUI(func() { e.events.ScriptMessage(v, raw) })
}

// Console plays a message of the console capture script, from any frame
// of the Miniapp's view.
func (e *Engine) Console(raw string) { e.onUI(func() { e.events.ConsoleMessage(raw) }) }

// ConsoleBurst plays raws posted one after another, within one turn of
// the UI loop (a page logging in a loop).
func (e *Engine) ConsoleBurst(raws []string) {
	e.onUI(func() {
		for _, r := range raws {
			e.events.ConsoleMessage(r)
		}
	})
}

// Input plays a real click on the Miniapp's view.
func (e *Engine) Input() { e.onUI(func() { e.events.UserInput(time.Now()) }) }

// Resource plays the Miniapp's view reporting a request it loaded, as
// WebKit's resource-load-started and the resource's finished signal do.
func (e *Engine) Resource(r host.Resource) { e.onUI(func() { e.events.ResourceLoaded(r) }) }

// Download plays a page of v downloading a file named suggested with
// body, as WebKit's download signals do: the core chooses the destination,
// the engine writes the file there (or, for "", cancels) and reports the
// end. It returns the destination.
func (e *Engine) Download(v host.View, suggested string, body []byte) string {
	ch := make(chan string, 1)
	e.onUI(func() {
		path := e.events.DownloadDestination(v, suggested)
		msg := "the download was cancelled"
		if path != "" {
			msg = ""
			if err := os.WriteFile(path, body, 0o644); err != nil {
				msg = err.Error()
			}
		}
		e.events.DownloadFinished(v, suggested, path, msg)
		ch <- path
	})
	return <-ch
}

// Crash plays the Miniapp view's web process crashing.
func (e *Engine) Crash() { e.onUI(func() { e.events.WebProcessTerminated(host.TerminationCrashed) }) }

// What the core asked for.

// Loads returns the loads of v so far.
func (e *Engine) Loads(v host.View) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, l := range e.loads {
		if l.View == v {
			out = append(out, l.URL)
		}
	}
	return out
}

// Documents returns the documents v was given with LoadHTML so far.
func (e *Engine) Documents(v host.View) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, l := range e.loads {
		if l.View == v && l.HTML != "" {
			out = append(out, l.HTML)
		}
	}
	return out
}

// Evals returns the scripts evaluated in v so far.
func (e *Engine) Evals(v host.View) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, l := range e.evals {
		if l.View == v {
			out = append(out, l.URL)
		}
	}
	return out
}

// Script is the Miniapp view's user script.
func (e *Engine) Script() string { e.mu.Lock(); defer e.mu.Unlock(); return e.script }

// ConsoleScript is the Miniapp view's console capture script.
func (e *Engine) ConsoleScript() string { e.mu.Lock(); defer e.mu.Unlock(); return e.console }

// Inspectors is how many times the core showed the web inspector.
func (e *Engine) Inspectors() int { e.mu.Lock(); defer e.mu.Unlock(); return e.inspector }

// Filter is the Miniapp view's content filter.
func (e *Engine) Filter() string { e.mu.Lock(); defer e.mu.Unlock(); return e.filter }

// HostShown reports whether the host's view is shown.
func (e *Engine) HostShown() bool { e.mu.Lock(); defer e.mu.Unlock(); return e.hostShown }

// ShownPage is the page shown.
func (e *Engine) ShownPage() host.Page { e.mu.Lock(); defer e.mu.Unlock(); return e.page }

// Cookies returns the cookie jar.
func (e *Engine) Cookies() []host.Cookie {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]host.Cookie(nil), e.jar...)
}

// Stopped is how many times the core stopped the web process.
func (e *Engine) Stopped() int { e.mu.Lock(); defer e.mu.Unlock(); return e.stopped }

// Config is what the core asked the engine for.
func (e *Engine) Config() host.EngineConfig { return e.cfg }

var _ host.Engine = (*Engine)(nil)
