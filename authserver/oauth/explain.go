package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/consent"
)

// The dry run of an authorization request (docs/dashboard.md, "Explain"):
// what a subject would be shown and granted, and which of the three checks
// of docs/service.md §1 refuses it, through the code of the real endpoints
// (validateAuthorize, assess) and without writing anything: no pending
// request, code, grant or remembered consent, no quota counted, no sign-in.

// ExplainRequest is what a dry run explains: the parameters (ClientID,
// Scope, AuthorizationDetails, OrgID) or a whole AuthorizeURL, and the
// Subject who would decide.
type ExplainRequest struct {
	ClientID string
	Subject  string
	Scope    string
	// AuthorizationDetails is a JSON array, or a JSON string holding one
	// (the query parameter's form); nil for none.
	AuthorizationDetails json.RawMessage
	OrgID                string
	// AuthorizeURL is a URL of the authorization endpoint whose query
	// carries the parameters; with it the fields above but Subject stay
	// empty.
	AuthorizeURL string
}

// ExplainError is input a dry run cannot read: Field is the member it is
// about (a JSON pointer into the request body), Code "missing_field" or
// "invalid_field" (the dashboard's codes), Message what to do.
type ExplainError struct {
	Code    string
	Field   string
	Message string
}

func (e *ExplainError) Error() string { return "oauth: explain: " + e.Field + ": " + e.Message }

// Outcomes of an explained check beside consent.Pass, Fail and Ask.
const (
	// OutcomeDeferred is a control applied later: the transaction limits
	// at each charge (docs/service.md §2.4).
	OutcomeDeferred = "deferred"
	// OutcomeSkipped is a check with nothing to read, because an earlier
	// one refused the request.
	OutcomeSkipped = "skipped"
)

// The groups of checks (ExplainedCheck.Check): the request's reading, the
// catalog, and the three checks of docs/service.md §1.
const (
	GroupRequest          = "request"
	GroupCatalog          = "catalog"
	GroupProjectApproval  = "project_approval"
	GroupSubjectConsent   = "subject_consent"
	GroupResourceControls = "resource_controls"
)

// Explanation is a dry run's report (docs/dashboard.md, "Explain").
type Explanation struct {
	// Verdict is "approvable" or "refused".
	Verdict string `json:"verdict"`
	// RefusedBy is the first refusing check, nil when approvable.
	RefusedBy *ExplainedCheck  `json:"refused_by,omitempty"`
	Request   ExplainedRequest `json:"request"`
	Checks    []ExplainedCheck `json:"checks"`
	// Consent is the consent screen's model; nil when the request or the
	// catalog refused.
	Consent *consent.Model `json:"consent,omitempty"`
	// ConsentRemembered is true when no screen would be shown: the
	// subject consented to all of it before.
	ConsentRemembered bool             `json:"consent_remembered,omitempty"`
	Grant             *ExplainedGrant  `json:"grant,omitempty"`
	Tokens            *ExplainedTokens `json:"tokens,omitempty"`
}

// Verdicts of an Explanation.
const (
	VerdictApprovable = "approvable"
	VerdictRefused    = "refused"
)

// ExplainedRequest is the request as explained.
type ExplainedRequest struct {
	ClientID    string   `json:"client_id"`
	Subject     string   `json:"subject"`
	RedirectURI string   `json:"redirect_uri,omitempty"`
	Scope       string   `json:"scope,omitempty"`
	Resource    []string `json:"resource,omitempty"`
	// AuthorizationDetails is the parameter's JSON, or its text when it
	// is not JSON (which the catalog refuses).
	AuthorizationDetails any    `json:"authorization_details,omitempty"`
	OrgID                string `json:"org_id,omitempty"`
}

// ExplainedCheck is one check: its line of the consent model, the group
// of docs/service.md §1 it belongs to, its rule and the values compared.
type ExplainedCheck struct {
	Name    string         `json:"name"`
	Check   string         `json:"check"`
	Outcome string         `json:"outcome"`
	Code    string         `json:"code,omitempty"`
	Rule    string         `json:"rule"`
	Message string         `json:"message,omitempty"`
	Values  map[string]any `json:"values,omitempty"`
}

// ExplainedGrant is what an approval of every entry would grant
// (docs/service.md §2.6).
type ExplainedGrant struct {
	ClientID             string          `json:"client_id"`
	Subject              string          `json:"subject"`
	Scopes               []string        `json:"scopes"`
	AuthorizationDetails json.RawMessage `json:"authorization_details"`
	OrgID                string          `json:"org_id,omitempty"`
	// AccountID is the account an approval would bind: the remembered
	// one, else the first offered (the subject picks on the screen).
	AccountID              string   `json:"account_id,omitempty"`
	CompanyAccountID       string   `json:"company_account_id,omitempty"`
	Audience               []string `json:"audience"`
	ConsumerInstallationID string   `json:"consumer_installation_id"`
}

// ExplainedTokens are the claims the grant's tokens would carry, and
// their lifetimes in seconds from the server's configuration.
type ExplainedTokens struct {
	TokenType           string              `json:"token_type"`
	CodeLifetimeSeconds int64               `json:"code_lifetime_seconds"`
	AccessToken         ExplainedAccess     `json:"access_token"`
	IDToken             *ExplainedIDToken   `json:"id_token,omitempty"`
	RefreshToken        *ExplainedLifetimed `json:"refresh_token,omitempty"`
}

// ExplainedAccess are an access token's claims (accessClaims) but its
// times and jti.
type ExplainedAccess struct {
	Iss             string `json:"iss"`
	Sub             string `json:"sub"`
	Aud             any    `json:"aud"`
	ClientID        string `json:"client_id"`
	Scope           string `json:"scope"`
	OrgID           string `json:"org_id,omitempty"`
	LifetimeSeconds int64  `json:"lifetime_seconds"`
}

// ExplainedIDToken are an ID token's claims (idClaims) but its times.
type ExplainedIDToken struct {
	Iss             string `json:"iss"`
	Sub             string `json:"sub"`
	Aud             string `json:"aud"`
	Azp             string `json:"azp"`
	LifetimeSeconds int64  `json:"lifetime_seconds"`
}

// ExplainedLifetimed is a token known by its lifetime only.
type ExplainedLifetimed struct {
	LifetimeSeconds int64 `json:"lifetime_seconds"`
}

// Rules of the checks the consent model and the request's reading make,
// as the dry run states them (the server's own are in checks.go).
const (
	ruleRequest   = "the authorization request's parameters: a registered redirect_uri (exact match), response_type=code, PKCE with S256, one scope or authorization_details object at least (docs/authserver.md, \"Authorization requests\")"
	ruleCatalog   = "every scope and authorization_details object is one of the catalog's, of its form, with the resource and org_id it needs (docs/service.md §2; docs/catalog.md lists every code)"
	ruleAccounts  = "when an approval binds an account, one account of each owner (the subject for bank_account, the Company for automatic-charge) fits every detail that binds one (docs/service.md §2.3, §2.4)"
	ruleLimits    = "each automatic charge is within the granted transaction minimum and maximum, checked at POST %s (docs/service.md §2.4)"
	explainChall  = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" // a valid S256 challenge (RFC 7636 appendix B)
	maxSubjectsIn = 10                                            // subjects named in an unknown subject's error
)

// groupOf is the group of docs/service.md §1 a consent model's check
// belongs to.
func groupOf(name string) string {
	switch name {
	case consent.CheckCatalog:
		return GroupCatalog
	case consent.CheckProjectApproval:
		return GroupProjectApproval
	case consent.CheckConsent, CheckGrantID:
		return GroupSubjectConsent
	}
	return GroupResourceControls
}

// Explain is the dry run of an authorization request for a subject
// (docs/dashboard.md, "Explain"). Input it cannot read is an
// *ExplainError; a request the server would refuse is an Explanation
// whose Verdict is refused.
func (s *Server) Explain(ctx context.Context, in ExplainRequest) (*Explanation, error) {
	return s.flow.explain(ctx, in)
}

// explain is Server.Explain: the request checked as the authorization
// endpoint checks it, and assessed as consentFlow assesses it, writing
// nothing.
func (s *consentFlow) explain(ctx context.Context, in ExplainRequest) (*Explanation, error) {
	q, err := explainQuery(ctx, s.clients, s.endpoint(pathAuthorize), s.catalog(), in)
	if err != nil {
		return nil, err
	}
	subj := strings.TrimSpace(in.Subject)
	if err := s.explainSubject(ctx, subj); err != nil {
		return nil, err
	}
	req := ParseAuthorize(q)
	ex := &Explanation{Checks: []ExplainedCheck{}, Request: ExplainedRequest{ClientID: req.ClientID, Subject: subj,
		RedirectURI: req.RedirectURI, Scope: req.Scope, Resource: req.Resource, OrgID: req.OrgID}}
	switch ad := req.AuthorizationDetails; {
	case json.Valid(ad):
		ex.Request.AuthorizationDetails = ad
	case ad != nil:
		ex.Request.AuthorizationDetails = string(ad)
	}
	v, _, err := s.requests.validateAuthorize(ctx, q)
	if err == nil {
		err = checkDPoPJKT(q)
	}
	var reqVals map[string]any
	if v.client != nil {
		reqVals = map[string]any{"redirect_uri": req.RedirectURI, "registered_redirect_uris": nonNil(v.client.RedirectURIs)}
	}
	if err != nil {
		var oe *Error
		if !errors.As(err, &oe) {
			return nil, err
		}
		explainRefusal(ex, v, oe, reqVals)
		return ex, nil
	}
	ex.Checks = append(ex.Checks, ExplainedCheck{Name: GroupRequest, Check: GroupRequest, Outcome: consent.Pass, Rule: ruleRequest, Values: reqVals})
	a, err := s.assess(ctx, v, subj)
	if err != nil {
		return nil, err
	}
	m := a.model
	ex.Consent, ex.ConsentRemembered = m, m.Remembered
	s.explainChecks(ex, a, v)
	if f := m.Failed(); f != nil {
		for i := range ex.Checks {
			if ex.Checks[i].Name == f.Name {
				ex.Verdict, ex.RefusedBy = VerdictRefused, &ex.Checks[i]
				break
			}
		}
		return ex, nil
	}
	cs, err := s.sec.get(ctx, v.client)
	if err != nil {
		return nil, err
	}
	ex.Verdict = VerdictApprovable
	ex.Grant, ex.Tokens, err = explainGrant(s.cfg, cs, s.audience, v, m, subj)
	return ex, err
}

// explainSubject checks the subject a dry run names: one of the seed
// world's, listed when it is not.
func (s *consentFlow) explainSubject(ctx context.Context, subj string) error {
	if subj == "" {
		return &ExplainError{Code: "missing_field", Field: "/subject", Message: "name the subject who would decide, such as sub_ana"}
	}
	_, err := s.st.Subject(ctx, subj)
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	subs, err := s.st.Subjects(ctx)
	if err != nil {
		return err
	}
	var ids []string
	for i, sb := range subs {
		if i == maxSubjectsIn {
			ids = append(ids, "...")
			break
		}
		ids = append(ids, sb.ID)
	}
	return &ExplainError{Code: "invalid_field", Field: "/subject",
		Message: fmt.Sprintf("no subject %q; the subjects are %s", subj, strings.Join(ids, ", "))}
}

// explainRefusal is the explanation of a request validateAuthorize
// refused: the request's or the catalog's check failed, the three checks
// of docs/service.md §1 skipped.
func explainRefusal(ex *Explanation, v *validated, oe *Error, reqVals map[string]any) {
	failed := ExplainedCheck{Name: GroupRequest, Check: GroupRequest, Outcome: consent.Fail, Code: oe.Code, Rule: ruleRequest, Message: oe.Description, Values: reqVals}
	if v.client != nil && oe.Violations != nil {
		ex.Checks = append(ex.Checks, ExplainedCheck{Name: GroupRequest, Check: GroupRequest, Outcome: consent.Pass, Rule: ruleRequest, Values: reqVals})
		var vs []map[string]any
		for _, vi := range oe.Violations {
			vs = append(vs, map[string]any{"pointer": vi.Pointer, "code": vi.Code, "message": vi.Message})
		}
		failed = ExplainedCheck{Name: consent.CheckCatalog, Check: GroupCatalog, Outcome: consent.Fail, Code: oe.Violations[0].Code,
			Rule: ruleCatalog, Message: oe.Description, Values: map[string]any{"violations": vs}}
	}
	ex.Checks = append(ex.Checks, failed)
	ex.Verdict, ex.RefusedBy = VerdictRefused, &failed
	for _, g := range []string{GroupProjectApproval, GroupSubjectConsent, GroupResourceControls} {
		ex.Checks = append(ex.Checks, ExplainedCheck{Name: g, Check: g, Outcome: OutcomeSkipped,
			Rule: "not checked: the " + failed.Check + " check refused the request first"})
	}
}

// explainChecks adds the model's checks to ex, each with the rule and the
// values it was made with, and the transaction limits checked at each
// charge.
func (s *consentFlow) explainChecks(ex *Explanation, a *assessment, v *validated) {
	m := a.model
	for _, c := range m.Checks {
		ec := ExplainedCheck{Name: c.Name, Check: groupOf(c.Name), Outcome: c.Outcome, Code: c.Code, Message: c.Message}
		switch vd, ok := a.verdicts[c.Name]; {
		case ok:
			ec.Rule, ec.Values = vd.Rule, vd.Values
		case c.Name == consent.CheckCatalog:
			ec.Rule, ec.Values = ruleCatalog, map[string]any{"scopes": nonNil(v.result.Scopes), "types": detailTypes(v.result)}
		case c.Name == consent.CheckAccounts:
			ec.Rule, ec.Values = ruleAccounts, accountValues(m, a.candidates)
		}
		ex.Checks = append(ex.Checks, ec)
	}
	for _, p := range m.Permissions {
		if p.Key != "automatic-charge" || p.Limits == nil || p.Index == nil {
			continue
		}
		ex.Checks = append(ex.Checks, ExplainedCheck{Name: "transaction_limits", Check: GroupResourceControls, Outcome: OutcomeDeferred, Rule: fmt.Sprintf(ruleLimits, s.cfg.baseURL()+pathCharges),
			Message: fmt.Sprintf("authorization_details/%d: each charge from %s to %s %s", *p.Index, p.Limits.Minimum, p.Limits.Maximum, p.Limits.Currency),
			Values:  map[string]any{"index": *p.Index, "minimum": p.Limits.Minimum, "maximum": p.Limits.Maximum, "currency": p.Limits.Currency}})
	}
}

// explainQuery is the query a dry run explains: that of in.AuthorizeURL,
// or the one a Miniapp would send for the fields (response_type=code, the
// client's first registered redirect_uri, a PKCE challenge, the resource of
// each requested scope).
func explainQuery(ctx context.Context, clients *clientCache, endpoint string, cat *catalog.Catalog, in ExplainRequest) (url.Values, error) {
	fields := in.ClientID != "" || in.Scope != "" || in.AuthorizationDetails != nil || in.OrgID != ""
	if in.AuthorizeURL != "" {
		if fields {
			return nil, &ExplainError{Code: "invalid_field", Field: "/authorize_url",
				Message: "send either authorize_url or client_id, scope, authorization_details and org_id, not both"}
		}
		return explainURLQuery(ctx, clients, endpoint, in.AuthorizeURL)
	}
	return explainFieldsQuery(ctx, clients, cat, in)
}

// explainURLQuery is the query of an authorization URL to explain, which
// must be this server's and name a client.
func explainURLQuery(ctx context.Context, clients *clientCache, endpoint, authorizeURL string) (url.Values, error) {
	u, err := url.Parse(authorizeURL)
	want, _ := url.Parse(endpoint)
	if err != nil || u.Scheme != want.Scheme || u.Host != want.Host || u.Path != want.Path {
		return nil, &ExplainError{Code: "invalid_field", Field: "/authorize_url",
			Message: fmt.Sprintf("%q is not a URL of this server's authorization endpoint, %s", authorizeURL, endpoint)}
	}
	q := u.Query()
	if r := q.Get("request_uri"); strings.HasPrefix(r, requestURIPrefix) {
		return nil, &ExplainError{Code: "invalid_field", Field: "/authorize_url",
			Message: "its request_uri names a pushed request, which is used once (RFC 9126 §4): explain the pushed parameters instead"}
	}
	id := q.Get("client_id")
	if id == "" {
		return nil, &ExplainError{Code: "invalid_field", Field: "/authorize_url", Message: "its query has no client_id"}
	}
	if _, err := clients.get(ctx, id); errors.Is(err, store.ErrNotFound) {
		return nil, &ExplainError{Code: "invalid_field", Field: "/authorize_url", Message: fmt.Sprintf("its client_id %q names no client", id)}
	} else if err != nil {
		return nil, err
	}
	return q, nil
}

// explainFieldsQuery is the query a Miniapp would send for the fields of
// in.
func explainFieldsQuery(ctx context.Context, clients *clientCache, cat *catalog.Catalog, in ExplainRequest) (url.Values, error) {
	id := strings.TrimSpace(in.ClientID)
	if id == "" {
		return nil, &ExplainError{Code: "missing_field", Field: "/client_id", Message: "name the client that would send the request, or send authorize_url"}
	}
	c, err := clients.get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &ExplainError{Code: "invalid_field", Field: "/client_id",
			Message: fmt.Sprintf("no client %q; a project's clients are listed by miniapp-host credential list", id)}
	} else if err != nil {
		return nil, err
	}
	q := url.Values{"client_id": {id}, "response_type": {"code"}, "code_challenge": {explainChall}, "code_challenge_method": {"S256"}}
	if len(c.RedirectURIs) > 0 {
		q.Set("redirect_uri", c.RedirectURIs[0])
	}
	if in.Scope != "" {
		q.Set("scope", in.Scope)
		for _, name := range strings.Split(in.Scope, " ") {
			if sc, ok := cat.Scope(name); ok && !slices.Contains(q["resource"], sc.Resource) {
				q.Add("resource", sc.Resource)
			}
		}
	}
	if in.AuthorizationDetails != nil {
		ad, err := detailsParam(in.AuthorizationDetails)
		if err != nil {
			return nil, err
		}
		q.Set("authorization_details", ad)
	}
	if in.OrgID != "" {
		q.Set("org_id", in.OrgID)
	}
	return q, nil
}

// detailsParam is the authorization_details parameter of raw: a JSON
// array, or a JSON string holding one.
func detailsParam(raw json.RawMessage) (string, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		raw = json.RawMessage(text)
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(raw, &arr); err != nil {
		return "", &ExplainError{Code: "invalid_field", Field: "/authorization_details",
			Message: "authorization_details must be a JSON array of objects (RFC 9396 §2), or a string holding one: " + err.Error()}
	}
	return string(raw), nil
}

// detailTypes are the types of a result's details, in order.
func detailTypes(res *catalog.Result) []string {
	out := []string{}
	for _, d := range res.Details {
		out = append(out, d.Type.Name)
	}
	return out
}

// accountValues are the accounts check's values: the accounts of each
// owner that the request's details bind, those offered and the candidates.
func accountValues(m *consent.Model, candidates []consent.Account) map[string]any {
	ids := func(as []consent.Account) []string {
		out := []string{}
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	vals := map[string]any{"owners": nonNil(m.AccountOwners()), "offered": ids(m.Accounts)}
	for _, o := range []string{consent.OwnerSubject, consent.OwnerCompany} {
		vals["accounts_of_"+o] = ids(slices.DeleteFunc(slices.Clone(candidates), func(a consent.Account) bool { return a.Owner != o }))
	}
	return vals
}

// explainGrant is the grant and the tokens an approval of every entry of
// an approvable model would give, built as decide and mint build them.
func explainGrant(cfg Config, cs *clientSecurity, audience func(*catalog.Result) []string, v *validated, m *consent.Model, subject string) (*ExplainedGrant, *ExplainedTokens, error) {
	d := consent.Decision{Action: consent.Approve}
	for _, o := range m.AccountOwners() {
		acct := ""
		if as := m.AccountsOf(o); len(as) > 0 {
			acct = as[0].ID
		}
		if m.RememberedAccount != "" && slices.ContainsFunc(m.AccountsOf(o), func(a consent.Account) bool { return a.ID == m.RememberedAccount }) {
			acct = m.RememberedAccount
		}
		if o == consent.OwnerSubject || d.AccountID == "" {
			d.AccountID = acct
		} else {
			d.CompanyAccountID = acct
		}
	}
	if err := m.Validate(d); err != nil {
		return nil, nil, err
	}
	gr, err := consent.GrantOf(v.result, d)
	if err != nil {
		return nil, nil, err
	}
	granted := gr.Result
	req := v.req
	g := &ExplainedGrant{ClientID: v.client.ID, Subject: subject, Scopes: nonNil(granted.Scopes), AuthorizationDetails: gr.Details,
		OrgID: req.OrgID, AccountID: d.AccountID, CompanyAccountID: d.CompanyAccountID, Audience: audience(granted),
		ConsumerInstallationID: installationID(v.client.ID, subject, req.OrgID)}
	codeTTL := cfg.CodeTTL
	if cs.fapi2() && codeTTL > fapi2CodeTTL {
		codeTTL = fapi2CodeTTL
	}
	t := &ExplainedTokens{TokenType: "Bearer", CodeLifetimeSeconds: int64(codeTTL.Seconds()),
		AccessToken: ExplainedAccess{Iss: cfg.Issuer, Sub: subject, Aud: audClaim(g.Audience), ClientID: v.client.ID,
			Scope: strings.Join(granted.Scopes, " "), OrgID: req.OrgID, LifetimeSeconds: int64(cfg.AccessTokenTTL.Seconds())}}
	if cs.requireDPoP() || jktOf(v) != "" {
		t.TokenType = "DPoP"
	}
	if slices.Contains(granted.Scopes, "openid") {
		t.IDToken = &ExplainedIDToken{Iss: cfg.Issuer, Sub: subject, Aud: v.client.ID, Azp: v.client.ID, LifetimeSeconds: int64(cfg.IDTokenTTL.Seconds())}
	}
	if slices.Contains(granted.Scopes, "offline_access") {
		t.RefreshToken = &ExplainedLifetimed{LifetimeSeconds: int64(cfg.RefreshTokenTTL.Seconds())}
	}
	return g, t, nil
}
