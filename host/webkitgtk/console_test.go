//go:build linux && cgo

package webkitgtk

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/playground"
)

// consoleApp serves the pages of the console tests: the main page and its
// script on one origin, an iframe on another. Lines of the scripts are
// numbered as the tests expect them.
func consoleApp(t *testing.T, mainJS, frameJS string) (host.Miniapp, *httptest.Server, *httptest.Server) {
	t.Helper()
	frame := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// frameJS starts on line 2 of the document.
		fmt.Fprintf(w, "<!doctype html><html><body><script>\n%s\n</script></body></html>", frameJS)
	}))
	t.Cleanup(frame.Close)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/app.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, mainJS)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		src := `<iframe src="` + frame.URL + `/frame"></iframe>`
		if frameJS == "" {
			src = ""
		}
		fmt.Fprintf(w, `<!doctype html><html><body><script src="/app.js"></script>%s</body></html>`, src)
	}))
	t.Cleanup(page.Close)
	e := testEnv(t)
	app := host.Miniapp{Name: "console", LoadURL: mustURL(t, page.URL+"/"), Consent: e.Consent,
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{page.URL, frame.URL}}}
	return app, page, frame
}

func consoleOf(typ host.ConsoleType, text string) func(host.Event) bool {
	return func(e host.Event) bool {
		return e.Kind == host.EventConsole && e.Console.Type == typ && strings.Contains(e.Console.Message, text)
	}
}

// TestConsoleCapture loads a Miniapp whose page calls console.error and
// console.log, rejects a promise nobody handles and throws without
// catching, and whose iframe (another origin) calls console.error. Each
// arrives as a console event with its level, its text as a console would
// show it, the caller's url:line (not the capture script's), the frame's
// URL, and on the automation channel; none of it reaches the bridge.
func TestConsoleCapture(t *testing.T) {
	mainJS := strings.Join([]string{
		`function logIt() {`,
		`  console.error("main says", {n: 1, list: [true, null]}, 42);`,
		`}`,
		`logIt();`,
		`console.log("fmt %s=%d", "x", 7);`,
		`Promise.reject(new Error("rejected on purpose"));`,
		`setTimeout(function () { throw new TypeError("thrown on purpose"); }, 0);`,
	}, "\n")
	frameJS := `console.error("frame says", new RangeError("in the frame"));`
	app, page, frame := consoleApp(t, mainJS, frameJS)
	rec := mount(t, app)

	cases := []struct {
		name    string
		match   func(host.Event) bool
		level   host.ConsoleLevel
		message string // the whole text, or its first line when it has a stack
		source  string // url:line, before the column
		frame   string
		main    bool
	}{
		{"console.error", consoleOf(host.ConsoleCall, "main says"), host.ConsoleError,
			`main says {"n":1,"list":[true,null]} 42`, page.URL + "/app.js:2", page.URL + "/", true},
		{"console.log with substitutions", consoleOf(host.ConsoleCall, "fmt"), host.ConsoleLog,
			"fmt x=7", page.URL + "/app.js:5", page.URL + "/", true},
		{"unhandled rejection", consoleOf(host.ConsoleRejection, "rejected on purpose"), host.ConsoleError,
			"Error: rejected on purpose", page.URL + "/app.js:6", page.URL + "/", true},
		{"uncaught error", consoleOf(host.ConsoleUncaught, "thrown on purpose"), host.ConsoleError,
			"TypeError: thrown on purpose", page.URL + "/app.js:7", page.URL + "/", true},
		{"console.error in the iframe", consoleOf(host.ConsoleCall, "frame says"), host.ConsoleError,
			"frame says RangeError: in the frame", frame.URL + "/frame:2", frame.URL + "/frame", false},
	}
	col := regexp.MustCompile(`^:\d+$`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := rec.Wait(t, c.name, c.match)
			m := ev.Console
			first, _, _ := strings.Cut(m.Message, "\n")
			if m.Level != c.level || first != c.message || m.Frame != c.frame || m.MainFrame != c.main {
				t.Errorf("got %s %q frame %s main %t\nwant %s %q frame %s main %t", m.Level, first, m.Frame, m.MainFrame,
					c.level, c.message, c.frame, c.main)
			}
			if rest, ok := strings.CutPrefix(m.Source, c.source); !ok || !col.MatchString(rest) {
				t.Errorf("source %q, want %s:<column>", m.Source, c.source)
			}
			if ev.URL != m.Frame {
				t.Errorf("the event's URL %q is not its frame %q", ev.URL, m.Frame)
			}
		})
	}
	// An Error is written with its stack, which names where it was made.
	if ev := rec.Wait(t, "the rejection", consoleOf(host.ConsoleRejection, "rejected")); !strings.Contains(ev.Console.Message, "\n") ||
		!strings.Contains(ev.Console.Message, page.URL+"/app.js:6:") {
		t.Errorf("the rejected Error without its stack: %q", ev.Console.Message)
	}

	// The same on the automation channel.
	published := func() map[string]bridge.ConsoleEvent {
		testBus.mu.Lock()
		defer testBus.mu.Unlock()
		out := map[string]bridge.ConsoleEvent{}
		for _, ev := range testBus.evs {
			if c, ok := ev.(bridge.ConsoleEvent); ok && (strings.HasPrefix(c.Frame, page.URL) || strings.HasPrefix(c.Frame, frame.URL)) {
				out[c.Type+" "+strings.SplitN(c.Message, " ", 2)[0]] = c
			}
		}
		return out
	}
	got := published()
	for _, k := range []string{"console main", "console fmt", "rejection Error:", "error TypeError:", "console frame"} {
		if _, ok := got[k]; !ok {
			t.Errorf("not published on the automation channel: %s (have %v)", k, got)
		}
	}

	// Console traffic has its own handler: the bridge saw nothing.
	if evs := rec.All(func(e host.Event) bool { return e.Kind == host.EventBridgeRefused || e.Kind == host.EventBridgeMessage }); len(evs) > 0 {
		t.Errorf("console messages reached the bridge's handler: %+v", evs)
	}
	// The page's own console still works: the wrapper calls the original.
	var kept bool
	evalJSON(t, `typeof console.log === "function" && console.log("still works") === undefined`, &kept)
	if !kept {
		t.Error("console.log no longer works in the page")
	}
	rec.Wait(t, "a console call from an evaluation", consoleOf(host.ConsoleCall, "still works"))
}

// TestConsoleFlood: a page that logs in a tight loop does not freeze the
// window or flood the channel: at most the rate passes in each second,
// every message is either passed on or counted in a "dropped" summary,
// and the page answers at once afterwards.
func TestConsoleFlood(t *testing.T) {
	const n = 5000
	app, _, _ := consoleApp(t, fmt.Sprintf(`for (var i = 0; i < %d; i++) console.log("flood " + i); document.title = "done";`, n), "")
	rec := mount(t, app)
	var passed, dropped int
	rec.Wait(t, fmt.Sprintf("%d flood messages passed on or counted", n), func(e host.Event) bool {
		switch {
		case e.Kind != host.EventConsole:
		case e.Console.Type == host.ConsoleCall && strings.HasPrefix(e.Console.Message, "flood "):
			passed++
		case e.Console.Type == host.ConsoleDropped:
			dropped += e.Console.Dropped
		}
		return passed+dropped >= n
	})
	if passed+dropped != n {
		t.Errorf("%d passed and %d dropped of %d", passed, dropped, n)
	}
	if dropped == 0 {
		t.Errorf("all %d messages of a tight loop passed; the rate is %d a second", n, host.ConsoleRate)
	}
	sum := rec.Wait(t, "the summary", consoleOf(host.ConsoleDropped, "console messages dropped"))
	if !strings.Contains(sum.Console.Message, "over the limit of 100 a second") {
		t.Errorf("summary %q does not say why", sum.Console.Message)
	}
	var title string
	evalJSON(t, `document.title`, &title)
	if title != "done" {
		t.Errorf("title %q, want done", title)
	}
}

// onUI runs f on the UI thread and waits for it (in a cleanup too, where
// the test's context has ended).
func onUI(f func()) {
	done := make(chan struct{})
	testEng.Dispatch(func() { f(); close(done) })
	<-done
}

// devtoolsState is what WebKit's settings say of developer extras in each
// view, read on the UI thread.
type devtoolsState struct{ miniapp, host, launcher bool }

func readDevtools(t *testing.T) devtoolsState {
	t.Helper()
	var s devtoolsState
	onUI(func() {
		s = devtoolsState{testEng.developerExtras(host.ViewMiniapp), testEng.developerExtras(host.ViewHost),
			testEng.developerExtras(host.ViewLauncher)}
	})
	return s
}

// TestInspector: the window, made without --devtools, has developer
// extras off in every view, as WebKit's settings say; the playground's
// POST /api/devtools (playground.Window.ShowDevTools, which the
// automation channel's devtools.show also reaches) turns them on in the
// Miniapp's view and shows its inspector, and the consent view and the
// launcher stay off. The host's views also have no console capture.
func TestInspector(t *testing.T) {
	app, _, _ := consoleApp(t, `console.log("ready");`, "")
	rec := mount(t, app)
	// The consent view's page loads after the Miniapp's first page.
	pollHost(t, `typeof window.hostRender`, "function")
	if got := readDevtools(t); got != (devtoolsState{}) {
		t.Fatalf("developer extras without --devtools: %+v, want all off", got)
	}
	t.Cleanup(func() { onUI(func() { testEng.closeInspector(false) }) })
	var ctl bridge.DevToolsController = playground.NewWindow(testWin, "test")
	if err := ctl.ShowDevTools(t.Context(), bridge.ViewCommand{}); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, "the inspector shown", kind(host.EventDevTools))
	if got := readDevtools(t); got != (devtoolsState{miniapp: true}) {
		t.Errorf("developer extras after devtools.show: %+v, want the Miniapp's view's only", got)
	}
	var open bool
	onUI(func() { open = testEng.inspectorOpen() })
	if !open {
		t.Error("the Miniapp view's inspector has no page after devtools.show")
	}

	// The host's views have neither the capture script nor its handler.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	probe := `(window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.mhConsole ? "handler " : "") +
		(String(console.log).indexOf("[native code]") >= 0 ? "native" : "wrapped")`
	if out, err := testWin.EvalHost(ctx, probe); err != nil || out != `"native"` {
		t.Errorf("consent view: %s %v; want a native console and no mhConsole handler", out, err)
	}
	if out, err := testWin.EvalLauncher(ctx, probe); err != nil || out != `"native"` {
		t.Errorf("launcher view: %s %v; want a native console and no mhConsole handler", out, err)
	}
	if out, err := testWin.EvalResult(ctx, probe); err != nil || out != `"handler wrapped"` {
		t.Errorf("Miniapp view: %s %v; want the capture in place", out, err)
	}
}
