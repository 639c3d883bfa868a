package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// webViews drives and reads the window's views for other goroutines:
// loads, evaluations, cookies, snapshots, the web process and the page
// shown. Every call is posted to the UI thread (Engine.Dispatch) and,
// when it answers, waited for there (await). It has no state of its own
// beyond what NewWindow sets once, so it has no lock. Window embeds it:
// its exported methods are the Window's.
type webViews struct {
	eng      Engine
	emit     func(Event)
	launcher bool // the window has a launcher's view (Options.Launcher)
}

// Navigate loads u in the Miniapp's view. The policy decides it like any
// other navigation.
func (wv *webViews) Navigate(u string) { wv.eng.Dispatch(func() { wv.eng.Load(ViewMiniapp, u) }) }

// Eval runs js in the Miniapp's top frame. js must be built with
// json.Marshal for every value it carries.
func (wv *webViews) Eval(js string) { wv.eng.Dispatch(func() { wv.eng.Eval(ViewMiniapp, js, nil) }) }

// EvalResult evaluates js in the Miniapp's top frame and returns its value
// as JSON. Tests and the automation channel use it; js must be built with
// json.Marshal for every value it carries.
func (wv *webViews) EvalResult(ctx context.Context, js string) (string, error) {
	return wv.evalIn(ctx, ViewMiniapp, js)
}

// EvalAwait is EvalResult, but a Promise the script completes with is
// awaited: its settled value is returned, its rejection an error naming
// the reason (AwaitEvaluator). The automation channel's eval uses it.
//
// The script runs first as a plain evaluation, whose answer WebKit always
// gives, the page navigating or not. Only a thenable it completes with is
// kept in the page (under a random token) and awaited in a second call:
// WebKit's asynchronous call never answers when the document it waits in
// is replaced, and a script that settles at once (every wait of a test
// driver) must not depend on that.
func (wv *webViews) EvalAwait(ctx context.Context, js string) (string, error) {
	ae, ok := wv.eng.(AwaitEvaluator)
	if !ok {
		return wv.evalIn(ctx, ViewMiniapp, js)
	}
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return "", fmt.Errorf("host: eval: %w", err)
	}
	token := hex.EncodeToString(tok[:])
	script, _ := json.Marshal(js)
	marker, _ := json.Marshal(map[string]string{"miniapp-host-await": token})
	first := fmt.Sprintf(`(() => { const v = (0, eval)(%s);
  if (v === null || (typeof v !== "object" && typeof v !== "function") || typeof v.then !== "function") return v;
  const k = Symbol.for("miniapp-host.await"); (window[k] = window[k] || {})[%q] = v;
  return {"miniapp-host-await": %q}; })()`, script, token, token)
	out, err := wv.evalIn(ctx, ViewMiniapp, first)
	if err != nil || out != string(marker) {
		return out, err
	}
	second := fmt.Sprintf(`(() => { const k = Symbol.for("miniapp-host.await"); const p = window[k][%q]; delete window[k][%q]; return p; })()`, token, token)
	out, err = await(ctx, wv.eng, func(done func(string, error)) { ae.EvalAwait(ViewMiniapp, second, done) })
	if err != nil && ctx.Err() == nil {
		return "", fmt.Errorf("host: eval: %w", err)
	}
	return out, err
}

// EvalHost is EvalResult in the host's own view (tests press its buttons
// with it).
func (wv *webViews) EvalHost(ctx context.Context, js string) (string, error) {
	return wv.evalIn(ctx, ViewHost, js)
}

// EvalLauncher is EvalResult in the launcher's view; tests and the
// automation of the playground drive the launcher with it.
func (wv *webViews) EvalLauncher(ctx context.Context, js string) (string, error) {
	if !wv.launcher {
		return "", errors.New("host: this window has no launcher")
	}
	return wv.evalIn(ctx, ViewLauncher, js)
}

func (wv *webViews) evalIn(ctx context.Context, v View, js string) (string, error) {
	out, err := await(ctx, wv.eng, func(done func(string, error)) { wv.eng.Eval(v, js, done) })
	if err != nil && ctx.Err() == nil {
		return "", fmt.Errorf("host: eval: %w", err)
	}
	return out, err
}

// Cookies returns the Cookie header the view sends to u, HttpOnly cookies
// included.
func (wv *webViews) Cookies(ctx context.Context, u string) (string, error) {
	h, err := await(ctx, wv.eng, func(done func(string, error)) { wv.eng.CookieHeader(u, done) })
	if err != nil && ctx.Err() == nil {
		return "", fmt.Errorf("host: read cookies: %w", err)
	}
	return h, err
}

// ClearCookies removes every cookie of the view's data store.
func (wv *webViews) ClearCookies(ctx context.Context) error {
	return awaitErr(ctx, wv.eng, "clear cookies", wv.eng.ClearCookies)
}

// addCookies writes cookies into the view's store and returns once the
// engine has confirmed every one: a navigation issued earlier could go out
// without them.
func (wv *webViews) addCookies(ctx context.Context, cookies []Cookie) error {
	if len(cookies) == 0 {
		return nil
	}
	return awaitErr(ctx, wv.eng, "add cookie", func(done func(error)) { wv.eng.AddCookies(cookies, done) })
}

// Snapshot writes a PNG of what the host's view shows (the consent screen)
// to path.
func (wv *webViews) Snapshot(ctx context.Context, path string) error {
	return wv.snapshot(ctx, ViewHost, path)
}

// SnapshotMiniapp writes a PNG of the Miniapp's view to path.
func (wv *webViews) SnapshotMiniapp(ctx context.Context, path string) error {
	return wv.snapshot(ctx, ViewMiniapp, path)
}

// SnapshotLauncher writes a PNG of the launcher's view to path. The
// launcher's page must be the one shown.
func (wv *webViews) SnapshotLauncher(ctx context.Context, path string) error {
	if !wv.launcher {
		return errors.New("host: this window has no launcher")
	}
	return wv.snapshot(ctx, ViewLauncher, path)
}

func (wv *webViews) snapshot(ctx context.Context, v View, path string) error {
	return awaitErr(ctx, wv.eng, "snapshot", func(done func(error)) { wv.eng.Snapshot(v, path, done) })
}

// SnapshotWindow writes a PNG of the whole window as the screen shows it:
// the tabs, the page shown and any screen of the host over it.
func (wv *webViews) SnapshotWindow(ctx context.Context, path string) error {
	return awaitErr(ctx, wv.eng, "window snapshot", func(done func(error)) { wv.eng.SnapshotWindow(path, done) })
}

// TerminateWebProcess stops the Miniapp's web process, as the host does
// with a page that hangs.
func (wv *webViews) TerminateWebProcess() { wv.eng.Dispatch(wv.eng.TerminateWebProcess) }

// ShowPage shows the launcher or the Miniapp; a window without a launcher
// has only the Miniapp's page.
func (wv *webViews) ShowPage(p Page) { wv.eng.Dispatch(func() { wv.eng.ShowPage(p) }) }

// SnapshotDevice writes a PNG of the device as the window shows it, its
// frame around the page, to path.
func (wv *webViews) SnapshotDevice(ctx context.Context, path string) error {
	return awaitErr(ctx, wv.eng, "screenshot", func(done func(error)) { wv.eng.SnapshotDevice(path, done) })
}

// ShowInspector turns the developer extras of the Miniapp's view on, now,
// and shows its web inspector (docs/host.md, "Web Inspector"), whether or
// not the window was made with Options.DevTools. The host's own views
// (consent, launcher) never get one. It returns once the engine has done
// it; the window then reports EventDevTools.
func (wv *webViews) ShowInspector(ctx context.Context) error {
	err := awaitErr(ctx, wv.eng, "show the web inspector", func(done func(error)) {
		wv.eng.ShowInspector()
		done(nil)
	})
	if err == nil {
		wv.emit(Event{Kind: EventDevTools, Detail: "the web inspector of the Miniapp's view is shown"})
	}
	return err
}
