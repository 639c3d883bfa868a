package host

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ErrNoWebview is what a NewEngine returns in a build without a web engine
// (CGO_ENABLED=0, or a platform the project has no engine for).
var ErrNoWebview = errors.New("host: this build has no webview (it was built without cgo, or not for Linux with WebKitGTK); rebuild with CGO_ENABLED=1 on Linux")

// ErrNoDisplay is what a NewEngine returns when there is no display to
// open a window on. It is checked before any window exists.
var ErrNoDisplay = errors.New("host: no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset or unreachable); " +
	"run under a virtual display with `xvfb-run -a miniapp-host ...`, or run `miniapp-host playground --no-window` for the servers without a window")

// View names one of the engine's web views.
type View int

const (
	// ViewMiniapp is the Miniapp's view: its navigations, script messages
	// and input are decided and read by the core.
	ViewMiniapp View = iota
	// ViewHost is the host's own view (consent, rejections, crashes),
	// layered over the Miniapp's. It has no network origin and a content
	// manager of its own, so no script of the Miniapp reaches it.
	ViewHost
	// ViewLauncher is the playground's launcher, on a page of its own; it
	// exists only when EngineConfig.Launcher is set.
	ViewLauncher
)

func (v View) String() string {
	switch v {
	case ViewMiniapp:
		return "miniapp"
	case ViewHost:
		return "host"
	case ViewLauncher:
		return "launcher"
	}
	return "unknown"
}

// Page is what a window with a launcher shows: the launcher's page or the
// Miniapp's (with the host's view over it when shown).
type Page int

// Pages of a window with a launcher.
const (
	PageLauncher Page = iota
	PageMiniapp
)

// Layout is how a window with a launcher shows it beside the Miniapp.
type Layout int

// Layouts.
const (
	// LayoutSide puts the launcher and its tools beside the Miniapp's
	// device, in a split the user resizes or collapses.
	LayoutSide Layout = iota
	// LayoutTabs puts the launcher and the Miniapp in tabs of their own,
	// the Miniapp filling the window.
	LayoutTabs
)

// ParseLayout reads a layout's name: "side" or "tabs".
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "", "side":
		return LayoutSide, nil
	case "tabs":
		return LayoutTabs, nil
	}
	return 0, fmt.Errorf("host: layout %q: use side (the launcher beside the device) or tabs", s)
}

// EngineDevice is what an engine carries out of a device emulation
// (package device; docs/playground.md, "Devices"): the Miniapp view's size
// in its frame, the user agent, the languages, the colour scheme and the
// style sheet that publishes the safe-area insets. The core decides all of
// it; the engine only applies it.
type EngineDevice struct {
	// Width and Height are the CSS viewport; 0 fills the space (the
	// desktop).
	Width, Height int
	// Zoom is the page zoom the device is shown at; 0 fits it into the
	// space, at most 1. The view is Width x Height times the zoom on
	// screen and lays out at Width x Height CSS pixels.
	Zoom float64
	// Bezel draws the device's frame around its screen.
	Bezel bool
	// UserAgent is the Miniapp view's user agent; "" is the engine's own.
	UserAgent string
	// Languages are the preferred languages of every Miniapp view's web
	// context, the first one the page's locale. The core always names
	// some (the process's when the launch has no locale): WebKitGTK keeps
	// the languages it was last given.
	Languages []string
	// Dark asks the engine for prefers-color-scheme: dark.
	Dark bool
	// StyleSheet is a user style sheet for every frame of the Miniapp's
	// view ("" for none).
	StyleSheet string
}

// LoadEvent is a step of a view's load, as engines report them.
type LoadEvent int

// Load steps.
const (
	LoadStarted LoadEvent = iota
	LoadRedirected
	LoadCommitted
	LoadFinished
)

// Termination says why a view's web process ended.
type Termination int

// Reasons a web process ends.
const (
	TerminationCrashed Termination = iota
	TerminationMemory
	TerminationByHost
)

func (t Termination) String() string {
	switch t {
	case TerminationMemory:
		return "used too much memory"
	case TerminationByHost:
		return "stopped answering and was stopped"
	}
	return "crashed"
}

// SameSite is a cookie's SameSite attribute.
type SameSite int

// SameSite values.
const (
	SameSiteNone SameSite = iota
	SameSiteLax
	SameSiteStrict
)

// Cookie is a cookie the core writes into the Miniapp's view, flags kept.
type Cookie struct {
	Name, Value string
	Domain      string // the host: cookies are host-only on the Miniapp's origin
	Path        string
	MaxAge      int // seconds; -1 for a session cookie, 0 to delete
	HTTPOnly    bool
	Secure      bool
	SameSite    SameSite
}

// MiniappData names the website data of one Miniapp: its cookies, local
// storage, IndexedDB and caches. Each Miniapp, by canonical origin and
// manifest id, has its own (docs/host.md, "Each Miniapp's data"): the
// engine gives the Miniapp's view a data store of that Miniapp alone, so a
// Miniapp never reads another one's cookies or storage, even on the same
// origin.
type MiniappData struct {
	// Key is the Miniapp's identity: its canonical origin and manifest
	// id. The same Key is the same data; "" is the data of a view that no
	// Miniapp has been mounted in yet (kept in memory).
	Key string
	// Dir is the folder the data is kept in across runs; "" keeps it in
	// memory for the life of the process.
	Dir string
}

// EngineConfig is what the core asks of a new engine.
type EngineConfig struct {
	Title         string
	Width, Height int
	// DataDir holds the engine's own files (the content-filter store).
	DataDir string
	// Miniapp is the data the Miniapp's view starts with: the first
	// Miniapp's when it is known (open), else the zero MiniappData.
	Miniapp MiniappData
	// Launcher gives the window a launcher page beside the Miniapp's.
	Launcher bool
	// Layout places the launcher and the Miniapp's device when Launcher is
	// set: side by side (the zero value) or in tabs.
	Layout Layout
	// DevTools enables the engine's web inspector in the Miniapp's view
	// (never in the host's view).
	DevTools bool
	// WebDriver lets a W3C WebDriver session drive the Miniapp's view
	// (docs/webdriver.md): the engine allows automation and hands the
	// Miniapp's view, and no other, to the session that asks for one.
	WebDriver bool
}

// NewEngine makes a platform engine that reports to events. The WebKitGTK
// engine's New (package host/webkitgtk) is one. It runs on the main
// goroutine, once per process, and returns ErrNoDisplay when there is no
// display and ErrNoWebview in a build without an engine.
type NewEngine func(cfg EngineConfig, events EngineEvents) (Engine, error)

// Engine is one platform's web engine: a window with the Miniapp's view,
// the host's view over it and, optionally, a launcher page. It executes;
// the core decides. Every method but Run, Terminate and Dispatch runs on the
// UI thread only (inside a Dispatch or an EngineEvents callback); callbacks
// named done run on the UI thread too, later. A WKWebView or WebView2
// engine implements this and nothing else (docs/host.md, "Engines").
type Engine interface {
	// Run runs the UI loop until Terminate. It runs on the main goroutine.
	Run()
	// Terminate ends Run; safe from any goroutine.
	Terminate()
	// Dispatch runs f on the UI thread; safe from any goroutine. f never
	// runs inside the call, even on the UI thread.
	Dispatch(f func())

	// Load loads u in v.
	Load(v View, u string)
	// LoadHTML loads a document without a network origin in v.
	LoadHTML(v View, html string)
	// Eval evaluates js in v's top frame; done, when not nil, receives the
	// result as JSON (null for undefined) or the error.
	Eval(v View, js string, done func(result string, err error))
	// SetMiniappScript makes js the only user script of the Miniapp's
	// view: injected at document start into the top frame only.
	SetMiniappScript(js string)
	// SetConsoleScript makes js the console capture script of the
	// Miniapp's view: injected at document start into every frame, beside
	// the Miniapp's script (which SetMiniappScript does not remove). Its
	// messages, posted to the ConsoleHandler message handler, are reported
	// with EngineEvents.ConsoleMessage. The host's views never get it.
	SetConsoleScript(js string)
	// ShowInspector turns the developer extras of the Miniapp's view on
	// and shows its web inspector. It never applies to the host's views.
	ShowInspector()
	// SetContentFilter compiles rules (WebKit content-blocker JSON, as
	// Policy.FilterRules makes them) and makes them the Miniapp view's
	// only content filter.
	SetContentFilter(rules string, done func(error))

	// SetDevice shows the Miniapp's view as d: it re-lays the view in
	// place; a page already loaded sees the new user agent only when it
	// loads again.
	SetDevice(d EngineDevice)
	// Reload loads the Miniapp view's page again, as the user's F5 does.
	Reload()
	// SnapshotDevice writes a PNG of the device as the screen shows it,
	// its frame included.
	SnapshotDevice(path string, done func(error))

	// ShowHostView shows or hides the host's view over the Miniapp's.
	ShowHostView(show bool)
	// ShowPage shows the launcher's page or the Miniapp's, when the window
	// has a launcher.
	ShowPage(p Page)

	// AddCookies writes cookies into the Miniapp view's store; done runs
	// once every one is stored.
	AddCookies(cookies []Cookie, done func(error))
	// CookieHeader is the Cookie header the Miniapp's view sends to u,
	// HttpOnly cookies included.
	CookieHeader(u string, done func(header string, err error))
	// ClearCookies removes every cookie of the Miniapp view's store.
	ClearCookies(done func(error))
	// UseData makes d the website data of the Miniapp's view, before a
	// Miniapp is loaded in it: the view then sees d's cookies and storage
	// and no other Miniapp's. The same d again changes nothing. An engine
	// that cannot (a WebDriver session drives the view) returns an error
	// and keeps the data it has.
	UseData(d MiniappData) error
	// ForgetData removes what the engine keeps in d: cookies, local
	// storage, IndexedDB, caches (not a view's session storage). No other
	// Miniapp's data changes.
	ForgetData(d MiniappData, done func(error))

	// SetMiniappProxy sends every request of the Miniapp's views through
	// the proxy at uri (socks5://user:password@host:port), loopback
	// addresses included; "" goes back to the system's proxy settings. It
	// applies to every Miniapp's data the window uses, now and later, and
	// never to the host's view or the launcher's (docs/playground.md,
	// "Network conditions and mocks").
	SetMiniappProxy(uri string)

	// Snapshot writes a PNG of what v shows to path.
	Snapshot(v View, path string, done func(error))
	// SnapshotWindow writes a PNG of the whole window as the screen
	// shows it.
	SnapshotWindow(path string, done func(error))
	// TerminateWebProcess stops the Miniapp view's web process.
	TerminateWebProcess()
	// Probe asks the Miniapp view's web process a question its main thread
	// must answer, running no script in the page (an evaluation would use
	// up the page's user activation); done runs when it has answered.
	Probe(done func(error))
	// WindowSize is the window's last size in its normal state (not
	// maximized, tiled or full screen), as the user left it; 0, 0 if it
	// is not known. Valid on the UI thread and after Run has returned
	// (closing the window destroys it before Run returns).
	WindowSize() (width, height int)
}

// AwaitEvaluator is an Engine that can await a script's Promise (the
// automation channel's eval, docs/automation.md): EvalAwait evaluates js
// in v's top frame as a script of the page's global scope and gives done
// the completion value as JSON (null for undefined); when that value is
// a Promise (or another thenable), its settled value once it settles, or,
// when it is rejected, an error naming the reason. An engine without it
// evaluates with Eval, which awaits nothing.
type AwaitEvaluator interface {
	EvalAwait(v View, js string, done func(result string, err error))
}

// EngineEvents is what the engine reports, on the UI thread. The core
// implements it with an unexported type that it gives the engine
// (docs/host.md, "Core and engine"): the engine never holds the Window,
// and these callbacks are no part of the Window's API. None of them may
// block.
type EngineEvents interface {
	// DecideNavigation decides a navigation or new-window action of v
	// (Miniapp, host or launcher): true loads it, false refuses it.
	DecideNavigation(v View, n Navigation) bool
	// LoadChanged reports a step of a load of v's top frame at uri.
	LoadChanged(v View, ev LoadEvent, uri string)
	// LoadFailed reports a failed load of v.
	LoadFailed(v View, uri string, code int, message string)
	// ScriptMessage is a message a page of v posted to the host: the
	// Miniapp view's "miniappHost" handler, the host view's "host".
	ScriptMessage(v View, raw string)
	// ConsoleMessage is a message a frame of the Miniapp's view posted to
	// the ConsoleHandler handler (the console capture script's). An
	// engine may cut a message longer than ConsoleMaxRaw bytes to
	// ConsoleMaxRaw+1 bytes.
	ConsoleMessage(raw string)
	// WebProcessTerminated reports that the Miniapp view's web process
	// ended.
	WebProcessTerminated(why Termination)
	// WebProcessResponsive reports that the Miniapp view's web process
	// stopped or started answering again.
	WebProcessResponsive(ok bool)
	// UserInput reports real native input (key, click, touch) on the
	// Miniapp's view, not synthesised by another program.
	UserInput(at time.Time)
	// DownloadDestination asks where a download of v (a page's <a
	// download>, a response to save) goes: the engine saves it at the
	// path returned, or cancels it for "". suggested is the name the
	// page or the response gave.
	DownloadDestination(v View, suggested string) string
	// DownloadFinished reports the end of a download of v: saved at path
	// (as DownloadDestination chose it) when errMsg is "", else failed.
	DownloadFinished(v View, suggested, path, errMsg string)
	// ResourceLoaded reports a request of the Miniapp's view (a document,
	// a subresource, a fetch or XHR of its pages), once it finished or
	// failed. Never for the host's view or the launcher's.
	ResourceLoaded(r Resource)
}

// Resource is a request of the Miniapp's view as the engine saw it load
// (WebKitGTK: resource-load-started, then the WebKitWebResource's response
// and its finished or failed signal; WKWebView and WebView2 have the same
// in their resource-load and WebResourceResponseReceived events).
type Resource struct {
	Method, URL string
	// RequestHeaders are the headers the engine set on the request when
	// it started; the network layer may add more (cookies) later.
	RequestHeaders http.Header
	// Status is the response's status; 0 when there was none.
	Status          int
	ResponseHeaders http.Header
	MimeType        string
	// Size is the response's Content-Length; -1 when unknown.
	Size int64
	// Started, Responded and Finished are when the request started, its
	// response came (zero without one) and it finished or failed.
	Started, Responded, Finished time.Time
	// Error says why the load failed; "" when it finished.
	Error string
}

// parseOrNil is origin.ParseURL that keeps only a URL it can carry.
func parseOrNil(raw string) *url.URL {
	u, err := parseCanonical(raw)
	if err != nil {
		return nil
	}
	return u
}
