//go:build linux && cgo

package webkitgtk

import (
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/device"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/origin"
)

// devicePage is a Miniapp written for the device tests, not a demo: its
// page reports everything it can measure of the device it is shown as,
// with the page's own APIs, and counts the touch events and the bridge's
// viewportchanged and themechanged events it got.
const devicePage = `<!doctype html><html><head><meta charset=utf-8>
<meta name=viewport content="width=device-width, initial-scale=1, viewport-fit=cover">
<style>#probe{padding-top:env(safe-area-inset-top, 7px);padding-left:env(safe-area-inset-left, 7px)}
html,body{margin:0;height:100%}#pad{position:fixed;inset:0}</style></head>
<body><div id=probe></div><div id=pad></div><script>
var seen = {touch: [], mousedown: 0, viewportchanged: 0, themechanged: 0, loads: (Number(sessionStorage.loads) || 0) + 1};
sessionStorage.loads = seen.loads;
['touchstart', 'touchmove', 'touchend'].forEach(function (t) {
  document.addEventListener(t, function (e) { seen.touch.push(t + ':' + e.touches.length); });
});
document.addEventListener('mousedown', function () { seen.mousedown++; });
if (window.miniapp) {
  miniapp.on('viewportchanged', function () { seen.viewportchanged++; });
  miniapp.on('themechanged', function () { seen.themechanged++; });
}
window.report = function () {
  var css = getComputedStyle(document.documentElement), probe = getComputedStyle(document.getElementById('probe'));
  var v = {};
  ['top', 'right', 'bottom', 'left'].forEach(function (s) { v[s] = css.getPropertyValue('--miniapp-safe-area-inset-' + s).trim(); });
  return fetch('/lang').then(function (r) { return r.text(); }).then(function (acceptLanguage) {
    return JSON.stringify({
      innerWidth: innerWidth, innerHeight: innerHeight, screenWidth: screen.width, screenHeight: screen.height,
      widthQuery: matchMedia('(min-width: ' + innerWidth + 'px) and (max-width: ' + innerWidth + 'px)').matches,
      landscape: matchMedia('(orientation: landscape)').matches, portrait: matchMedia('(orientation: portrait)').matches,
      ua: navigator.userAgent, maxTouchPoints: navigator.maxTouchPoints, ontouchstart: 'ontouchstart' in window,
      coarse: matchMedia('(pointer: coarse)').matches, dpr: devicePixelRatio,
      dark: matchMedia('(prefers-color-scheme: dark)').matches,
      language: navigator.language, languages: navigator.languages, intl: Intl.DateTimeFormat().resolvedOptions().locale,
      acceptLanguage: acceptLanguage, cssInsets: v, envTop: probe.paddingTop, envLeft: probe.paddingLeft,
      viewport: window.miniapp ? miniapp.viewport : null, theme: window.miniapp ? miniapp.theme : null,
      seen: seen
    });
  });
};
</script></body></html>`

// deviceReport is what devicePage's report() says.
type deviceReport struct {
	InnerWidth, InnerHeight, ScreenWidth, ScreenHeight int
	WidthQuery, Landscape, Portrait                    bool
	UA                                                 string
	MaxTouchPoints                                     int
	Ontouchstart, Coarse, Dark                         bool
	DPR                                                float64
	Language                                           string
	Languages                                          []string
	Intl, AcceptLanguage                               string
	CSSInsets                                          map[string]string
	EnvTop, EnvLeft                                    string
	Viewport                                           *device.Viewport
	Theme                                              *device.PageTheme
	Seen                                               struct {
		Touch                         []string
		Viewportchanged, Themechanged int
		Loads                         int
	}
}

// mountDevicePage mounts devicePage as a public Miniapp with a bridge.
func mountDevicePage(t *testing.T) {
	t.Helper()
	e := testEnv(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lang" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, r.Header.Get("Accept-Language"))
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, devicePage)
	}))
	t.Cleanup(page.Close)
	d, err := testWin.NewBridge(host.BridgeConfig{Origin: origin.MustParse(page.URL), ID: "device-test", ClientID: "demo-public",
		RedirectURI: e.Public.RedirectURI(), AuthorizeURL: e.Authorize, TokenURL: e.Token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	rec := record(t)
	app := host.Miniapp{Name: "device test", LoadURL: mustURL(t, page.URL+"/"), Consent: e.Consent, Bridge: d,
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{page.URL}}}
	if err := testWin.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, "the device page loaded", kind(host.EventLoadFinished))
	pollJS(t, `typeof window.report`, "function")
}

// setDevice shows the test window's Miniapp as s, and puts the desktop
// back when the test ends.
func setDevice(t *testing.T, s host.DeviceSettings) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reloaded, err := testWin.SetDevice(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := testWin.SetDevice(ctx, host.DeviceSettings{}); err != nil {
			t.Error(err)
		}
	})
	return reloaded
}

// measure waits until the page lays out at the device's width and height
// (the engine sizes the view after SetDevice returns, and WebKit tells the
// page in its next layout), then returns the page's report.
func measure(t *testing.T, width, height int) deviceReport {
	t.Helper()
	if width > 0 {
		pollJS(t, `innerWidth + "x" + innerHeight`, fmt.Sprintf("%dx%d", width, height))
	}
	// report() answers with a promise (it asks its server for the
	// Accept-Language it got): its result is kept in the page and read
	// once it is there.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := testWin.EvalResult(ctx, `window.lastReport = "", report().then(function (r) { window.lastReport = r; }), true`); err != nil {
		t.Fatal(err)
	}
	pollJS(t, `window.lastReport ? "ready" : ""`, "ready")
	var s string
	evalJSON(t, `window.lastReport`, &s)
	var r deviceReport
	if err := jsonUnmarshal(s, &r); err != nil {
		t.Fatalf("report %s: %v", s, err)
	}
	return r
}

// TestDeviceAsThePageSeesIt launches a Miniapp written for the test under
// three presets, in both orientations and both themes, with a locale each,
// and checks every value its page measures against the preset (what
// `miniapp-host devices --json` prints): the layout viewport, the screen,
// the width and orientation media queries, the user agent, the safe-area
// insets as CSS variables and in window.miniapp.viewport, touch, the colour
// scheme and window.miniapp.theme, and the languages (navigator, Intl,
// Accept-Language). env(safe-area-inset-*) and devicePixelRatio are what
// WebKitGTK gives (docs/playground.md, "Devices"): 0 and the screen's.
func TestDeviceAsThePageSeesIt(t *testing.T) {
	mountDevicePage(t)
	locales := map[string]string{"iphone-se": "de-CH", "pixel-8": "pt-BR", "galaxy-a14": "ja"}
	for _, name := range []string{"iphone-se", "pixel-8", "galaxy-a14"} {
		for _, landscape := range []bool{false, true} {
			for _, theme := range []device.Theme{device.Light, device.Dark} {
				t.Run(fmt.Sprintf("%s/landscape=%v/%s", name, landscape, theme), func(t *testing.T) {
					em, err := device.Options{Device: name, Landscape: landscape, Theme: string(theme), Locale: locales[name]}.Emulation()
					if err != nil {
						t.Fatal(err)
					}
					// Zoom 1: the view is the device's size in screen pixels.
					setDevice(t, host.DeviceSettings{Emulation: em, Zoom: 1})
					v := em.Viewport()
					r := measure(t, v.Width, v.Height)
					checkDeviceReport(t, r, em)
				})
			}
		}
	}
}

func checkDeviceReport(t *testing.T, r deviceReport, em device.Emulation) {
	t.Helper()
	v := em.Viewport()
	d := em.Device
	if r.ScreenWidth != v.Width || r.ScreenHeight != v.Height {
		t.Errorf("screen %dx%d, want %dx%d", r.ScreenWidth, r.ScreenHeight, v.Width, v.Height)
	}
	if !r.WidthQuery || r.Landscape != em.Landscape || r.Portrait == em.Landscape {
		t.Errorf("media queries: width %v, landscape %v, portrait %v (landscape wanted: %v)", r.WidthQuery, r.Landscape, r.Portrait, em.Landscape)
	}
	if r.UA != d.UserAgent {
		t.Errorf("user agent %q, want %q", r.UA, d.UserAgent)
	}
	want := map[string]string{"top": fmt.Sprintf("%dpx", v.Insets.Top), "right": fmt.Sprintf("%dpx", v.Insets.Right),
		"bottom": fmt.Sprintf("%dpx", v.Insets.Bottom), "left": fmt.Sprintf("%dpx", v.Insets.Left)}
	if fmt.Sprint(r.CSSInsets) != fmt.Sprint(want) {
		t.Errorf("--miniapp-safe-area-inset-* %v, want %v", r.CSSInsets, want)
	}
	// WebKitGTK has no API for the safe area: env() is defined and 0.
	if r.EnvTop != "0px" || r.EnvLeft != "0px" {
		t.Errorf("env(safe-area-inset-top/left) %s %s; WebKitGTK was measured at 0px: docs/playground.md needs a new row", r.EnvTop, r.EnvLeft)
	}
	if r.Viewport == nil || *r.Viewport != v {
		t.Errorf("window.miniapp.viewport %+v, want %+v", r.Viewport, v)
	}
	if r.MaxTouchPoints != 5 || !r.Ontouchstart {
		t.Errorf("touch: maxTouchPoints %d, ontouchstart %v", r.MaxTouchPoints, r.Ontouchstart)
	}
	if r.Dark != (em.Theme == device.Dark) {
		t.Errorf("prefers-color-scheme: dark is %v under %s", r.Dark, em.Theme)
	}
	if r.Theme == nil || *r.Theme != em.PageTheme() {
		t.Errorf("window.miniapp.theme %+v, want %+v", r.Theme, em.PageTheme())
	}
	// WebKit gives navigator.languages the first preferred language only;
	// no locale is the environment's.
	if em.Locale == "" {
		em.Locale = device.ProcessLanguages(os.Getenv)[0]
	}
	if r.Language != em.Locale || strings.Join(r.Languages, ",") != em.Locale || r.Intl != em.Locale {
		t.Errorf("languages: navigator.language %q, languages %v, Intl %q; want %q", r.Language, r.Languages, r.Intl, em.Locale)
	}
	if !strings.HasPrefix(r.AcceptLanguage, em.Locale) {
		t.Errorf("Accept-Language %q, want it to start with %q", r.AcceptLanguage, em.Locale)
	}
}

// TestDeviceSwitchInPlace: turning the device, changing the theme or the
// locale re-lays the page where it is (it is not loaded again, and its
// bridge tells it with viewportchanged and themechanged), a device with
// another user agent loads it again, a device fitted into the window lays
// out at its own width, and a screenshot of the device area has its frame
// around the page.
func TestDeviceSwitchInPlace(t *testing.T) {
	mountDevicePage(t)
	em := func(o device.Options) device.Emulation {
		e, err := o.Emulation()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	portrait := em(device.Options{Device: "iphone-se"})
	if !setDevice(t, host.DeviceSettings{Emulation: portrait, Zoom: 1}) {
		t.Error("a new user agent did not load the page again")
	}
	first := measure(t, 375, 667)
	for i, o := range []device.Options{
		{Device: "iphone-se", Landscape: true},
		{Device: "iphone-se", Landscape: true, Theme: "dark"},
		{Device: "iphone-se", Theme: "dark", Locale: "fr-CA"},
	} {
		e := em(o)
		if setDevice(t, host.DeviceSettings{Emulation: e, Zoom: 1}) {
			t.Errorf("%+v loaded the page again; only a new user agent should", o)
		}
		v := e.Viewport()
		r := measure(t, v.Width, v.Height)
		checkDeviceReport(t, r, e)
		if r.Seen.Loads != first.Seen.Loads {
			t.Errorf("%+v: the page was loaded again (load %d, was %d)", o, r.Seen.Loads, first.Seen.Loads)
		}
		if want := first.Seen.Viewportchanged + min(i+1, 2); r.Seen.Viewportchanged < want-1 {
			t.Errorf("%+v: %d viewportchanged events, want at least %d", o, r.Seen.Viewportchanged, want-1)
		}
	}
	last := measure(t, 375, 667)
	if last.Seen.Themechanged < first.Seen.Themechanged+1 {
		t.Errorf("themechanged events %d, then %d: the change to dark was not told", first.Seen.Themechanged, last.Seen.Themechanged)
	}

	// Fitted into the window (zoom 0): the view is smaller than the
	// device on screen, and the page still lays out at the device's width.
	tall := em(device.Options{Device: "ipad-air"})
	setDevice(t, host.DeviceSettings{Emulation: tall})
	pollFor(t, "the iPad fitted", func() bool {
		var w int
		evalJSON(t, `innerWidth`, &w)
		return w >= 819 && w <= 821
	})
	ch := make(chan float64, 1)
	testEng.Dispatch(func() { ch <- testEng.deviceZoom() })
	if z := <-ch; z >= 1 || z < 0.25 {
		t.Errorf("the iPad (820x1180) in a %s window is shown at zoom %g; fitting it needs less than 1", "1024x768", z)
	}

	// The device area's screenshot: the page in its frame.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := t.TempDir()
	if err := testWin.SnapshotMiniapp(ctx, dir+"/view.png"); err != nil {
		t.Fatal(err)
	}
	if err := testWin.SnapshotDevice(ctx, dir+"/device.png"); err != nil {
		t.Fatal(err)
	}
	view, dev := pngSize(t, dir+"/view.png"), pngSize(t, dir+"/device.png")
	if dev[0] <= view[0] || dev[1] <= view[1] {
		t.Errorf("the device's screenshot is %v, its view's %v: the frame is missing", dev, view)
	}
}

// TestDeviceTouchFromMouse: on a touch device, a real click (through the X
// server) on the page gives it a touchstart and a touchend, as a tap on a
// phone does; on the desktop it gives none.
func TestDeviceTouchFromMouse(t *testing.T) {
	mountDevicePage(t)
	e, err := device.Options{Device: "galaxy-a14"}.Emulation()
	if err != nil {
		t.Fatal(err)
	}
	setDevice(t, host.DeviceSettings{Emulation: e, Zoom: 1})
	measure(t, 360, 640)
	clickMiniapp(t)
	pollJS(t, `seen.touch.join(" ")`, "touchstart:1 touchend:0")
	if _, err := testWin.SetDevice(t.Context(), host.DeviceSettings{}); err != nil {
		t.Fatal(err)
	}
	pollJS(t, `String(navigator.maxTouchPoints) + ('ontouchstart' in window)`, "0false")
	evalJSON(t, `seen.touch = [], seen.mousedown = 0`, new(int))
	clickMiniapp(t)
	// The click has reached the page as a mouse event; a touch event it
	// made would have come before it.
	pollJS(t, `String(seen.mousedown)`, "1")
	var touches []string
	evalJSON(t, `seen.touch`, &touches)
	if len(touches) != 0 {
		t.Errorf("the desktop got touch events %v", touches)
	}
}

func pngSize(t *testing.T, path string) [2]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return [2]int{cfg.Width, cfg.Height}
}

// BenchmarkDeviceSwitch times turning the device (iPhone 15, portrait to
// landscape and back) from SetDevice to the page laying out at the new
// size (its innerWidth, read by the host's own evaluation), without a
// reload: the page's load count is reported and must stay 1.
//
//	xvfb-run -a -s "-screen 0 1280x900x24" go test -run '^$' -bench BenchmarkDeviceSwitch -benchtime 40x ./host/webkitgtk/
func BenchmarkDeviceSwitch(b *testing.B) {
	e := testEnv(b)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, devicePage)
	}))
	defer page.Close()
	ctx := context.Background()
	rec := record(b)
	app := host.Miniapp{Name: "device bench", LoadURL: mustURL(b, page.URL+"/"), Consent: e.Consent,
		Policy: host.Policy{Authorize: mustURL(b, e.Authorize), Allowed: []string{page.URL}}}
	if err := testWin.Mount(ctx, app); err != nil {
		b.Fatal(err)
	}
	rec.Wait(b, "the page loaded", kind(host.EventLoadFinished))
	em := func(landscape bool) host.DeviceSettings {
		d, _ := device.Options{Device: "iphone-15", Landscape: landscape}.Emulation()
		return host.DeviceSettings{Emulation: d, Zoom: 1}
	}
	if _, err := testWin.SetDevice(ctx, em(false)); err != nil {
		b.Fatal(err)
	}
	defer testWin.SetDevice(ctx, host.DeviceSettings{})
	waitWidth := func(w int) {
		want := fmt.Sprint(w)
		for {
			got, err := testWin.EvalResult(ctx, `innerWidth`)
			if err != nil {
				b.Fatal(err)
			}
			if got == want {
				return
			}
		}
	}
	waitWidth(393)
	before, err := testWin.EvalResult(ctx, `seen.loads`)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		landscape := i%2 == 0
		if reloaded, err := testWin.SetDevice(ctx, em(landscape)); err != nil || reloaded {
			b.Fatalf("SetDevice: reloaded %v, %v", reloaded, err)
		}
		if landscape {
			waitWidth(852)
		} else {
			waitWidth(393)
		}
	}
	b.StopTimer()
	loads, err := testWin.EvalResult(ctx, `seen.loads`)
	if err != nil {
		b.Fatal(err)
	}
	if loads != before {
		b.Fatalf("the page was loaded again while turned: load %s, was %s", loads, before)
	}
}

// layoutChildEnv makes the test binary a playground window of its own in
// the layout the variable names, which prints the type of the window's
// child and exits.
const layoutChildEnv = "MINIAPP_HOST_LAYOUT_CHILD"

func runLayoutChild(name string) int {
	layout, err := host.ParseLayout(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir, err := childDataDir("layout")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	var eng *engine
	newEngine := func(cfg host.EngineConfig, ev host.EngineEvents) (host.Engine, error) {
		e, err := New(cfg, ev)
		if err == nil {
			eng = e.(*engine)
		}
		return e, err
	}
	w, err := host.NewWindow(newEngine, host.Options{DataDir: dir, Ephemeral: true, Launcher: true, Layout: layout})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w.Dispatch(func() {
		fmt.Println("layout", eng.layoutType())
		w.Terminate()
	})
	w.Run()
	return 0
}

// TestLayouts: the playground's window puts the launcher beside the device
// in a split by default (this process's window), and in tabs with
// --layout tabs (a window of its own).
func TestLayouts(t *testing.T) {
	ch := make(chan string, 1)
	testEng.Dispatch(func() { ch <- testEng.layoutType() })
	if got := <-ch; got != "GtkPaned" {
		t.Errorf("the side layout's window holds a %s, want a GtkPaned", got)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), layoutChildEnv+"=tabs", "WEBKIT_DISABLE_COMPOSITING_MODE=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "layout GtkNotebook") {
		t.Errorf("--layout tabs: %q, %v; want a GtkNotebook", out, err)
	}
}
