// Package audit is the reference server's audit event log (docs/deploy.md,
// "Audit events"; docs/dashboard.md, "Events"): one Event at each decision
// of a sign-in (started, the subject authenticated, the consent screen
// shown, approved or denied), each token response, each refusal (the rule
// and what was compared), each grant revocation and each change through
// the dashboard API, and who made it.
//
// A Recorder is the one place such a decision is reported: it writes the
// event's log line (log/slog), counts it in the matching Prometheus
// counter (package metrics: sign-ins, consent decisions, tokens,
// refusals), and stores it, so that the events, the metrics and the logs
// cannot disagree. Storing is asynchronous: Record puts the event in a
// bounded queue that one goroutine writes to the store in batches (the
// store's own group commit on SQLite; its own transaction, not waiting for
// the WAL flush, on PostgreSQL), so a request never waits on it; an event
// that finds the queue full is dropped and counted
// (miniapp_host_audit_events_dropped_total). The store keeps the newest
// Config.Keep events.
//
// No secret is ever in an event: every value goes through package redact
// (codes and tokens as their fingerprint, other secrets withheld), and the
// descriptions are the OAuth error descriptions, which echo the request
// through the same rule (docs/authserver.md, "Errors").
//
// Every method is safe on a nil *Recorder and then does nothing.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/redact"
)

// Kinds of events (docs/deploy.md, "Audit events").
const (
	SignInStarted       = "signin.started"       // an authorization request accepted for sign-in
	SignInAuthenticated = "signin.authenticated" // the subject signed in, or the host named it
	ConsentShown        = "consent.shown"        // the consent screen was built and shown
	ConsentApproved     = "consent.approved"     // the subject approved (outcome approved or remembered)
	ConsentDenied       = "consent.denied"       // the subject denied
	TokenIssued         = "token.issued"         // the token endpoint issued tokens
	RequestRefused      = "request.refused"      // an OAuth or dashboard API refusal
	GrantRevoked        = "grant.revoked"        // a grant was revoked
	DashboardChanged    = "dashboard.changed"    // a change through the dashboard API
)

// Kinds lists every kind, in the order of a sign-in.
var Kinds = []string{SignInStarted, SignInAuthenticated, ConsentShown, ConsentApproved, ConsentDenied,
	TokenIssued, RequestRefused, GrantRevoked, DashboardChanged}

// Outcomes.
const (
	OutcomeOK         = "ok"
	OutcomeApproved   = "approved"
	OutcomeRemembered = "remembered" // approved without a screen: consented before
	OutcomeDenied     = "denied"
	OutcomeRefused    = "refused"
)

// Flows of a sign-in, in Detail["flow"].
const (
	FlowBrowser = metrics.FlowBrowser
	FlowNative  = metrics.FlowNative
)

// Event is one audit event, as stored, listed and followed (the JSON
// object of docs/dashboard.md, "Events").
type Event struct {
	ID       int64     `json:"id"`
	Time     time.Time `json:"time"`
	Instance string    `json:"instance"`
	Kind     string    `json:"kind"`
	ClientID string    `json:"client_id,omitempty"`
	Subject  string    `json:"subject,omitempty"`
	// Actor is who did it: "subject:<sub>", "client:<id>", "operator",
	// "project:<id>", "host:<client_id>", "public".
	Actor   string   `json:"actor,omitempty"`
	GrantID string   `json:"grant_id,omitempty"`
	TraceID string   `json:"trace_id,omitempty"`
	Outcome string   `json:"outcome,omitempty"`
	Refusal *Refusal `json:"refusal,omitempty"`
	// Detail is a small map: grant_type, flow, route, scope, ...
	Detail map[string]string `json:"detail,omitempty"`
}

// Refusal is what a request.refused event says was refused.
type Refusal struct {
	// Error is the OAuth or dashboard API error code answered.
	Error string `json:"error"`
	// Rule is the refusal's description: the rule and, where it names
	// them, the values compared.
	Rule string `json:"rule"`
	// Field is the parameter or member refused, when one is.
	Field string `json:"field,omitempty"`
	// Sent is what the request sent, Expected what the rule compared it
	// with, when the refusal names them (redacted).
	Sent     string `json:"sent,omitempty"`
	Expected string `json:"expected,omitempty"`
}

// Actors.
func Subject(sub string) string { return "subject:" + sub }
func Client(id string) string   { return "client:" + id }
func Host(id string) string     { return "host:" + id }
func Project(id string) string  { return "project:" + id }

const (
	ActorOperator = "operator"
	ActorPublic   = "public" // a dashboard route without a credential
)

// Store is what the Recorder needs of the store; package store's
// *Store is one.
type Store interface {
	AppendEvents(ctx context.Context, evs []store.EventRecord, keep int) error
	ListEvents(ctx context.Context, q store.EventQuery) ([]store.EventRecord, error)
	Instance() string
	OnChange(fn func(store.Change))
}

// Defaults of Config.
const (
	DefaultKeep         = 10_000
	DefaultQueue        = 10_000
	DefaultMaxFollowers = 64
	maxBatch            = 256
)

// Config configures a Recorder.
type Config struct {
	// Store keeps the events; nil keeps none (they are still logged and
	// counted).
	Store Store
	// Metrics counts the decisions; nil counts none.
	Metrics *metrics.Metrics
	// Logger receives one line per event, at Level; nil writes none.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Keep is how many events the store keeps, the newest; zero means
	// DefaultKeep.
	Keep int
	// Queue bounds the events waiting to be stored; past it an event is
	// dropped and counted. Zero means DefaultQueue.
	Queue int
	// MaxFollowers bounds the streams following the events at once
	// (Follow); zero means DefaultMaxFollowers.
	MaxFollowers int
	// KeepAlive is how often a follower with nothing to send is sent a
	// keep-alive; zero means 15 seconds.
	KeepAlive time.Duration
}

// Recorder records events. Build it with New and Close it.
type Recorder struct {
	cfg  Config
	inst string
	q    chan Event
	done chan struct{} // closed when the writer returned

	flushNow chan struct{} // Flush: store the batch being gathered now
	quit     chan struct{} // closed by Close: followers return

	closeOnce sync.Once

	sigMu sync.Mutex
	sig   chan struct{} // closed and replaced when events were stored

	followers atomic.Int64
	dropped   prometheus.Counter
	stored    prometheus.Counter

	// flushMu and pendingN let Flush wait for the queue to be written.
	flushMu  sync.Mutex
	flushed  *sync.Cond
	enqueued int64 // guarded by flushMu
	written  int64 // guarded by flushMu
	promised int64 // guarded by flushMu: requests under way that may end with an event (note.promise)
	closing  bool  // guarded by flushMu: the queue is closed
}

// New starts a Recorder.
func New(cfg Config) *Recorder {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultKeep
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.MaxFollowers <= 0 {
		cfg.MaxFollowers = DefaultMaxFollowers
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	r := &Recorder{cfg: cfg, q: make(chan Event, cfg.Queue), done: make(chan struct{}), quit: make(chan struct{}),
		sig: make(chan struct{}), flushNow: make(chan struct{}, 1)}
	r.flushed = sync.NewCond(&r.flushMu)
	r.dropped = prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Name: "audit_events_dropped_total",
		Help: "Audit events not stored because the queue to the store was full (their log line was written)."})
	r.stored = prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Name: "audit_events_stored_total",
		Help: "Audit events stored."})
	if cfg.Metrics != nil {
		cfg.Metrics.Registry().MustRegister(r.dropped, r.stored)
	}
	if cfg.Store != nil {
		r.inst = cfg.Store.Instance()
		cfg.Store.OnChange(func(c store.Change) {
			if c.Kind == store.ChangedEvents || c.Kind == store.ChangedAll {
				r.signal()
			}
		})
	}
	go r.writer()
	return r
}

// Instance is the instance id the events of this Recorder carry.
func (r *Recorder) Instance() string {
	if r == nil {
		return ""
	}
	return r.inst
}

// Close stops the followers, stores what is queued and stops the writer.
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.closeOnce.Do(func() {
		r.StopFollowers()
		r.flushMu.Lock()
		r.closing = true
		close(r.q)
		r.flushMu.Unlock()
		<-r.done
	})
}

// StopFollowers ends every Follow (a server shutting down: its streams
// must not hold the shutdown).
func (r *Recorder) StopFollowers() {
	if r == nil {
		return
	}
	r.sigMu.Lock()
	select {
	case <-r.quit:
	default:
		close(r.quit)
	}
	r.sigMu.Unlock()
}

// Flush waits until every event recorded before it was stored (or failed
// to be), and the events of the requests under way that may end with one
// (a refusal noted, a dashboard change) too: a test that has an answer
// reads that answer's event after Flush.
func (r *Recorder) Flush() {
	if r == nil {
		return
	}
	r.flushMu.Lock()
	for r.promised > 0 { // their events are recorded before settle
		r.flushed.Wait()
	}
	want := r.enqueued
	for r.written < want {
		select {
		case r.flushNow <- struct{}{}: // the writer stops lingering
		default:
		}
		r.flushed.Wait()
	}
	r.flushMu.Unlock()
}

// promise counts a request under way that may end with an event; settle
// uncounts it once its event, if any, is recorded.
func (r *Recorder) promise() {
	r.flushMu.Lock()
	r.promised++
	r.flushMu.Unlock()
}

func (r *Recorder) settle() {
	r.flushMu.Lock()
	r.promised--
	r.flushed.Broadcast()
	r.flushMu.Unlock()
}

// Record records e, an event of the request whose context is ctx: its
// time, instance and trace id (the request's traceparent, through Wrap)
// are filled in, every value is redacted, and it is logged, counted and
// queued for the store.
func (r *Recorder) Record(ctx context.Context, e Event) {
	if r == nil {
		return
	}
	if e.TraceID == "" {
		if n, ok := ctx.Value(noteKey{}).(*note); ok {
			e.TraceID = n.traceID
		}
	}
	e.ID = 0
	e.Time = r.cfg.Now().UTC().Truncate(time.Microsecond)
	e.Instance = r.inst
	clean(&e)
	r.count(e)
	r.logLine(ctx, e)
	if r.cfg.Store == nil {
		return
	}
	r.flushMu.Lock()
	if r.closing {
		r.flushMu.Unlock()
		return
	}
	select {
	case r.q <- e:
		r.enqueued++
	default:
		r.dropped.Inc()
	}
	r.flushMu.Unlock()
}

// count drives the metrics counter of the decision e reports.
func (r *Recorder) count(e Event) {
	mx := r.cfg.Metrics
	if mx == nil {
		return
	}
	native := e.Detail["flow"] == FlowNative
	switch e.Kind {
	case SignInStarted:
		mx.SignInStarted(native)
	case ConsentApproved:
		mx.Decided(native, true, e.Detail["remember"] == "true")
	case ConsentDenied:
		mx.Decided(native, false, false)
	case TokenIssued:
		mx.TokenIssued(e.Detail["grant_type"])
	}
}

// logLine writes e's log line.
func (r *Recorder) logLine(ctx context.Context, e Event) {
	log := r.cfg.Logger
	if log == nil || !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("kind", e.Kind))
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	add("client_id", e.ClientID)
	add("subject", e.Subject)
	add("actor", e.Actor)
	add("grant_id", e.GrantID)
	add("trace_id", e.TraceID)
	add("outcome", e.Outcome)
	if f := e.Refusal; f != nil {
		attrs = append(attrs, slog.Group("refusal", "error", f.Error, "rule", f.Rule, "field", f.Field, "sent", f.Sent, "expected", f.Expected))
	}
	if len(e.Detail) > 0 {
		d := make([]any, 0, 2*len(e.Detail))
		for k, v := range e.Detail {
			d = append(d, k, v)
		}
		attrs = append(attrs, slog.Group("detail", d...))
	}
	log.LogAttrs(ctx, slog.LevelInfo, "audit event", attrs...)
}

// linger is how long the writer gathers events after the first of a
// batch before it stores them: one transaction for the events of many
// requests, not one each (a sign-in records five). Flush and Close cut it
// short.
const linger = 20 * time.Millisecond

// writer stores the queued events in batches until Close.
func (r *Recorder) writer() {
	defer close(r.done)
	t := time.NewTimer(linger)
	t.Stop()
	for e := range r.q {
		batch := []Event{e}
		t.Reset(linger)
	fill:
		for len(batch) < maxBatch {
			select {
			case e, ok := <-r.q:
				if !ok {
					break fill
				}
				batch = append(batch, e)
			case <-t.C:
				break fill
			case <-r.flushNow:
				batch = r.drain(batch) // what Flush waits for is queued already
				break fill
			}
		}
		t.Stop()
		r.store(batch)
		r.flushMu.Lock()
		r.written += int64(len(batch))
		r.flushed.Broadcast()
		r.flushMu.Unlock()
	}
}

// drain adds to batch the events queued now, up to maxBatch.
func (r *Recorder) drain(batch []Event) []Event {
	for len(batch) < maxBatch {
		select {
		case e, ok := <-r.q:
			if !ok {
				return batch
			}
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// store writes a batch; a failure is logged, the events are lost (their
// log lines were written).
func (r *Recorder) store(batch []Event) {
	recs := make([]store.EventRecord, len(batch))
	for i, e := range batch {
		body, _ := json.Marshal(e)
		recs[i] = store.EventRecord{At: e.Time.UnixMicro(), Instance: e.Instance, Kind: e.Kind, ClientID: e.ClientID,
			Subject: e.Subject, Body: body}
	}
	if err := r.cfg.Store.AppendEvents(context.Background(), recs, r.cfg.Keep); err != nil {
		if r.cfg.Logger != nil {
			r.cfg.Logger.Error("audit: storing events", "events", len(batch), "err", err)
		}
		return
	}
	r.stored.Add(float64(len(batch)))
	r.signal()
}

// signal wakes the followers: events were stored.
func (r *Recorder) signal() {
	r.sigMu.Lock()
	close(r.sig)
	r.sig = make(chan struct{})
	r.sigMu.Unlock()
}

func (r *Recorder) signalCh() <-chan struct{} {
	r.sigMu.Lock()
	defer r.sigMu.Unlock()
	return r.sig
}

// ErrNoStore is List's and Follow's error on a Recorder without a store.
var ErrNoStore = errors.New("audit: no store: the events are not kept")

// List returns the events q selects (Query says which), oldest first.
func (r *Recorder) List(ctx context.Context, q Query) ([]Event, error) {
	if r == nil || r.cfg.Store == nil {
		return nil, ErrNoStore
	}
	recs, err := r.cfg.Store.ListEvents(ctx, q.storeQuery())
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(recs))
	for _, rec := range recs {
		var e Event
		if err := json.Unmarshal(rec.Body, &e); err != nil {
			continue // not this program's: skipped, never half-shown
		}
		e.ID = rec.ID
		out = append(out, e)
	}
	return out, nil
}

// ErrTooManyFollowers is Follow's refusal past Config.MaxFollowers.
var ErrTooManyFollowers = errors.New("audit: too many followers")

// followPage is how many events a follower reads at once: all it holds.
const followPage = 100

// Follow sends the events q selects with an id greater than q.After (or,
// when q has no After, than the newest stored when it starts), as
// they are stored (by this instance, or by another on a shared database),
// to send, a page at a time, until ctx ends, Close, or send fails. It
// calls send with none once it started, and after Config.KeepAlive
// without an event (a keep-alive). A
// follower holds one page at most: one that stops reading blocks in send,
// never queues. Past Config.MaxFollowers it returns ErrTooManyFollowers.
func (r *Recorder) Follow(ctx context.Context, q Query, send func([]Event) error) error {
	if r == nil || r.cfg.Store == nil {
		return ErrNoStore
	}
	if r.followers.Add(1) > int64(r.cfg.MaxFollowers) {
		r.followers.Add(-1)
		return ErrTooManyFollowers
	}
	defer r.followers.Add(-1)
	if !q.HasAfter() {
		last, err := r.List(ctx, Query{Limit: 1, newest: true})
		if err != nil {
			return err
		}
		if len(last) > 0 {
			q.After = last[0].ID
		}
	}
	q.Limit, q.newest, q.afterSet = followPage, false, true
	if err := send(nil); err != nil { // started: a stream sends its headers
		return err
	}
	keep := time.NewTimer(r.cfg.KeepAlive)
	defer keep.Stop()
	for {
		ch := r.signalCh() // before the read: an event stored after it wakes us
		evs, err := r.List(ctx, q)
		if err != nil {
			return err
		}
		if len(evs) > 0 {
			if err := send(evs); err != nil {
				return err
			}
			q.After = evs[len(evs)-1].ID
			keep.Reset(r.cfg.KeepAlive)
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.quit:
			return nil
		case <-ch:
		case <-keep.C:
			if err := send(nil); err != nil {
				return err
			}
			keep.Reset(r.cfg.KeepAlive)
		}
	}
}

// Followers is how many Follow calls are running.
func (r *Recorder) Followers() int {
	if r == nil {
		return 0
	}
	return int(r.followers.Load())
}

// MaxFollowers is Config.MaxFollowers.
func (r *Recorder) MaxFollowers() int {
	if r == nil {
		return 0
	}
	return r.cfg.MaxFollowers
}

// maxValue bounds a value of an event, in bytes.
const maxValue = 512

// clean redacts every value of e and bounds its length.
func clean(e *Event) {
	e.ClientID = value(e.ClientID)
	e.Subject = value(e.Subject)
	e.Actor = value(e.Actor)
	e.GrantID = value(e.GrantID)
	e.Outcome = value(e.Outcome)
	if f := e.Refusal; f != nil {
		c := *f
		c.Error, c.Rule = value(c.Error), value(c.Rule)
		c.Sent, c.Expected = param(c.Field, c.Sent), param(c.Field, c.Expected)
		c.Field = value(c.Field)
		e.Refusal = &c
	}
	if len(e.Detail) > 0 {
		d := make(map[string]string, len(e.Detail))
		for k, v := range e.Detail {
			d[value(k)] = param(k, v)
		}
		e.Detail = d
	}
}

// param is value for the value of a named parameter: a secret
// parameter's value as redact.Param writes it.
func param(name, v string) string {
	if v == "" {
		return ""
	}
	if name != "" && redact.SecretParam(strings.TrimPrefix(name, "/")) {
		return redact.Param(strings.TrimPrefix(name, "/"), v)
	}
	return value(v)
}

// value is v through redact.Text (a URL's or a quoted JSON's secrets),
// valid UTF-8 without control characters, at most maxValue bytes.
func value(v string) string {
	if v == "" {
		return ""
	}
	v = redact.Text(v)
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "?")
	}
	v = strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return ' '
		}
		return c
	}, v)
	if len(v) > maxValue {
		cut := maxValue
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "…"
	}
	return v
}

// TraceID is the trace id of r's W3C traceparent header (W3C Trace
// Context §3.2), or "" when it has none or a malformed one.
func TraceID(r *http.Request) string {
	tp := r.Header.Get("Traceparent")
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' {
		return ""
	}
	id := tp[3:35]
	zero := true
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
		if c != '0' {
			zero = false
		}
	}
	if zero {
		return ""
	}
	return id
}
