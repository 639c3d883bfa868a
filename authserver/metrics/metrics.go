// Package metrics is the reference server's Prometheus metrics
// (docs/deploy.md, "Metrics"): the HTTP requests of every role by route
// pattern, the sign-ins, consent decisions and tokens of the OAuth server,
// the store's operations, batches and notifications between instances, and
// Go's runtime and process metrics, served in Prometheus' exposition format
// by Handler.
//
// Every update is in memory (an atomic add or a histogram observation), so
// no request waits on the metrics; a scrape reads them. Every method of
// *Metrics is safe on a nil *Metrics and then does nothing: the server's
// packages call them unconditionally, and a server started without a
// metrics address passes nil.
//
// Labels have bounded cardinality: each label's values are a fixed set
// (roles, methods, outcomes, the route patterns registered at start, the
// store's operation names), or at most maxValues distinct values with any
// further one counted as "other" (status codes, OAuth error codes). No
// label carries a value a request chooses: never a client id, a subject,
// a raw path or a query.
package metrics

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric of the server's own.
const Namespace = "miniapp_host"

// Path is where Handler is served on the metrics listener.
const Path = "/metrics"

// Flows of a sign-in: in a browser (the authorization endpoint and its
// pages), or through the native-consent API of a host.
const (
	FlowBrowser = "browser"
	FlowNative  = "native"
)

// Outcomes of a store operation (StoreOp).
const (
	OutcomeOK       = "ok"
	OutcomeNotFound = "not_found" // the record does not exist: an answer, not a failure
	OutcomeRefused  = "refused"   // a rule of the store said no: a replayed code, a quota, a used jti
	OutcomeError    = "error"     // the operation failed
)

// Batchers of the store (Batch): the SQLite writer's group commit, and on
// PostgreSQL the grouped admissions, durable writes and reads.
const (
	BatchSQLiteWrite   = "sqlite_write"
	BatchPGAdmit       = "pg_admit"
	BatchPGDurable     = "pg_durable"
	BatchPGReadPending = "pg_read_pending"
	BatchPGReadCode    = "pg_read_code"
	BatchPGReadGrant   = "pg_read_grant"
)

// Unmatched is the route label of a request that no route pattern took:
// a 404, or one refused before routing (the dashboard's cross-site gate).
const Unmatched = "unmatched"

// other stands for a value past a label's bound.
const other = "other"

// maxValues bounds the distinct values of a label whose set is not fixed in
// the code (status codes, OAuth error codes, notification kinds).
const maxValues = 64

// Metrics holds the server's metrics and their registry. Build it with
// New; a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec   // role, method, route, code
	duration *prometheus.HistogramVec // role, method, route
	refusals *prometheus.CounterVec   // route, error
	signIns  *prometheus.CounterVec   // flow, outcome
	tokens   *prometheus.CounterVec   // grant_type
	consents *prometheus.CounterVec   // decision, remembered

	storeOps  *prometheus.CounterVec   // operation, outcome
	storeTime *prometheus.HistogramVec // operation
	batchSize *prometheus.HistogramVec // batch
	batchWait *prometheus.HistogramVec // batch
	notSent   *prometheus.CounterVec   // kind
	notRecv   *prometheus.CounterVec   // kind
	notLag    prometheus.Histogram

	codes, errs, kinds capped

	// The series of each route and store operation, found without
	// hashing label values on every request (WithLabelValues).
	seriesMu sync.RWMutex
	routes   map[routeKey]*routeSeries
	ops      map[string]*opSeries
}

// routeKey names a request's series; code is the status as written.
type routeKey struct {
	role, method, route string
	code                int
}

type routeSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// outcomes are the Outcome constants, in opSeries.n's order.
var outcomes = [...]string{OutcomeOK, OutcomeNotFound, OutcomeRefused, OutcomeError}

type opSeries struct {
	duration prometheus.Observer
	n        [len(outcomes)]prometheus.Counter
}

// route returns the series of a request.
func (m *Metrics) route(k routeKey) *routeSeries {
	m.seriesMu.RLock()
	rs := m.routes[k]
	m.seriesMu.RUnlock()
	if rs != nil {
		return rs
	}
	rs = &routeSeries{requests: m.requests.WithLabelValues(k.role, k.method, k.route, m.codes.get(strconv.Itoa(k.code))),
		duration: m.duration.WithLabelValues(k.role, k.method, k.route)}
	m.seriesMu.Lock()
	m.routes[k] = rs
	m.seriesMu.Unlock()
	return rs
}

// op returns the series of a store operation.
func (m *Metrics) op(name string) *opSeries {
	m.seriesMu.RLock()
	os := m.ops[name]
	m.seriesMu.RUnlock()
	if os != nil {
		return os
	}
	os = &opSeries{duration: m.storeTime.WithLabelValues(name)}
	for i, o := range outcomes {
		os.n[i] = m.storeOps.WithLabelValues(name, o)
	}
	m.seriesMu.Lock()
	m.ops[name] = os
	m.seriesMu.Unlock()
	return os
}

// Sub-millisecond to seconds: a cached read takes microseconds, a durable
// write on PostgreSQL milliseconds, a stuck one seconds.
var (
	requestBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	storeBuckets   = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
	batchBuckets   = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}
)

// New returns the server's metrics, registered with Go's runtime and
// process collectors in a registry of their own.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), routes: map[routeKey]*routeSeries{}, ops: map[string]*opSeries{}}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
		m.reg.MustRegister(h)
		return h
	}
	m.requests = counter("http_requests_total", "HTTP requests answered, by role, method, route pattern and status code.", "role", "method", "route", "code")
	m.duration = histogram("http_request_duration_seconds", "Time to answer an HTTP request, by role, method and route pattern.", requestBuckets, "role", "method", "route")
	m.refusals = counter("oauth_refusals_total", "OAuth error answers, by route pattern and OAuth error code (the reason).", "route", "error")
	m.signIns = counter("signins_total", "Sign-ins by flow (browser, native) and outcome: started (a request accepted), completed (approved, a code issued), denied (by the subject).", "flow", "outcome")
	m.tokens = counter("tokens_issued_total", "Token responses issued by the token endpoint, by grant type.", "grant_type")
	m.consents = counter("consent_decisions_total", "Consent decisions, approved or denied, and whether the consent is remembered.", "decision", "remembered")
	m.storeOps = counter("store_operations_total", "Store operations the OAuth server made, by operation and outcome (ok, not_found, refused, error).", "operation", "outcome")
	m.storeTime = histogram("store_operation_duration_seconds", "Time of a store operation, by operation.", storeBuckets, "operation")
	m.batchSize = histogram("store_batch_size", "Writes or reads sent together in one transaction or statement, by batcher.", batchBuckets, "batch")
	m.batchWait = histogram("store_batch_wait_seconds", "Time the first write or read of a batch waited in its batcher's queue before the batch ran, by batcher.", storeBuckets, "batch")
	m.notSent = counter("store_notifications_sent_total", "Change notifications queued for the other instances on a shared database, by kind of change.", "kind")
	m.notRecv = counter("store_notifications_received_total", "Change notifications received from other instances on a shared database, by kind of change.", "kind")
	m.notLag = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "store_notification_lag_seconds",
		Help: "Time from the write that queued a notification, on another instance, to its receipt here (the instances' clocks must agree).", Buckets: requestBuckets})
	m.reg.MustRegister(m.notLag)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.codes.max, m.errs.max, m.kinds.max = maxValues, maxValues, maxValues
	return m
}

// Registry is the registry of the metrics, for a test's or an embedder's
// own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in Prometheus' exposition format (text, or
// protobuf when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Wrap counts and times the requests of one role's handler (service,
// dashboard, signing, invoicing). The route label is the pattern the
// role's http.ServeMux matched (http.Request.Pattern, without its
// method), or one of fixed, or Unmatched: never the request's path. On a
// nil *Metrics it returns next.
func (m *Metrics) Wrap(role string, next http.Handler, fixed ...string) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), recorderKey{}, rec))
		next.ServeHTTP(rec, r) // the mux sets r.Pattern on this r
		route := routeOf(r, fixed)
		method := methodOf(r.Method)
		status := rec.status
		if status == 0 {
			status = http.StatusOK // nothing written: net/http answers 200
		}
		rs := m.route(routeKey{role: role, method: method, route: route, code: status})
		rs.requests.Inc()
		rs.duration.Observe(time.Since(start).Seconds())
		if rec.refusal != "" && status >= 300 {
			m.refusals.WithLabelValues(route, m.errs.get(rec.refusal)).Inc()
		}
	})
}

// Route is the route label of a request r that a role's http.ServeMux
// served (Wrap's): the path of its pattern, one of fixed, or Unmatched.
// The server's spans are named by it too (docs/deploy.md, "Traces").
func Route(r *http.Request, fixed []string) string { return routeOf(r, fixed) }

// routeOf is the route label of a served request: its pattern's path.
func routeOf(r *http.Request, fixed []string) string {
	p := r.Pattern
	if p == "" {
		for _, f := range fixed {
			if r.URL.Path == f {
				return f
			}
		}
		return Unmatched
	}
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = p[i+1:] // "GET /oauth/token" -> "/oauth/token"
	}
	return p
}

// methodOf is the method label: one of the methods of RFC 9110 §9 and
// PATCH, else "other".
func methodOf(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return other
}

// recorder keeps the status of a response and the OAuth error it
// answered (Refused). Unwrap lets http.ResponseController reach the
// connection's writer (a hijack, a write deadline).
type recorder struct {
	http.ResponseWriter
	status  int
	refusal string
}

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.ResponseWriter.Write(b)
}

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// recorderKey is the context key of a request's recorder.
type recorderKey struct{}

// Refused notes that r is answered with the OAuth error
// code (RFC 6749 §4.1.2.1, §5.2): Wrap counts it once, under the request's
// route, when the request ends with a status of 300 or more (an error, or
// an error redirected to the client); a later note of the same request
// replaces an earlier one. Without metrics (a request not from Wrap, or
// nil) it does nothing.
func Refused(r *http.Request, code string) {
	if r == nil {
		return
	}
	if rec, ok := r.Context().Value(recorderKey{}).(*recorder); ok {
		rec.refusal = code
	}
}

// SignInStarted counts an authorization request accepted and pending.
func (m *Metrics) SignInStarted(native bool) { m.signIn(native, "started") }

// Decided counts a decision on a sign-in: completed (approved, a code
// issued) or denied, and the consent decision with whether its consent is
// remembered.
func (m *Metrics) Decided(native, approved, remembered bool) {
	if m == nil {
		return
	}
	if approved {
		m.signIn(native, "completed")
	} else {
		m.signIn(native, "denied")
	}
	m.ConsentDecided(approved, remembered)
}

func (m *Metrics) signIn(native bool, outcome string) {
	if m == nil {
		return
	}
	flow := FlowBrowser
	if native {
		flow = FlowNative
	}
	m.signIns.WithLabelValues(flow, outcome).Inc()
}

// TokenIssued counts a successful token response of a grant type
// (authorization_code, refresh_token).
func (m *Metrics) TokenIssued(grantType string) {
	if m == nil {
		return
	}
	switch grantType {
	case "authorization_code", "refresh_token":
	default:
		grantType = other
	}
	m.tokens.WithLabelValues(grantType).Inc()
}

// ConsentDecided counts a consent decision: approved or denied, and
// whether the consent is remembered for the next request.
func (m *Metrics) ConsentDecided(approved, remembered bool) {
	if m == nil {
		return
	}
	d := "denied"
	if approved {
		d = "approved"
	}
	m.consents.WithLabelValues(d, strconv.FormatBool(remembered)).Inc()
}

// StoreOp records a store operation that started at start, named op (a
// fixed name of the caller's), with one of the Outcome constants.
func (m *Metrics) StoreOp(op string, start time.Time, outcome string) {
	if m == nil {
		return
	}
	os := m.op(op)
	os.duration.Observe(time.Since(start).Seconds())
	for i, o := range outcomes {
		if o == outcome {
			os.n[i].Inc()
			return
		}
	}
	os.n[len(outcomes)-1].Inc() // not an Outcome constant: an error
}

// Queued is the time a write or read enters a batcher's queue, for Batch;
// the zero time without metrics, so that a server without them never
// reads the clock for it.
func (m *Metrics) Queued() time.Time {
	if m == nil {
		return time.Time{}
	}
	return time.Now()
}

// Batch records a batch of size writes or reads run by batcher batch (one
// of the Batch constants), whose first one was queued at queued (Queued).
func (m *Metrics) Batch(batch string, size int, queued time.Time) {
	if m == nil {
		return
	}
	m.batchSize.WithLabelValues(batch).Observe(float64(size))
	if !queued.IsZero() {
		m.batchWait.WithLabelValues(batch).Observe(time.Since(queued).Seconds())
	}
}

// NotificationSent counts a change notification queued for the other
// instances, of kind (the store's Changed constants).
func (m *Metrics) NotificationSent(kind string) {
	if m == nil {
		return
	}
	m.notSent.WithLabelValues(m.kinds.get(kind)).Inc()
}

// NotificationReceived counts a change notification of another instance,
// of kind, stamped with sent (Stamp); a zero sent (an instance that
// stamps none) observes no lag.
func (m *Metrics) NotificationReceived(kind string, sent time.Time) {
	if m == nil {
		return
	}
	m.notRecv.WithLabelValues(m.kinds.get(kind)).Inc()
	if !sent.IsZero() {
		m.notLag.Observe(max(0, time.Since(sent).Seconds()))
	}
}

// Stamp is what a notification's sender appends to its instance id so
// that the receiver can measure the lag (SplitStamp): "@" and the time in
// Unix microseconds, or "" without metrics.
func (m *Metrics) Stamp() string {
	if m == nil {
		return ""
	}
	return "@" + strconv.FormatInt(time.Now().UnixMicro(), 10)
}

// SplitStamp splits an instance id with Stamp's suffix into the id and
// the time; an id without one gives the zero time.
func SplitStamp(inst string) (string, time.Time) {
	id, at, ok := strings.Cut(inst, "@")
	if !ok {
		return inst, time.Time{}
	}
	us, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return id, time.Time{}
	}
	return id, time.UnixMicro(us)
}

// capped bounds the distinct values of a label: the first max values are
// kept, any other is "other".
type capped struct {
	mu   sync.RWMutex
	seen map[string]struct{}
	max  int
}

func (c *capped) get(v string) string {
	c.mu.RLock()
	_, ok := c.seen[v]
	n := len(c.seen)
	c.mu.RUnlock()
	if ok {
		return v
	}
	if n >= c.max || !labelValue(v) {
		return other
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]struct{}{}
	}
	if _, ok := c.seen[v]; !ok && len(c.seen) >= c.max {
		return other
	}
	c.seen[v] = struct{}{}
	return v
}

// labelValue reports whether v may be a capped label's value: the
// characters of an OAuth error code or a status (RFC 6749 §5.2 allows
// more; the server's own codes are lower-case words and underscores), at
// most 64 of them.
func labelValue(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// CountDroppedSpans registers miniapp_host_trace_spans_dropped_total,
// read from dropped at each scrape: the spans the server's tracing
// dropped, by reason (queue_full: the exporter fell behind; export_failed:
// the OTLP endpoint refused, failed or did not answer in time), see
// docs/deploy.md, "Traces".
func (m *Metrics) CountDroppedSpans(dropped func() (queueFull, exportFailed uint64)) {
	if m == nil {
		return
	}
	for i, reason := range []string{"queue_full", "export_failed"} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "trace_spans_dropped_total",
			Help:        "Spans of the server's traces dropped before a collector took them, by reason: queue_full (the exporter fell behind), export_failed (the OTLP endpoint refused, failed or did not answer in time).",
			ConstLabels: prometheus.Labels{"reason": reason}}, func() float64 {
			full, failed := dropped()
			if i == 0 {
				return float64(full)
			}
			return float64(failed)
		}))
	}
}

// AddrError is CheckAddr's refusal of a metrics address.
type AddrError struct {
	Addr string
	Rule string
}

func (e *AddrError) Error() string { return "metrics address " + strconv.Quote(e.Addr) + ": " + e.Rule }

// NotLoopback is CheckAddr's rule for an address off loopback.
const NotLoopback = "not a loopback address (127.0.0.1, ::1, localhost): the metrics would be open to the network"

// CheckAddr checks a metrics listen address, HOST:PORT: its host must be
// on loopback (127.0.0.0/8, ::1, localhost) unless public, because the
// metrics say how the server is used to whoever reaches them.
func CheckAddr(addr string, public bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return &AddrError{Addr: addr, Rule: "not HOST:PORT, such as 127.0.0.1:9464"}
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return &AddrError{Addr: addr, Rule: "its port is not a number from 0 to 65535"}
	}
	if public {
		return nil
	}
	ip := net.ParseIP(host)
	if host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return &AddrError{Addr: addr, Rule: NotLoopback}
}
