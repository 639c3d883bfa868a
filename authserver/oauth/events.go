package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
)

// The audit events of the OAuth server (docs/deploy.md, "Audit events"):
// each decision calls one of these, and Config.Events logs, counts and
// stores it (package audit), so that the events and the metrics agree.

// flowOf is the flow of a pending request.
func flowOf(p *pending) string {
	if p.host != "" {
		return audit.FlowNative
	}
	return audit.FlowBrowser
}

// signInStarted records a request accepted and pending, and, for a host's
// request, that the host named the subject.
func (s *base) signInStarted(ctx context.Context, p *pending) {
	ev := s.cfg.Events
	if ev == nil {
		s.cfg.Metrics.SignInStarted(p.host != "")
		return
	}
	d := map[string]string{"flow": flowOf(p), "scope": p.v.req.Scope, "redirect_uri": p.v.req.RedirectURI}
	actor := ""
	if p.host != "" {
		actor = audit.Host(p.host)
	}
	ev.Record(ctx, audit.Event{Kind: audit.SignInStarted, ClientID: p.v.client.ID, Subject: p.subject, Actor: actor, Outcome: audit.OutcomeOK, Detail: d})
	if p.host != "" {
		ev.Record(ctx, audit.Event{Kind: audit.SignInAuthenticated, ClientID: p.v.client.ID, Subject: p.subject, Actor: actor,
			Outcome: audit.OutcomeOK, Detail: map[string]string{"flow": audit.FlowNative}})
	}
}

// signedIn records a browser's sign-in as subject for a pending request.
func (s *base) signedIn(ctx context.Context, p *pending, subject string) {
	s.cfg.Events.Record(ctx, audit.Event{Kind: audit.SignInAuthenticated, ClientID: p.v.client.ID, Subject: subject,
		Actor: audit.Subject(subject), Outcome: audit.OutcomeOK, Detail: map[string]string{"flow": audit.FlowBrowser}})
}

// consentShown records a consent screen built for subject and shown (a
// page, or a host's screen).
func (s *base) consentShown(ctx context.Context, p *pending, subject string) {
	s.cfg.Events.Record(ctx, audit.Event{Kind: audit.ConsentShown, ClientID: p.v.client.ID, Subject: subject,
		Outcome: audit.OutcomeOK, Detail: map[string]string{"flow": flowOf(p)}})
}

// decided records the subject's decision on a pending request: denied,
// or approved into grantID, remembered or not for the next request.
func (s *base) decided(ctx context.Context, p *pending, subject string, approved bool, grantID string, remember bool) {
	ev := s.cfg.Events
	if ev == nil {
		s.cfg.Metrics.Decided(p.host != "", approved, remember)
		return
	}
	actor := audit.Subject(subject)
	if p.host != "" {
		actor = audit.Host(p.host)
	}
	d := map[string]string{"flow": flowOf(p), "remember": strconv.FormatBool(remember)}
	if !approved {
		ev.Record(ctx, audit.Event{Kind: audit.ConsentDenied, ClientID: p.v.client.ID, Subject: subject, Actor: actor, Outcome: audit.OutcomeDenied, Detail: d})
		return
	}
	outcome := audit.OutcomeApproved
	if _, m := p.state(); m != nil && m.Remembered {
		outcome = audit.OutcomeRemembered
	}
	ev.Record(ctx, audit.Event{Kind: audit.ConsentApproved, ClientID: p.v.client.ID, Subject: subject, Actor: actor,
		GrantID: grantID, Outcome: outcome, Detail: d})
}

// tokenIssued records a token response to client c.
func (s *base) tokenIssued(r *http.Request, clientID string, resp *tokenResponse) {
	gt := r.PostForm.Get("grant_type")
	ev := s.cfg.Events
	if ev == nil {
		s.cfg.Metrics.TokenIssued(gt)
		return
	}
	e := audit.Event{Kind: audit.TokenIssued, ClientID: clientID, Actor: audit.Client(clientID), Outcome: audit.OutcomeOK,
		Detail: map[string]string{"grant_type": gt, "scope": resp.Scope}}
	if g := resp.grant; g != nil {
		e.Subject, e.GrantID = g.SubjectID, g.ID
	}
	ev.Record(r.Context(), e)
}

// grantRevoked records the revocation of a grant (or, with grantID "",
// of the grants of a client, of a client and subject) by actor, through
// via.
func (s *base) grantRevoked(ctx context.Context, clientID, subject, grantID, actor, via string) {
	s.cfg.Events.Record(ctx, audit.Event{Kind: audit.GrantRevoked, ClientID: clientID, Subject: subject, GrantID: grantID,
		Actor: actor, Outcome: audit.OutcomeOK, Detail: map[string]string{"via": via}})
}

// refused notes the refusal oe of r for its request.refused event
// (audit.Refused), which also counts it in the metrics' refusals.
func (s *base) refused(r *http.Request, oe *Error) {
	if s.cfg.Events == nil || r == nil {
		audit.Refused(r, audit.Refusal{Error: oe.Code}, "", "")
		return
	}
	f := audit.Refusal{Error: oe.Code, Rule: oe.Description, Field: oe.field, Sent: oe.sent, Expected: oe.expected}
	if f.Field == "" && len(oe.Violations) > 0 {
		f.Field = oe.Violations[0].Pointer
	}
	audit.Refused(r, f, requestClient(r), "")
}

// requestClient is the client a request names: its client_id parameter,
// or the user of its HTTP Basic authentication (RFC 6749 §2.3.1); "" for
// none. It may name a client that does not exist.
func requestClient(r *http.Request) string {
	if id := r.URL.Query().Get("client_id"); id != "" {
		return id
	}
	if r.PostForm != nil {
		if id := r.PostForm.Get("client_id"); id != "" {
			return id
		}
	}
	if u, _, ok := r.BasicAuth(); ok {
		return u
	}
	return ""
}

// compared is oe naming the field it refused, what the request sent and
// what the rule expected (the request.refused event's refusal).
func (oe *Error) compared(field, sent, expected string) *Error {
	oe.field, oe.sent, oe.expected = field, sent, expected
	return oe
}

// s256Of is the S256 code challenge of a verifier (RFC 7636 §4.2): what a
// PKCE refusal compares, and no secret.
func s256Of(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
