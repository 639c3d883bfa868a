package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/origin"
)

// The native-consent API (docs/native-consent.md) lets a host replace the
// browser consent page with its own native screen: it submits the
// authorization request it caught on behalf of a subject, shows the consent
// model it gets back, and posts the subject's decision. The request goes
// through validateAuthorize, the same checks as the authorization endpoint.

// nativeHandler answers the native-consent API: a host client submits a
// caught request (handleNativeSubmit), gets the consent model, and posts
// the subject's decision (handleNativeDecision); it lists and revokes a
// subject's remembered consents (consents.go). The host authenticates as
// a client (clientAuth.authenticateHost); the request is checked by
// authzRequests and decided through consentFlow, as the browser's is.
type nativeHandler struct {
	*base
	st       rememberedConsents
	auth     *clientAuth
	requests *authzRequests
	flow     *consentFlow
	pending  pendingStore
}

// rememberedConsents are the consents a subject asked to be remembered, as
// the host lists and revokes them.
type rememberedConsents interface {
	Consents(ctx context.Context, subjectID string) ([]*store.Consent, error)
	RevokeConsent(ctx context.Context, subjectID, clientID string, now time.Time) error
}

// nativeSubmit is the body of POST /native/requests.
type nativeSubmit struct {
	// AuthorizationURL is the caught navigation: this server's authorization
	// endpoint with the request in its query.
	AuthorizationURL string `json:"authorization_url,omitempty"`
	// Parameters is the request as parameters; each value a string or an
	// array of strings. Exactly one of AuthorizationURL and Parameters.
	Parameters map[string]json.RawMessage `json:"parameters,omitempty"`
	// Subject is the id of the subject the host acts for.
	Subject string `json:"subject"`
}

// nativeRequest is the answer to a submitted request.
type nativeRequest struct {
	RequestID string         `json:"request_id"`
	ExpiresIn int64          `json:"expires_in"`
	Consent   *consent.Model `json:"consent"`
	// Request is the authorization request the model is for, as this
	// server read it (docs/native-consent.md, "1. Submit a caught request").
	Request consent.Request `json:"request"`
}

// readOf is the consent.Request of a validated request.
func readOf(v *validated) consent.Request {
	r := v.req
	return consent.Request{Pushed: v.pushed, RequestURI: v.requestURI, ClientID: r.ClientID, RedirectURI: r.RedirectURI,
		Scope: r.Scope, Resource: r.Resource, AuthorizationDetails: r.AuthorizationDetails, OrgID: r.OrgID,
		DPoPJKT: jktOf(v), CodeChallengeMethod: r.CodeChallengeMethod, GrantManagementAction: r.GrantManagementAction, GrantID: r.GrantID}
}

// nativeError is an error of the native API; RedirectURL is set when the
// error is one the client must receive at its verified redirect_uri.
type nativeError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
	Violations  any    `json:"violations,omitempty"`
	RedirectURL string `json:"redirect_url,omitempty"`
}

// handleNativeSubmit validates a caught authorization request for a subject
// and returns its consent model.
func (s *nativeHandler) handleNativeSubmit(w http.ResponseWriter, r *http.Request) {
	host, err := s.auth.authenticateHost(r)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	var body nativeSubmit
	if err := decodeJSONBody(w, r, &body); err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	q, err := s.nativeParams(&body)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	if body.Subject == "" {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, "subject is missing"))
		return
	}
	v, redirect, err := s.requests.authorizeRequest(r.Context(), q)
	if redirect && v.client != nil {
		// The same fault as at the browser's authorization endpoint
		// (faults.go), in this API's error shape.
		oe, done := s.injectFault(w, r, FaultAuthorization, v.client.ID, func() string { return body.Subject })
		if done {
			return
		}
		if oe != nil {
			err = oe
		}
	}
	if err == nil {
		var p *pending
		if p, err = s.flow.newPending(r.Context(), v, "", "", host.ID, body.Subject); err == nil {
			var m *consent.Model
			if m, _, err = s.flow.buildModel(r.Context(), p, body.Subject); err == nil {
				// A host shows its consent screen unless the model is
				// remembered: prompt=none allows only that case.
				if err = promptNone(v, m); err == nil {
					s.consentShown(r.Context(), p, body.Subject)
					writeJSON(w, http.StatusCreated, nativeRequest{RequestID: p.id, ExpiresIn: int64(s.cfg.ConsentTTL.Seconds()), Consent: m,
						Request: readOf(v)})
					return
				}
			} else {
				redirect = false // an unknown subject is the host's mistake, not the client's
			}
			if derr := s.pending.drop(r.Context(), p); derr != nil {
				s.log.ErrorContext(r.Context(), "oauth: dropping a pending request", "err", derr)
			}
		}
	}
	oe := s.asError(r, err)
	ne := nativeError{Error: oe.Code, Description: oe.describe()}
	if len(oe.Violations) > 0 {
		ne.Violations = oe.Violations
	}
	if redirect {
		ne.RedirectURL = s.errorRedirect(v.req.RedirectURI, v.req.State, oe)
	}
	writeJSON(w, oe.statusCode(), ne)
}

// nativeParams reads the request parameters of a submission.
func (s *nativeHandler) nativeParams(b *nativeSubmit) (url.Values, error) {
	switch {
	case b.AuthorizationURL != "" && b.Parameters != nil:
		return nil, oauthErr(codeInvalidRequest, "send authorization_url or parameters, not both")
	case b.AuthorizationURL != "":
		// Read the URL as the web view that navigated to it did (the one
		// origin policy), then require this server's endpoint.
		u, err := origin.ParseURL(b.AuthorizationURL)
		if err != nil {
			return nil, oauthErr(codeInvalidRequest, "authorization_url "+echo(b.AuthorizationURL)+" is not an absolute URL: "+echo(err.Error()))
		}
		if !origin.SameOrigin(u, s.issuerURL) || u.Path != s.path(pathAuthorize) {
			ep := *u
			ep.RawQuery, ep.ForceQuery, ep.Fragment, ep.RawFragment = "", false, "", ""
			return nil, oauthErr(codeInvalidRequest, "authorization_url is at "+echo(ep.String())+", not at this server's authorization endpoint "+
				echo(s.endpoint(pathAuthorize)))
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return nil, oauthErr(codeInvalidRequest, "authorization_url has a malformed query: "+echo(err.Error()))
		}
		return q, nil
	case b.Parameters != nil:
		q := url.Values{}
		for k, raw := range b.Parameters {
			var one string
			if json.Unmarshal(raw, &one) == nil {
				q.Add(k, one)
				continue
			}
			var many []string
			if json.Unmarshal(raw, &many) != nil {
				return nil, oauthErr(codeInvalidRequest, fmt.Sprintf("parameters.%s must be a string or an array of strings; it is %s", echo(k), jsonKind(raw)))
			}
			q[k] = many
		}
		return q, nil
	}
	return nil, oauthErr(codeInvalidRequest, "send authorization_url or parameters")
}

// jsonKind names the kind of JSON value raw is, for a refusal.
func jsonKind(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "not JSON"
	}
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case map[string]any:
		return "an object"
	}
	return "an array with a member that is not a string"
}

// handleNativeDecision applies the subject's decision and returns the URL
// the client's redirect_uri must receive.
func (s *nativeHandler) handleNativeDecision(w http.ResponseWriter, r *http.Request) {
	host, err := s.auth.authenticateHost(r)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	var d consent.Decision
	if err := decodeJSONBody(w, r, &d); err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	unknown := oauthErr(codeUnknownRequest, "no pending request with this id for this host; it may have expired or been decided")
	p, err := s.pending.get(r.Context(), r.PathValue("id"), s.cfg.Now())
	if err == nil && (p == nil || p.host != host.ID) {
		err = unknown
	}
	var subj string
	var m *consent.Model
	var prior *priorConsent
	if err == nil {
		subj, m, prior, err = s.flow.recordedModel(r.Context(), p)
	}
	if err == nil && m == nil {
		err = unknown
	}
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	if f := m.Failed(); f != nil && d.Action == consent.Approve {
		// The check that said no names the error (docs/native-consent.md);
		// the request stays pending so that the host can deny it.
		s.writeJSONError(w, r, oauthErr(f.Code, f.Name+": "+f.Message))
		return
	}
	if d.Action == consent.Approve && d.AccountID == "" && m.Remembered {
		d.AccountID = m.RememberedAccount
	}
	if err := m.Validate(d); err != nil {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, err.Error()))
		return
	}
	to, err := s.flow.decide(r.Context(), p, subj, d, prior)
	if errors.Is(err, errDecided) {
		err = unknown
	}
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		RedirectURL string `json:"redirect_url"`
	}{to})
}

// decodeJSONBody reads one JSON object with the one strict reader
// (httplimit.ReadJSON): unknown members, a member named twice and anything
// after the object are refused, and a body over maxBodyBytes is 413.
func decodeJSONBody(w http.ResponseWriter, r *http.Request, v any) error {
	if err := httplimit.ReadJSON(w, r, maxBodyBytes, v); err != nil {
		return bodyErr(err, "body must be one JSON object of the documented form")
	}
	return nil
}
