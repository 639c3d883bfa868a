package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// introspection is an RFC 7662 §2.2 response, with the granted
// authorization_details as a top-level member (RFC 9396 §9.2).
type introspection struct {
	Active               bool            `json:"active"`
	Scope                string          `json:"scope,omitempty"`
	ClientID             string          `json:"client_id,omitempty"`
	TokenType            string          `json:"token_type,omitempty"`
	Exp                  int64           `json:"exp,omitempty"`
	Iat                  int64           `json:"iat,omitempty"`
	Sub                  string          `json:"sub,omitempty"`
	Aud                  any             `json:"aud,omitempty"`
	Iss                  string          `json:"iss,omitempty"`
	Jti                  string          `json:"jti,omitempty"`
	OrgID                string          `json:"org_id,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	// GrantID is the token's grant (FAPI Grant Management §5.3).
	GrantID string `json:"grant_id,omitempty"`
	// Cnf is a DPoP-bound token's key (RFC 9449 §6.2), whose proof the
	// Resource Server checks.
	Cnf *cnfClaim `json:"cnf,omitempty"`
}

// handleIntrospect serves RFC 7662 introspection. The caller authenticates
// as a confidential client (§2.1: the endpoint MUST require authorization,
// and a public client's client_id proves nothing); a token it may not see is
// reported inactive, exactly as an unknown one (§2.2), so introspection
// reveals nothing else.
func (s *tokenHandler) handleIntrospect(w http.ResponseWriter, r *http.Request) {
	if err := parsePostForm(w, r); err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	c, err := s.auth.authenticateClient(r)
	if err == nil && c.Type != store.Confidential {
		err = &Error{Code: codeInvalidClient, Description: "introspection needs a confidential client's credential", challenge: `Basic realm="oauth"`}
	}
	if err == nil {
		if oe, done := s.injectFault(w, r, FaultIntrospection, c.ID, func() string { return grantSubject(r.Context(), s.st, r.PostForm) }); done {
			return
		} else if oe != nil {
			err = oe
		}
	}
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, "token is missing"))
		return
	}
	out, err := s.introspect(r.Context(), c, tok)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// introspect describes a token to client c: an access token, else a
// refresh token, active only when live and c may read its grant
// (mayReadGrant); anything else is inactive, as an unknown token is.
func (s *tokenHandler) introspect(ctx context.Context, c *store.Client, tok string) (introspection, error) {
	now := s.cfg.Now()
	at, g, err := s.st.LookupAccessToken(ctx, store.AccessTokenKey(tok))
	if err == nil {
		if !at.Revoked && !g.Revoked() && now.Before(at.ExpiresAt) && s.mayReadGrant(c, g) {
			out := s.describe(g, "Bearer", at.IssuedAt.Unix(), at.ExpiresAt.Unix(), at.JTI)
			if jkt := tokenJKT(tok); jkt != "" {
				out.TokenType, out.Cnf = "DPoP", &cnfClaim{Jkt: jkt}
			}
			return out, nil
		}
		return introspection{}, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return introspection{}, err
	}
	rt, g, err := s.st.LookupRefreshToken(ctx, store.SecretKey(tok))
	if err == nil {
		if !rt.Used && !g.Revoked() && now.Before(rt.ExpiresAt) && s.mayReadGrant(c, g) {
			return s.describe(g, "refresh_token", rt.IssuedAt.Unix(), rt.ExpiresAt.Unix(), ""), nil
		}
		return introspection{}, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return introspection{}, err
	}
	return introspection{}, nil
}

func (s *tokenHandler) describe(g *store.Grant, typ string, iat, exp int64, jti string) introspection {
	out := introspection{Active: true, Scope: strings.Join(g.Scopes, " "), ClientID: g.ClientID, TokenType: typ,
		Exp: exp, Iat: iat, Sub: g.SubjectID, Aud: audClaim(g.Audience), Iss: s.cfg.Issuer, Jti: jti, OrgID: g.OrgID,
		GrantID: g.GrantManagementID()}
	if string(g.Details) != "[]" {
		out.AuthorizationDetails = g.Details
	}
	return out
}

// handleRevoke serves RFC 7009 revocation. Revoking a refresh token revokes
// its whole grant (RFC 7009 §2.1 allows it; the grant's access tokens go
// with it). A token that is unknown gets 200 as §2.2 requires, but a storage
// failure is reported, never swallowed.
func (s *tokenHandler) handleRevoke(w http.ResponseWriter, r *http.Request) {
	varyOrigin(w)
	if err := parsePostForm(w, r); err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	c, err := s.auth.authenticateClient(r)
	if err == nil {
		err = allowOrigin(w, r, c)
	}
	if err == nil {
		if oe, done := s.injectFault(w, r, FaultRevocation, c.ID, func() string { return grantSubject(r.Context(), s.st, r.PostForm) }); done {
			return
		} else if oe != nil {
			err = oe
		}
	}
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, "token is missing"))
		return
	}
	ctx := r.Context()
	at, g, err := s.st.LookupAccessToken(ctx, store.AccessTokenKey(tok))
	switch {
	case err == nil:
		if g.ClientID != c.ID {
			s.writeJSONError(w, r, oauthErr(codeUnauthorizedClient, "the token was issued to another client"))
			return
		}
		if err = s.st.RevokeAccessToken(ctx, at.Hash); err == nil {
			s.grantRevoked(ctx, g.ClientID, g.SubjectID, g.ID, audit.Client(c.ID), "revocation_access_token")
		}
	case errors.Is(err, store.ErrNotFound):
		var rg *store.Grant
		if _, rg, err = s.st.LookupRefreshToken(ctx, store.SecretKey(tok)); err == nil {
			if rg.ClientID != c.ID {
				s.writeJSONError(w, r, oauthErr(codeUnauthorizedClient, "the token was issued to another client"))
				return
			}
			if err = s.st.RevokeGrant(ctx, rg.ID, s.cfg.Now()); err == nil {
				s.grantRevoked(ctx, rg.ClientID, rg.SubjectID, rg.ID, audit.Client(c.ID), "revocation")
			}
		} else if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	}
	if err != nil {
		s.log.ErrorContext(ctx, "oauth: revocation failed", "err", err)
		s.writeJSONError(w, r, oauthErr(codeTemporarilyUnavailable, "the token could not be revoked; retry"))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// handleUserinfo serves the OpenID Connect userinfo endpoint (OIDC Core
// §5.3): the claims of the profile, email, phone and address scopes.
func (s *tokenHandler) handleUserinfo(w http.ResponseWriter, r *http.Request) {
	varyOrigin(w)
	bearerErr := func(code, desc string) {
		s.writeJSONError(w, r, &Error{Code: code, Description: desc, bearer: true})
	}
	tok, dpop, err := presentedToken(r)
	if err != nil {
		bearerErr(codeInvalidToken, "a Bearer access token (or a DPoP-bound one with its proof) is required")
		return
	}
	// The token's client is known before its state is said (cors.go): a
	// page of an allowed origin reads that its token expired, a page of
	// another origin learns nothing.
	at, g, err := s.tokens.issuedToken(r.Context(), tok)
	if err == nil {
		var c *store.Client
		if c, err = s.clients.get(r.Context(), g.ClientID); errors.Is(err, store.ErrNotFound) {
			err = oauthErr(codeInvalidToken, "the token's client was removed")
		} else if err == nil {
			if err = allowOrigin(w, r, c); err != nil {
				s.writeJSONError(w, r, err)
				return
			}
			if oe, done := s.injectFault(w, r, FaultUserinfo, c.ID, func() string { return g.SubjectID }); done {
				return
			} else if oe != nil {
				s.writeJSONError(w, r, oe)
				return
			}
			if err = s.dpop.checkBound(r, tok, dpop, g, r.Method, sameURL(s.requestURL(r))); err == nil {
				err = s.tokens.usable(at, g)
			}
		}
	}
	if err != nil {
		if oe, ok := err.(*Error); ok && oe.dpopChallenge == "" {
			bearerErr(codeInvalidToken, oe.Description)
			return
		}
		s.writeJSONError(w, r, err)
		return
	}
	if !slices.Contains(g.Scopes, "openid") {
		bearerErr(codeInsufficientScope, "the token was not granted the openid scope")
		return
	}
	sub, err := s.st.Subject(r.Context(), g.SubjectID)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, userinfoClaims(sub, g.Scopes))
}

// userinfoClaims are the claims of a subject that a grant's scopes give
// (OpenID Connect Core §5.4).
func userinfoClaims(sub store.Subject, scopes []string) map[string]any {
	out := map[string]any{"sub": sub.ID}
	p := sub.Profile
	if slices.Contains(scopes, "profile") {
		out["name"], out["given_name"], out["family_name"] = p.Name, p.GivenName, p.FamilyName
	}
	if slices.Contains(scopes, "email") && p.Email != "" {
		out["email"], out["email_verified"] = p.Email, p.EmailVerified
	}
	if slices.Contains(scopes, "phone") && p.PhoneNumber != "" {
		out["phone_number"], out["phone_number_verified"] = p.PhoneNumber, p.PhoneNumberVerified
	}
	if slices.Contains(scopes, "addresses:read") && len(p.Addresses) > 0 {
		a := p.Addresses[0]
		out["address"] = map[string]string{"street_address": a.StreetAddress, "locality": a.Locality,
			"region": a.Region, "postal_code": a.PostalCode, "country": a.Country}
	}
	return out
}
