package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/consent"
)

// maxBodyBytes bounds every form or JSON body of the service: the longest
// authorization request (maxAuthorizeBytes decoded) percent-encoded at up
// to three bytes a byte, with room to spare. Over it the answer is 413
// (RFC 9110 §15.5.14).
const maxBodyBytes = 256 << 10

// authzRequests reads and checks authorization requests: the query or
// form of the authorization endpoint and of the native-consent API, a
// pushed request taken by its request_uri (RFC 9126 §4), and the grant a
// grant_management_action names (grantmgmt.go). Every caller that has
// a request to decide (the browser pages, the native API, PAR, Explain and
// a request read back from a shared database) goes through
// validateAuthorize.
type authzRequests struct {
	*base
	st  requestStore
	sec *securityCache
}

// requestStore is what checking a request reads.
type requestStore interface {
	// Company resolves org_id.
	Company(ctx context.Context, id string) (store.Company, error)
	// LiveGrant resolves grant_id (FAPI Grant Management).
	LiveGrant(ctx context.Context, grantID string) (*store.Grant, error)
	// TakePushed resolves request_uri (RFC 9126).
	TakePushed(ctx context.Context, idHash []byte, clientID string, now time.Time) (*store.PushedRequest, error)
}

// consentFlow takes a checked request to its decision: it stores the
// request until then (pendingStore), makes the subject's consent model
// with the three checks of docs/service.md §1 (assess, checks.go), and
// applies the decision (decide), storing the grant and its code. The
// browser pages and the native-consent API share it; Explain runs its
// assessment without writing.
type consentFlow struct {
	*base
	st       flowStore
	sec      *securityCache
	requests *authzRequests // Explain checks the request as the endpoint does
	pending  pendingStore   // in memory, or in a shared database (flowstate.go)
}

// flowStore is what assessing and deciding a request reads; the decision
// writes through pendingStore.
type flowStore interface {
	// The subject, the client's project and the accounts offered.
	Subject(ctx context.Context, id string) (store.Subject, error)
	Subjects(ctx context.Context) ([]store.Subject, error)
	Project(ctx context.Context, id string) (store.Project, error)
	AccountsOf(ctx context.Context, subjectID, companyID string) ([]store.Account, error)
	MemberOf(ctx context.Context, subjectID, companyID string) (bool, error)
	// The project check (checks.go).
	Reviews
	// The consent check: the subject's remembered consent.
	Consent(ctx context.Context, subjectID, clientID string) (*store.Consent, error)
	// The grant a merge or replace changes (grantmgmt.go).
	LiveGrant(ctx context.Context, grantID string) (*store.Grant, error)
}

// validated is an authorization request that passed every check that does
// not depend on the subject.
type validated struct {
	params  map[string][]string // as received, kept when the request waits in a shared database
	req     *AuthorizeRequest
	client  *store.Client
	result  *catalog.Result
	company *store.Company   // nil without org_id
	cat     *catalog.Catalog // the catalog the request was checked with
	// target is the live grant a merge or replace names (grantmgmt.go),
	// nil otherwise.
	target *store.Grant
	// pushed is set when params are those of a pushed request taken by
	// its requestURI (RFC 9126 §4), not those of the query.
	pushed     bool
	requestURI string
}

// validateAuthorize checks an authorization request. When it fails,
// redirect says whether the error may be sent to the redirect_uri: only
// once the client is known and the redirect_uri is one of its registered
// URIs (RFC 6749 §4.1.2.1); otherwise the user agent gets an error page, so
// the server is never an open redirector.
func (s *authzRequests) validateAuthorize(ctx context.Context, q map[string][]string) (v *validated, redirect bool, err error) {
	req := ParseAuthorize(q)
	v = &validated{params: q, req: req}
	// Length limits first, so that nothing oversized is looked up or kept;
	// an oversized client_id or redirect_uri cannot be verified, so its
	// error is shown, not redirected.
	tooLong := checkLimits(q)
	if tooLong != nil && (tooLong.Param == "client_id" || tooLong.Param == "redirect_uri") {
		return v, false, tooLong.err()
	}
	if req.ClientID == "" {
		return v, false, oauthErr(codeInvalidRequest, "client_id is missing")
	}
	if req.Duplicated == "client_id" || req.Duplicated == "redirect_uri" {
		return v, false, repeatedErr(q, req.Duplicated)
	}
	c, err := s.clients.get(ctx, req.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return v, false, oauthErr(codeInvalidClient, "client_id "+echo(req.ClientID)+" is unknown: no client is registered with this id")
	} else if err != nil {
		return v, false, err
	}
	v.client = c
	// A request object would carry the real parameters, which this server
	// does not read (discovery says request_parameter_supported and
	// request_uri_parameter_supported are false): honouring the outer
	// parameters instead would silently drop what the client asked for.
	unsupported := requestObjectErr(req)
	if req.RedirectURI == "" {
		if unsupported != nil {
			// A request object may carry the redirect_uri: say why
			// nothing was read rather than that it is missing.
			return v, false, unsupported
		}
		return v, false, oauthErr(codeInvalidRequest, "redirect_uri is missing; send one of the redirect URIs registered for client "+
			echo(c.ID)+": "+echoList(c.RedirectURIs))
	}
	if !redirectAllowed(c.RedirectURIs, req.RedirectURI) {
		return v, false, redirectErr(c, req.RedirectURI)
	}
	// From here on errors go back to the client.
	if tooLong != nil {
		if tooLong.Param == "state" {
			req.State = "" // not echoed: the redirect would carry it (RFC 6749 §4.1.2.1)
		}
		return v, true, tooLong.err()
	}
	switch {
	case unsupported != nil:
		return v, true, unsupported
	case req.Duplicated != "":
		return v, true, repeatedErr(q, req.Duplicated)
	}
	if err := codeFlowErr(req); err != nil {
		return v, true, err
	}
	v.cat = s.catalog()
	res := v.cat.Check(catalog.Request{Scope: req.Scope, Resource: req.Resource,
		AuthorizationDetails: req.AuthorizationDetails, OrgID: req.OrgID})
	if err := res.Err(); err != nil {
		return v, true, catalogErr(err)
	}
	v.result = res
	if v.company, err = s.company(ctx, req.OrgID); err != nil {
		return v, true, err
	}
	if err := s.checkGrantManagement(ctx, v); err != nil {
		return v, true, err
	}
	return v, true, nil
}

// codeFlowErr checks what the code flow with PKCE asks of every request
// (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 9700 §2.1.1): response_type=code,
// the query response mode, an S256 challenge, and something to grant.
func codeFlowErr(req *AuthorizeRequest) *Error {
	switch {
	case req.ResponseType == "":
		return oauthErr(codeInvalidRequest, "response_type is missing: send response_type=code")
	case req.ResponseType != "code":
		return oauthErr(codeUnsupportedResponseType, "response_type "+echo(req.ResponseType)+" is not supported: only response_type=code is")
	case req.ResponseMode != "" && req.ResponseMode != "query":
		return oauthErr(codeInvalidRequest, "response_mode "+echo(req.ResponseMode)+" is not supported: only response_mode=query is")
	case req.CodeChallenge == "":
		return oauthErr(codeInvalidRequest, "code_challenge is required: every client uses PKCE with S256 (RFC 7636)")
	case req.CodeChallengeMethod == "":
		return oauthErr(codeInvalidRequest, "code_challenge_method must be S256; it is missing (RFC 9700 §2.1.1)")
	case req.CodeChallengeMethod != "S256":
		return oauthErr(codeInvalidRequest, "code_challenge_method must be S256, not "+echo(req.CodeChallengeMethod)+"; plain is refused (RFC 9700 §2.1.1)").
			compared("code_challenge_method", req.CodeChallengeMethod, "S256")
	case !validChallenge(req.CodeChallenge):
		return oauthErr(codeInvalidRequest, fmt.Sprintf("code_challenge %s is %d bytes long; it must be 43 base64url characters, the S256 of the verifier (RFC 7636 §4.2)",
			echo(req.CodeChallenge), len(req.CodeChallenge)))
	case strings.TrimSpace(req.Scope) == "" && req.AuthorizationDetails == nil:
		return oauthErr(codeInvalidScope, "request at least one scope or one authorization_details object")
	}
	return nil
}

// company resolves a request's org_id: nil without one.
func (s *authzRequests) company(ctx context.Context, orgID string) (*store.Company, error) {
	if orgID == "" {
		return nil, nil
	}
	co, err := s.st.Company(ctx, orgID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, oauthErr(codeInvalidRequest, "org_id names no Company: "+echo(orgID)+" is not the id of a Company")
	} else if err != nil {
		return nil, err
	}
	return &co, nil
}

// repeatedErr is a single-valued parameter sent more than once (RFC 6749
// §3.1), with the values sent.
func repeatedErr(q map[string][]string, name string) *Error {
	vals := make([]string, len(q[name]))
	for i, v := range q[name] {
		vals[i] = echoParam(name, v)
	}
	return oauthErr(codeInvalidRequest, fmt.Sprintf("%s is sent %d times (%s); send it once (RFC 6749 §3.1)", name, len(vals), strings.Join(vals, ", ")))
}

// redirectErr is a redirect_uri that is not one of client c's: the URI
// sent and those registered, compared byte for byte (redirectAllowed).
func redirectErr(c *store.Client, uri string) *Error {
	why := "it is not one of them (exact match required: no normalisation of case, port, dot segments or percent-encoding)"
	if strings.ContainsRune(uri, '#') {
		why = "a redirect_uri must not have a fragment (RFC 6749 §3.1.2)"
	}
	return oauthErr(codeInvalidRequest, fmt.Sprintf("redirect_uri %s is not registered for client %s; its registered redirect URIs are %s: %s",
		echo(uri), echo(c.ID), echoList(c.RedirectURIs), why)).compared("redirect_uri", uri, strings.Join(c.RedirectURIs, " "))
}

// requestObjectErr refuses the request-object parameters, which this
// server does not support: request_not_supported and
// request_uri_not_supported (OpenID Connect Core §6.1, §6.2 and §3.1.2.6;
// RFC 9101 §5 and §10.4 leave request objects optional).
func requestObjectErr(req *AuthorizeRequest) *Error {
	switch {
	case req.Request != "":
		return oauthErr(codeRequestNotSupported, "request objects are not supported (request_parameter_supported is false); send the parameters in the query")
	case req.RequestURI != "":
		return oauthErr(codeRequestURINotSupported, "request_uri is not supported (request_uri_parameter_supported is false); send the parameters in the query")
	}
	return nil
}

// promptNone applies prompt=none (OpenID Connect Core §3.1.2.1) to a
// consent model: the request may be answered without any screen only when
// the subject already consented to all of it and every check passes
// (docs/service.md §1, the subject's consent); otherwise it is consent_required.
func promptNone(v *validated, m *consent.Model) error {
	if v.req.Prompt != "none" {
		return nil
	}
	if m.Remembered && m.Validate(consent.Decision{Action: consent.Approve, AccountID: m.RememberedAccount}) == nil {
		return nil
	}
	return oauthErr(codeConsentRequired, "prompt=none: the subject has not consented to all of this before; send the request without prompt=none to ask")
}

// handleAuthorize serves the authorization endpoint for browsers: it checks
// the request, then sends the user agent to sign-in or straight to consent.
func (s *browserHandler) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		if err := parsePostForm(w, r); err != nil {
			s.errorPage(w, r, s.asError(r, err))
			return
		}
		q = r.PostForm
	}
	v, redirect, err := s.requests.authorizeRequest(r.Context(), q)
	if redirect && v.client != nil {
		// A fault answers once the redirect_uri is verified, as a real
		// error would (RFC 6749 §4.1.2.1); a status is an error page.
		oe, done := s.injectFault(w, r, FaultAuthorization, v.client.ID, func() string {
			if se, _ := s.sess.sessionFrom(r); se != nil {
				return se.subject()
			}
			return ""
		})
		switch {
		case done:
			return
		case oe != nil && oe.status != 0:
			s.errorPage(w, r, oe)
			return
		case oe != nil:
			err = oe
		}
	}
	if err != nil {
		if redirect {
			http.Redirect(w, r, s.errorRedirect(v.req.RedirectURI, v.req.State, s.asError(r, err)), http.StatusSeeOther)
			return
		}
		s.errorPage(w, r, s.asError(r, err))
		return
	}
	sess, err := s.sess.ensureSession(w, r)
	if err != nil {
		http.Redirect(w, r, s.errorRedirect(v.req.RedirectURI, v.req.State, s.asError(r, err)), http.StatusSeeOther)
		return
	}
	p, err := s.flow.newPending(r.Context(), v, sess.bind, s.sourceOf(r), "", "")
	if err != nil {
		http.Redirect(w, r, s.errorRedirect(v.req.RedirectURI, v.req.State, s.asError(r, err)), http.StatusSeeOther)
		return
	}
	if v.req.Prompt == "none" {
		s.answerSilently(w, r, sess, p)
		return
	}
	next := s.path(pathLogin)
	if sess.subject() != "" && v.req.Prompt != "login" {
		next = s.path(pathConsent)
	}
	http.Redirect(w, r, next+"?request="+url.QueryEscape(p.id), http.StatusSeeOther)
}

// answerSilently answers a browser's prompt=none request without showing a
// page (OpenID Connect Core §3.1.2.1): a signed-in subject who consented to
// all of it before gets the code; anyone else gets login_required or
// consent_required, at the redirect_uri with state and iss like any error.
func (s *browserHandler) answerSilently(w http.ResponseWriter, r *http.Request, sess *session, p *pending) {
	fail := func(err error) {
		if derr := s.pending.drop(r.Context(), p); derr != nil {
			s.log.ErrorContext(r.Context(), "oauth: dropping a pending request", "err", derr)
		}
		http.Redirect(w, r, s.errorRedirect(p.v.req.RedirectURI, p.v.req.State, s.asError(r, err)), http.StatusSeeOther)
	}
	subj := sess.subject()
	if subj == "" {
		fail(oauthErr(codeLoginRequired, "prompt=none: nobody is signed in"))
		return
	}
	m, prior, err := s.flow.buildModel(r.Context(), p, subj)
	if err == nil {
		err = promptNone(p.v, m)
	}
	if err != nil {
		fail(err)
		return
	}
	to, err := s.flow.decide(r.Context(), p, subj, consent.Decision{Action: consent.Approve, AccountID: m.RememberedAccount}, prior)
	if errors.Is(err, errDecided) {
		err = oauthErr(codeInvalidRequest, "this request was already decided")
	}
	if err != nil {
		http.Redirect(w, r, s.errorRedirect(p.v.req.RedirectURI, p.v.req.State, s.asError(r, err)), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// newPending stores a validated request until its decision, for a browser
// session (with the browser's source address) or for a host client, under
// the quotas of pendingQuotas. A host names the subject at once: it is
// stored with the request, and buildModel, which checks it, then has
// nothing to record.
func (s *consentFlow) newPending(ctx context.Context, v *validated, session, source, host, subject string) (*pending, error) {
	id, err := s.randomToken(24)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	p := &pending{id: id, v: v, expires: now.Add(s.cfg.ConsentTTL), session: session, source: source, host: host, subject: subject}
	if err := s.pending.add(ctx, p, now); err != nil {
		return nil, err
	}
	s.signInStarted(ctx, p)
	return p, nil
}

// sourceOf is the request's source IP address, the key of the per-source
// quotas: its peer's, or behind a trusted reverse proxy the client's
// (Config.TrustedProxies).
func (s *base) sourceOf(r *http.Request) string {
	return s.cfg.TrustedProxies.ClientAddr(r)
}

// buildModel makes the consent model of a pending request for a subject and
// records the subject on it. It returns the remembered consent it read
// too, for a decision in the same request (decide).
func (s *consentFlow) buildModel(ctx context.Context, p *pending, subjectID string) (*consent.Model, *priorConsent, error) {
	a, err := s.assess(ctx, p.v, subjectID)
	if err != nil {
		return nil, nil, err
	}
	if err := s.pending.record(ctx, p, a.model.Subject.ID, a.model); err != nil {
		return nil, nil, err
	}
	return a.model, a.prior, nil
}

// assessment is a subject's consent model of a validated request, with
// the rule and the values of each check the server made (verdict).
type assessment struct {
	model *consent.Model
	// verdicts are the server's checks by name; the catalog's and the
	// accounts' lines are the consent package's (consent.Build).
	verdicts map[string]verdict
	// candidates are the accounts of the subject and of the Company
	// offered to consent.Build.
	candidates []consent.Account
	// prior is the remembered consent the consent check read, which the
	// decision that follows in the same request uses too.
	prior *priorConsent
}

// assess makes the consent model of a validated request for a subject:
// the three checks of docs/service.md §1 and the screen. It reads and
// never writes: the authorization (buildModel) records its model, the dry
// run (Explain) only shows it.
func (s *consentFlow) assess(ctx context.Context, v *validated, subjectID string) (*assessment, error) {
	st := s.st
	sub, err := st.Subject(ctx, subjectID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, oauthErr(codeInvalidRequest, "subject "+echo(subjectID)+" is unknown: no subject has this id")
	} else if err != nil {
		return nil, err
	}
	c := v.client
	proj, err := st.Project(ctx, c.ProjectID)
	if err != nil {
		return nil, err
	}
	accts, err := st.AccountsOf(ctx, sub.ID, "")
	if err != nil {
		return nil, err
	}
	a := &assessment{verdicts: map[string]verdict{}}
	var checks []consent.Check
	add := func(vs ...verdict) {
		for _, vd := range vs {
			a.verdicts[vd.Name] = vd
			checks = append(checks, vd.Check)
		}
	}
	// The three checks of docs/service.md §1, in the order a developer reads them:
	// the project's approval, the subject's consent, the resource's controls.
	cctx, span := s.cfg.startSpan(ctx, spanCheckProject)
	projChk, err := s.projectCheck(cctx, v)
	verdictSpan(span, projChk)
	if err != nil {
		return nil, err
	}
	cctx, span = s.cfg.startSpan(ctx, spanCheckConsent)
	prior, err := s.readPrior(cctx, sub.ID, c.ID)
	if err != nil {
		span.End()
		return nil, err
	}
	a.prior = prior
	consentChk, remembered := consentCheck(v, prior)
	verdictSpan(span, consentChk)
	cctx, span = s.cfg.startSpan(ctx, spanCheckResource)
	resChks, err := s.resourceChecks(cctx, v, sub.ID, proj)
	if err != nil {
		span.End()
		return nil, err
	}
	add(projChk, consentChk)
	resVds := resChks
	in := consent.Input{
		Project: consent.Party{ID: proj.ID, Name: proj.Name},
		Client:  consent.Client{ID: c.ID, Name: c.Name, Type: string(c.Type)},
		Subject: consent.Subject{ID: sub.ID, Name: sub.Profile.Name, Email: sub.Profile.Email},
		Result:  v.result,
		OrgID:   v.req.OrgID,
	}
	if co := v.company; co != nil {
		in.Company = &consent.Company{ID: co.ID, Name: co.Name, LegalID: co.LegalID, Country: co.Country}
		chk, ca, err := companyCheck(cctx, st, co, sub.ID)
		if err != nil {
			span.End()
			return nil, err
		}
		accts = append(accts, ca...)
		add(chk)
		resVds = append([]verdict{chk}, resChks...)
	}
	verdictSpan(span, resVds...)
	for _, a := range accts {
		owner := consent.OwnerSubject
		if a.CompanyID != "" {
			owner = consent.OwnerCompany
		}
		in.Candidates = append(in.Candidates, consent.Account{ID: a.ID, Name: a.Name, Number: a.Number, Currency: a.Currency, Owner: owner})
	}
	add(resChks...)
	if chk, ok := grantCheck(v, sub.ID); ok {
		add(verdict{chk, ruleGrantID, map[string]any{"grant_id": v.req.GrantID, "grant_management_action": v.req.GrantManagementAction}})
	}
	in.Checks = checks
	a.candidates = in.Candidates
	if remembered != nil {
		in.Remembered = &consent.Remembered{AccountID: remembered.AccountID}
	}
	_, span = s.cfg.startSpan(ctx, spanConsentBuild)
	m := consent.Build(v.cat, in)
	span.End()
	a.model = m
	return a, nil
}

// recordedModel returns the subject recorded on p and the consent model
// for it: the one recorded with it, or (in a shared database, which keeps
// only the subject) built again, checked against the state of now. The
// subject is "" until a model was built. The remembered consent is
// returned when this call read it (it built the model), nil otherwise.
func (s *consentFlow) recordedModel(ctx context.Context, p *pending) (string, *consent.Model, *priorConsent, error) {
	subj, m := p.state()
	if m != nil || subj == "" {
		return subj, m, nil, nil
	}
	m, prior, err := s.buildModel(ctx, p, subj)
	return subj, m, prior, err
}

// decide applies subject's decision, checked by the caller against the
// consent model, to a pending request, and returns the final redirect URL:
// code, state and iss (RFC 6749 §4.1.2, RFC 9207), or error=access_denied
// with state and iss. It consumes the request, together with storing the
// grant: a request is decided once, even when two decisions arrive at once
// (at two instances); the later one gets errDecided. prior is the
// subject's remembered consent when the caller read it in this request
// (buildModel, recordedModel); nil, decide reads it: once per decision.
func (s *consentFlow) decide(ctx context.Context, p *pending, subject string, d consent.Decision, prior *priorConsent) (_ string, err error) {
	ctx, span := s.cfg.startSpan(ctx, spanConsentDecide, attribute.String("miniapp.consent.action", d.Action))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}()
	req := p.v.req
	// The grant is what the subject did not decline (docs/native-consent.md,
	// "2. Post the decision"); declining everything is a denial.
	gr, err := consent.GrantOf(p.v.result, d)
	if err != nil {
		return "", err
	}
	if gr.Denied {
		if err := s.pending.decide(ctx, p, subject, nil, nil, nil, s.cfg.Now()); err != nil {
			return "", err
		}
		s.decided(ctx, p, subject, false, "", false)
		return s.errorRedirect(req.RedirectURI, req.State, oauthErr(codeAccessDenied, "the subject denied the request")), nil
	}
	granted := gr.Result
	now := s.cfg.Now()
	code, err := store.NewSecret(s.cfg.Rand, now)
	if err != nil {
		return "", err
	}
	code = bindSecret(code, jktOf(p.v)) // dpop_jkt (RFC 9449 §10)
	// A time-ordered id (UUID version 7, RFC 9562 §5.7): each new grant
	// goes to the right edge of the grants table's B-tree instead of a
	// random page, so a commit of many approvals writes few pages. Its 74
	// random bits keep it unguessable; it is no credential anyway.
	gid, err := uuid.NewV7FromReader(s.cfg.Rand)
	if err != nil {
		return "", err
	}
	g := &store.Grant{
		ID: gid.String(), ClientID: p.v.client.ID, SubjectID: subject, OrgID: req.OrgID,
		Scopes: granted.Scopes, Details: gr.Details, Audience: s.audience(granted),
		InstallationID: installationID(p.v.client.ID, subject, req.OrgID), AuthTime: now, CreatedAt: now,
	}
	if p.v.target != nil {
		if err := s.changeGrant(ctx, p.v, g, granted); err != nil {
			return "", err
		}
	}
	ttl := s.cfg.CodeTTL
	// FAPI 2.0 Security Profile §5.3.2.1: codes of the fapi2 profile live
	// at most 60 s, whatever the server's CodeTTL.
	if cs, err := s.sec.get(ctx, p.v.client); err != nil {
		return "", err
	} else if cs.fapi2() && ttl > fapi2CodeTTL {
		ttl = fapi2CodeTTL
	}
	c := &store.Code{Hash: store.SecretKey(code), ClientID: g.ClientID, RedirectURI: req.RedirectURI,
		Challenge: req.CodeChallenge, Nonce: req.Nonce, ExpiresAt: now.Add(ttl)}
	if prior == nil {
		if prior, err = s.readPrior(ctx, subject, p.v.client.ID); err != nil {
			return "", err
		}
	}
	remember := consentToRemember(p, prior, granted, subject, gr.AccountID, now)
	// One transaction: a consent is never kept for an approval that failed.
	if err := s.pending.decide(ctx, p, subject, g, c, remember, now); errors.Is(err, store.ErrGrantSuperseded) {
		return "", oauthErr(codeInvalidGrantID, "the grant named by grant_id was revoked, merged or replaced meanwhile; authorize again")
	} else if err != nil {
		return "", err
	}
	s.decided(ctx, p, subject, true, g.ID, remember != nil)
	q := url.Values{"code": {code}, "iss": {s.cfg.Issuer}}
	if req.State != "" {
		q.Set("state", req.State)
	}
	return appendQuery(req.RedirectURI, q), nil
}

// audience lists the resource addresses a grant's access tokens are for:
// {base_url} for scopes, and the provider of each detail.
func (s *consentFlow) audience(res *catalog.Result) []string {
	var aud []string
	if len(res.Scopes) > 0 {
		aud = append(aud, s.cfg.baseURL())
	}
	for _, d := range res.Details {
		if !slices.Contains(aud, d.Type.Resource) {
			aud = append(aud, d.Type.Resource)
		}
	}
	if len(aud) == 0 {
		aud = []string{s.cfg.baseURL()}
	}
	return aud
}

// installationNamespace derives consumerInstallationId values.
var installationNamespace = uuid.MustParse("8f5b8e3e-2f0c-5a7e-9d1b-4c3a2b1f0e6d")

// installationID is the grant's consumerInstallationId (docs/service.md §2.6): one
// stable id per client, subject and Company, so that a Resource Server sees
// the same installation across re-authorizations (a name-based UUID, RFC
// 9562 §5.5).
func installationID(clientID, subject, orgID string) string {
	return uuid.NewSHA1(installationNamespace, []byte(clientID+"\x00"+subject+"\x00"+orgID)).String()
}
