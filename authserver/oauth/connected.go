package oauth

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/origin"
)

// Connected Miniapps (docs/authserver.md, "Connected Miniapps"): the
// subject's own view of its grants, under the browser session of the
// sign-in and consent pages. Each client with the subject's active grants,
// each grant's entries with their catalog meanings (docs/catalog.md), when
// it was granted and last used; the subject revokes one entry (a scope or
// one authorization_details object, docs/service.md §2.6) or a whole grant.
// A revocation holds at once: the grant endpoint (docs/service.md §4.1),
// introspection and the example Resource Servers read the grant's current
// entries, and the remembered consent (docs/service.md §1, the subject's
// consent) loses what was revoked, so the next sign-in asks again.
//
// The page is server-rendered like the consent page (no script; forms with
// the session's CSRF token). The same is a JSON API for programs (the
// playground): GET answers the session's CSRF token, and every POST sends
// it in X-CSRF-Token. Every POST, form or JSON, is refused when its Origin
// is not the issuer's own: no other site acts with the subject's session.

// Paths of the Connected Miniapps page and its JSON API.
const (
	pathConnected       = "/oauth/connected"
	pathConnectedLogin  = "/oauth/connected/login"
	pathConnectedAPI    = "/oauth/connected/api"
	pathConnectedAPIIn  = "/oauth/connected/api/login"
	pathConnectedAPIRev = "/oauth/connected/api/revoke"
	headerCSRF          = "X-CSRF-Token"
)

// Error codes of the Connected Miniapps API.
const (
	codeNotSignedIn  = "not_signed_in"
	codeUnknownGrant = "unknown_grant"
	// codeGrantsChanged: a revocation that another, concurrent one made
	// stale (store.ErrGrantsChanged); 409.
	codeGrantsChanged = "grants_changed"
	codeUnknownEntry  = "unknown_entry"
	codeFixedEntry    = "fixed_entry"
	codeCrossOrigin   = "cross_origin"
	codeBadCSRF       = "invalid_csrf_token"
)

// connectedHandler answers the Connected Miniapps page and its JSON API,
// under the browser session of the sign-in and consent pages
// (browserSessions).
type connectedHandler struct {
	*base
	st   connectedStore
	sess *browserSessions
}

// connectedStore is what the Connected Miniapps page reads and writes: the
// subject's grants, narrowed or revoked with the remembered consent they
// leave (storage.go, SubjectGrants), and the subjects to sign in as.
type connectedStore interface {
	SubjectGrants
	Grant(ctx context.Context, id string) (*store.Grant, error)
	Consent(ctx context.Context, subjectID, clientID string) (*store.Consent, error)
	subjects
}

// routes registers the page and its API.
func (s *connectedHandler) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+s.path(pathConnected), s.handleConnectedPage)
	mux.HandleFunc("POST "+s.path(pathConnected), s.handleConnectedRevokeForm)
	mux.HandleFunc("POST "+s.path(pathConnectedLogin), s.handleConnectedLoginForm)
	mux.HandleFunc("GET "+s.path(pathConnectedAPI), s.handleConnectedAPI)
	mux.HandleFunc("POST "+s.path(pathConnectedAPIIn), s.handleConnectedAPILogin)
	mux.HandleFunc("POST "+s.path(pathConnectedAPIRev), s.handleConnectedAPIRevoke)
}

// HeldEntry is one entry of a grant as the subject sees it: the
// permission as the consent screen showed it, the form value that names
// it, whether it can be revoked alone (openid is the sign-in itself), and
// the entries revoking it takes along (a catalog rule between entries).
type HeldEntry struct {
	consent.Permission
	Entry       string   `json:"entry"`
	Revocable   bool     `json:"revocable"`
	AlsoRevokes []string `json:"also_revokes,omitempty"`
}

// ConnectedGrant is one active grant of the subject.
type ConnectedGrant struct {
	ID       string `json:"id"`
	ClientID string `json:"client_id"`
	// ClientName is the client's registered name; its id when the client
	// was removed.
	ClientName string `json:"client_name"`
	OrgID      string `json:"org_id,omitempty"`
	GrantedAt  string `json:"granted_at"`
	// LastUsedAt is when a token of the grant was last issued or looked
	// up (store.GrantStore.SubjectGrants), empty when unknown.
	LastUsedAt string      `json:"last_used_at,omitempty"`
	Entries    []HeldEntry `json:"entries"`
}

// ConnectedClient is a client with the subject's grants, newest first.
type ConnectedClient struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Initial is the name's first letter, the page's badge for the
	// client (clients register no icon with this server).
	Initial string           `json:"-"`
	Grants  []ConnectedGrant `json:"grants"`
}

// connectedView is the JSON API's answer and the page's data.
type connectedView struct {
	Subject     string            `json:"subject"`
	SubjectName string            `json:"subject_name,omitempty"`
	CSRF        string            `json:"csrf"`
	Clients     []ConnectedClient `json:"clients"`

	// page only
	Subjects      []store.Subject `json:"-"`
	Error, Notice string          `json:"-"`
}

// stamp writes a time as the API does: RFC 3339, whole seconds, UTC.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// connectedOf lists the subject's active grants by client, clients by
// name.
func (s *connectedHandler) connectedOf(ctx context.Context, subject string) ([]ConnectedClient, error) {
	gs, err := s.st.SubjectGrants(ctx, subject)
	if err != nil {
		return nil, err
	}
	cat := s.catalog()
	byID := map[string]int{}
	out := []ConnectedClient{}
	for _, g := range gs {
		i, ok := byID[g.ClientID]
		if !ok {
			name := g.ClientID
			if c, err := s.clients.get(ctx, g.ClientID); err == nil && c.Name != "" {
				name = c.Name
			} else if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			i = len(out)
			byID[g.ClientID] = i
			out = append(out, ConnectedClient{ID: g.ClientID, Name: name, Initial: initial(name), Grants: []ConnectedGrant{}})
		}
		cg := ConnectedGrant{ID: g.ID, ClientID: g.ClientID, ClientName: out[i].Name, OrgID: g.OrgID,
			GrantedAt: stamp(g.CreatedAt), LastUsedAt: stamp(g.UsedAt), Entries: []HeldEntry{}}
		held := consent.Held(cat, g.Scopes, g.Details, g.OrgID)
		for _, p := range held {
			e := HeldEntry{Permission: p, Entry: p.Entry(), Revocable: !p.Fixed}
			gone, _ := consent.Revoked(held, e.Entry)
			for _, q := range gone[1:] {
				e.AlsoRevokes = append(e.AlsoRevokes, q.Entry())
			}
			// The consent screen's wording of a rule ("grant both or
			// decline both") is AlsoRevokes here.
			e.Requires = nil
			cg.Entries = append(cg.Entries, e)
		}
		out[i].Grants = append(out[i].Grants, cg)
	}
	slices.SortStableFunc(out, func(a, b ConnectedClient) int { return cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out, nil
}

// initial is the upper-case first letter of a name, "?" for none.
func initial(name string) string {
	for _, r := range name {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return string(unicode.ToUpper(r))
		}
	}
	return "?"
}

// sameOrigin refuses a POST that a page of another site sent: the
// browser's Sec-Fetch-Site, when sent, must be same-origin (or none: the
// user's own navigation), and an Origin other than "null" must be the
// issuer's origin; "null" (which browsers send for a form post of a page
// with Referrer-Policy no-referrer, as this server's pages are) passes only
// with Sec-Fetch-Site same-origin (docs/security.md). A request with
// neither header (a program) passes on to the CSRF check, which every
// POST must pass as well.
func (s *connectedHandler) sameOrigin(r *http.Request) *Error {
	site := r.Header.Values("Sec-Fetch-Site")
	o := r.Header.Values("Origin")
	refuse := func() *Error {
		return oauthErr(codeCrossOrigin, "only pages of this server may change its grants (Origin "+strings.Join(o, ", ")+", Sec-Fetch-Site "+strings.Join(site, ", ")+")")
	}
	if len(site) > 1 || len(site) == 1 && site[0] != "same-origin" && site[0] != "none" || len(o) > 1 {
		return refuse()
	}
	if len(o) == 0 {
		return nil
	}
	if o[0] == "null" {
		if len(site) == 1 && site[0] == "same-origin" {
			return nil
		}
		return refuse()
	}
	if got, err := origin.Parse(o[0]); err != nil || !got.Equal(origin.Of(s.issuerURL)) {
		return refuse()
	}
	return nil
}

func csrfMatches(se *session, token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(se.csrf)) == 1
}

// revokeEntry revokes one entry of the subject's grant (entry, a value of
// consent.Permission.Entry), or the whole grant when entry is "": the
// grant loses the entry and those held only with it, and the remembered
// consent loses those no other active grant of the client holds
// (rememberedAfter); a grant left with nothing is revoked. It returns
// the entries revoked, and whether the whole grant was.
func (s *connectedHandler) revokeEntry(ctx context.Context, subject, grantID, entry string) (gone []string, whole bool, err error) {
	g, err := s.st.Grant(ctx, grantID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (g.SubjectID != subject || g.Revoked()) {
		return nil, false, oauthErr(codeUnknownGrant, fmt.Sprintf("grant_id: the signed-in subject has no active grant %q; GET %s lists them", grantID, pathConnectedAPI))
	} else if err != nil {
		return nil, false, err
	}
	now := s.cfg.Now()
	held := consent.Held(s.catalog(), g.Scopes, g.Details, g.OrgID)
	all := make([]string, 0, len(held))
	for _, p := range held {
		all = append(all, p.Entry())
	}
	var raw []json.RawMessage
	if len(g.Details) > 0 {
		if err := json.Unmarshal(g.Details, &raw); err != nil {
			return nil, false, fmt.Errorf("oauth: grant %s: authorization_details: %w", g.ID, err)
		}
	}
	if entry == "" {
		return all, true, s.revokeWhole(ctx, g, held, raw, now)
	}
	revoked, ok := consent.Revoked(held, entry)
	if !ok {
		return nil, false, oauthErr(codeUnknownEntry, fmt.Sprintf("entry: grant %s holds no entry %q; it holds %s", g.ID, entry, strings.Join(all, ", ")))
	}
	if revoked[0].Fixed {
		return nil, false, oauthErr(codeFixedEntry, fmt.Sprintf("entry: %q is the sign-in itself and cannot be revoked alone; revoke the whole grant instead", entry))
	}
	names := make([]string, 0, len(revoked))
	for _, p := range revoked {
		names = append(names, p.Entry())
	}
	scopes, keep := withoutRevoked(g.Scopes, raw, revoked)
	if len(scopes)+len(keep) == 0 {
		return all, true, s.revokeWhole(ctx, g, held, raw, now)
	}
	if err := s.narrow(ctx, g, scopes, keep, revoked, raw, now); err != nil {
		return nil, false, err
	}
	return names, false, nil
}

// withoutRevoked are a grant's scopes and authorization_details less the
// revoked entries.
func withoutRevoked(granted []string, raw []json.RawMessage, revoked []consent.Permission) (scopes []string, keep []json.RawMessage) {
	scopes = slices.Clone(granted)
	keep = make([]json.RawMessage, 0, len(raw))
	for _, p := range revoked {
		if p.Kind == consent.KindScope {
			scopes = slices.DeleteFunc(scopes, func(x string) bool { return x == p.Name })
		}
	}
	for i, d := range raw {
		if !slices.ContainsFunc(revoked, func(p consent.Permission) bool { return p.Index != nil && *p.Index == i }) {
			keep = append(keep, d)
		}
	}
	return scopes, keep
}

// narrow replaces grant g's entries by scopes and keep, and the
// remembered consent by what is left of it, in one step
// (SubjectGrants.NarrowGrant).
func (s *connectedHandler) narrow(ctx context.Context, g *store.Grant, scopes []string, keep []json.RawMessage, revoked []consent.Permission, raw []json.RawMessage, now time.Time) error {
	details, err := json.Marshal(keep)
	if err != nil {
		return fmt.Errorf("oauth: grant %s: %w", g.ID, err)
	}
	remember, err := s.rememberedAfter(ctx, g, revoked, raw, now)
	if err != nil {
		return err
	}
	switch err := s.st.NarrowGrant(ctx, g, scopes, details, remember); {
	case errors.Is(err, store.ErrNotFound):
		return oauthErr(codeUnknownGrant, fmt.Sprintf("grant_id: grant %s was revoked or changed meanwhile; reload the list", g.ID))
	case errors.Is(err, store.ErrGrantsChanged):
		return grantsChanged(g)
	case err != nil:
		return err
	}
	return nil
}

// revokeWhole revokes the whole grant g, whose entries are held (raw: its
// authorization_details objects).
func (s *connectedHandler) revokeWhole(ctx context.Context, g *store.Grant, held []consent.Permission, raw []json.RawMessage, now time.Time) error {
	remember, err := s.rememberedAfter(ctx, g, held, raw, now)
	if err != nil {
		return err
	}
	err = s.st.RevokeSubjectGrant(ctx, g.SubjectID, g.ID, now, remember)
	if err == nil {
		s.grantRevoked(ctx, g.ClientID, g.SubjectID, g.ID, audit.Subject(g.SubjectID), "connected_apps")
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return oauthErr(codeUnknownGrant, fmt.Sprintf("grant_id: grant %s was revoked meanwhile; reload the list", g.ID))
	case errors.Is(err, store.ErrGrantsChanged):
		return grantsChanged(g)
	}
	return err
}

// grantsChanged refuses a revocation whose remembered consent relied on
// another grant of g's client that was revoked or changed meanwhile.
func grantsChanged(g *store.Grant) error {
	return oauthErr(codeGrantsChanged, fmt.Sprintf("grant_id: another grant of client %s was revoked or changed meanwhile; nothing was revoked: reload the list and try again", g.ClientID))
}

// rememberedAfter is the subject's remembered consent for g's client once
// the entries revoked (of g; raw: g's authorization_details objects) are
// gone from g: without each of them (consent.Forget), except an entry
// another active grant of the subject and client still holds, which the
// subject has not taken from the client, so that the next sign-in asks
// again for what the client no longer holds and for nothing else. The
// grants that keep an entry go with it (store.Remember.HeldBy): the store
// refuses the revocation if one of them changed meanwhile, also when they
// keep every revoked entry and the consent stays as it is. It is nil when
// no revoked entry is remembered.
func (s *connectedHandler) rememberedAfter(ctx context.Context, g *store.Grant, revoked []consent.Permission, raw []json.RawMessage, now time.Time) (*store.Remember, error) {
	c, err := s.st.Consent(ctx, g.SubjectID, g.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	perms := c.Permissions
	for _, p := range revoked {
		var d json.RawMessage
		if p.Index != nil && *p.Index < len(raw) {
			d = raw[*p.Index]
		}
		perms = consent.Forget(perms, p, d)
	}
	if len(perms) == len(c.Permissions) {
		return nil, nil
	}
	gs, err := s.st.SubjectGrants(ctx, g.SubjectID)
	if err != nil {
		return nil, err
	}
	others := slices.DeleteFunc(gs, func(o *store.Grant) bool { return o.ClientID != g.ClientID || o.ID == g.ID })
	var heldBy []*store.Grant
	kept := slices.DeleteFunc(slices.Clone(c.Permissions), func(k string) bool {
		if slices.Contains(perms, k) {
			return false
		}
		i := slices.IndexFunc(others, func(o *store.Grant) bool { return consent.HeldBy(k, o.Scopes, o.Details) })
		if i < 0 {
			return true
		}
		if !slices.Contains(heldBy, others[i]) {
			heldBy = append(heldBy, others[i])
		}
		return false
	})
	if len(kept) == len(c.Permissions) {
		// Nothing to forget, for as long as the grants that hold it
		// are as read: the store checks them all the same.
		return &store.Remember{HeldBy: heldBy}, nil
	}
	return &store.Remember{Consent: &store.Consent{SubjectID: g.SubjectID, ClientID: g.ClientID, OrgID: c.OrgID, Permissions: kept,
		AccountID: c.AccountID, UpdatedAt: now}, HeldBy: heldBy}, nil
}

// connectedNotices are the status notices of the page after a revocation
// (Post/Redirect/Get): the redirect's done names one of them, and any
// other value shows none, so that a link cannot make the server's page
// say what its author wants.
var connectedNotices = map[string]string{
	"entry": "The entry was revoked: the Miniapp keeps the rest of the grant, and asks again for what was revoked at its next sign-in.",
	"grant": "The grant was revoked: its tokens stop working now, and the Miniapp asks again at its next sign-in.",
}

// handleConnectedPage shows the signed-in subject's grants, or the sign-in
// form when the browser is not signed in.
func (s *connectedHandler) handleConnectedPage(w http.ResponseWriter, r *http.Request) {
	s.renderConnected(w, r, http.StatusOK, "", connectedNotices[r.URL.Query().Get("done")])
}

func (s *connectedHandler) renderConnected(w http.ResponseWriter, r *http.Request, status int, errMsg, notice string) {
	se, err := s.sess.ensureSession(w, r)
	if err != nil {
		s.errorPage(w, r, s.asError(r, err))
		return
	}
	v := connectedView{Subject: se.subject(), CSRF: se.csrf, Clients: []ConnectedClient{}, Error: errMsg, Notice: notice}
	if v.Subject == "" {
		if v.Subjects, err = s.st.Subjects(r.Context()); err != nil {
			s.errorPage(w, r, s.asError(r, err))
			return
		}
	} else {
		if sub, err := s.st.Subject(r.Context(), v.Subject); err == nil {
			v.SubjectName = sub.Profile.Name
		}
		if v.Clients, err = s.connectedOf(r.Context(), v.Subject); err != nil {
			s.errorPage(w, r, s.asError(r, err))
			return
		}
	}
	s.render(w, r, status, s.pages.connected, v)
}

// postedConnected checks a form post of the page: its Origin, the form,
// and the CSRF token of the browser's session. On failure it has written
// the error page and returns nil.
func (s *connectedHandler) postedConnected(w http.ResponseWriter, r *http.Request) *session {
	oe := s.sameOrigin(r)
	if oe == nil {
		if err := parsePostForm(w, r); err != nil {
			oe = s.asError(r, err)
		}
	}
	var se *session
	if oe == nil {
		var err error
		if se, err = s.sess.sessionFrom(r); err != nil {
			oe = s.asError(r, err)
		} else if se == nil || !csrfMatches(se, r.PostForm.Get("csrf")) {
			oe = oauthErr(codeBadCSRF, "the form is stale or was not sent by this page; reload the page and try again")
		}
	}
	if oe != nil {
		if oe.Code == codeCrossOrigin || oe.Code == codeBadCSRF {
			s.render(w, r, http.StatusForbidden, s.pages.errorPage, oe)
		} else {
			s.errorPage(w, r, oe)
		}
		return nil
	}
	return se
}

// handleConnectedLoginForm signs the browser in as the chosen subject.
func (s *connectedHandler) handleConnectedLoginForm(w http.ResponseWriter, r *http.Request) {
	se := s.postedConnected(w, r)
	if se == nil {
		return
	}
	sub, err := s.st.Subject(r.Context(), r.PostForm.Get("subject"))
	if err != nil {
		s.renderConnected(w, r, http.StatusBadRequest, "subject: pick one of the listed subjects", "")
		return
	}
	if _, err := s.sess.signIn(w, r, se, sub.ID); err != nil {
		s.errorPage(w, r, s.asError(r, err))
		return
	}
	http.Redirect(w, r, s.path(pathConnected), http.StatusSeeOther)
}

// handleConnectedRevokeForm revokes an entry (form value entry) or the
// whole grant (no entry) and shows the page again.
func (s *connectedHandler) handleConnectedRevokeForm(w http.ResponseWriter, r *http.Request) {
	se := s.postedConnected(w, r)
	if se == nil {
		return
	}
	if se.subject() == "" {
		s.renderConnected(w, r, http.StatusUnauthorized, "sign in first", "")
		return
	}
	_, whole, err := s.revokeEntry(r.Context(), se.subject(), r.PostForm.Get("grant_id"), r.PostForm.Get("entry"))
	if err != nil {
		oe := s.asError(r, err)
		s.renderConnected(w, r, statusOf(oe.Code), oe.Description, "")
		return
	}
	done := "entry"
	if whole {
		done = "grant"
	}
	http.Redirect(w, r, s.path(pathConnected)+"?done="+done, http.StatusSeeOther)
}

// handleConnectedAPI answers the session's subject, CSRF token and
// grants; a browser without a session gets one (not signed in).
func (s *connectedHandler) handleConnectedAPI(w http.ResponseWriter, r *http.Request) {
	se, err := s.sess.ensureSession(w, r)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	v := connectedView{Subject: se.subject(), CSRF: se.csrf, Clients: []ConnectedClient{}}
	if v.Subject != "" {
		if sub, err := s.st.Subject(r.Context(), v.Subject); err == nil {
			v.SubjectName = sub.Profile.Name
		}
		if v.Clients, err = s.connectedOf(r.Context(), v.Subject); err != nil {
			s.writeJSONError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// postedAPI checks a JSON post of the API: Origin, session, CSRF header,
// and reads its body into v. On failure it has written the error.
func (s *connectedHandler) postedAPI(w http.ResponseWriter, r *http.Request, v any) *session {
	if oe := s.sameOrigin(r); oe != nil {
		writeJSONStatus(w, http.StatusForbidden, oe)
		return nil
	}
	se, err := s.sess.sessionFrom(r)
	if err != nil {
		s.writeJSONError(w, r, err)
		return nil
	}
	if se == nil || !csrfMatches(se, r.Header.Get(headerCSRF)) {
		writeJSONStatus(w, http.StatusForbidden, oauthErr(codeBadCSRF, headerCSRF+": send the csrf of GET "+pathConnectedAPI+" from this browser session"))
		return nil
	}
	if err := httplimit.ReadJSON(w, r, maxBodyBytes, v); err != nil {
		s.writeJSONError(w, r, bodyErr(err, "the body must be one JSON object of the documented members"))
		return nil
	}
	return se
}

// writeJSONStatus writes an error body with a status of its own.
func writeJSONStatus(w http.ResponseWriter, status int, oe *Error) {
	writeJSON(w, status, struct {
		Error       string `json:"error"`
		Description string `json:"error_description,omitempty"`
	}{oe.Code, oe.describe()})
}

// handleConnectedAPILogin signs the session in: {"subject": "sub_ana"}.
func (s *connectedHandler) handleConnectedAPILogin(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Subject string `json:"subject"`
	}
	se := s.postedAPI(w, r, &in)
	if se == nil {
		return
	}
	sub, err := s.st.Subject(r.Context(), in.Subject)
	if err != nil {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, fmt.Sprintf("subject: %q is not a subject of this server", in.Subject)))
		return
	}
	ns, err := s.sess.signIn(w, r, se, sub.ID)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"subject": sub.ID, "csrf": ns.csrf})
}

// handleConnectedAPIRevoke revokes {"grant_id", "entry"}; without entry,
// the whole grant.
func (s *connectedHandler) handleConnectedAPIRevoke(w http.ResponseWriter, r *http.Request) {
	var in struct {
		GrantID string `json:"grant_id"`
		Entry   string `json:"entry"`
	}
	se := s.postedAPI(w, r, &in)
	if se == nil {
		return
	}
	if se.subject() == "" {
		writeJSONStatus(w, http.StatusUnauthorized, oauthErr(codeNotSignedIn, "sign in first: POST "+pathConnectedAPIIn))
		return
	}
	if in.GrantID == "" {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, "grant_id: missing; GET "+pathConnectedAPI+" lists the grants"))
		return
	}
	gone, whole, err := s.revokeEntry(r.Context(), se.subject(), in.GrantID, in.Entry)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"grant_id": in.GrantID, "revoked": gone, "whole_grant": whole})
}
