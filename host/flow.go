package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/redact"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// consentFlows runs the window's consent flows: the native consent of a
// caught navigation (docs/architecture.md, "The three ways an
// authorization completes", ways 1 and 3) and of the bridge's authorize
// (way 2). One runs at a time; the host's view shows its screen.
//
// Lock order: Window.mu (the mount) before consentFlows.mu, where both are
// held (a flow begins for the mount it belongs to; Mount clears the
// network log's flow with the Miniapp it replaces).
type consentFlows struct {
	w *Window

	// mu guards the running flow (flow, and its requestID, shown,
	// onScreen and redirectURI once it runs) and the network log's flow
	// the view's requests belong to (net, netUntil).
	mu       sync.Mutex
	flow     *flow        // the consent flow running, if any
	net      *netlog.Flow // the flow the view's requests are logged in, if any
	netUntil time.Time    // zero, or when the page net led to had loaded: later requests are not its
}

// flow is one consent flow: a caught navigation or a bridge authorize.
// Only one runs at a time.
type flow struct {
	gen int // the mount it belongs to
	app *Miniapp
	// deliver receives the authorization response (code or error) once
	// the service has produced it; fail receives anything that stopped
	// the flow before.
	deliver func(ctx context.Context, redirect *url.URL)
	fail    func(err error)
	// requestID is the native-consent request on screen, and shown its
	// automation event; both guarded by consentFlows.mu.
	requestID string
	shown     *bridge.ConsentShownEvent
	// onScreen is set once the screen is painted and shown published
	// (consentFlows.mu).
	onScreen bool
	// clientID and redirectURI are read off the authorization request,
	// for the code.issued event; redirectURI changes under
	// consentFlows.mu once the flow runs.
	clientID, redirectURI string
	// net records the flow's exchanges; nil when the Miniapp has no
	// network log.
	net *netlog.Flow
	// root is the name of the flow's root span (spanCaught, spanBridge),
	// and span the span, from claim to the flow's end (tracing.go).
	root string
	span trace.Span
}

// shownEvent describes a consent screen for the automation channel: the
// request as the service read it (for a pushed request, RFC 9126 §4, the
// pushed parameters, which the caught URL does not hold), else as it was
// caught; and the accounts and entries the screen offers, from the model
// (nil when the service's model could not be read).
func shownEvent(u *url.URL, read *consent.Request, m *consent.Model) *bridge.ConsentShownEvent {
	q := u.Query()
	ev := &bridge.ConsentShownEvent{ClientID: q.Get("client_id"), Scopes: strings.Fields(q.Get("scope")), OrgID: q.Get("org_id"),
		GrantManagementAction: q.Get("grant_management_action"), GrantID: q.Get("grant_id")}
	if d := q.Get("authorization_details"); d != "" && json.Valid([]byte(d)) {
		ev.AuthorizationDetails = json.RawMessage(d)
	}
	if read != nil && read.Pushed {
		ev = &bridge.ConsentShownEvent{ClientID: read.ClientID, Scopes: strings.Fields(read.Scope), OrgID: read.OrgID, Pushed: true,
			GrantManagementAction: read.GrantManagementAction, GrantID: read.GrantID}
		if json.Valid(read.AuthorizationDetails) {
			ev.AuthorizationDetails = read.AuthorizationDetails
		}
	}
	if m != nil {
		for _, a := range m.Accounts {
			ev.Accounts = append(ev.Accounts, a.ID)
		}
		ev.Entries = consentEntries(*m)
	}
	return ev
}

// publishCode reports the code of an authorization response by
// fingerprint.
func (c *consentFlows) publishCode(f *flow, redirect *url.URL) {
	if code := redirect.Query().Get("code"); code != "" {
		c.w.publish(bridge.CodeIssuedEvent{ClientID: f.clientID, RedirectURI: f.redirectURI, Fingerprint: redact.Fingerprint(code), Flow: f.net.ID()})
	}
}

// errFlowBusy is returned to a bridge authorize while a consent is on
// screen.
var errFlowBusy = errors.New("host: another authorization is in progress")

// errFlowAbandoned ends a flow whose consent view was closed, or whose
// Miniapp was replaced.
var errFlowAbandoned = errors.New("host: the authorization was abandoned")

// start runs on the main thread when the policy caught a navigation
// towards the authorization endpoint, and publishes nav, the navigation's
// event, with the id of the flow it started. The navigation is already
// refused; the response will be delivered as docs/architecture.md's ways 1 and 3
// say.
func (c *consentFlows) start(u *url.URL, nav bridge.NavigationEvent) {
	w := c.w
	app, gen := w.mount()
	f := &flow{gen: gen, app: app, root: spanCaught}
	f.deliver = func(ctx context.Context, redirect *url.URL) { c.complete(ctx, f, redirect) }
	f.fail = func(err error) { c.showError(f, err) }
	if app != nil && app.ClientID != "" && u.Query().Get("client_id") != app.ClientID {
		w.publish(nav)
		go f.fail(fmt.Errorf("host: the Miniapp asked to sign in as client %q; it is %q", u.Query().Get("client_id"), app.ClientID))
		return
	}
	if err := CheckPushedReference(u.Query()); err != nil {
		// Nothing was verified: the error is shown, never redirected.
		w.publish(nav)
		go f.fail(err)
		return
	}
	announce := func(id string) {
		nav.Flow = id
		w.publish(nav)
	}
	if err := c.begin(f, u, announce); err != nil {
		w.publish(nav)
		// A redirect chain or a double click: one consent at a time.
		w.emit(Event{Kind: EventConsentIgnored, URL: u.String(), Detail: err.Error()})
	}
}

// begin makes f the running flow and asks the service for the consent
// screen of the authorization request u, on a goroutine. Before that, when
// it is not nil, announce receives the id of the flow in the network log
// ("" without one): the event that starts a flow names it before any other
// of the flow's events can be published.
func (c *consentFlows) begin(f *flow, u *url.URL, announce func(flowID string)) error {
	if err := c.claim(f, u); err != nil {
		return err
	}
	if announce != nil {
		announce(f.net.ID())
	}
	c.w.emit(Event{Kind: EventConsentRequested, URL: u.String()})
	go c.ask(f, u)
	return nil
}

// claim makes f the running flow, unless one runs or f's mount has been
// replaced.
func (c *consentFlows) claim(f *flow, u *url.URL) error {
	w := c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flow != nil {
		return errFlowBusy
	}
	if f.app == nil || f.gen != w.mountGen {
		return errFlowAbandoned
	}
	c.flow = f
	f.clientID, f.redirectURI = u.Query().Get("client_id"), u.Query().Get("redirect_uri")
	c.w.startSpan(f)
	f.net = f.app.NetLog.BeginTracedFlow(u, telemetry.SampledTraceID(f.span.SpanContext()))
	f.span.SetAttributes(attribute.String(attrFlow, f.net.ID()))
	if f.net != nil {
		// The view's requests belong to this flow until it has ended and
		// the page it led to has loaded (viewLoaded).
		c.net, c.netUntil = f.net, time.Time{}
	}
	return nil
}

// ask asks the service for the consent screen of f's authorization
// request u and shows it, or answers at once what needs no screen (a
// final redirect, a remembered consent); on f's goroutine.
func (c *consentFlows) ask(f *flow, u *url.URL) {
	w := c.w
	ctx, cancel := context.WithTimeout(f.context(), w.opts.FlowTimeout)
	defer cancel()
	subject := w.opts.Subject
	if f.app.Subject != "" {
		subject = f.app.Subject
	}
	screen, err := f.app.Consent.Begin(netlog.Into(ctx, f.net, netlog.SourceHost, netlog.KindNativeConsent), u, subject)
	if err != nil {
		f.net.SetConsent(nil, err)
		c.end(f)
		f.fail(err)
		return
	}
	if screen.Redirect != nil {
		c.end(f)
		f.deliver(ctx, screen.Redirect)
		return
	}
	f.net.SetConsent(screen.Model, nil)
	if r := screen.Request; r != nil && r.Pushed {
		// The request_uri's resolution: the pushed request the
		// service took (RFC 9126 §4), on the caught request's entry.
		if b, err := json.Marshal(r); err == nil {
			f.net.SetPushed(b)
		}
	}
	// The model is decoded once, here: the screen's page renders
	// screen.Model as the service sent it.
	m := decodeModel(screen.Model)
	shown := shownEvent(u, screen.Request, m)
	shown.Flow = f.net.ID()
	redirectURI, current := c.onView(f, screen, shown)
	if !current {
		return
	}
	if m != nil && m.Remembered {
		// docs/service.md §1: the subject's consent is remembered per subject and
		// client, and the subject is not asked again for what they
		// granted; the service approves with the account bound then.
		w.emit(Event{Kind: EventConsentRemembered, URL: u.String()})
		c.decide(consent.Decision{Action: consent.Approve, AccountID: m.RememberedAccount})
		return
	}
	w.hv.show(map[string]any{"screen": "consent", "model": screen.Model, "arm_ms": w.opts.ConsentArm.Milliseconds(),
		"miniapp_origin": origin.Of(f.app.LoadURL).String(), "redirect_uri": redirectURI})
}

// onView records screen as f's, when f still runs, and returns the
// redirect_uri its screen names.
func (c *consentFlows) onView(f *flow, screen *ConsentScreen, shown *bridge.ConsentShownEvent) (redirectURI string, current bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	current = c.flow == f
	if current {
		f.requestID, f.shown = screen.RequestID, shown
		if r := screen.Request; r != nil && r.Pushed {
			// The caught URL held only client_id and request_uri.
			f.redirectURI = r.RedirectURI
		}
	}
	return f.redirectURI, current
}

// decodeModel reads the service's consent model; nil when it cannot. Its
// Remembered says the subject already consented to everything the screen
// would ask.
func decodeModel(model json.RawMessage) *consent.Model {
	var m consent.Model
	if json.Unmarshal(model, &m) != nil {
		return nil
	}
	return &m
}

// end clears f if it is still the running flow and reports whether it
// was.
func (c *consentFlows) end(f *flow) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flow != f {
		return false
	}
	c.flow = nil
	return true
}

// abandon ends the running flow without a decision.
func (c *consentFlows) abandon() {
	c.mu.Lock()
	f := c.flow
	c.flow = nil
	c.mu.Unlock()
	if f != nil {
		go f.fail(errFlowAbandoned)
	}
}

// decide sends the subject's decision and delivers the response.
func (c *consentFlows) decide(d consent.Decision) {
	w := c.w
	c.mu.Lock()
	f := c.flow
	id := ""
	if f != nil {
		id = f.requestID
	}
	if id != "" {
		c.flow = nil
	}
	c.mu.Unlock()
	if id == "" {
		return // no consent on screen, or its screen is not shown yet
	}
	w.emit(Event{Kind: EventConsentDecided, Detail: d.Action})
	w.publish(decidedEvent(d, f.net.ID()))
	ctx, cancel := context.WithTimeout(f.context(), w.opts.FlowTimeout)
	defer cancel()
	redirect, err := f.app.Consent.Decide(netlog.Into(ctx, f.net, netlog.SourceHost, netlog.KindNativeConsent), id, d)
	w.hv.hide()
	if err != nil {
		f.fail(err)
		return
	}
	f.net.SetCode(redirect.Query().Get("code"))
	c.publishCode(f, redirect)
	f.deliver(ctx, redirect)
}

// complete delivers the authorization response of a caught navigation
// (docs/architecture.md, "The three ways an authorization completes", ways 1
// and 3).
func (c *consentFlows) complete(ctx context.Context, f *flow, redirect *url.URL) {
	w := c.w
	app := f.app
	if !origin.InList(origin.Of(redirect), app.Policy.Allowed) {
		c.showError(f, fmt.Errorf("host: the authorization response goes to %s, outside the Miniapp's allowed origins", origin.Of(redirect)))
		return
	}
	ctx, span := w.tracer.Start(ctx, spanComplete, trace.WithAttributes(attribute.Bool("miniapp.confidential", app.Confidential)))
	defer span.End()
	next := redirect
	if app.Confidential {
		// The host makes the callback request itself, with the view's
		// cookies for the Miniapp's origin (its session holds the PKCE
		// verifier and state), then gives the view the cookies the
		// callback set: the code never enters the view.
		header, err := w.Cookies(ctx, redirect.String())
		if err != nil {
			c.showError(f, err)
			return
		}
		cctx, cspan := w.tracer.Start(ctx, spanCallback, trace.WithSpanKind(trace.SpanKindClient))
		res, err := callback(netlog.Into(cctx, f.net, netlog.SourceHost, netlog.KindCallback), netlog.Client(w.opts.HTTPClient),
			redirect, header, app.StartURL, time.Now())
		endSpan(cspan, err)
		if err != nil {
			c.showError(f, err)
			return
		}
		cctx, cspan = w.tracer.Start(ctx, spanCookieSync, trace.WithAttributes(attribute.Int("miniapp.cookies", len(res.Cookies))))
		err = w.addCookies(cctx, res.Cookies)
		endSpan(cspan, err)
		if err != nil {
			c.showError(f, err)
			return
		}
		w.emit(Event{Kind: EventCallback, URL: redirect.String(), Detail: fmt.Sprintf("%d, %d cookies", res.Status, len(res.Cookies))})
		names := make([]string, 0, len(res.Cookies))
		for _, c := range res.Cookies {
			names = append(names, c.Name)
		}
		w.publish(bridge.CookiesSyncedEvent{Origin: origin.Of(redirect).String(), Names: names, Flow: f.net.ID()})
		next = res.Next
	}
	if w.stale(f.gen) {
		f.net.End(netlog.OutcomeAbandoned, "another Miniapp was mounted before the flow completed")
		f.endSpan(netlog.OutcomeAbandoned)
		return
	}
	// The network log ends the flow before the event announces it: whoever
	// reads the log on hearing the event sees the flow's outcome.
	outcome, detail := responseOutcome(redirect)
	f.net.End(outcome, detail)
	span.End()
	f.endSpan(outcome)
	w.emit(Event{Kind: EventCompleted, URL: next.String()})
	w.Navigate(next.String())
}

// responseOutcome is a flow's outcome by its authorization response (RFC
// 6749 sections 4.1.2 and 4.1.2.1).
func responseOutcome(redirect *url.URL) (outcome, detail string) {
	q := redirect.Query()
	switch e := q.Get("error"); e {
	case "":
		return netlog.OutcomeCompleted, ""
	case "access_denied":
		return netlog.OutcomeDenied, "access_denied"
	default:
		return netlog.OutcomeError, strings.TrimSpace(e + ": " + q.Get("error_description"))
	}
}

// showError says in the host's view why a caught authorization could
// not finish.
func (c *consentFlows) showError(f *flow, err error) {
	w := c.w
	if errors.Is(err, errFlowAbandoned) {
		f.net.End(netlog.OutcomeAbandoned, err.Error())
		f.endSpan(netlog.OutcomeAbandoned)
	} else {
		f.net.End(netlog.OutcomeError, err.Error())
		f.endSpan(netlog.OutcomeError)
	}
	w.emit(Event{Kind: EventError, Detail: err.Error()})
	if !w.stale(f.gen) && !errors.Is(err, errFlowAbandoned) {
		w.hv.show(map[string]any{"screen": "error", "title": "The sign-in could not finish", "text": err.Error()})
	}
}

// onScreen returns the consent.shown event of the consent screen on
// screen, if one is: painted and not yet decided.
func (c *consentFlows) onScreen() (bridge.ConsentShownEvent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flow; f != nil && f.onScreen && f.requestID != "" && f.shown != nil {
		return *f.shown, true
	}
	return bridge.ConsentShownEvent{}, false
}

// painted records that the running flow's consent screen is painted and
// returns its consent.shown event, nil without one.
func (c *consentFlows) painted() *bridge.ConsentShownEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	var shown *bridge.ConsentShownEvent
	if c.flow != nil {
		shown = c.flow.shown
		c.flow.onScreen = shown != nil
	}
	return shown
}

// waiting reports whether a consent screen of the running flow waits for
// a decision (shown or on its way to the screen).
func (c *consentFlows) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flow != nil && c.flow.requestID != ""
}

// running reports whether a flow runs.
func (c *consentFlows) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flow != nil
}

// runningID is the network log's id of the running flow; "" without one.
func (c *consentFlows) runningID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flow; f != nil {
		return f.net.ID()
	}
	return ""
}

// viewNet is the network log's flow the view's requests belong to, and
// when the page it led to loaded (zero before).
func (c *consentFlows) viewNet() (*netlog.Flow, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.net, c.netUntil
}

// clearNet ends the view's requests' belonging to a flow (Mount).
func (c *consentFlows) clearNet() {
	c.mu.Lock()
	c.net, c.netUntil = nil, time.Time{}
	c.mu.Unlock()
}

// viewLoaded notes that the view finished loading a page: once the flow
// has ended, the page it led to has loaded, and what the view starts
// asking for from now on is no longer the flow's. WebKit may report the
// page's own resources as finished after this.
func (c *consentFlows) viewLoaded() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.net != nil && c.netUntil.IsZero() && c.net.Ended() {
		c.netUntil = time.Now()
	}
}
