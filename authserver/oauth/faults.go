package oauth

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Faults injected at the endpoints of a development server
// (docs/dashboard.md, "Development controls", Faults). The controls keep
// the faults (package devctl); each endpoint asks Config.Faults, right
// after it has identified the request's client, whether this request gets
// one, and answers it through its own error writer: an authorization
// error goes to the verified redirect_uri with state and iss, a token
// error is the RFC 6749 §5.2 JSON with its status, a resource's is the
// RFC 6750 §3 or RFC 9449 §7.1 challenge. A fault is therefore the same
// answer as a real refusal, only on demand.

// FaultHook says whether a request gets a fault. Fault is called once per
// request, with the endpoint (one of the Fault* endpoint names), the
// client the request is about and its subject, which Fault calls only
// when a fault is scoped to one (it may cost a lookup) and which returns
// "" when the request names none. It returns the fault to inject, having
// counted it against the fault's times, or nil.
type FaultHook interface {
	Fault(endpoint, clientID string, subject func() string) *Fault
}

// Fault is one injected effect: exactly one of Error, Status, Delay and
// Drop is set.
type Fault struct {
	// ID names the fault in the Miniapp-Host-Injected header.
	ID string
	// Error is an OAuth error code of the endpoint (FaultKinds), with
	// Description as its error_description ("" for a default one).
	Error, Description string
	// Status is an HTTP status (400-599) answered with the endpoint's
	// error body for the closest code (FaultStatusCode), with RetryAfter
	// seconds in Retry-After when it is not 0.
	Status, RetryAfter int
	// Delay holds the request that long, then the real answer follows.
	Delay time.Duration
	// Drop closes the connection without an answer.
	Drop bool
}

// Effect is the fault's kind as the Miniapp-Host-Injected header names it:
// error, status, delay or drop.
func (f *Fault) Effect() string {
	switch {
	case f.Error != "":
		return "error"
	case f.Status != 0:
		return "status"
	case f.Delay > 0:
		return "delay"
	}
	return "drop"
}

// HeaderInjected marks every answer a fault made, so that the host's
// network log marks the exchange injected (package netlog):
// "fault=<id>; endpoint=<endpoint>; effect=<error|status|delay>".
const HeaderInjected = "Miniapp-Host-Injected"

// InjectedValue is the HeaderInjected value of f at endpoint.
func InjectedValue(f *Fault, endpoint string) string {
	return "fault=" + f.ID + "; endpoint=" + endpoint + "; effect=" + f.Effect()
}

// The endpoints a fault may be injected at. The client a fault is scoped
// to is the request's client_id at the authorization endpoint (browser
// and native-consent API alike), the authenticated client at PAR, token,
// revocation and introspection, and the access token's client at
// userinfo and the grant endpoint (and at the example Resource Servers,
// package providers).
const (
	FaultAuthorization = "authorization"
	FaultPAR           = "par"
	FaultToken         = "token"
	FaultUserinfo      = "userinfo"
	FaultRevocation    = "revocation"
	FaultIntrospection = "introspection"
	FaultGrant         = "grant"
)

// faultKinds are the error codes each endpoint of this package answers
// with (RFC 6749 §4.1.2.1 and §5.2, OpenID Connect Core §3.1.2.6, RFC
// 6750 §3.1, RFC 7009 §2.2.1, RFC 9449 §7.1 and §8, and the grant
// endpoint's own, docs/authserver.md).
var faultKinds = map[string][]string{
	FaultAuthorization: {codeInvalidRequest, codeUnauthorizedClient, codeAccessDenied, codeUnsupportedResponseType,
		codeInvalidScope, codeServerError, codeTemporarilyUnavailable, codeLoginRequired, codeInteractionRequired,
		codeConsentRequired, codeInvalidRequestURI},
	FaultPAR: {codeInvalidRequest, codeInvalidClient, codeUnauthorizedClient, codeAccessDenied, codeInvalidScope,
		codeServerError, codeTemporarilyUnavailable, codeInvalidDPoPProof, codeUseDPoPNonce},
	FaultToken: {codeInvalidRequest, codeInvalidClient, codeInvalidGrant, codeUnauthorizedClient, codeUnsupportedGrantType,
		codeInvalidScope, codeServerError, codeTemporarilyUnavailable, codeInvalidDPoPProof, codeUseDPoPNonce},
	FaultUserinfo: {codeInvalidRequest, codeInvalidToken, codeInsufficientScope, codeServerError, codeTemporarilyUnavailable,
		codeInvalidDPoPProof, codeUseDPoPNonce},
	FaultRevocation: {codeInvalidRequest, codeInvalidClient, codeUnauthorizedClient, codeUnsupportedTokenType,
		codeServerError, codeTemporarilyUnavailable},
	FaultIntrospection: {codeInvalidRequest, codeInvalidClient, codeServerError, codeTemporarilyUnavailable},
	FaultGrant: {codeMissingToken, codeMalformedToken, codeInvalidToken, codeExpiredToken, codeRevokedToken,
		codeMissingClientCredentials, codeInvalidClientCredentials, codeClientNotAllowed, codeServerError,
		codeTemporarilyUnavailable, codeInvalidDPoPProof, codeUseDPoPNonce},
}

// codeInteractionRequired: OpenID Connect Core §3.1.2.6.
const codeInteractionRequired = "interaction_required"

// FaultKinds returns the error codes a fault may inject at an endpoint of
// this package, nil for another endpoint.
func FaultKinds(endpoint string) []string {
	return append([]string(nil), faultKinds[endpoint]...)
}

// FaultStatusCode is the error code a Status fault answers with at an
// endpoint of this package: temporarily_unavailable for 503 and 429,
// server_error for another 5xx, and for a 4xx the endpoint's code of that
// status (invalid_client or invalid_token for 401, access_denied,
// insufficient_scope or client_not_allowed for 403), invalid_request
// otherwise.
func FaultStatusCode(endpoint string, status int) string {
	switch {
	case status == http.StatusServiceUnavailable, status == http.StatusTooManyRequests:
		return codeTemporarilyUnavailable
	case status >= 500:
		return codeServerError
	case status == http.StatusUnauthorized:
		switch endpoint {
		case FaultUserinfo, FaultGrant:
			return codeInvalidToken
		case FaultAuthorization:
			return codeLoginRequired
		}
		return codeInvalidClient
	case status == http.StatusForbidden:
		switch endpoint {
		case FaultUserinfo:
			return codeInsufficientScope
		case FaultGrant:
			return codeClientNotAllowed
		case FaultAuthorization, FaultPAR:
			return codeAccessDenied
		}
		return codeUnauthorizedClient
	}
	return codeInvalidRequest
}

// injectFault asks Config.Faults about a request whose client is known
// and applies what it answers. done reports that the request is over (the
// connection was dropped, or the client went away during a delay); oe is
// the error the endpoint must answer with its own writer; neither means
// the real answer follows (after a delay, marked injected).
func (s *base) injectFault(w http.ResponseWriter, r *http.Request, endpoint, clientID string, subject func() string) (oe *Error, done bool) {
	if s.cfg.Faults == nil || clientID == "" {
		return nil, false
	}
	if subject == nil {
		subject = func() string { return "" }
	}
	f := s.cfg.Faults.Fault(endpoint, clientID, subject)
	if f == nil {
		return nil, false
	}
	if ApplyFault(w, r, f, endpoint) {
		return nil, true
	}
	code, desc := f.Error, f.Description
	switch {
	case f.Status != 0:
		code = FaultStatusCode(endpoint, f.Status)
	case code == "":
		return nil, false // a delay: the real answer follows
	}
	if desc == "" {
		desc = "injected by the development fault " + f.ID + " (docs/dashboard.md, Faults)"
	}
	oe = oauthErr(code, desc)
	if code == codeUseDPoPNonce || code == codeInvalidDPoPProof {
		oe = s.dpopErr(code, desc)
	}
	switch endpoint {
	case FaultUserinfo, FaultGrant:
		if code == codeUseDPoPNonce || code == codeInvalidDPoPProof {
			resourceErr(oe) // RFC 9449 §7.1: 401 with a DPoP challenge
		} else if endpoint == FaultUserinfo && (code == codeInvalidToken || code == codeInsufficientScope || code == codeInvalidRequest) {
			oe.bearer = true // RFC 6750 §3, as handleUserinfo's own refusals; a 5xx has no challenge
		}
	default:
		if code == codeInvalidClient {
			oe.challenge = `Basic realm="oauth"` // RFC 6749 §5.2
		}
	}
	oe.status = f.Status
	return oe, false
}

// ApplyFault applies the parts of f that need no error writer: it marks
// the answer injected (HeaderInjected), sets Retry-After, holds a delay
// (reporting true if the client went away meanwhile) and drops the
// connection (reporting true). The development controls apply it at the
// example Resource Servers too (package devctl).
func ApplyFault(w http.ResponseWriter, r *http.Request, f *Fault, endpoint string) (done bool) {
	if f.Drop {
		dropConnection(w)
		return true
	}
	w.Header().Set(HeaderInjected, InjectedValue(f, endpoint))
	if f.Status != 0 && f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	if f.Delay > 0 {
		// The server's write timeout counts from the request: the answer
		// after a long delay gets its own (ignored where unsupported).
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(f.Delay + httplimit.DefaultWriteTimeout))
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return true
		}
	}
	return false
}

// dropConnection closes the request's connection without an answer: the
// client sees the connection end, as with a network failure. Where the
// connection cannot be taken over (HTTP/2), the handler is aborted, which
// resets the stream.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // a reset, not an orderly close
	}
	conn.Close()
}

// grantLookups are what grantSubject reads.
type grantLookups interface {
	PeekCode(ctx context.Context, hash []byte) (c *store.Code, used bool, err error)
	Grant(ctx context.Context, id string) (*store.Grant, error)
	LookupAccessToken(ctx context.Context, hash []byte) (*store.AccessToken, *store.Grant, error)
	LookupRefreshToken(ctx context.Context, hash []byte) (*store.RefreshToken, *store.Grant, error)
}

// grantSubject is the subject of the grant behind the code, refresh token
// or token of a token, revocation or introspection request, "" when it
// names none this server knows: what a fault scoped to a subject matches.
func grantSubject(ctx context.Context, st grantLookups, f url.Values) string {
	if code := f.Get("code"); code != "" {
		if rc, _, err := st.PeekCode(ctx, store.SecretKey(code)); err == nil {
			if g, err := st.Grant(ctx, rc.GrantID); err == nil {
				return g.SubjectID
			}
		}
		return ""
	}
	tok := f.Get("refresh_token")
	if tok == "" {
		tok = f.Get("token")
		if _, g, err := st.LookupAccessToken(ctx, store.AccessTokenKey(tok)); tok != "" && err == nil {
			return g.SubjectID
		}
	}
	if tok != "" {
		if _, g, err := st.LookupRefreshToken(ctx, store.SecretKey(tok)); err == nil {
			return g.SubjectID
		}
	}
	return ""
}

// DPoPNonce is a fresh DPoP nonce of this server (RFC 9449 §8), for the
// use_dpop_nonce fault of an example Resource Server, whose client then
// proves with a nonce the grant endpoint accepts.
func (s *Server) DPoPNonce() string { return s.newNonce() }
