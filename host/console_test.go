package host_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/redact"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func consoleRaw(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func isConsole(typ host.ConsoleType) func(host.Event) bool {
	return func(e host.Event) bool {
		return e.Kind == host.EventConsole && e.Console != nil && e.Console.Type == typ
	}
}

// TestConsoleMessages: what the capture script posts becomes an event of
// the window and of the automation channel with its level, text, source
// location and frame; a frame URL that carries an authorization code has
// it replaced by its fingerprint; and what is not a message of the script
// is never passed on, only counted.
func TestConsoleMessages(t *testing.T) {
	c := newCore(t, host.Options{})
	cases := []struct {
		name string
		in   map[string]any
		want host.ConsoleMessage
	}{{
		name: "console.error in the top frame",
		in:   map[string]any{"type": "console", "level": "error", "message": "boom 42", "source": "https://app.example/app.js:3:9", "frame": "https://app.example/", "main": true},
		want: host.ConsoleMessage{Type: host.ConsoleCall, Level: host.ConsoleError, Message: "boom 42", Source: "https://app.example/app.js:3:9", Frame: "https://app.example/", MainFrame: true},
	}, {
		name: "console.debug in a subframe",
		in:   map[string]any{"type": "console", "level": "debug", "message": `{"a":1}`, "source": "https://other.example/f.html:1:20", "frame": "https://other.example/f.html", "main": false},
		want: host.ConsoleMessage{Type: host.ConsoleCall, Level: host.ConsoleDebug, Message: `{"a":1}`, Source: "https://other.example/f.html:1:20", Frame: "https://other.example/f.html"},
	}, {
		name: "uncaught error",
		in:   map[string]any{"type": "error", "level": "error", "message": "TypeError: x is null\nf@https://app.example/a.js:1:2", "source": "https://app.example/a.js:1:2", "frame": "https://app.example/", "main": true},
		want: host.ConsoleMessage{Type: host.ConsoleUncaught, Level: host.ConsoleError, Message: "TypeError: x is null\nf@https://app.example/a.js:1:2", Source: "https://app.example/a.js:1:2", Frame: "https://app.example/", MainFrame: true},
	}, {
		name: "unhandled rejection without a location",
		in:   map[string]any{"type": "rejection", "level": "error", "message": "nope", "source": "", "frame": "https://app.example/", "main": true},
		want: host.ConsoleMessage{Type: host.ConsoleRejection, Level: host.ConsoleError, Message: "nope", Frame: "https://app.example/", MainFrame: true},
	}, {
		name: "a page at its redirect_uri",
		in:   map[string]any{"type": "console", "level": "log", "message": "signed in", "source": "https://app.example/cb?code=SplxlOBeZQQYbYS6WxSbIA:7:1", "frame": "https://app.example/cb?code=SplxlOBeZQQYbYS6WxSbIA&state=s", "main": true},
		want: host.ConsoleMessage{Type: host.ConsoleCall, Level: host.ConsoleLog, Message: "signed in",
			Source:    "https://app.example/cb?code=" + redact.Fingerprint("SplxlOBeZQQYbYS6WxSbIA") + ":7:1",
			Frame:     "https://app.example/cb?code=" + redact.Fingerprint("SplxlOBeZQQYbYS6WxSbIA") + "&state=" + redact.Withheld,
			MainFrame: true},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(c.rec.All(kind(host.EventConsole)))
			c.eng.Console(consoleRaw(t, tc.in))
			got := c.rec.All(kind(host.EventConsole))
			if len(got) != before+1 {
				t.Fatalf("%d console events, want %d:%s", len(got), before+1, c.rec.Dump())
			}
			ev := got[len(got)-1]
			if *ev.Console != tc.want || ev.URL != tc.want.Frame || ev.Detail != tc.want.Message {
				t.Errorf("event %+v (URL %q, Detail %q)\nwant  %+v", *ev.Console, ev.URL, ev.Detail, tc.want)
			}
			c.bus.mu.Lock()
			last := c.bus.evs[len(c.bus.evs)-1]
			c.bus.mu.Unlock()
			want := bridge.ConsoleEvent{Type: string(tc.want.Type), Level: string(tc.want.Level), Message: tc.want.Message,
				Source: tc.want.Source, Frame: tc.want.Frame, MainFrame: tc.want.MainFrame}
			if last != want {
				t.Errorf("published %#v\nwant %#v", last, want)
			}
		})
	}

	if s := c.eng.ConsoleScript(); !strings.Contains(s, `"handler":"mhConsole"`) || !strings.Contains(s, "unhandledrejection") {
		t.Errorf("the Miniapp's view has no console capture script: %.200q", s)
	}

	// Messages the script never posts: counted, never passed on.
	before := len(c.rec.All(kind(host.EventConsole)))
	c.eng.ConsoleBurst([]string{
		`"just a string"`, `null`, `{"type":"console","level":"trace","message":"x"}`,
		`{"type":"console","level":"log","message":"x","extra":1}`, `{"type":"console","level":"log"} {}`,
		`{"type":"console","level":"log","message":"` + strings.Repeat("a", host.ConsoleMaxRaw) + `"}`,
	})
	sum := c.rec.Wait(t, "the summary of the dropped messages", isConsole(host.ConsoleDropped))
	if got := len(c.rec.All(kind(host.EventConsole))); got != before+1 {
		t.Errorf("%d events after the bad messages, want only their summary:%s", got-before, c.rec.Dump())
	}
	want := "6 console messages dropped (1 larger than 131072 bytes, 5 not in the capture script's format)"
	if sum.Console.Message != want || sum.Console.Dropped != 6 || sum.Console.Level != host.ConsoleWarn {
		t.Errorf("summary %+v, want %q", *sum.Console, want)
	}
}

// TestConsoleRateLimit: a page that logs in a loop gets ConsoleRate
// messages a second through, and one message saying how many were
// dropped once the second ends, with the counts its frames reported
// themselves; the next second passes messages again.
func TestConsoleRateLimit(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC)}
	c := newCore(t, host.Options{Now: clock.Now})
	burst := make([]string, 250)
	for i := range burst {
		burst[i] = consoleRaw(t, map[string]any{"type": "console", "level": "log", "message": "tick", "frame": "https://app.example/", "main": true})
	}
	// With a frame's own count of what it kept back over the rate, in
	// the same turn of the UI loop: the summary comes after it.
	c.eng.ConsoleBurst(append(burst, `{"type":"dropped","count":1000}`))
	if got := len(c.rec.All(isConsole(host.ConsoleCall))); got != host.ConsoleRate {
		t.Fatalf("%d messages passed in one second, want %d", got, host.ConsoleRate)
	}
	sum := c.rec.Wait(t, "the summary of the dropped messages", isConsole(host.ConsoleDropped))
	want := "1150 console messages dropped (1150 over the limit of 100 a second)"
	if sum.Console.Message != want || sum.Console.Dropped != 1150 {
		t.Errorf("summary %q (%d), want %q", sum.Console.Message, sum.Console.Dropped, want)
	}
	if !strings.Contains(strings.Join(c.bus.kinds(), " "), "console") {
		t.Errorf("nothing published on the automation channel: %v", c.bus.kinds())
	}
	clock.add(time.Second)
	c.eng.Console(burst[0])
	if got := len(c.rec.All(isConsole(host.ConsoleCall))); got != host.ConsoleRate+1 {
		t.Errorf("%d messages after the next second began, want %d", got, host.ConsoleRate+1)
	}
	if got := len(c.rec.All(isConsole(host.ConsoleDropped))); got != 1 {
		t.Errorf("%d summaries, want 1", got)
	}
}

// TestParseConsoleMessage: each way a message can be wrong is refused
// with what is wrong; long texts are cut at a character boundary and say
// how much was cut.
func TestParseConsoleMessage(t *testing.T) {
	bad := []struct{ raw, want string }{
		{`[1]`, "a message is a JSON object"},
		{`{"type":1}`, "not a message of the capture script"},
		{`null`, "a message is a JSON object"},
		{`{"type":"console","level":"log","message":"x"}x`, "data after the message"},
		{`{"type":"print","level":"log"}`, `type "print" is not console, error, rejection or dropped`},
		{`{"type":"console","level":"trace"}`, `level "trace" is not log, info, warn, error or debug`},
		{`{"type":"console","level":"log","count":3}`, "count belongs to a dropped message only"},
		{`{"type":"dropped","count":0}`, "count from 1 to 2^30"},
		{`{"type":"dropped","count":2,"message":"x"}`, "a dropped count is {type, count}"},
		{`{"type":"console","level":"log","stack":"x"}`, `unknown field "stack"`},
	}
	for _, b := range bad {
		if _, err := host.ParseConsoleMessage(b.raw); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParseConsoleMessage(%s) = %v, want an error with %q", b.raw, err, b.want)
		}
	}
	long := strings.Repeat("é", host.ConsoleMaxMessage) // two bytes each
	m, err := host.ParseConsoleMessage(`{"type":"console","level":"warn","message":"` + long + `"}`)
	if err != nil {
		t.Fatal(err)
	}
	kept, note, _ := strings.Cut(m.Message, "…")
	if len(kept) != host.ConsoleMaxMessage || !utf8.ValidString(m.Message) || note != fmt.Sprintf(" (%d more bytes)", len(long)-host.ConsoleMaxMessage) {
		t.Errorf("a long message kept %d bytes with note %q", len(kept), note)
	}
}

// TestConsoleMessageString is the line `-v` prints: level, what produced
// it, the text, the caller's location, the frame when it is not the top
// one, and a stack indented below.
func TestConsoleMessageString(t *testing.T) {
	cases := []struct {
		m    host.ConsoleMessage
		want string
	}{
		{host.ConsoleMessage{Type: host.ConsoleCall, Level: host.ConsoleWarn, Message: "low on budget", Source: "https://app.example/a.js:3:9", Frame: "https://app.example/", MainFrame: true},
			"console warn: low on budget (https://app.example/a.js:3:9)"},
		{host.ConsoleMessage{Type: host.ConsoleCall, Level: host.ConsoleError, Message: "from the frame", Source: "https://o.example/f:1:2", Frame: "https://o.example/f"},
			"console error: from the frame (https://o.example/f:1:2) [frame https://o.example/f]"},
		{host.ConsoleMessage{Type: host.ConsoleUncaught, Level: host.ConsoleError, Message: "TypeError: x is null\nf@https://app.example/a.js:1:2\nglobal code@https://app.example/a.js:9:1", Source: "https://app.example/a.js:1:2", MainFrame: true},
			"console error uncaught: TypeError: x is null (https://app.example/a.js:1:2)\n    f@https://app.example/a.js:1:2\n    global code@https://app.example/a.js:9:1"},
		{host.ConsoleMessage{Type: host.ConsoleRejection, Level: host.ConsoleError, Message: "nope", MainFrame: true},
			"console error unhandled rejection: nope"},
	}
	for _, c := range cases {
		if got := c.m.String(); got != c.want {
			t.Errorf("String()\n got %q\nwant %q", got, c.want)
		}
	}
}

// TestShowInspector: the window, its automation controller and the
// devtools.show command show the Miniapp view's inspector, and the
// window says so.
func TestShowInspector(t *testing.T) {
	c := newCore(t, host.Options{})
	if err := c.w.ShowInspector(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.rec.Wait(t, "the inspector shown", kind(host.EventDevTools))
	ctl, ok := c.w.Controller(nil).(bridge.DevToolsController)
	if !ok {
		t.Fatal("the window's controller does not take devtools.show")
	}
	if err := ctl.ShowDevTools(t.Context(), bridge.ViewCommand{View: host.MainView}); err != nil {
		t.Fatal(err)
	}
	var be *bridge.Error
	if err := ctl.ShowDevTools(t.Context(), bridge.ViewCommand{View: "view-9"}); !errors.As(err, &be) || be.Code != bridge.CodeInvalidParams {
		t.Errorf("devtools.show of an unknown view: %v, want invalid_params", err)
	}
	if n := c.eng.Inspectors(); n != 2 {
		t.Errorf("the inspector was shown %d times, want 2", n)
	}
	if c.eng.Config().DevTools {
		t.Error("developer extras asked of the engine without Options.DevTools")
	}
}

// FuzzParseConsoleMessage: whatever a frame posts, the parser answers
// without panicking, and what it accepts is within the limits.
func FuzzParseConsoleMessage(f *testing.F) {
	f.Add(`{"type":"console","level":"log","message":"hi","source":"https://a.example/x.js:1:2","frame":"https://a.example/","main":true}`)
	f.Add(`{"type":"dropped","count":5}`)
	f.Add(`{"type":"error","level":"error","message":"` + strings.Repeat("\u00e9", 5000) + `"}`)
	f.Add(`{"type":"rejection","level":"error","message":null}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, raw string) {
		m, err := host.ParseConsoleMessage(raw)
		if err != nil {
			return
		}
		switch m.Type {
		case host.ConsoleCall, host.ConsoleUncaught, host.ConsoleRejection, host.ConsoleDropped:
		default:
			t.Fatalf("accepted type %q", m.Type)
		}
		if len(m.Message) > host.ConsoleMaxMessage+64 {
			t.Fatalf("message of %d bytes passed", len(m.Message))
		}
	})
}

// TestServiceControlsNeedTheOperatorKey: a window started without the
// service's operator key answers the development controls unknown_command,
// saying what to give it.
func TestServiceControlsNeedTheOperatorKey(t *testing.T) {
	c := newCore(t, host.Options{})
	ctl, ok := c.w.Controller(nil).(bridge.ServiceController)
	if !ok {
		t.Fatal("the window's controller does not take the development controls")
	}
	_, err := ctl.ServiceControl(t.Context(), "clock.advance", []byte(`{"duration":"61s"}`))
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != bridge.CodeUnknownCommand || !strings.Contains(be.Message, "MINIAPP_HOST_OPERATOR_KEY") {
		t.Fatalf("clock.advance without an operator key: %v, want unknown_command naming MINIAPP_HOST_OPERATOR_KEY", err)
	}
}
