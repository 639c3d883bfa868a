package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/miniapp-host/miniapp-host/assets"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/redact"
)

// Console capture (docs/host.md, "Console capture"). The host injects
// assets/host/console.js into every frame of the Miniapp's view; it posts
// each console call, uncaught error and unhandled rejection to the
// ConsoleHandler message handler, and the engine hands the string to
// EngineEvents.ConsoleMessage. The host's own views get neither the script nor
// the handler.

// ConsoleHandler is the name of the Miniapp view's message handler for the
// console capture script: a handler of its own, so that console traffic
// never reaches the bridge's ("miniappHost").
const ConsoleHandler = "mhConsole"

// Limits of the console capture.
const (
	// ConsoleRate is how many console messages a second the host passes
	// on; the rest are counted and reported in one ConsoleDropped message
	// when the second ends. The capture script applies it in each frame
	// too, so that a page logging in a loop does not flood the UI thread.
	ConsoleRate = 100
	// ConsoleMaxMessage is the longest message text passed on, in bytes
	// of UTF-8; a longer one is cut, and says how much was cut.
	ConsoleMaxMessage = 8 << 10
	// ConsoleMaxSource caps the source location and the frame URL.
	ConsoleMaxSource = 2 << 10
	// ConsoleMaxRaw is the largest message the capture script's handler
	// accepts, in bytes; a larger one is dropped (a page that posts to
	// the handler itself). Engines may cut a longer one to
	// ConsoleMaxRaw+1 bytes before handing it over.
	ConsoleMaxRaw = 128 << 10
)

// ConsoleLevel is the console method a message was written with.
type ConsoleLevel string

// Console levels.
const (
	ConsoleLog   ConsoleLevel = "log"
	ConsoleInfo  ConsoleLevel = "info"
	ConsoleWarn  ConsoleLevel = "warn"
	ConsoleError ConsoleLevel = "error"
	ConsoleDebug ConsoleLevel = "debug"
)

// ConsoleType says what produced a console message.
type ConsoleType string

// Console message types.
const (
	ConsoleCall      ConsoleType = "console"   // a console.* call
	ConsoleUncaught  ConsoleType = "error"     // an uncaught exception (the window's error event)
	ConsoleRejection ConsoleType = "rejection" // an unhandled promise rejection
	ConsoleDropped   ConsoleType = "dropped"   // the host's count of messages it did not pass on
)

// ConsoleMessage is what a frame of the Miniapp wrote to its console,
// threw or rejected: the Console of an EventConsole event.
type ConsoleMessage struct {
	Type  ConsoleType
	Level ConsoleLevel
	// Message is the text: the call's arguments formatted as a browser's
	// console does (objects as JSON where they can be, an Error as its
	// stack), or the error's. At most ConsoleMaxMessage bytes.
	Message string
	// Source is url:line:col of the console call (its caller's location),
	// of the uncaught throw, or where a rejected Error was made; "" when
	// unknown (a rejection with a string). Frame is the URL of the frame.
	// Both are redacted (redact.URL): a page at its redirect_uri
	// has the code in its URL.
	Source, Frame string
	// MainFrame is whether the frame is the view's top frame (as the
	// frame's own script saw it).
	MainFrame bool
	// Dropped is, for ConsoleDropped, how many messages were not passed
	// on since the last such message.
	Dropped int
}

// String is the message as `miniapp-host open -v` prints it: one line,
// "console <level> <message> (<source>) [frame <url>]", with the lines
// of a multi-line message (a stack) indented below it.
func (m ConsoleMessage) String() string {
	var b strings.Builder
	b.WriteString("console ")
	b.WriteString(string(m.Level))
	switch m.Type {
	case ConsoleUncaught:
		b.WriteString(" uncaught")
	case ConsoleRejection:
		b.WriteString(" unhandled rejection")
	}
	first, rest, _ := strings.Cut(m.Message, "\n")
	b.WriteString(": ")
	b.WriteString(first)
	if m.Source != "" {
		b.WriteString(" (" + m.Source + ")")
	}
	if m.Frame != "" && !m.MainFrame {
		b.WriteString(" [frame " + m.Frame + "]")
	}
	if rest != "" {
		b.WriteString("\n    ")
		b.WriteString(strings.ReplaceAll(strings.TrimRight(rest, "\n"), "\n", "\n    "))
	}
	return b.String()
}

// consoleWire is a message of the capture script, as it posts it.
type consoleWire struct {
	Type    ConsoleType  `json:"type"`
	Level   ConsoleLevel `json:"level"`
	Message string       `json:"message"`
	Source  string       `json:"source"`
	Frame   string       `json:"frame"`
	Main    bool         `json:"main"`
	Count   int          `json:"count"`
}

// Reasons a console message is dropped.
const (
	dropRate = iota
	dropLarge
	dropInvalid
	dropReasons
)

// ParseConsoleMessage reads one message of the capture script. raw is
// outside input (any frame of the Miniapp's page can post to the handler),
// so it is read strictly: one JSON object of at most ConsoleMaxRaw bytes
// with the script's members only, a known type and level. A "dropped"
// message (the script's own count) is returned with Dropped set. Long
// texts are cut to the limits; source and frame are redacted.
func ParseConsoleMessage(raw string) (ConsoleMessage, error) {
	var m ConsoleMessage
	if len(raw) > ConsoleMaxRaw {
		return m, fmt.Errorf("host: console: message of more than %d bytes", ConsoleMaxRaw)
	}
	if !strings.HasPrefix(strings.TrimSpace(raw), "{") {
		return m, errors.New("host: console: a message is a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var w consoleWire
	if err := dec.Decode(&w); err != nil {
		return m, fmt.Errorf("host: console: not a message of the capture script: %w", err)
	}
	if strings.TrimSpace(raw[dec.InputOffset():]) != "" {
		return m, errors.New("host: console: data after the message")
	}
	switch w.Type {
	case ConsoleDropped:
		if w.Count < 1 || w.Count > 1<<30 || w.Message != "" || w.Source != "" || w.Level != "" {
			return m, errors.New("host: console: a dropped count is {type, count} with count from 1 to 2^30")
		}
		return ConsoleMessage{Type: ConsoleDropped, Level: ConsoleWarn, Dropped: w.Count}, nil
	case ConsoleCall, ConsoleUncaught, ConsoleRejection:
	default:
		return m, fmt.Errorf("host: console: type %q is not console, error, rejection or dropped", w.Type)
	}
	switch w.Level {
	case ConsoleLog, ConsoleInfo, ConsoleWarn, ConsoleError, ConsoleDebug:
	default:
		return m, fmt.Errorf("host: console: level %q is not log, info, warn, error or debug", w.Level)
	}
	if w.Count != 0 {
		return m, errors.New("host: console: count belongs to a dropped message only")
	}
	return ConsoleMessage{Type: w.Type, Level: w.Level, Message: cutText(w.Message, ConsoleMaxMessage),
		Source: redact.Source(cutText(w.Source, ConsoleMaxSource)), Frame: redact.URL(cutText(w.Frame, ConsoleMaxSource)),
		MainFrame: w.Main}, nil
}

// cutText cuts s to at most max bytes, at a character boundary, and says
// how much was cut.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… (%d more bytes)", len(s)-i)
}

// consoleGate applies ConsoleRate and counts what is dropped. Messages
// arrive on the UI thread; the summary is sent from a timer.
type consoleGate struct {
	mu      sync.Mutex // guards below
	start   time.Time  // of the current second
	n       int        // messages passed on in it
	dropped [dropReasons]int
	pending bool // a summary is due when the timer fires
}

// admit reports whether a message may pass at now; a dropped one is
// counted, and schedules the summary (report) when none is due.
func (g *consoleGate) admit(now time.Time, report func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.start.IsZero() || now.Sub(g.start) >= time.Second || now.Before(g.start) {
		g.start, g.n = now, 0
	}
	if g.n < ConsoleRate {
		g.n++
		return true
	}
	g.dropLocked(dropRate, 1, report)
	return false
}

// drop counts n messages dropped for reason.
func (g *consoleGate) drop(reason, n int, report func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropLocked(reason, n, report)
}

func (g *consoleGate) dropLocked(reason, n int, report func()) {
	g.dropped[reason] = min(g.dropped[reason]+n, 1<<30)
	if !g.pending {
		g.pending = true
		// The summary goes out when the second ends, whatever the page
		// does next: a flood that stops is still reported.
		time.AfterFunc(time.Second, report)
	}
}

// take returns the summary of what was dropped since the last one, and
// false when nothing was.
func (g *consoleGate) take() (ConsoleMessage, bool) {
	g.mu.Lock()
	d := g.dropped
	g.dropped, g.pending = [dropReasons]int{}, false
	g.mu.Unlock()
	total := d[dropRate] + d[dropLarge] + d[dropInvalid]
	if total == 0 {
		return ConsoleMessage{}, false
	}
	var why []string
	if d[dropRate] > 0 {
		why = append(why, fmt.Sprintf("%d over the limit of %d a second", d[dropRate], ConsoleRate))
	}
	if d[dropLarge] > 0 {
		why = append(why, fmt.Sprintf("%d larger than %d bytes", d[dropLarge], ConsoleMaxRaw))
	}
	if d[dropInvalid] > 0 {
		why = append(why, fmt.Sprintf("%d not in the capture script's format", d[dropInvalid]))
	}
	msg := fmt.Sprintf("%d console messages dropped (%s)", total, strings.Join(why, ", "))
	return ConsoleMessage{Type: ConsoleDropped, Level: ConsoleWarn, Message: msg, Dropped: total, MainFrame: true}, true
}

// ConsoleMessage implements EngineEvents: a message of the capture script
// from any frame of the Miniapp's view.
func (s *engineSink) ConsoleMessage(raw string) {
	m, err := ParseConsoleMessage(raw)
	switch {
	case len(raw) > ConsoleMaxRaw:
		s.console.drop(dropLarge, 1, s.reportDropped)
		return
	case err != nil:
		s.console.drop(dropInvalid, 1, s.reportDropped)
		return
	case m.Type == ConsoleDropped:
		// The frame's own count of what it dropped over the rate.
		s.console.drop(dropRate, m.Dropped, s.reportDropped)
		return
	}
	if !s.console.admit(s.w.opts.Now(), s.reportDropped) {
		return
	}
	s.sendConsole(m)
}

// reportDropped sends the summary of the dropped messages, on the UI
// thread.
func (s *engineSink) reportDropped() {
	s.w.Dispatch(func() {
		if m, ok := s.console.take(); ok {
			s.sendConsole(m)
		}
	})
}

// sendConsole emits m as an EventConsole and publishes it on the
// automation channel.
func (s *engineSink) sendConsole(m ConsoleMessage) {
	w := s.w
	w.emit(Event{Kind: EventConsole, URL: m.Frame, Detail: m.Message, Console: &m})
	w.publish(bridge.ConsoleEvent{Type: string(m.Type), Level: string(m.Level), Message: m.Message, Source: m.Source,
		Frame: m.Frame, MainFrame: m.MainFrame, Dropped: m.Dropped})
}

// consoleScript is the capture script with the host's limits, as the
// engine injects it into every frame of the Miniapp's view.
func consoleScript() (string, error) {
	js, err := assets.FS.ReadFile("host/console.js")
	if err != nil {
		return "", fmt.Errorf("host: console script: %w", err)
	}
	cfg, _ := json.Marshal(map[string]any{"handler": ConsoleHandler, "maxMessage": ConsoleMaxMessage,
		"maxSource": ConsoleMaxSource, "perSecond": ConsoleRate})
	return "(" + strings.TrimSpace(string(js)) + ")(" + string(cfg) + ");\n", nil
}
