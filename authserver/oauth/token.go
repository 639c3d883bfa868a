package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// parsePostForm reads an application/x-www-form-urlencoded body.
func parsePostForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		return bodyErr(err, "the body must be application/x-www-form-urlencoded")
	}
	return nil
}

// tokenHandler answers the endpoints a client presents a credential or a
// token to: the token endpoint (RFC 6749 §3.2: the code exchange and the
// refresh), RFC 7662 introspection, RFC 7009 revocation and userinfo
// (OpenID Connect Core §5.3). It signs tokens with the server's keys.
type tokenHandler struct {
	*base
	st     tokenStore
	auth   *clientAuth
	dpop   *dpopVerifier
	tokens *bearerTokens // userinfo's token
	sec    *securityCache
	keys   *atomic.Pointer[keySet] // the signing keys (keys.go)
}

// tokenStore is what the token, introspection, revocation and userinfo
// endpoints read and write (storage.go says what each must guarantee).
type tokenStore interface {
	// The code exchange.
	PeekCode(ctx context.Context, hash []byte) (c *store.Code, used bool, err error)
	RedeemCode(ctx context.Context, hash []byte, now time.Time) (*store.Code, error)
	RedeemCodeFor(ctx context.Context, hash []byte, now time.Time, at *store.AccessToken, rt *store.RefreshToken) error
	Grant(ctx context.Context, id string) (*store.Grant, error)
	// The refresh.
	UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (*store.RefreshToken, error)
	AddTokens(ctx context.Context, at *store.AccessToken, rt *store.RefreshToken) error
	// Introspection and revocation.
	LookupAccessToken(ctx context.Context, hash []byte) (*store.AccessToken, *store.Grant, error)
	LookupRefreshToken(ctx context.Context, hash []byte) (*store.RefreshToken, *store.Grant, error)
	RevokeAccessToken(ctx context.Context, hash []byte) error
	RevokeGrant(ctx context.Context, id string, now time.Time) error
	// Userinfo's claims.
	Subject(ctx context.Context, id string) (store.Subject, error)
}

// tokenResponse is RFC 6749 §5.1 with RFC 9396 §7 and OIDC Core §3.1.3.3.
type tokenResponse struct {
	AccessToken          string          `json:"access_token"`
	TokenType            string          `json:"token_type"`
	ExpiresIn            int64           `json:"expires_in"`
	Scope                string          `json:"scope,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	IDToken              string          `json:"id_token,omitempty"`
	RefreshToken         string          `json:"refresh_token,omitempty"`
	// GrantID names the grant (FAPI Grant Management §5.3), for a merge,
	// a replace, or the grant management endpoint.
	GrantID string `json:"grant_id,omitempty"`
	// grant is the grant the tokens are of, for the audit event; never written.
	grant *store.Grant
}

// handleToken serves the token endpoint (RFC 6749 §3.2).
func (s *tokenHandler) handleToken(w http.ResponseWriter, r *http.Request) {
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
		if oe, done := s.injectFault(w, r, FaultToken, c.ID, func() string { return grantSubject(r.Context(), s.st, r.PostForm) }); done {
			return
		} else if oe != nil {
			err = oe
		}
	}
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	// A DPoP proof binds the tokens to its key (dpop.go).
	jkt, err := s.dpop.tokenProof(r, c)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	var resp *tokenResponse
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "authorization_code":
		resp, err = s.exchangeCode(r.Context(), c, r.PostForm, jkt)
	case "refresh_token":
		resp, err = s.refresh(r.Context(), c, r.PostForm, jkt)
	case "":
		err = oauthErr(codeInvalidRequest, "grant_type is missing")
	default:
		err = oauthErr(codeUnsupportedGrantType, "grant_type "+echo(gt)+" is not supported: it must be authorization_code or refresh_token")
	}
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	w.Header()["Pragma"] = headerNoCache
	if jkt != "" {
		w.Header().Set(headerDPoPNonce, s.newNonce()) // the nonce for the next proof (RFC 9449 §8)
	}
	s.tokenIssued(r, c.ID, resp)
	writeJSON(w, http.StatusOK, resp)
}

// exchangeCode redeems an authorization code (RFC 6749 §4.1.3, RFC 7636
// §4.6). The code is read first, checked, and the tokens signed; then one
// write spends the code and stores the tokens, atomically, so a code is
// redeemed once however many requests race for it.
//
// Nothing about the code is acted on before the request is known to come
// from the code's client, with the code's DPoP key when it is bound
// (dpop_jkt): a code sent by another client, or with another key, is
// refused and left as it is, spent or not. Otherwise anyone who saw a
// code (in a log, a referrer, a shared screen) could burn the owner's
// redemption or, with a spent code, revoke the owner's grant, from any
// public client. From then on, a failed check spends the code too, so a
// wrong verifier cannot be followed by a right one, and a spent code
// revokes its grant: the client presented it twice (RFC 6749 §4.1.2).
// The refresh token is checked in the same order (refresh).
// jkt is the thumbprint of the request's DPoP key, "" without a proof.
func (s *tokenHandler) exchangeCode(ctx context.Context, c *store.Client, f url.Values, jkt string) (*tokenResponse, error) {
	code := f.Get("code")
	if code == "" {
		return nil, oauthErr(codeInvalidRequest, "code is missing")
	}
	now := s.cfg.Now()
	hash := store.SecretKey(code)
	replay := oauthErr(codeInvalidGrant, "the code was already used; every token issued from it is revoked")
	rc, used, err := s.st.PeekCode(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, oauthErr(codeInvalidGrant, "unknown code")
	case err != nil:
		return nil, err
	case rc.ClientID != c.ID:
		return nil, oauthErr(codeInvalidGrant, "the code was issued to another client: to "+echo(rc.ClientID)+", not to "+echo(c.ID)+", which sent it").
			compared("client_id", c.ID, rc.ClientID)
	case secretJKT(code) != "" && secretJKT(code) != jkt:
		return nil, oauthErr(codeInvalidGrant, "the code is bound to a DPoP key (dpop_jkt), "+echo(secretJKT(code))+"; "+proofKey(jkt)+
			": redeem it with a DPoP proof made with that key (RFC 9449 section 10)").compared("DPoP", jkt, secretJKT(code))
	case used:
		if err := s.spend(ctx, hash, now); err != nil {
			return nil, err
		}
		s.grantRevoked(ctx, rc.ClientID, "", rc.GrantID, audit.Client(c.ID), "code_replay")
		return nil, replay
	}
	refusal := codeRefusal(rc, f, now)
	var g *store.Grant
	if refusal == nil {
		if g, err = s.st.Grant(ctx, rc.GrantID); err != nil {
			return nil, err
		}
		if g.Revoked() {
			refusal = oauthErr(codeInvalidGrant, "the grant "+g.ID+" was revoked: authorize again")
		}
	}
	if refusal != nil {
		if err := s.spend(ctx, hash, now); err != nil {
			return nil, err
		}
		return nil, refusal
	}
	// A public client's refresh tokens are bound to its DPoP key (RFC
	// 9449 §5); a confidential client's are bound by its authentication.
	rtJKT := ""
	if c.Type == store.Public {
		rtJKT = jkt
	}
	m, err := s.mint(c, g, g.Scopes, rc.Nonce, true, jkt, rtJKT)
	if err != nil {
		return nil, err
	}
	err = s.st.RedeemCodeFor(ctx, hash, now, m.at, m.rt)
	if errors.Is(err, store.ErrReplayed) {
		s.grantRevoked(ctx, rc.ClientID, g.SubjectID, g.ID, audit.Client(c.ID), "code_replay")
		return nil, replay
	} else if err != nil {
		return nil, err
	}
	return m.resp, nil
}

// codeRefusal checks a code's redemption (RFC 6749 §4.1.3, RFC 7636
// §4.6): unexpired, the authorization request's redirect_uri, and the
// PKCE verifier of its challenge.
func codeRefusal(rc *store.Code, f url.Values, now time.Time) *Error {
	switch {
	case now.After(rc.ExpiresAt):
		return oauthErr(codeInvalidGrant, fmt.Sprintf("the code has expired: at %s, %s ago; redeem a code at once, within its lifetime",
			rc.ExpiresAt.UTC().Format(time.RFC3339), now.Sub(rc.ExpiresAt).Round(time.Second)))
	case f.Get("redirect_uri") == "":
		return oauthErr(codeInvalidGrant, "redirect_uri is missing: send the authorization request's, "+echo(rc.RedirectURI)+" (RFC 6749 §4.1.3)")
	case f.Get("redirect_uri") != rc.RedirectURI:
		return oauthErr(codeInvalidGrant, "redirect_uri "+echo(f.Get("redirect_uri"))+" differs from the authorization request's, "+
			echo(rc.RedirectURI)+": they must be identical (RFC 6749 §4.1.3)").compared("redirect_uri", f.Get("redirect_uri"), rc.RedirectURI)
	case !verifyPKCE(rc.Challenge, f.Get("code_verifier")):
		return oauthErr(codeInvalidGrant, pkceRefusal(rc.Challenge, f.Get("code_verifier"))).compared("code_challenge", s256Of(f.Get("code_verifier")), rc.Challenge)
	}
	return nil
}

// proofKey says which DPoP key a request's proof was made with, for a
// refusal comparing it with a binding: its thumbprint, or that there was
// no proof.
func proofKey(jkt string) string {
	if jkt == "" {
		return "this request has no DPoP proof"
	}
	return "this request's DPoP proof is made with the key " + echo(jkt)
}

// pkceRefusal says why verifier does not verify the code's challenge
// (RFC 7636 §4.6): missing, not of the verifier's form (its length, never
// itself: it is a secret), or its S256 against the authorization
// request's code_challenge, both of which the client sent in the clear.
func pkceRefusal(challenge, verifier string) string {
	switch {
	case challenge == "":
		return "the code has no code_challenge, so no code_verifier verifies it (RFC 9700 §4.8.2)"
	case verifier == "":
		return "code_verifier is missing: send the verifier of the authorization request's code_challenge " + echo(challenge) + " (RFC 7636 §4.5)"
	case !validVerifier(verifier):
		return fmt.Sprintf("code_verifier is %d bytes long or has a character outside A-Z a-z 0-9 - . _ ~; "+
			"it must be 43 to 128 of them (RFC 7636 §4.1)", len(verifier))
	}
	sum := sha256.Sum256([]byte(verifier))
	return "the S256 of the code_verifier sent is " + echo(base64.RawURLEncoding.EncodeToString(sum[:])) +
		", not the authorization request's code_challenge " + echo(challenge) + " (RFC 7636 §4.6)"
}

// refreshRefusal checks a refresh token before it is spent: issued to
// the client that sent it, its grant live and itself unexpired (a used one
// goes on to be spent, whose replay revokes the grant), and presented with
// the DPoP key it is bound to.
func refreshRefusal(c *store.Client, rt *store.RefreshToken, g *store.Grant, tok, jkt string, now time.Time) error {
	switch {
	case g.ClientID != c.ID:
		return oauthErr(codeInvalidGrant, "the refresh token was issued to another client: to "+echo(g.ClientID)+", not to "+echo(c.ID)+", which sent it").
			compared("client_id", c.ID, g.ClientID)
	case !rt.Used && g.Revoked():
		return oauthErr(codeInvalidGrant, "the grant "+g.ID+" was revoked: authorize again")
	case !rt.Used && now.After(rt.ExpiresAt):
		return oauthErr(codeInvalidGrant, refreshExpired(rt.ExpiresAt, now))
	case secretJKT(tok) != "" && secretJKT(tok) != jkt:
		return oauthErr(codeInvalidGrant, "the refresh token is bound to a DPoP key, "+echo(secretJKT(tok))+"; "+proofKey(jkt)+
			": present a DPoP proof made with that key (RFC 9449 section 5)").compared("DPoP", jkt, secretJKT(tok))
	}
	return nil
}

// refreshScopes are the scopes a refresh asks for: the grant's, or fewer
// (RFC 6749 §6).
func refreshScopes(g *store.Grant, scope string) ([]string, error) {
	if scope == "" {
		return g.Scopes, nil
	}
	scopes := strings.Fields(scope)
	for _, x := range scopes {
		if !slices.Contains(g.Scopes, x) {
			return nil, oauthErr(codeInvalidScope, "scope "+echo(x)+" was not granted: the grant's scopes are "+echoList(g.Scopes)+
				"; a refresh may narrow them, never widen (RFC 6749 §6)").compared("scope", x, strings.Join(g.Scopes, " "))
		}
	}
	return scopes, nil
}

// rotate spends a refresh token and returns its grant as it is after the
// spend (before is the grant as read before it). A used token goes on to
// UseRefreshToken, whose replay revokes the grant: its owner presented it
// twice.
func (s *tokenHandler) rotate(ctx context.Context, rt *store.RefreshToken, before *store.Grant, key []byte, now time.Time) (*store.Grant, error) {
	if _, err := s.st.UseRefreshToken(ctx, key, now); err != nil {
		switch {
		case errors.Is(err, store.ErrReplayed):
			s.grantRevoked(ctx, before.ClientID, before.SubjectID, rt.GrantID, audit.Client(before.ClientID), "refresh_reuse")
			return nil, oauthErr(codeInvalidGrant, "the refresh token was already used; the grant is revoked")
		case errors.Is(err, store.ErrNotFound):
			return nil, oauthErr(codeInvalidGrant, "unknown refresh token")
		}
		return nil, err
	}
	// The grant may have been revoked between the read and the spend.
	g, err := s.st.Grant(ctx, rt.GrantID)
	if err != nil {
		return nil, err
	}
	switch {
	case g.Revoked():
		return nil, oauthErr(codeInvalidGrant, "the grant "+g.ID+" was revoked: authorize again")
	case now.After(rt.ExpiresAt):
		return nil, oauthErr(codeInvalidGrant, refreshExpired(rt.ExpiresAt, now))
	}
	return g, nil
}

// refreshExpired is the refusal of a refresh token past its expiry.
func refreshExpired(at, now time.Time) string {
	return fmt.Sprintf("the refresh token has expired: at %s, %s ago; authorize again", at.UTC().Format(time.RFC3339), now.Sub(at).Round(time.Second))
}

// spend marks a code used after a refused redemption. A code already
// spent is a replay, which revokes its grant; that is the outcome wanted
// here too, so ErrReplayed is not an error of spend.
func (s *tokenHandler) spend(ctx context.Context, hash []byte, now time.Time) error {
	_, err := s.st.RedeemCode(ctx, hash, now)
	if err != nil && !errors.Is(err, store.ErrReplayed) && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// refresh redeems a refresh token, rotating it (RFC 6749 §6, RFC 9700
// §4.14.2): the presented token is spent, and presenting it again revokes
// the grant. A client of the fapi2 profile keeps its token instead.
// jkt is the thumbprint of the request's DPoP key, "" without a proof.
func (s *tokenHandler) refresh(ctx context.Context, c *store.Client, f url.Values, jkt string) (*tokenResponse, error) {
	tok := f.Get("refresh_token")
	if tok == "" {
		return nil, oauthErr(codeInvalidRequest, "refresh_token is missing")
	}
	now := s.cfg.Now()
	key := store.SecretKey(tok)
	// Everything the request can get wrong is checked before the token is
	// spent: the client it was issued to, its expiry, the scope asked for.
	// Otherwise whoever holds a stolen token could spend it by naming
	// another client, or a wider scope, without the owner's secret, and
	// the owner's next refresh would then be a replay that revokes the
	// grant (RFC 9700 §4.14.2 wants the binding checked first).
	rt, g, err := s.st.LookupRefreshToken(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, oauthErr(codeInvalidGrant, "unknown refresh token")
	case err != nil:
		return nil, err
	}
	if err := refreshRefusal(c, rt, g, tok, jkt, now); err != nil {
		return nil, err
	}
	scopes, err := refreshScopes(g, f.Get("scope"))
	if err != nil {
		return nil, err
	}
	// A client of the fapi2 profile keeps its refresh token: FAPI 2.0
	// Security Profile §5.3.2.1 asks for no rotation. The token stays
	// valid until it expires or the grant is revoked, and the answer has
	// no refresh_token (RFC 6749 §6: a new one is optional).
	cs, err := s.sec.get(ctx, c)
	if err != nil {
		return nil, err
	}
	if cs.fapi2() && !rt.Used {
		m, err := s.mint(c, g, scopes, "", true, jkt, secretJKT(tok))
		if err != nil {
			return nil, err
		}
		m.resp.RefreshToken = ""
		if err := s.st.AddTokens(ctx, m.at, nil); err != nil {
			return nil, err
		}
		return m.resp, nil
	}
	if g, err = s.rotate(ctx, rt, g, key, now); err != nil {
		return nil, err
	}
	m, err := s.mint(c, g, scopes, "", true, jkt, secretJKT(tok))
	if err != nil {
		return nil, err
	}
	if err := s.st.AddTokens(ctx, m.at, m.rt); err != nil {
		return nil, err
	}
	return m.resp, nil
}

// minted is a signed token response and the records that store it.
type minted struct {
	resp *tokenResponse
	at   *store.AccessToken
	rt   *store.RefreshToken // nil without offline_access
}

// mint signs the tokens of a grant; the caller stores them. jkt binds the
// access token to a DPoP key, rtJKT the refresh token ("" for none).
func (s *tokenHandler) mint(c *store.Client, g *store.Grant, scopes []string, nonce string, withID bool, jkt, rtJKT string) (*minted, error) {
	now := s.cfg.Now()
	jti, err := store.NewJTI(s.cfg.Rand, now)
	if err != nil {
		return nil, err
	}
	scope := strings.Join(scopes, " ")
	claims := accessClaims{
		Jti: jti, Iss: s.cfg.Issuer, Sub: g.SubjectID, Aud: audClaim(g.Audience), Exp: now.Add(s.cfg.AccessTokenTTL).Unix(),
		Iat: now.Unix(), ClientID: c.ID, Scope: scope, OrgID: g.OrgID,
	}
	tokenType := "Bearer"
	if jkt != "" {
		claims.Cnf, tokenType = &cnfClaim{Jkt: jkt}, "DPoP"
	}
	at, err := sign(s.keys.Load().access, claims)
	if err != nil {
		return nil, err
	}
	resp := &tokenResponse{AccessToken: at, TokenType: tokenType, ExpiresIn: int64(s.cfg.AccessTokenTTL.Seconds()), Scope: scope,
		GrantID: g.GrantManagementID(), grant: g}
	if string(g.Details) != "[]" && len(g.Details) > 0 {
		resp.AuthorizationDetails = g.Details
	}
	if withID && slices.Contains(scopes, "openid") {
		resp.IDToken, err = sign(s.keys.Load().idSigner(c), idClaims{
			Iss: s.cfg.Issuer, Sub: g.SubjectID, Aud: c.ID, Azp: c.ID, Exp: now.Add(s.cfg.IDTokenTTL).Unix(),
			Iat: now.Unix(), AuthTime: g.AuthTime.Unix(), Nonce: nonce,
		})
		if err != nil {
			return nil, err
		}
	}
	m := &minted{resp: resp, at: &store.AccessToken{Hash: store.AccessTokenKey(at), GrantID: g.ID, JTI: jti, IssuedAt: now, ExpiresAt: now.Add(s.cfg.AccessTokenTTL)}}
	if slices.Contains(g.Scopes, "offline_access") {
		if resp.RefreshToken, err = store.NewSecret(s.cfg.Rand, now); err != nil {
			return nil, err
		}
		resp.RefreshToken = bindSecret(resp.RefreshToken, rtJKT)
		m.rt = &store.RefreshToken{Hash: store.SecretKey(resp.RefreshToken), GrantID: g.ID, IssuedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTokenTTL)}
	}
	return m, nil
}

// accessClaims are the claims of an access token (RFC 9068 §2.2, docs/service.md §5.6):
// never the authorization_details, which Resource Servers read from the
// grant endpoint. jti comes first: the token's storage key is read from
// it (store.AccessTokenKey).
type accessClaims struct {
	Jti      string `json:"jti"`
	Iss      string `json:"iss"`
	Sub      string `json:"sub"`
	Aud      any    `json:"aud"`
	Exp      int64  `json:"exp"`
	Iat      int64  `json:"iat"`
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	OrgID    string `json:"org_id,omitempty"`
	// Cnf binds a DPoP-bound token to its key (RFC 9449 §6.1).
	Cnf *cnfClaim `json:"cnf,omitempty"`
}

// idClaims are the claims of an ID token (OIDC Core §2).
type idClaims struct {
	Iss      string `json:"iss"`
	Sub      string `json:"sub"`
	Aud      string `json:"aud"`
	Azp      string `json:"azp"`
	Exp      int64  `json:"exp"`
	Iat      int64  `json:"iat"`
	AuthTime int64  `json:"auth_time"`
	Nonce    string `json:"nonce,omitempty"`
}

// audClaim is a single string for one audience, as most verifiers expect,
// and an array otherwise (RFC 7519 §4.1.3).
func audClaim(aud []string) any {
	if len(aud) == 1 {
		return aud[0]
	}
	return aud
}
