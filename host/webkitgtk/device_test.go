//go:build linux && cgo

package webkitgtk

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
var seen = {touch: [], viewportchanged: 0, themechanged: 0, loads: (Number(sessionStorage.loads) || 0) + 1};
sessionStorage.loads = seen.loads;
['touchstart', 'touchmove', 'touchend'].forEach(function (t) {
  document.addEventListener(t, function (e) { seen.touch.push(t + ':' + e.touches.length); });
});
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
	WidthQuery, Landscape, Portrait                   bool
	UA                                                string
	MaxTouchPoints                                    int
	Ontouchstart, Coarse, Dark                        bool
	DPR                                               float64
	Language                                          string
	Languages                                         []string
	Intl, AcceptLanguage                              string
	CSSInsets                                         map[string]string
	EnvTop, EnvLeft                                   string
	Viewport                                          *device.Viewport
	Theme                                             *device.PageTheme
	Seen                                              struct {
		Touch                          []string
		Viewportchanged, Themechanged int
		Loads                          int
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
	// WebKit gives navigator.languages the first preferred language only.
	if r.Language != em.Locale || strings.Join(r.Languages, ",") != em.Locale || r.Intl != em.Locale {
		t.Errorf("languages: navigator.language %q, languages %v, Intl %q; want %q", r.Language, r.Languages, r.Intl, em.Locale)
	}
	if !strings.HasPrefix(r.AcceptLanguage, em.Locale) {
		t.Errorf("Accept-Language %q, want it to start with %q", r.AcceptLanguage, em.Locale)
	}
}
