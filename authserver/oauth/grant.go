package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Grant endpoint client credentials. The Authorization header carries the
// Bearer token, so the calling Resource Server's own credential travels in
// these two headers (docs/authserver.md).
// A caller that authenticates with private_key_jwt sends its client
// assertion in X-Client-Assertion instead of the secret (RFC 7523 §2.2,
// carried in a header because the request has no body).
const (
	headerClientID        = "X-Client-Id"
	headerClientSecret    = "X-Client-Secret"
	headerClientAssertion = "X-Client-Assertion"
)

// grantBody is the response of GET {base_url}/authorization (docs/service.md §2.6, §4.1).
type grantBody struct {
	Scopes                 []string        `json:"scopes"`
	AuthorizationDetails   json.RawMessage `json:"authorizationDetails"`
	OrgID                  *string         `json:"orgId"`
	Subject                string          `json:"subject"`
	ConsumerInstallationID string          `json:"consumerInstallationId"`
}

// base64url marks the characters of the base64url alphabet (RFC 4648 §5).
var base64url = func() (t [256]bool) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" {
		t[c] = true
	}
	return t
}()

// wellFormedJWT reports whether tok has the shape of a compact JWS: three
// non-empty base64url segments.
func wellFormedJWT(tok string) bool {
	parts := 0
	seg := 0
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case base64url[c]:
			seg++
		case c == '.':
			if seg == 0 {
				return false
			}
			parts++
			seg = 0
		default:
			return false
		}
	}
	return parts == 2 && seg > 0
}

// resourceHandler answers the service's resource endpoints: the grant
// endpoint GET {base_url}/authorization (docs/service.md §4.1), for a
// Resource Server authenticated with its own credential, and the charges
// within a grant's transaction limits (charge.go). It reads tokens
// through bearerTokens and stores nothing.
type resourceHandler struct {
	*base
	auth   *clientAuth
	dpop   *dpopVerifier
	tokens *bearerTokens
}

// bearerTokens looks up the access tokens this server issued, for the
// endpoints a token is presented to: userinfo, the grant endpoint, Grant
// Management and charges.
type bearerTokens struct {
	*base
	st accessTokens
}

// accessTokens is what bearerTokens reads.
type accessTokens interface {
	LookupAccessToken(ctx context.Context, hash []byte) (*store.AccessToken, *store.Grant, error)
}

// activeToken looks up an access token this server issued and reports why
// it cannot be used: unknown, expired or revoked (itself or its grant).
func (s *bearerTokens) activeToken(ctx context.Context, tok string) (*store.AccessToken, *store.Grant, error) {
	at, g, err := s.issuedToken(ctx, tok)
	if err != nil {
		return nil, nil, err
	}
	if err := s.usable(at, g); err != nil {
		return nil, nil, err
	}
	return at, g, nil
}

// issuedToken looks up an access token this server issued, whatever its
// state.
func (s *bearerTokens) issuedToken(ctx context.Context, tok string) (*store.AccessToken, *store.Grant, error) {
	at, g, err := s.st.LookupAccessToken(ctx, store.AccessTokenKey(tok))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, oauthErr(codeInvalidToken, "the token was not issued by this server")
	case err != nil:
		return nil, nil, err
	}
	return at, g, nil
}

// usable reports why an issued token cannot be used now: it or its grant
// was revoked, or it has expired.
func (s *bearerTokens) usable(at *store.AccessToken, g *store.Grant) error {
	switch {
	case at.Revoked || g.Revoked():
		return oauthErr(codeRevokedToken, "the token or its grant was revoked")
	case !s.cfg.Now().Before(at.ExpiresAt):
		return oauthErr(codeExpiredToken, "the token has expired")
	}
	return nil
}

// mayReadGrant says whether an authenticated client may read a grant: the
// client the grant was issued to (a developer debugging a permission), or a
// Resource Server whose resource is in the grant's audience.
func (s *base) mayReadGrant(c *store.Client, g *store.Grant) bool {
	if c.ID == g.ClientID {
		return true
	}
	return c.HasRole(store.RoleResourceServer) && slices.Contains(g.Audience, s.resourceOf(c))
}

// handleGrant serves GET {base_url}/authorization: the grant behind a
// Bearer token, for a Resource Server authenticated with its own client
// credential (docs/service.md §4.1 and §5.6).
//
// The caller is authenticated and checked against the grant before
// anything is said about the token's state: a client that may not read the
// grant learns only client_not_allowed, never whether the token has
// expired or was revoked (RFC 7662 §4 takes the same care for
// introspection). Only an unknown token is named as such before the
// audience check, because there is no grant to check the caller against.
func (s *resourceHandler) handleGrant(w http.ResponseWriter, r *http.Request) {
	c, err := s.grantCaller(r)
	if err != nil {
		s.writeGrantError(w, r, err)
		return
	}
	tok, dpop, err := presentedToken(r)
	if err != nil {
		s.writeGrantError(w, r, err)
		return
	}
	at, g, err := s.tokens.issuedToken(r.Context(), tok)
	if err != nil {
		s.writeGrantError(w, r, err)
		return
	}
	// A fault is scoped to the token's client: the Miniapp whose Resource
	// Server reads the grant (faults.go).
	if oe, done := s.injectFault(w, r, FaultGrant, g.ClientID, func() string { return g.SubjectID }); done {
		return
	} else if oe != nil {
		s.writeGrantError(w, r, oe)
		return
	}
	if !s.mayReadGrant(c, g) {
		s.writeGrantError(w, r, oauthErr(codeClientNotAllowed, "this client is neither the token's client nor a Resource Server in its audience"))
		return
	}
	method, htu := s.grantProofCheck(c, g)
	if err := s.dpop.checkBound(r, tok, dpop, g, method, htu); err != nil {
		s.writeGrantError(w, r, err)
		return
	}
	if err := s.tokens.usable(at, g); err != nil {
		s.writeGrantError(w, r, err)
		return
	}
	b, err := appendGrantBody(make([]byte, 0, 256+len(g.Details)), g)
	if err != nil {
		s.writeGrantError(w, r, err)
		return
	}
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Cache-Control"] = headerNoStore
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// grantCaller authenticates the caller of the grant endpoint (docs/service.md
// §4.1, "This project"): X-Client-Id and X-Client-Secret, or, for a
// credential that authenticates with private_key_jwt (docs/fapi.md), a
// client assertion in X-Client-Assertion (RFC 7523 §3: iss and sub the
// client_id, aud the issuer or this endpoint's URL, a jti used once),
// with X-Client-Id optional beside it. A wrong secret is answered without
// detail; a refused assertion names the rule, as at the token endpoint.
func (s *resourceHandler) grantCaller(r *http.Request) (*store.Client, error) {
	id, secret, assertion := r.Header.Get(headerClientID), r.Header.Get(headerClientSecret), r.Header.Get(headerClientAssertion)
	switch {
	case assertion != "" && secret != "":
		return nil, oauthErr(codeInvalidClientCredentials, "send one credential: "+headerClientSecret+" or "+headerClientAssertion+", not both (RFC 6749 section 2.3)")
	case assertion != "":
		c, err := s.auth.checkAssertion(r, assertion, id)
		if oe, ok := err.(*Error); ok && oe.Code == codeInvalidClient {
			err = oauthErr(codeInvalidClientCredentials, oe.Description)
		}
		return c, err
	case id == "" || secret == "":
		return nil, oauthErr(codeMissingClientCredentials, "send the Resource Server's credential in "+headerClientID+" and "+headerClientSecret+
			", or, for a credential with private_key_jwt, a client assertion in "+headerClientAssertion)
	}
	c, err := s.auth.checkSecret(r.Context(), id, secret, headerClientSecret)
	if oe, ok := err.(*Error); ok && oe.Code == codeInvalidClient {
		err = oauthErr(codeInvalidClientCredentials, oe.Description)
	}
	return c, err
}

// appendGrantBody appends the grantBody of g, encoded as json.Marshal
// encodes it (TestGrantBodyEncoding), without reflection and without
// re-compacting the stored authorization_details: it is the grant
// endpoint's largest cost after net/http's own, at tens of thousands of
// requests per second. The details are stored by this server only, as
// json.Marshal wrote them (an approval), so they are copied as they are
// when they look so; anything else goes through json.Marshal.
func appendGrantBody(b []byte, g *store.Grant) ([]byte, error) {
	b = append(b, `{"scopes":[`...)
	for i, s := range g.Scopes {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	b = append(b, `],"authorizationDetails":`...)
	switch d := g.Details; {
	case len(d) == 0:
		b = append(b, "null"...)
	case compactJSON(d):
		b = append(b, d...)
	default:
		q, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("oauth: grant %s: authorization_details: %w", g.ID, err)
		}
		b = append(b, q...)
	}
	b = append(b, `,"orgId":`...)
	if g.OrgID == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, g.OrgID)
	}
	b = append(b, `,"subject":`...)
	b = appendJSONString(b, g.SubjectID)
	b = append(b, `,"consumerInstallationId":`...)
	b = appendJSONString(b, g.InstallationID)
	return append(b, '}'), nil
}

// compactJSON reports whether d has no whitespace outside its strings and
// no character json.Marshal would escape or replace, as Marshal writes a
// document (its validity is the writer's: this server's approvals).
func compactJSON(d []byte) bool {
	in := false
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case c == '"' && !in:
			in = true
		case c == '"':
			in = false
		case c == '\\' && in:
			i++ // the escaped character
		case c < 0x20 || c == '<' || c == '>' || c == '&' || c >= 0x80:
			return false
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return !in
}

// appendJSONString appends s as a JSON string as json.Marshal writes it;
// plain printable ASCII is copied, anything else is left to json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
