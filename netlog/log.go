package netlog

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/redact"
)

// Config configures a Log. The zero value of each field has the default
// its comment names.
type Config struct {
	// MaxFlows is how many flows the log keeps, the oldest dropped first;
	// 100.
	MaxFlows int
	// MaxEntries is how many entries a flow keeps, the oldest dropped
	// first (Flow.Dropped counts them); 500.
	MaxEntries int
	// MaxLaunches is how many launches the log remembers; 100.
	MaxLaunches int
	// Events receives a NetworkEvent per entry recorded and a
	// FlowEndedEvent per flow ended (the automation bus, bridge.Bus); nil:
	// none.
	Events Publisher
	// Now is the clock; time.Now.
	Now func() time.Time
	// Creator names the program in HAR exports; "miniapp-host".
	Creator, Version string
}

// Event is what the log publishes: a NetworkEvent or a FlowEndedEvent.
// Kind is the name the automation channel gives it (docs/automation.md,
// "Events"); the type is the automation channel's own event type
// (bridge.Event), written out so that the log needs nothing of the bridge.
type Event = interface{ Kind() string }

// Publisher receives the log's events; the automation channel's bus
// (bridge.Bus) is one.
type Publisher interface {
	Publish(Event)
}

// Outcomes of a flow.
const (
	OutcomeRunning   = "running"   // not ended yet
	OutcomeCompleted = "completed" // the authorization response was delivered with a code (or tokens)
	OutcomeDenied    = "denied"    // the subject denied: error=access_denied
	OutcomeError     = "error"     // the flow failed; Detail says why
	OutcomeAbandoned = "abandoned" // the consent was closed, or another Miniapp was mounted
)

// Log is the network log: launches, their flows, the flows' entries.
// Safe for concurrent use.
type Log struct {
	cfg Config

	mu         sync.Mutex // guards below
	launches   []*Launch
	flows      []*Flow
	pushed     []pushedEntry // IntoPushed's, until their flow begins
	nextLaunch int
	nextFlow   int
	nextEntry  int
}

// New returns an empty log.
func New(cfg Config) *Log {
	if cfg.MaxFlows <= 0 {
		cfg.MaxFlows = 100
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 500
	}
	if cfg.MaxLaunches <= 0 {
		cfg.MaxLaunches = 100
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Creator == "" {
		cfg.Creator = "miniapp-host"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	return &Log{cfg: cfg}
}

// Launch is one Miniapp mounted in the window: its flows belong to it.
type Launch struct {
	log                         *Log
	ID                          string
	Origin, MiniappID, ClientID string
	Started                     time.Time

	network *Flow // the launch's network flow (Injected), made on first use; guarded by log.mu
}

// BeginLaunch records a launch of the Miniapp id at origin, signing in as
// clientID.
func (l *Log) BeginLaunch(origin, id, clientID string) *Launch {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextLaunch++
	la := &Launch{log: l, ID: fmt.Sprintf("l%d", l.nextLaunch), Origin: origin, MiniappID: id, ClientID: clientID, Started: l.cfg.Now()}
	l.launches = append(l.launches, la)
	if len(l.launches) > l.cfg.MaxLaunches {
		l.launches = slices.Delete(l.launches, 0, len(l.launches)-l.cfg.MaxLaunches)
	}
	return la
}

// Flow is one consent flow: from a caught authorization request (or a
// bridge authorize) to its completion, denial or error.
type Flow struct {
	log    *Log
	id     string
	launch *Launch

	// Guarded by log.mu.
	clientID    string
	started     time.Time
	ended       time.Time
	outcome     string
	detail      string
	entries     []Entry
	dropped     int
	codes       []string // fingerprints of the codes issued in the flow
	authorizeID int      // the authorize entry, for the consent model
	traceID     string   // the flow's trace (SetTraceID), "" untraced
}

// BeginFlow records the start of a flow with the caught authorization
// request u: its first entry is u decoded.
func (la *Launch) BeginFlow(u *url.URL) *Flow { return la.BeginTracedFlow(u, "") }

// BeginTracedFlow is BeginFlow for a flow of the trace traceID
// (SetTraceID's rule), named before the flow's first entry is published:
// whoever hears of the flow reads its trace id with it.
func (la *Launch) BeginTracedFlow(u *url.URL, traceID string) *Flow {
	if la == nil {
		return nil
	}
	l := la.log
	now := l.cfg.Now()
	l.mu.Lock()
	l.nextFlow++
	f := &Flow{log: l, id: fmt.Sprintf("f%d", l.nextFlow), launch: la, clientID: u.Query().Get("client_id"),
		started: now, outcome: OutcomeRunning}
	if traceIDRule(traceID) {
		f.traceID = traceID
	}
	l.flows = append(l.flows, f)
	if len(l.flows) > l.cfg.MaxFlows {
		l.flows = slices.Delete(l.flows, 0, len(l.flows)-l.cfg.MaxFlows)
	}
	// A pushed request this flow's request_uri names (IntoPushed) came
	// first: it is the flow's first entry, the caught request the next.
	par, pushed := l.takePushedLocked(u)
	if pushed {
		par = l.addLocked(f, par)
	}
	e := l.addLocked(f, authorizeEntry(u, now))
	f.authorizeID = e.ID
	l.mu.Unlock()
	if pushed {
		l.publish(par)
	}
	l.publish(e)
	return f
}

// Injected records an answer the host made up for the launch's view (a
// mock rule's, x.Injected set) outside any consent flow: in the launch's
// network flow, made the first time, whose detail says what it holds. It
// stays running: it ends with the launch.
func (la *Launch) Injected(x Exchange) {
	if la == nil {
		return
	}
	l := la.log
	l.mu.Lock()
	f := la.network
	if f == nil || !slices.Contains(l.flows, f) {
		l.nextFlow++
		f = &Flow{log: l, id: fmt.Sprintf("f%d", l.nextFlow), launch: la, clientID: la.ClientID, started: l.cfg.Now(),
			outcome: OutcomeRunning, detail: "the answers the launch's network conditions made up (mock rules), outside any consent flow"}
		l.flows = append(l.flows, f)
		if len(l.flows) > l.cfg.MaxFlows {
			l.flows = slices.Delete(l.flows, 0, len(l.flows)-l.cfg.MaxFlows)
		}
		la.network = f
	}
	l.mu.Unlock()
	f.Add(x)
}

// SetTraceID records the id of the flow's trace, 32 hexadecimal digits
// (W3C Trace Context §3.2.2.3); anything else is ignored.
func (f *Flow) SetTraceID(id string) {
	if f == nil || !traceIDRule(id) {
		return
	}
	f.log.mu.Lock()
	f.traceID = id
	f.log.mu.Unlock()
}

// traceIDRule reports whether id is a trace id: 32 lower-case
// hexadecimal digits, not all zero (W3C Trace Context §3.2.2.3).
func traceIDRule(id string) bool {
	return len(id) == 32 && strings.Trim(id, "0123456789abcdef") == "" && strings.Trim(id, "0") != ""
}

// ID is the flow's id in the log.
func (f *Flow) ID() string {
	if f == nil {
		return ""
	}
	return f.id
}

// Add records an exchange of the flow.
func (f *Flow) Add(x Exchange) {
	if f == nil {
		return
	}
	e := record(x)
	f.log.mu.Lock()
	e = f.log.addLocked(f, e)
	f.log.mu.Unlock()
	f.log.publish(e)
}

// addLocked numbers e and appends it to f, dropping f's oldest entry
// beyond the cap (never the authorize entry, the flow's first, nor the
// pushed request before it).
func (l *Log) addLocked(f *Flow, e Entry) Entry {
	l.nextEntry++
	e.ID, e.Flow, e.Launch = l.nextEntry, f.id, f.launch.ID
	f.entries = append(f.entries, e)
	if len(f.entries) > l.cfg.MaxEntries {
		// The oldest after the flow's start: its pushed request and
		// the caught request stay.
		if i := slices.IndexFunc(f.entries, func(e Entry) bool { return e.Kind != KindPAR && e.Kind != KindAuthorize }); i >= 0 {
			f.entries = slices.Delete(f.entries, i, i+1)
			f.dropped++
		}
	}
	return e
}

// SetConsent records the service's reading of the caught request: the
// consent model of the native-consent API's answer, or its refusal.
func (f *Flow) SetConsent(model json.RawMessage, err error) {
	if f == nil {
		return
	}
	f.editAuthorize(func(a *Authorize) {
		if err != nil {
			a.ConsentError = redact.URL(err.Error())
		} else if text, ok := redactJSON(model); ok && len(text) <= 4*maxBody {
			a.Consent = json.RawMessage(text)
		}
	})
}

// editAuthorize changes a copy of the flow's caught authorization's
// entry with fn and puts it in the entry's place, so that what readers
// already hold never changes under them.
func (f *Flow) editAuthorize(fn func(a *Authorize)) {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	for i := range f.entries {
		if f.entries[i].ID != f.authorizeID || f.entries[i].Authorize == nil {
			continue
		}
		a := *f.entries[i].Authorize
		fn(&a)
		f.entries[i].Authorize = &a
	}
}

// SetCode records the code the flow's authorization response carries, by
// fingerprint, so that the backend's token request for it (FlowByCode)
// joins the flow.
func (f *Flow) SetCode(code string) {
	if f == nil || code == "" {
		return
	}
	f.log.mu.Lock()
	f.codes = append(f.codes, redact.Fingerprint(code))
	f.log.mu.Unlock()
}

// End records the flow's outcome; only the first End counts. It then
// publishes a FlowEndedEvent: whoever hears it reads the same outcome in
// Flows.
func (f *Flow) End(outcome, detail string) {
	if f == nil {
		return
	}
	f.log.mu.Lock()
	if !f.ended.IsZero() {
		f.log.mu.Unlock()
		return
	}
	detail = redact.URL(detail)
	f.ended, f.outcome, f.detail = f.log.cfg.Now(), outcome, detail
	ev := FlowEndedEvent{Flow: f.id, Launch: f.launch.ID, Outcome: outcome, Detail: detail}
	f.log.mu.Unlock()
	if f.log.cfg.Events != nil {
		f.log.cfg.Events.Publish(ev)
	}
}

// FlowEndedEvent is the end of a flow on the automation channel (kind
// "flow.ended"), published once the log holds its outcome: the outcome is
// the one GET /api/flows lists for it from then on.
type FlowEndedEvent struct {
	Flow    string `json:"flow"`
	Launch  string `json:"launch"`
	Outcome string `json:"outcome"` // OutcomeCompleted, OutcomeDenied, OutcomeError or OutcomeAbandoned
	Detail  string `json:"detail,omitempty"`
}

// Kind implements Event.
func (FlowEndedEvent) Kind() string { return "flow.ended" }

// Ended reports whether the flow has an outcome.
func (f *Flow) Ended() bool {
	if f == nil {
		return false
	}
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	return !f.ended.IsZero()
}

// FlowByCode returns the flow whose authorization response carried code,
// or nil.
func (l *Log) FlowByCode(code string) *Flow {
	if l == nil || code == "" {
		return nil
	}
	fp := redact.Fingerprint(code)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.flows) - 1; i >= 0; i-- {
		if slices.Contains(l.flows[i].codes, fp) {
			return l.flows[i]
		}
	}
	return nil
}

// FlowSummary is a flow in GET /api/flows (docs/playground.md).
type FlowSummary struct {
	ID        string     `json:"id"`
	Launch    string     `json:"launch"`
	Origin    string     `json:"origin"`
	MiniappID string     `json:"miniapp_id"`
	ClientID  string     `json:"client_id"`
	Started   time.Time  `json:"started"`
	Ended     *time.Time `json:"ended"`
	Outcome   string     `json:"outcome"`
	Detail    string     `json:"detail,omitempty"`
	Entries   int        `json:"entries"`
	// Dropped counts the entries dropped beyond Config.MaxEntries.
	Dropped int `json:"dropped,omitempty"`
	// TraceID is the W3C trace id of the flow's trace (docs/deploy.md,
	// "Traces"), "" when the host's tracing is off or did not sample it.
	TraceID string `json:"trace_id,omitempty"`
}

// FlowExport is one flow with its entries, oldest first
// (GET /api/flows/{id}/json).
type FlowExport struct {
	FlowSummary
	Entries []Entry `json:"entries"`
}

func (f *Flow) summaryLocked() FlowSummary {
	s := FlowSummary{ID: f.id, Launch: f.launch.ID, Origin: f.launch.Origin, MiniappID: f.launch.MiniappID,
		ClientID: f.clientID, Started: f.started, Outcome: f.outcome, Detail: f.detail, Entries: len(f.entries), Dropped: f.dropped,
		TraceID: f.traceID}
	if !f.ended.IsZero() {
		e := f.ended
		s.Ended = &e
	}
	return s
}

// Flows lists the flows kept, oldest first.
func (l *Log) Flows() []FlowSummary {
	if l == nil {
		return []FlowSummary{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]FlowSummary, 0, len(l.flows))
	for _, f := range l.flows {
		out = append(out, f.summaryLocked())
	}
	return out
}

// Flow exports the flow id, its entries in the order they started.
func (l *Log) Flow(id string) (FlowExport, bool) {
	if l == nil {
		return FlowExport{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.flows {
		if f.id != id {
			continue
		}
		x := FlowExport{FlowSummary: f.summaryLocked(), Entries: slices.Clone(f.entries)}
		slices.SortStableFunc(x.Entries, func(a, b Entry) int { return a.Started.Compare(b.Started) })
		return x, true
	}
	return FlowExport{}, false
}

// NetworkEvent is an entry on the automation channel (kind "network"): a
// summary; GET /api/flows/{flow}/json has the whole entry.
type NetworkEvent struct {
	Flow       string  `json:"flow"`
	Launch     string  `json:"launch"`
	Entry      int     `json:"entry"`
	Source     string  `json:"source"`
	EntryKind  string  `json:"kind"`
	Method     string  `json:"method"`
	URL        string  `json:"url"`
	Status     int     `json:"status"`
	DurationMS float64 `json:"duration_ms"`
	Error      string  `json:"error,omitempty"`
	// Note is the entry's note (Entry.Note): what an entry without a
	// response that is no failure is.
	Note string `json:"note,omitempty"`
	// DPoP is what the log keeps of the request's DPoP proof (RFC 9449):
	// its header's typ, alg and kid and its key's JWK thumbprint, never
	// the signed proof; "" without one.
	DPoP string `json:"dpop,omitempty"`
	// Injected is Entry.Injected: set when a development fault or a mock
	// rule made the answer.
	Injected string `json:"injected,omitempty"`
}

// Kind implements Event.
func (NetworkEvent) Kind() string { return "network" }

func (l *Log) publish(e Entry) {
	if l.cfg.Events == nil {
		return
	}
	ev := NetworkEvent{Flow: e.Flow, Launch: e.Launch, Entry: e.ID, Source: e.Source, EntryKind: e.Kind, Method: e.Request.Method,
		URL: e.Request.URL, DurationMS: e.DurationMS, Error: e.Error, Note: e.Note, Injected: e.Injected}
	if e.Response != nil {
		ev.Status = e.Response.Status
	}
	for _, h := range e.Request.Headers {
		if h.Name == "Dpop" {
			ev.DPoP = h.Value
		}
	}
	l.cfg.Events.Publish(ev)
}
