//go:build linux && cgo

package webkitgtk

/*
#include <stdlib.h>
#include "webkit.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/cgo"
	"slices"
	"unsafe"

	"github.com/miniapp-host/miniapp-host/host"
)

// GTK must run on the thread that called gtk_init, and the main loop on
// the process's main thread: main.main (and a test binary's TestMain) run
// on it, locked from the start.
func init() { runtime.LockOSThread() }

// Available reports whether this build has an engine.
const Available = true

var _ host.NewEngine = New

// engine is the WebKitGTK engine: a GTK window with the Miniapp's view on
// the web context of the Miniapp's data, the host's view over it and the
// launcher's view, both on a web context of their own.
type engine struct {
	win    *C.GtkWindow
	views  [3]*C.WebKitWebView // by host.View
	handle cgo.Handle
	events host.EngineEvents
	store  string // the content-filter store

	webdriver bool
	// contexts holds the web context of each Miniapp's data
	// (host.MiniappData.Key) the window has used, the most recent last in
	// recent. Each context has a network process of its own. A Miniapp's
	// data kept in memory lives as long as its context, so that context
	// is kept for the life of the process; one whose data is in a folder
	// is let go once more than keepContexts others were used since
	// (its folder keeps the data for the next use), so that a window that
	// opens many Miniapps one after another keeps a few network processes,
	// not one per Miniapp it ever opened.
	contexts map[string]*C.WebKitWebContext
	recent   []host.MiniappData
	data     host.MiniappData // the Miniapp view's
	// langs are the preferred languages every Miniapp context gets
	// (EngineDevice.Languages); nil for the process's.
	langs []string
	// proxy is the HTTP proxy every Miniapp context uses
	// (SetMiniappProxy); "" for the system's settings.
	proxy string
	// sandbox is whether every web context runs its web processes in
	// WebKitGTK's bubblewrap sandbox (decideSandbox).
	sandbox bool
}

// keepContexts is how many web contexts of Miniapps with a data folder
// the engine keeps besides the one in use.
const keepContexts = 4

// New makes the window. It must run on the main goroutine, once per
// process, after the XDG directories point where WebKit may write
// (host.UseDataDir). Without a display it returns host.ErrNoDisplay before
// any window exists.
func New(cfg host.EngineConfig, events host.EngineEvents) (host.Engine, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("webkitgtk: EngineConfig.DataDir is required")
	}
	if C.mh_display_available() == 0 {
		return nil, host.ErrNoDisplay
	}
	store := filepath.Join(cfg.DataDir, "content-filters")
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, fmt.Errorf("webkitgtk: content filter store: %w", err)
	}
	sb, err := decideSandbox()
	if err != nil {
		return nil, err
	}
	if err := applySandbox(sb); err != nil {
		return nil, fmt.Errorf("webkitgtk: %w", err)
	}
	if !sb.on {
		fmt.Fprintf(os.Stderr, "miniapp-host: WebKit's web processes run without their sandbox: %s (docs/security.md §4)\n", sb.why)
	}
	e := &engine{events: events, store: store, webdriver: cfg.WebDriver, contexts: map[string]*C.WebKitWebContext{}, sandbox: sb.on}
	if cfg.WebDriver {
		if err := webdriverEnv(); err != nil {
			return nil, err
		}
	}
	ctx, err := e.context(cfg.Miniapp)
	if err != nil {
		return nil, err
	}
	e.data = cfg.Miniapp
	var title *C.char
	if cfg.Title != "" {
		title = C.CString(cfg.Title)
		defer C.free(unsafe.Pointer(title))
	}
	e.win = C.mh_window_new(title, C.int(cfg.Width), C.int(cfg.Height))
	e.handle = cgo.NewHandle(e)
	var views [3]*C.WebKitWebView
	C.mh_setup(e.win, C.uintptr_t(e.handle), cbool(cfg.Launcher), C.int(cfg.Layout), cbool(cfg.DevTools), cbool(cfg.WebDriver), cbool(e.sandbox), ctx, &views[0])
	e.views = views
	C.mh_init_signals()
	C.mh_track_size(e.win, C.int(cfg.Width), C.int(cfg.Height))
	return e, nil
}

// context returns the web context of d, made the first time: its own
// website data manager, in memory or in d.Dir (cookies in
// d.Dir/cookies.sqlite, the rest under d.Dir/data and d.Dir/cache). UI
// thread only.
func (e *engine) context(d host.MiniappData) (*C.WebKitWebContext, error) {
	if c, ok := e.contexts[d.Key]; ok {
		e.used(d)
		return c, nil
	}
	var c *C.WebKitWebContext
	if d.Dir == "" {
		c = C.mh_context_new(nil, nil, nil, cbool(e.sandbox))
	} else {
		data, cache := filepath.Join(d.Dir, "data", "webkitgtk"), filepath.Join(d.Dir, "cache", "webkitgtk")
		for _, p := range []string{data, cache} {
			if err := os.MkdirAll(p, 0o700); err != nil {
				return nil, fmt.Errorf("webkitgtk: data folder: %w", err)
			}
		}
		cd, cc, ck := C.CString(data), C.CString(cache), C.CString(filepath.Join(d.Dir, "cookies.sqlite"))
		c = C.mh_context_new(cd, cc, ck, cbool(e.sandbox))
		for _, s := range []*C.char{cd, cc, ck} {
			C.free(unsafe.Pointer(s))
		}
	}
	setLanguages(c, e.langs)
	if e.proxy != "" {
		setProxy(c, e.proxy)
	}
	e.contexts[d.Key] = c
	e.used(d)
	return c, nil
}

// setLanguages gives c the preferred languages langs; none leaves c's
// (the core always names some: EngineDevice.Languages).
func setLanguages(c *C.WebKitWebContext, langs []string) {
	if len(langs) == 0 {
		return
	}
	list := make([]*C.char, len(langs)+1)
	for i, l := range langs {
		list[i] = C.CString(l)
	}
	C.mh_set_languages(c, &list[0])
	for _, p := range list[:len(langs)] {
		C.free(unsafe.Pointer(p))
	}
}

// setProxy points c's network session at the proxy uri; "" at the
// system's settings.
func setProxy(c *C.WebKitWebContext, uri string) {
	withString(uri, func(s *C.char) { C.mh_set_proxy(c, s) })
}

// SetMiniappProxy implements host.Engine: every Miniapp context the
// window keeps takes it, and each one made later (context).
func (e *engine) SetMiniappProxy(uri string) {
	e.proxy = uri
	for _, c := range e.contexts {
		setProxy(c, uri)
	}
}

// SetDevice implements host.Engine. Every Miniapp context the window keeps
// takes the languages, so the next Miniapp launched has them too; the user
// agent and the style sheet are on the Miniapp views' shared settings and
// content manager.
func (e *engine) SetDevice(d host.EngineDevice) {
	C.mh_set_device(C.int(d.Width), C.int(d.Height), C.double(d.Zoom), cbool(d.Bezel))
	withString(d.UserAgent, func(ua *C.char) { C.mh_set_user_agent(e.views[host.ViewMiniapp], ua) })
	withString(d.StyleSheet, func(css *C.char) { C.mh_set_style_sheet(e.views[host.ViewMiniapp], css) })
	e.langs = slices.Clone(d.Languages)
	for _, c := range e.contexts {
		setLanguages(c, e.langs)
	}
	C.mh_set_dark(cbool(d.Dark))
}

// Reload implements host.Engine.
func (e *engine) Reload() { C.webkit_web_view_reload(e.views[host.ViewMiniapp]) }

// layoutType names the type of the window's child (tests: which layout).
func (e *engine) layoutType() string { return C.GoString(C.mh_window_child_type(e.win)) }

// deviceZoom is the zoom the device is shown at now.
func (e *engine) deviceZoom() float64 { return float64(C.mh_device_zoom()) }

// SnapshotDevice implements host.Engine: what the X server shows of the
// device in its frame.
func (e *engine) SnapshotDevice(path string, done func(error)) {
	done(snapshotWith(path, func(p *C.char) *C.char { return C.mh_snapshot_device(e.win, p) }))
}

// snapshotWith runs a C snapshot that answers "" or an error it
// allocated.
func snapshotWith(path string, snap func(*C.char) *C.char) error {
	var msg string
	withString(path, func(p *C.char) {
		m := snap(p)
		msg = C.GoString(m)
		C.g_free(C.gpointer(m))
	})
	return errOf(msg)
}

// used records d as the most recently used data, and lets go of the
// contexts with a data folder that more than keepContexts others were
// used after, but the Miniapp view's. UI thread only.
func (e *engine) used(d host.MiniappData) {
	for i, r := range e.recent {
		if r.Key == d.Key {
			e.recent = append(e.recent[:i], e.recent[i+1:]...)
			break
		}
	}
	e.recent = append(e.recent, d)
	kept := 0
	for i := len(e.recent) - 1; i >= 0; i-- {
		r := e.recent[i]
		if r.Dir == "" || r.Key == d.Key || r.Key == e.data.Key {
			continue
		}
		if kept++; kept > keepContexts {
			// Views made on it hold their own reference.
			C.g_object_unref(C.gpointer(e.contexts[r.Key]))
			delete(e.contexts, r.Key)
			e.recent = append(e.recent[:i], e.recent[i+1:]...)
		}
	}
}

// UseData implements host.Engine: WebKitGTK fixes a view's web context,
// and so its data manager, when the view is made, so another Miniapp's
// data takes a new view on that data's context, in the old one's place.
// A WebDriver session holds the view it was handed: it keeps it.
func (e *engine) UseData(d host.MiniappData) error {
	if d.Key == e.data.Key {
		return nil
	}
	if e.webdriver {
		return errors.New("webkitgtk: a WebDriver session drives this window's Miniapp view, which keeps the data of the Miniapp it was opened with; " +
			"start a new session (a new miniapp-host open --webdriver) for another Miniapp")
	}
	ctx, err := e.context(d)
	if err != nil {
		return err
	}
	e.views[host.ViewMiniapp] = C.mh_replace_miniapp_view(e.views[host.ViewMiniapp], ctx)
	e.data = d
	return nil
}

// liveMiniappViews is how many Miniapp views this process holds, made and
// not yet finalized (the window's own and any replaced one still alive),
// and how many child widgets of theirs, internal ones included: alive in
// all, and of the window's view now. UI thread only.
func (e *engine) liveMiniappViews() (views, children, current int) {
	var c C.int
	children = int(C.mh_live_view_children(e.views[host.ViewMiniapp], &c))
	return int(C.mh_live_miniapp_views()), children, int(c)
}

// ForgetData implements host.Engine: d's context is d's alone.
func (e *engine) ForgetData(d host.MiniappData, done func(error)) {
	ctx, err := e.context(d)
	if err != nil {
		done(err)
		return
	}
	C.mh_clear_data(ctx, doneHandle(done))
}

// Run implements host.Engine. Go code on the main thread runs with
// JavaScriptCore's thread-suspend signal blocked (webkit.c, "Signals");
// the loop's C code runs with it delivered.
func (e *engine) Run() {
	C.mh_unblock_suspend()
	C.mh_run()
	C.mh_block_suspend()
}

// WindowSize implements host.Engine.
func (e *engine) WindowSize() (int, int) {
	var w, h C.int
	C.mh_window_size(&w, &h)
	return int(w), int(h)
}

// Terminate implements host.Engine: the quit is posted to the loop.
func (e *engine) Terminate() { C.mh_quit() }

// Dispatch implements host.Engine.
func (e *engine) Dispatch(f func()) { C.mh_dispatch(C.uintptr_t(cgo.NewHandle(f))) }

func (e *engine) view(v host.View) *C.WebKitWebView {
	if int(v) < 0 || int(v) >= len(e.views) {
		return nil
	}
	return e.views[v]
}

// withString calls f with s as a C string.
func withString(s string, f func(*C.char)) {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	f(cs)
}

// Load implements host.Engine.
func (e *engine) Load(v host.View, u string) {
	if view := e.view(v); view != nil {
		withString(u, func(s *C.char) { C.mh_load_uri(view, s) })
	}
}

// LoadHTML implements host.Engine.
func (e *engine) LoadHTML(v host.View, html string) {
	if view := e.view(v); view != nil {
		withString(html, func(s *C.char) { C.mh_load_html(view, s) })
	}
}

// Eval implements host.Engine.
func (e *engine) Eval(v host.View, js string, done func(string, error)) {
	view := e.view(v)
	if view == nil {
		if done != nil {
			done("", fmt.Errorf("no %s view", v))
		}
		return
	}
	if done == nil {
		withString(js, func(s *C.char) { C.mh_eval(view, s) })
		return
	}
	req := cgo.NewHandle(func(value, msg string) { done(value, errOf(msg)) })
	withString(js, func(s *C.char) { C.mh_eval_result(view, s, C.uintptr_t(req)) })
}

// EvalAwait implements host.AwaitEvaluator: js is evaluated as a script
// of the page's global scope, and a Promise it completes with is awaited.
func (e *engine) EvalAwait(v host.View, js string, done func(string, error)) {
	view := e.view(v)
	if view == nil {
		done("", fmt.Errorf("no %s view", v))
		return
	}
	req := cgo.NewHandle(func(value, msg string) { done(value, errOf(msg)) })
	withString(js, func(s *C.char) { C.mh_eval_await(view, s, C.uintptr_t(req)) })
}

func errOf(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

func doneHandle(done func(error)) C.uintptr_t {
	return C.uintptr_t(cgo.NewHandle(func(msg string) { done(errOf(msg)) }))
}

// SetMiniappScript implements host.Engine.
func (e *engine) SetMiniappScript(js string) {
	withString(js, func(s *C.char) { C.mh_register_script(e.views[host.ViewMiniapp], s) })
}

// SetConsoleScript implements host.Engine.
func (e *engine) SetConsoleScript(js string) {
	withString(js, func(s *C.char) { C.mh_set_console_script(e.views[host.ViewMiniapp], s) })
}

// ShowInspector implements host.Engine: the Miniapp's view only.
func (e *engine) ShowInspector() { C.mh_show_inspector(e.views[host.ViewMiniapp]) }

// developerExtras reads the developer-extras setting of v's WebKit
// settings, for the tests: what WebKit has, not what Go asked. UI thread
// only.
func (e *engine) developerExtras(v host.View) bool {
	view := e.view(v)
	return view != nil && C.mh_developer_extras(view) != 0
}

// inspectorOpen reports whether the Miniapp view's inspector has its
// page. UI thread only.
func (e *engine) inspectorOpen() bool { return C.mh_inspector_open(e.views[host.ViewMiniapp]) != 0 }

// closeInspector closes the Miniapp view's inspector and sets its
// developer extras, for the tests. UI thread only.
func (e *engine) closeInspector(extras bool) {
	C.mh_close_inspector(e.views[host.ViewMiniapp], cbool(extras))
}

// SetContentFilter implements host.Engine.
func (e *engine) SetContentFilter(rules string, done func(error)) {
	cs, cr := C.CString(e.store), C.CString(rules)
	C.mh_install_filter(e.views[host.ViewMiniapp], cs, cr, doneHandle(done))
	C.free(unsafe.Pointer(cs))
	C.free(unsafe.Pointer(cr))
}

// ShowHostView implements host.Engine.
func (e *engine) ShowHostView(show bool) { C.mh_show_host_view(e.views[host.ViewHost], cbool(show)) }

// ShowPage implements host.Engine.
func (e *engine) ShowPage(p host.Page) { C.mh_show_page(e.win, C.int(p)) }

// AddCookies implements host.Engine.
func (e *engine) AddCookies(cookies []host.Cookie, done func(error)) {
	left := len(cookies)
	var first error
	one := func(msg string) {
		if err := errOf(msg); err != nil && first == nil {
			first = err
		}
		if left--; left == 0 {
			done(first)
		}
	}
	if left == 0 {
		done(nil)
		return
	}
	for _, c := range cookies {
		n, v, d, p := C.CString(c.Name), C.CString(c.Value), C.CString(c.Domain), C.CString(c.Path)
		// SameSite numbers are libsoup's (SoupSameSitePolicy): None, Lax, Strict.
		C.mh_add_cookie(e.views[host.ViewMiniapp], n, v, d, p, C.int(c.MaxAge), cbool(c.HTTPOnly), cbool(c.Secure),
			C.int(c.SameSite), C.uintptr_t(cgo.NewHandle(one)))
		for _, s := range []*C.char{n, v, d, p} {
			C.free(unsafe.Pointer(s))
		}
	}
}

// CookieHeader implements host.Engine.
func (e *engine) CookieHeader(u string, done func(string, error)) {
	req := cgo.NewHandle(func(h, msg string) { done(h, errOf(msg)) })
	withString(u, func(s *C.char) { C.mh_get_cookies(e.views[host.ViewMiniapp], s, C.uintptr_t(req)) })
}

// ClearCookies implements host.Engine.
func (e *engine) ClearCookies(done func(error)) {
	C.mh_clear_cookies(e.views[host.ViewMiniapp], doneHandle(done))
}

// Snapshot implements host.Engine.
func (e *engine) Snapshot(v host.View, path string, done func(error)) {
	view := e.view(v)
	if view == nil {
		done(fmt.Errorf("no %s view", v))
		return
	}
	withString(path, func(s *C.char) { C.mh_snapshot(view, s, doneHandle(done)) })
}

// SnapshotWindow implements host.Engine: what the X server shows of the
// whole window.
func (e *engine) SnapshotWindow(path string, done func(error)) {
	done(snapshotWith(path, func(p *C.char) *C.char { return C.mh_snapshot_window(e.win, p) }))
}

// TerminateWebProcess implements host.Engine.
func (e *engine) TerminateWebProcess() { C.mh_terminate_web_process(e.views[host.ViewMiniapp]) }

// Probe implements host.Engine.
func (e *engine) Probe(done func(error)) { C.mh_probe(e.views[host.ViewMiniapp], doneHandle(done)) }

// screenCentre is the centre of v in screen coordinates, where tests click
// with XTest to give real native input. UI thread only.
func (e *engine) screenCentre(v host.View) (x, y int) {
	var cx, cy C.int
	C.mh_screen_centre((*C.GtkWidget)(unsafe.Pointer(e.view(v))), &cx, &cy)
	return int(cx), int(cy)
}

// screenOrigin is the top-left corner of v in screen coordinates. UI
// thread only.
func (e *engine) screenOrigin(v host.View) (x, y int) {
	var cx, cy C.int
	C.mh_screen_origin((*C.GtkWidget)(unsafe.Pointer(e.view(v))), &cx, &cy)
	return int(cx), int(cy)
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// suspendSignal is JavaScriptCore's thread-suspend signal in this process.
func suspendSignal() int { return int(C.mh_suspend_signal()) }

// signalsWithoutOnStack lists the standard signals whose handler lacks
// SA_ONSTACK.
func signalsWithoutOnStack() []int {
	var out [32]C.int
	n := int(C.mh_signals_without_onstack(&out[0], C.int(len(out))))
	sigs := make([]int, 0, n)
	for i := 0; i < n && i < len(out); i++ {
		sigs = append(sigs, int(out[i]))
	}
	return sigs
}

// bareWindow is the baseline of BenchmarkFirstLoad (webkit.c,
// mh_bare_window).
func bareWindow(u string) int {
	cu := C.CString(u)
	defer C.free(unsafe.Pointer(cu))
	return int(C.mh_bare_window(cu))
}
