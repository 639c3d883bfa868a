package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/consent"
)

// FAPI Grant Management for OAuth 2.0 (docs/authserver.md, "Grant
// management"): every token response names its grant (grant_id); an
// authorization request may create a grant, or merge new permissions into
// one or replace one, by grant_management_action and grant_id (§5); and
// the grant management endpoint reads (GET, §6.1) and revokes (DELETE,
// §6.2) a grant, under the scopes grant_management_query and
// grant_management_revoke (docs/service.md §2.1, "This project").

const (
	// pathGrants is the grant management endpoint; a grant is
	// {pathGrants}/{grant_id}.
	pathGrants = "/oauth/grants"
	// codeInvalidGrantID: FAPI Grant Management §5.4 and §6.4.
	codeInvalidGrantID = "invalid_grant_id"

	actionCreate  = "create"
	actionMerge   = "merge"
	actionReplace = "replace"

	scopeGrantQuery  = "grant_management_query"
	scopeGrantRevoke = "grant_management_revoke"
)

// grantActions are the grant_management_actions_supported (§4.1).
var grantActions = []string{"query", "revoke", actionCreate, actionMerge, actionReplace}

// CheckGrantID is the consent model's check of a merge or replace: the
// grant named by grant_id belongs to the subject deciding (§5.2).
const CheckGrantID = "grant_id"

// ruleGrantID is the rule of CheckGrantID, as the dry run states it.
const ruleGrantID = "with grant_management_action merge or replace, the grant named by grant_id is this subject's (FAPI Grant Management §5.2; docs/authserver.md, \"Grant management\")"

// grantMetadata adds the members of FAPI Grant Management §4.1.
func (s *Server) grantMetadata(md map[string]any) {
	md["grant_management_endpoint"] = s.endpoint(pathGrants)
	md["grant_management_actions_supported"] = grantActions
	md["grant_management_action_required"] = s.cfg.FAPI.RequireGrantManagementAction
}

// grantRoutes registers the grant management endpoint.
func (s *grantMgmtHandler) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+s.path(pathGrants+"/{grant_id}"), s.handleGrantManagement)
	mux.HandleFunc("DELETE "+s.path(pathGrants+"/{grant_id}"), s.handleGrantManagement)
}

// grantMgmtHandler answers the grant management endpoint (FAPI Grant
// Management §6): a client reads or revokes a grant it holds a token of.
// The request side (grant_management_action at the authorization
// endpoint) is authzRequests' and consentFlow's.
type grantMgmtHandler struct {
	*base
	st     liveGrants
	dpop   *dpopVerifier
	tokens *bearerTokens
}

// liveGrants are the grants of a grant_id.
type liveGrants interface {
	LiveGrant(ctx context.Context, grantID string) (*store.Grant, error)
	RevokeGrantID(ctx context.Context, grantID string, now time.Time) (bool, error)
}

// checkGrantManagement checks grant_management_action and grant_id of a
// request whose client is known (§5.2): create carries no grant_id; merge
// and replace name a live grant of this client, for the same Company;
// a client or server that requires an action gets one. The subject is
// checked once known (grantCheck).
func (s *authzRequests) checkGrantManagement(ctx context.Context, v *validated) error {
	req := v.req
	switch req.GrantManagementAction {
	case "":
		if req.GrantID != "" {
			return oauthErr(codeInvalidRequest, "grant_id needs grant_management_action merge or replace (FAPI Grant Management section 5.2)")
		}
		required := s.cfg.FAPI.RequireGrantManagementAction
		if !required {
			cs, err := s.sec.get(ctx, v.client)
			if err != nil {
				return err
			}
			required = cs.GrantManagementActionRequired
		}
		if required {
			return oauthErr(codeInvalidRequest, "client "+v.client.ID+" must send grant_management_action (grant_management_action_required): "+
				"create for a new grant, merge or replace with grant_id for an existing one")
		}
		return nil
	case actionCreate:
		if req.GrantID != "" {
			return oauthErr(codeInvalidRequest, "grant_management_action=create must not carry grant_id: the server makes a new one (FAPI Grant Management section 5.2)")
		}
		return nil
	case actionMerge, actionReplace:
	default:
		return oauthErr(codeInvalidRequest, fmt.Sprintf("grant_management_action %q is not one of create, merge, replace", req.GrantManagementAction))
	}
	if req.GrantID == "" {
		return oauthErr(codeInvalidRequest, "grant_management_action="+req.GrantManagementAction+" needs the grant_id of the grant to change")
	}
	g, err := s.st.LiveGrant(ctx, req.GrantID)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && g.ClientID != v.client.ID:
		return oauthErr(codeInvalidGrantID, "grant_id names no live grant of this client (unknown, revoked, or another client's)")
	case err != nil:
		return err
	case g.OrgID != req.OrgID:
		return oauthErr(codeInvalidRequest, "org_id differs from the grant's: a grant is for one Company; send grant_management_action=create for another")
	}
	v.target = g
	return nil
}

// grantCheck is the consent model's check that the grant a merge or
// replace names is the subject's (§5.2: it belongs to the client and the
// user); a request of another subject can only be denied.
func grantCheck(v *validated, subject string) (consent.Check, bool) {
	if v.target == nil {
		return consent.Check{}, false
	}
	if v.target.SubjectID != subject {
		return consent.Check{Name: CheckGrantID, Outcome: consent.Fail, Code: codeInvalidGrantID,
			Message: "grant_id: the grant to " + v.req.GrantManagementAction + " is not this subject's"}, true
	}
	return consent.Check{Name: CheckGrantID, Outcome: consent.Pass}, true
}

// changeGrant makes g, an approval of a merge or replace, the grant in
// force of the grant_id: it continues its lineage and supersedes the live
// grant (store.Grant.Supersedes), which the store revokes with every token
// issued from it. A merge grants what the grant held and what was just
// approved (§5.2: "merge"); a replace grants only what was just approved.
// The live grant is read again: another approval may have changed it
// since the request was checked; and the store supersedes it only as read
// here (store.Grant.Supersedes), so that an entry the subject revokes
// meanwhile (Connected Miniapps) is not brought back by the merge.
func (s *consentFlow) changeGrant(ctx context.Context, v *validated, g *store.Grant, granted *catalog.Result) error {
	cur, err := s.st.LiveGrant(ctx, v.req.GrantID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (cur.ClientID != g.ClientID || cur.SubjectID != g.SubjectID) {
		return oauthErr(codeInvalidGrantID, "grant_id names no live grant of this client and subject: it was revoked meanwhile")
	} else if err != nil {
		return err
	}
	g.Lineage, g.Supersedes, g.InstallationID = cur.GrantManagementID(), cur, cur.InstallationID
	if v.req.GrantManagementAction != actionMerge {
		return nil
	}
	scopes := slices.Clone(cur.Scopes)
	for _, sc := range granted.Scopes {
		if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	details, err := mergeDetails(cur.Details, g.Details)
	if err != nil {
		return err
	}
	aud := slices.Clone(cur.Audience)
	for _, a := range g.Audience {
		if !slices.Contains(aud, a) {
			aud = append(aud, a)
		}
	}
	g.Scopes, g.Details, g.Audience = scopes, details, aud
	return nil
}

// mergeDetails appends to the details a grant held those of an approval
// it did not hold already (the same object, member order aside).
func mergeDetails(held, added json.RawMessage) (json.RawMessage, error) {
	var a, b []json.RawMessage
	if len(held) > 0 {
		if err := json.Unmarshal(held, &a); err != nil {
			return nil, fmt.Errorf("oauth: stored authorization_details: %w", err)
		}
	}
	if err := json.Unmarshal(added, &b); err != nil {
		return nil, fmt.Errorf("oauth: granted authorization_details: %w", err)
	}
	canon := func(d json.RawMessage) string {
		var x any
		if json.Unmarshal(d, &x) != nil {
			return string(d)
		}
		c, _ := json.Marshal(x)
		return string(c)
	}
	seen := map[string]bool{}
	for _, d := range a {
		seen[canon(d)] = true
	}
	for _, d := range b {
		if k := canon(d); !seen[k] {
			seen[k] = true
			a = append(a, d)
		}
	}
	if a == nil {
		a = []json.RawMessage{}
	}
	out, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("oauth: merged authorization_details: %w", err)
	}
	return out, nil
}

// grantView is the grant of GET {grant_management_endpoint}/{grant_id}
// (FAPI Grant Management §6.1.2): scopes with the resource they are for,
// and the authorization_details.
type grantView struct {
	Scopes               []grantScopes   `json:"scopes"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
}

type grantScopes struct {
	Scope    string   `json:"scope"`
	Resource []string `json:"resource,omitempty"`
}

// handleGrantManagement serves GET (query, §6.1) and DELETE (revoke, §6.2)
// of {grant_management_endpoint}/{grant_id}. The caller presents an access
// token of the grant's client and subject with grant_management_query or
// grant_management_revoke, in the token and still in its grant: 401
// invalid_token for a token that is not active, 403 insufficient_scope
// without the scope, 404 invalid_grant_id for a grant_id that names no
// live grant of the token's client and subject (§6.4).
func (s *grantMgmtHandler) handleGrantManagement(w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = headerNoStore
	tok, dpop, err := presentedToken(r)
	if err != nil {
		s.writeJSONError(w, r, bearerErr(oauthErr(codeInvalidToken, "send the access token: Authorization: Bearer <token> (or DPoP)")))
		return
	}
	at, tg, err := s.tokens.issuedToken(r.Context(), tok)
	if err == nil {
		err = s.dpop.checkBound(r, tok, dpop, tg, r.Method, sameURL(s.endpoint(pathGrants)+"/"+r.PathValue("grant_id")))
	}
	if err == nil {
		if uerr := s.tokens.usable(at, tg); uerr != nil {
			err = oauthErr(codeInvalidToken, uerr.(*Error).Description)
		}
	}
	if err != nil {
		var oe *Error
		if errors.As(err, &oe) && oe.Code != codeInvalidToken && statusOf(oe.Code) == http.StatusUnauthorized {
			err = oauthErr(codeInvalidToken, oe.Description)
		}
		s.writeJSONError(w, r, bearerErr(err))
		return
	}
	want := scopeGrantQuery
	if r.Method == http.MethodDelete {
		want = scopeGrantRevoke
	}
	// The scope must be in the token and still in its grant: the subject
	// may have revoked it from the grant since the token was issued
	// (Connected Miniapps), and the token's claim is no authority then
	// (docs/service.md §5.6; docs/authserver.md, "Connected Miniapps").
	if !slices.Contains(tokenScopes(tok), want) || !slices.Contains(tg.Scopes, want) {
		oe := oauthErr(codeInsufficientScope, "the access token lacks the scope "+want+", or its grant no longer holds it")
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+want+`"`)
		s.writeJSONError(w, r, oe)
		return
	}
	// A token manages the grants of its own client and subject: the
	// subject consented to the grant management scopes for its own
	// grants, and cannot for another subject's (docs/service.md §1, the
	// subject's consent). Another subject's grant is as unknown as one
	// that does not exist.
	id := r.PathValue("grant_id")
	g, err := s.st.LiveGrant(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (g.ClientID != tg.ClientID || g.SubjectID != tg.SubjectID) {
		writeJSON(w, http.StatusNotFound, struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}{codeInvalidGrantID, "no live grant of this client and subject has this grant_id"})
		return
	} else if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	if r.Method == http.MethodDelete {
		if _, err := s.st.RevokeGrantID(r.Context(), id, s.cfg.Now()); err != nil {
			s.writeJSONError(w, r, err)
			return
		}
		s.grantRevoked(r.Context(), g.ClientID, g.SubjectID, g.ID, audit.Client(g.ClientID), "grant_management")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, s.viewGrant(g))
}

// viewGrant groups a grant's scopes by the resource they are for.
func (s *grantMgmtHandler) viewGrant(g *store.Grant) grantView {
	v := grantView{Scopes: []grantScopes{}}
	cat := s.catalog()
	byRes := map[string]int{}
	for _, name := range g.Scopes {
		res := s.cfg.baseURL()
		if sc, ok := cat.Scope(name); ok {
			res = sc.Resource
		}
		i, ok := byRes[res]
		if !ok {
			i = len(v.Scopes)
			byRes[res] = i
			v.Scopes = append(v.Scopes, grantScopes{Resource: []string{res}})
		}
		if v.Scopes[i].Scope != "" {
			v.Scopes[i].Scope += " "
		}
		v.Scopes[i].Scope += name
	}
	if d := g.Details; len(d) > 0 && string(d) != "[]" {
		v.AuthorizationDetails = d
	}
	return v
}

// bearerErr asks for the RFC 6750 §3 challenge of err.
func bearerErr(err error) error {
	var oe *Error
	if errors.As(err, &oe) && oe.dpopChallenge == "" {
		oe.bearer = true
	}
	return err
}

// tokenScopes reads the scope claim of an access token this server issued
// (found by its hash, so its claims are the ones signed): the scopes of
// the token, which a refresh may have narrowed below its grant's.
func tokenScopes(tok string) []string {
	_, rest, _ := strings.Cut(tok, ".")
	payload, _, _ := strings.Cut(rest, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil
	}
	var c struct {
		Scope string `json:"scope"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return strings.Fields(c.Scope)
}
