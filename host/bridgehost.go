package host

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/redact"
)

// BridgeConfig is what the host needs to serve a Miniapp's bridge.
type BridgeConfig struct {
	// Origin is the Miniapp's canonical origin (from the resolver).
	Origin origin.Origin
	// ID is the manifest id, reported by getContext.
	ID string
	// ClientID is the Miniapp's public OAuth client.
	ClientID string
	// RedirectURI is one of the client's registered redirect_uris. The
	// host never loads it: it is where the service addresses the
	// authorization response, which the host reads before any view does.
	RedirectURI string
	// AuthorizeURL and TokenURL are the service's endpoints.
	AuthorizeURL, TokenURL string
	// Resource is the service's {base_url}, sent as resource when the
	// page asks for scopes (docs/service.md §2.1).
	Resource string
	// Issuer, when set, must equal the iss of every authorization
	// response (RFC 9207).
	Issuer string
	// HostVersion is reported by getContext.
	HostVersion string
	// HTTP makes the token request; http.DefaultClient when nil.
	HTTP *http.Client
	// Events receives the bridge's call events (the automation bus); nil
	// for none.
	Events bridge.Publisher
}

// bridgeHost implements bridge.Host for one mounted Miniapp.
type bridgeHost struct {
	w   *Window
	cfg BridgeConfig
}

// NewBridge returns the bridge dispatcher of a Miniapp for this window;
// put it in Miniapp.Bridge.
func (w *Window) NewBridge(cfg BridgeConfig) (*bridge.Dispatcher, error) {
	if cfg.Origin.IsOpaque() {
		return nil, errors.New("host: bridge: the Miniapp's origin is required")
	}
	return bridge.New(bridge.Config{Origin: cfg.Origin, Host: w.BridgeHost(cfg), View: w, Events: cfg.Events})
}

// BridgeHost is the window's bridge.Host for a Miniapp: what NewBridge
// gives its dispatcher. It is exported for a dispatcher of one's own, such
// as a test's that records the host's answers.
func (w *Window) BridgeHost(cfg BridgeConfig) bridge.Host { return &bridgeHost{w: w, cfg: cfg} }

// TransportKey is the key with which the host's transport script marks a
// bridge message as coming from the Miniapp's top frame (transportScript).
// Tests forge messages with it, as a script that had learnt it would.
func (w *Window) TransportKey() string { return w.key }

// Ready implements bridge.Host.
func (h *bridgeHost) Ready(context.Context) error {
	h.w.emit(Event{Kind: EventBridgeMessage, Detail: bridge.MethodReady})
	return nil
}

// Close implements bridge.Host: the window shows nothing of the Miniapp
// any more.
func (h *bridgeHost) Close(context.Context) error {
	h.w.ShowRejection("The Miniapp closed itself", "You can close this window.")
	return nil
}

// Context implements bridge.Host.
func (h *bridgeHost) Context(context.Context) (bridge.ContextInfo, error) {
	theme := bridge.Theme(h.w.Device().PageTheme().Theme)
	return bridge.ContextInfo{ID: h.cfg.ID, Theme: theme, HostVersion: h.cfg.HostVersion}, nil
}

// OpenExternal implements bridge.Host. The page's "gesture" is its own
// word (docs/bridge.md, "What the key does not do"): the URL opens only if
// the host itself saw a key press, click or touch on the Miniapp's view
// within bridge.GestureWindow, and that input is then used up.
func (h *bridgeHost) OpenExternal(_ context.Context, u string) error {
	if !h.w.gestures.Take(time.Now()) {
		return bridge.Errorf(bridge.CodeNoUserGesture, "no key press, click or touch on the Miniapp in the last %s", bridge.GestureWindow)
	}
	go h.w.opts.OpenExternal(u)
	return nil
}

// Authorize implements bridge.Host: docs/architecture.md's way 2. The host
// builds the request with PKCE, runs the consent, reads the response
// addressed to the redirect_uri, checks state and iss, and exchanges the
// code itself; the page gets the token response, never the code.
func (h *bridgeHost) Authorize(ctx context.Context, req bridge.AuthorizeRequest) (bridge.AuthorizeResult, error) {
	conf := &oauth2.Config{ClientID: h.cfg.ClientID, RedirectURL: h.cfg.RedirectURI, Scopes: req.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: h.cfg.AuthorizeURL, TokenURL: h.cfg.TokenURL, AuthStyle: oauth2.AuthStyleInParams}}
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if len(req.Scopes) > 0 && h.cfg.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", h.cfg.Resource))
	}
	if len(req.AuthorizationDetails) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("authorization_details", string(req.AuthorizationDetails)))
	}
	if req.OrgID != "" {
		opts = append(opts, oauth2.SetAuthURLParam("org_id", req.OrgID))
	}
	u, err := origin.ParseURL(conf.AuthCodeURL(state, opts...))
	if err != nil {
		return bridge.AuthorizeResult{}, fmt.Errorf("host: authorize: %w", err)
	}

	type outcome struct {
		redirect *url.URL
		err      error
	}
	ch := make(chan outcome, 1)
	w := h.w
	app, gen := w.mount()
	f := &flow{gen: gen, app: app, root: spanBridge}
	f.deliver = func(_ context.Context, r *url.URL) { ch <- outcome{redirect: r} }
	f.fail = func(err error) { ch <- outcome{err: err} }
	if err := w.flows.begin(f, u, nil); err != nil {
		return bridge.AuthorizeResult{}, bridge.Errorf(bridge.CodeBusy, "%v", err)
	}
	var out outcome
	select {
	case out = <-ch:
	case <-ctx.Done():
		// The page went away: the flow ends in the network log first, then
		// the consent leaves the screen.
		f.net.End(netlog.OutcomeAbandoned, "the page went away: "+ctx.Err().Error())
		f.endSpan(netlog.OutcomeAbandoned)
		if w.flows.end(f) {
			w.hv.hide()
		}
		return bridge.AuthorizeResult{}, ctx.Err()
	}
	if out.err != nil {
		outcome := netlog.OutcomeError
		if errors.Is(out.err, errFlowAbandoned) {
			outcome = netlog.OutcomeAbandoned
		}
		f.net.End(outcome, out.err.Error())
		f.endSpan(outcome)
		if se := serverRefusal(out.err); se != nil {
			return bridge.AuthorizeResult{}, se
		}
		return bridge.AuthorizeResult{}, out.err
	}
	code, err := h.readResponse(out.redirect, state)
	if err != nil {
		outcome, detail := responseOutcome(out.redirect)
		if outcome != netlog.OutcomeDenied {
			outcome, detail = netlog.OutcomeError, err.Error()
		}
		f.net.End(outcome, detail)
		f.endSpan(outcome)
		return bridge.AuthorizeResult{}, err
	}
	// The token request is the flow's last exchange (netlog.Into).
	ctx, span := w.tracer.Start(trace.ContextWithSpan(ctx, f.span), spanCodeExchange, trace.WithSpanKind(trace.SpanKindClient))
	ctx = context.WithValue(netlog.Into(ctx, f.net, netlog.SourceHost, netlog.KindToken), oauth2.HTTPClient, tracedClient(netlog.Client(h.cfg.HTTP)))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	endSpan(span, err)
	if err != nil {
		f.net.End(netlog.OutcomeError, "code exchange: "+err.Error())
		f.endSpan(netlog.OutcomeError)
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return bridge.AuthorizeResult{}, serverRefused("the token endpoint", re.ErrorCode, re.ErrorDescription)
		}
		return bridge.AuthorizeResult{}, fmt.Errorf("host: authorize: code exchange: %w", err)
	}
	f.net.End(netlog.OutcomeCompleted, "")
	f.endSpan(netlog.OutcomeCompleted)
	res := bridge.AuthorizeResult{AccessToken: tok.AccessToken, TokenType: tok.TokenType, ExpiresIn: tok.ExpiresIn}
	res.Scope, _ = tok.Extra("scope").(string)
	res.IDToken, _ = tok.Extra("id_token").(string)
	if d := tok.Extra("authorization_details"); d != nil {
		if res.AuthorizationDetails, err = json.Marshal(d); err != nil {
			return bridge.AuthorizeResult{}, fmt.Errorf("host: authorize: %w", err)
		}
	}
	grantID, _ := tok.Extra("grant_id").(string)
	w.emit(Event{Kind: EventCompleted, URL: h.cfg.RedirectURI, Detail: "token issued to the bridge"})
	w.publish(bridge.TokenIssuedEvent{ClientID: h.cfg.ClientID, TokenType: res.TokenType, Scope: res.Scope, ExpiresIn: res.ExpiresIn,
		AuthorizationDetails: res.AuthorizationDetails, Fingerprint: redact.Fingerprint(res.AccessToken), GrantID: grantID, Flow: f.net.ID()})
	return res, nil
}

// readResponse checks an authorization response addressed to the
// redirect_uri and returns its code, or the error it carries.
func (h *bridgeHost) readResponse(r *url.URL, state string) (string, error) {
	want, err := origin.ParseURL(h.cfg.RedirectURI)
	if err != nil {
		return "", fmt.Errorf("host: authorize: redirect_uri: %w", err)
	}
	// Both are canonicalised as a browser would load them, then compared
	// exactly (docs/security.md, "Authorization servers"): /cb/, /CB or /cb%2F are other
	// resources, which a cleaned or case-folded comparison would let in.
	got, err := origin.ParseURL(r.String())
	if err != nil {
		return "", fmt.Errorf("host: authorize: the response's URL: %w", err)
	}
	if !origin.SameOrigin(got, want) || got.EscapedPath() != want.EscapedPath() {
		return "", fmt.Errorf("host: authorize: the response went to %s%s, not to the redirect_uri", origin.Of(got), got.EscapedPath())
	}
	q := r.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
		return "", errors.New("host: authorize: the response's state does not match the request's")
	}
	// RFC 9207 section 2.4: iss is compared as a simple string.
	if h.cfg.Issuer != "" && q.Get("iss") != h.cfg.Issuer {
		return "", fmt.Errorf("host: authorize: the response's iss %q is not the service %q (RFC 9207)", q.Get("iss"), h.cfg.Issuer)
	}
	switch e := q.Get("error"); {
	case e == "access_denied":
		be := bridge.Errorf(bridge.CodeAccessDenied, "the subject denied the authorization")
		be.ServerError, be.ServerErrorDescription = e, serverDescription(q.Get("error_description"))
		return "", be
	case e != "":
		return "", serverRefused("the authorization endpoint", e, q.Get("error_description"))
	case q.Get("code") == "":
		return "", errors.New("host: authorize: the response has no code")
	}
	return q.Get("code"), nil
}

// maxServerDescription bounds the server's error_description a page
// gets; the server's own are far shorter (docs/authserver.md, "Refusals").
const maxServerDescription = 1024

// serverRefused is the bridge error of an authorize the authorization
// server refused at where (its authorization endpoint, the native-consent
// API, its token endpoint): host_error carrying the server's OAuth error
// code and error_description (docs/bridge.md, "Errors"), so that the
// page can say why, as a client's redirect_uri would read them.
func serverRefused(where, code, desc string) *bridge.Error {
	desc = serverDescription(desc)
	be := bridge.Errorf(bridge.CodeHostError, "%s refused the request: %s", where, code)
	if desc != "" {
		be.Message += ": " + desc
	}
	be.ServerError, be.ServerErrorDescription = code, desc
	return be
}

// serverDescription is an error_description as the page gets it:
// redacted (the server's never holds a secret; this one rule keeps it
// so), without control characters, at most maxServerDescription bytes.
func serverDescription(desc string) string {
	desc = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, redact.Text(desc))
	if len(desc) > maxServerDescription {
		cut := maxServerDescription
		for cut > 0 && !utf8.RuneStart(desc[cut]) {
			cut--
		}
		desc = desc[:cut] + "..."
	}
	return desc
}

// serverRefusal is serverRefused for a failed consent flow whose cause is
// an OAuth error answer of the native-consent API (NativeError); nil for
// any other failure, which stays the host's own.
func serverRefusal(err error) *bridge.Error {
	var ne *NativeError
	if !errors.As(err, &ne) || ne.Code == "" || ne.Code == codeHTTPError {
		return nil
	}
	return serverRefused("the authorization server", ne.Code, ne.Description)
}
