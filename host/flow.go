package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/redact"
)

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
	// automation event; both guarded by Window.mu.
	requestID string
	shown     *bridge.ConsentShownEvent
	// onScreen is set once the screen is painted and shown published.
	onScreen bool
	// clientID and redirectURI are read off the authorization request,
	// for the code.issued event.
	clientID, redirectURI string
	// net records the flow's exchanges; nil when the Miniapp has no
	// network log.
	net *netlog.Flow
}

// shownEvent describes a consent screen for the automation channel: the
// request as the service read it (for a pushed request, RFC 9126 §4, the
// pushed parameters, which the caught URL does not hold), else as it was
// caught; and the accounts the screen offers.
func shownEvent(u *url.URL, read *consent.Request, model json.RawMessage) *bridge.ConsentShownEvent {
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
	var m consent.Model
	if json.Unmarshal(model, &m) == nil {
		for _, a := range m.Accounts {
			ev.Accounts = append(ev.Accounts, a.ID)
		}
		ev.Entries = consentEntries(m)
	}
	return ev
}

// publishCode reports the code of an authorization response by
// fingerprint.
func (w *Window) publishCode(f *flow, redirect *url.URL) {
	if code := redirect.Query().Get("code"); code != "" {
		w.publish(bridge.CodeIssuedEvent{ClientID: f.clientID, RedirectURI: f.redirectURI, Fingerprint: redact.Fingerprint(code), Flow: f.net.ID()})
	}
}

// errFlowBusy is returned to a bridge authorize while a consent is on
// screen.
var errFlowBusy = errors.New("host: another authorization is in progress")

// errFlowAbandoned ends a flow whose consent view was closed, or whose
// Miniapp was replaced.
var errFlowAbandoned = errors.New("host: the authorization was abandoned")

// startConsent runs on the main thread when the policy caught a navigation
// towards the authorization endpoint, and publishes nav, the navigation's
// event, with the id of the flow it started. The navigation is already
// refused; the response will be delivered as docs/architecture.md's ways 1 and 3
// say.
func (w *Window) startConsent(u *url.URL, nav bridge.NavigationEvent) {
	w.mu.Lock()
	app, gen := w.app, w.mountGen
	w.mu.Unlock()
	f := &flow{gen: gen, app: app}
	f.deliver = func(ctx context.Context, redirect *url.URL) { w.complete(ctx, f, redirect) }
	f.fail = func(err error) { w.showFlowError(f, err) }
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
	if err := w.beginFlow(f, u, announce); err != nil {
		w.publish(nav)
		// A redirect chain or a double click: one consent at a time.
		w.emit(Event{Kind: EventConsentIgnored, URL: u.String(), Detail: err.Error()})
	}
}

// beginFlow makes f the running flow and asks the service for the consent
// screen of the authorization request u, on a goroutine. Before that, when
// it is not nil, announce receives the id of the flow in the network log
// ("" without one): the event that starts a flow names it before any other
// of the flow's events can be published.
func (w *Window) beginFlow(f *flow, u *url.URL, announce func(flowID string)) error {
	w.mu.Lock()
	if w.flow != nil {
		w.mu.Unlock()
		return errFlowBusy
	}
	if f.app == nil || f.gen != w.mountGen {
		w.mu.Unlock()
		return errFlowAbandoned
	}
	w.flow = f
	f.clientID, f.redirectURI = u.Query().Get("client_id"), u.Query().Get("redirect_uri")
	f.net = f.app.NetLog.BeginFlow(u)
	if f.net != nil {
		// The view's requests belong to this flow until it has ended and
		// the page it led to has loaded (viewLoadFinished).
		w.netFlow, w.netFlowUntil = f.net, time.Time{}
	}
	w.mu.Unlock()
	if announce != nil {
		announce(f.net.ID())
	}
	w.emit(Event{Kind: EventConsentRequested, URL: u.String()})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.FlowTimeout)
		defer cancel()
		subject := w.opts.Subject
		if f.app.Subject != "" {
			subject = f.app.Subject
		}
		screen, err := f.app.Consent.Begin(netlog.Into(ctx, f.net, netlog.SourceHost, netlog.KindNativeConsent), u, subject)
		if err != nil {
			f.net.SetConsent(nil, err)
			w.endFlow(f)
			f.fail(err)
			return
		}
		if screen.Redirect != nil {
			w.endFlow(f)
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
		shown := shownEvent(u, screen.Request, screen.Model)
		shown.Flow = f.net.ID()
		w.mu.Lock()
		current := w.flow == f
		if current {
			f.requestID, f.shown = screen.RequestID, shown
			if r := screen.Request; r != nil && r.Pushed {
				// The caught URL held only client_id and request_uri.
				f.redirectURI = r.RedirectURI
			}
		}
		redirectURI := f.redirectURI
		w.mu.Unlock()
		if !current {
			return
		}
		if m, ok := rememberedModel(screen.Model); ok {
			// docs/service.md §1: the subject's consent is remembered per subject and
			// client, and the subject is not asked again for what they
			// granted; the service approves with the account bound then.
			w.emit(Event{Kind: EventConsentRemembered, URL: u.String()})
			w.decide(consent.Decision{Action: consent.Approve, AccountID: m.RememberedAccount})
			return
		}
		w.showHost(map[string]any{"screen": "consent", "model": screen.Model, "arm_ms": w.opts.ConsentArm.Milliseconds(),
			"miniapp_origin": origin.Of(f.app.LoadURL).String(), "redirect_uri": redirectURI})
	}()
	return nil
}

// rememberedModel reports whether the service says the subject already
// consented to everything the screen would ask (consent.Model.Remembered).
func rememberedModel(model json.RawMessage) (consent.Model, bool) {
	var m consent.Model
	if json.Unmarshal(model, &m) != nil {
		return m, false
	}
	return m, m.Remembered
}

// endFlow clears f if it is still the running flow and reports whether it
// was.
func (w *Window) endFlow(f *flow) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flow != f {
		return false
	}
	w.flow = nil
	return true
}

// abandonFlow ends the running flow without a decision.
func (w *Window) abandonFlow() {
	w.mu.Lock()
	f := w.flow
	w.flow = nil
	w.mu.Unlock()
	if f != nil {
		go f.fail(errFlowAbandoned)
	}
}

// decide sends the subject's decision and delivers the response.
func (w *Window) decide(d consent.Decision) {
	w.mu.Lock()
	f := w.flow
	id := ""
	if f != nil {
		id = f.requestID
	}
	if id != "" {
		w.flow = nil
	}
	w.mu.Unlock()
	if id == "" {
		return // no consent on screen, or its screen is not shown yet
	}
	w.emit(Event{Kind: EventConsentDecided, Detail: d.Action})
	w.publish(decidedEvent(d, f.net.ID()))
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.FlowTimeout)
	defer cancel()
	redirect, err := f.app.Consent.Decide(netlog.Into(ctx, f.net, netlog.SourceHost, netlog.KindNativeConsent), id, d)
	w.Dispatch(func() { w.showHostViewUI(false) })
	if err != nil {
		f.fail(err)
		return
	}
	f.net.SetCode(redirect.Query().Get("code"))
	w.publishCode(f, redirect)
	f.deliver(ctx, redirect)
}

// complete delivers the authorization response of a caught navigation
// (docs/architecture.md, "The three ways an authorization completes", ways 1
// and 3).
func (w *Window) complete(ctx context.Context, f *flow, redirect *url.URL) {
	app := f.app
	if !origin.InList(origin.Of(redirect), app.Policy.Allowed) {
		w.showFlowError(f, fmt.Errorf("host: the authorization response goes to %s, outside the Miniapp's allowed origins", origin.Of(redirect)))
		return
	}
	next := redirect
	if app.Confidential {
		// The host makes the callback request itself, with the view's
		// cookies for the Miniapp's origin (its session holds the PKCE
		// verifier and state), then gives the view the cookies the
		// callback set: the code never enters the view.
		header, err := w.Cookies(ctx, redirect.String())
		if err != nil {
			w.showFlowError(f, err)
			return
		}
		res, err := callback(netlog.Into(ctx, f.net, netlog.SourceHost, netlog.KindCallback), netlog.Client(w.opts.HTTPClient),
			redirect, header, app.StartURL, time.Now())
		if err != nil {
			w.showFlowError(f, err)
			return
		}
		if err := w.addCookies(ctx, res.Cookies); err != nil {
			w.showFlowError(f, err)
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
	w.mu.Lock()
	stale := f.gen != w.mountGen
	w.mu.Unlock()
	if stale {
		f.net.End(netlog.OutcomeAbandoned, "another Miniapp was mounted before the flow completed")
		return
	}
	// The network log ends the flow before the event announces it: whoever
	// reads the log on hearing the event sees the flow's outcome.
	f.net.End(responseOutcome(redirect))
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

// showFlowError says in the host's view why a caught authorization could
// not finish.
func (w *Window) showFlowError(f *flow, err error) {
	if errors.Is(err, errFlowAbandoned) {
		f.net.End(netlog.OutcomeAbandoned, err.Error())
	} else {
		f.net.End(netlog.OutcomeError, err.Error())
	}
	w.emit(Event{Kind: EventError, Detail: err.Error()})
	w.mu.Lock()
	stale := f.gen != w.mountGen
	w.mu.Unlock()
	if !stale && !errors.Is(err, errFlowAbandoned) {
		w.showHost(map[string]any{"screen": "error", "title": "The sign-in could not finish", "text": err.Error()})
	}
}
