package oauth

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// private_key_jwt client authentication (RFC 7523 §2.2 and §3, OpenID
// Connect Core §9): the client signs a short-lived JWT with a key whose
// public part its credential registered (store.ClientSettings.JWKS) and
// sends it as client_assertion. Such a client has no secret.

// clientAuth authenticates clients at the endpoints that take a client
// credential (token, introspection, revocation, PAR, the grant endpoint,
// the native-consent API): client_secret_basic and client_secret_post
// (checkSecret), private_key_jwt (checkAssertion). It reads clients
// through the client cache and their keys from their settings or their
// jwks_uri; the assertions' ids are single use (replayGuard).
type clientAuth struct {
	*base
	sec    *securityCache
	replay *replayGuard
	jwks   *jwksCache // the keys of jwks_uri clients (jwksuri.go)
}

const (
	// assertionType is the client_assertion_type of a JWT (RFC 7523 §2.2).
	assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// maxAssertionLife bounds a client assertion's exp: at most 5
	// minutes ahead of the server's clock.
	maxAssertionLife = 5 * time.Minute
	// clockSkew is how far in the future an iat or nbf may be (FAPI 2.0
	// Security Profile §5.3.2.1: 10 seconds).
	clockSkew = 10 * time.Second
)

// fapiAlgs are the signature algorithms FAPI 2.0 allows (§5.4.1).
var fapiAlgs = []jose.SignatureAlgorithm{jose.ES256, jose.PS256, jose.EdDSA}

// jwtHeader is the part of a JWS header this server reads before the
// signature is checked.
type jwtHeader struct {
	Alg string          `json:"alg"`
	Typ string          `json:"typ"`
	Kid string          `json:"kid"`
	JWK json.RawMessage `json:"jwk"`
}

// readHeader decodes the protected header of a compact JWS, what names
// it (client_assertion, DPoP proof) for the errors.
func readHeader(what, tok string) (jwtHeader, error) {
	var h jwtHeader
	head, _, ok := strings.Cut(tok, ".")
	if !ok || strings.Count(tok, ".") != 2 {
		return h, fmt.Errorf("%s is not a compact JWS (three base64url parts separated by dots)", what)
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil || json.Unmarshal(raw, &h) != nil {
		return h, fmt.Errorf("%s has no readable JOSE header", what)
	}
	return h, nil
}

// checkAlg refuses an algorithm FAPI 2.0 does not allow, naming it.
func checkAlg(what, alg string) error {
	switch {
	case slices.Contains(fapiAlgs, jose.SignatureAlgorithm(alg)):
		return nil
	case alg == "none" || alg == "":
		return fmt.Errorf("%s is unsigned (alg %q): sign it with ES256, PS256 or EdDSA", what, alg)
	case strings.HasPrefix(alg, "HS"):
		return fmt.Errorf("%s is signed with %s, a shared-secret MAC, which is refused: sign it with a private key, with ES256, PS256 or EdDSA", what, alg)
	}
	return fmt.Errorf("%s is signed with %s: only ES256, PS256 and EdDSA are accepted (FAPI 2.0)", what, alg)
}

// audience is a JWT's aud: a string or an array of strings (RFC 7519
// §4.1.3). single records that it was a JSON string, which the fapi2
// profile requires (assertionClaims.refusal, strict).
type audience struct {
	names  []string
	single bool
}

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{names: []string{one}, single: true}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("aud is neither a string nor an array of strings")
	}
	*a = audience{names: many}
	return nil
}

// describe quotes the audience as sent: a string, or an array.
func (a audience) describe() string {
	if a.single {
		return "the string " + echo(a.names[0])
	}
	if a.names == nil {
		return "missing"
	}
	if len(a.names) == 0 {
		return "an empty array"
	}
	return "the array [" + echoList(a.names) + "]"
}

// assertionClaims are the claims RFC 7523 §3 requires.
type assertionClaims struct {
	Iss string   `json:"iss"`
	Sub string   `json:"sub"`
	Aud audience `json:"aud"`
	Exp *float64 `json:"exp"`
	Iat *float64 `json:"iat"`
	Nbf *float64 `json:"nbf"`
	Jti string   `json:"jti"`
}

func unixTime(f float64) time.Time {
	return time.Unix(0, int64(f*float64(time.Second)))
}

// assertionClient authenticates the client of a request by its
// client_assertion. Every refusal is invalid_client (RFC 7521 §4.2.1),
// with a description that names the rule.
func (s *clientAuth) assertionClient(r *http.Request) (*store.Client, error) {
	form := r.PostForm
	switch {
	case len(form["client_assertion"]) != 1 || len(form["client_assertion_type"]) != 1:
		return nil, oauthErr(codeInvalidRequest, "send client_assertion and client_assertion_type once each (RFC 7521 section 4.2)")
	case form.Get("client_assertion_type") != assertionType:
		return nil, assertionRefusal("client_assertion_type is %s; it must be %s (RFC 7523 section 2.2)", echo(form.Get("client_assertion_type")), assertionType)
	}
	return s.checkAssertion(r, form.Get("client_assertion"), form.Get("client_id"))
}

// assertionRefusal is an invalid_client refusal of a client assertion.
func assertionRefusal(format string, a ...any) error {
	return &Error{Code: codeInvalidClient, Description: fmt.Sprintf(format, a...), challenge: `Basic realm="oauth"`}
}

// checkAssertion verifies the client assertion tok of request r (RFC 7523
// §3) and returns its client; id is the client_id sent beside it, if any.
// The assertion comes in the form at the token, PAR, introspection and
// revocation endpoints, and in the X-Client-Assertion header at the grant
// endpoint (grant.go), which has no body.
func (s *clientAuth) checkAssertion(r *http.Request, tok, id string) (*store.Client, error) {
	bad := assertionRefusal
	h, err := readHeader("client_assertion", tok)
	if err == nil {
		err = checkAlg("client_assertion", h.Alg)
	}
	if err != nil {
		return nil, bad("%s", err.Error())
	}
	jws, err := jose.ParseSignedCompact(tok, fapiAlgs)
	if err != nil {
		return nil, bad("client_assertion cannot be read: %v", err)
	}
	// The claims name the client; they are trusted only once its key
	// verified the signature.
	var claims assertionClaims
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		return nil, bad("client_assertion's claims are not a JSON object of the RFC 7523 claims: %v", err)
	}
	if claims.Iss == "" || claims.Iss != claims.Sub {
		return nil, bad("client_assertion's iss and sub must both be the client_id (RFC 7523 section 3): iss is %s, sub %s", echo(claims.Iss), echo(claims.Sub))
	}
	if id != "" && id != claims.Iss {
		return nil, bad("client_id differs from the client_assertion's iss and sub: client_id is %s, iss and sub %s", echo(id), echo(claims.Iss))
	}
	c, keys, err := s.clientKeys(r.Context(), claims.Iss, h.Kid, bad)
	if err != nil {
		return nil, err
	}
	payload, err := verifyWith(jws, keys, h.Kid)
	if err != nil {
		return nil, bad("client_assertion's signature does not verify with a key of client %s (%v)", c.ID, err)
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, bad("client_assertion's claims: %v", err)
	}
	cs, err := s.sec.get(r.Context(), c)
	if err != nil {
		return nil, err
	}
	aud := []string{s.cfg.Issuer, s.endpoint(pathToken), s.requestURL(r)}
	if msg := claims.refusal(s.cfg.Now(), aud, cs.fapi2()); msg != "" {
		return nil, bad("%s", msg)
	}
	err = s.replay.useJTI(r.Context(), jtiKey("client_assertion", c.ID, claims.Jti), unixTime(*claims.Exp))
	if errors.Is(err, errReplayed) {
		return nil, bad("client_assertion's jti was used before: make a new assertion, with a new jti, for each request (RFC 7523 section 3)")
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// clientKeys returns the confidential client id and the public keys it
// registered, inline or at its jwks_uri (jwksuri.go: fetched again when
// the kept set lacks kid); a client unknown or without keys, or whose
// jwks_uri cannot be fetched, is refused with bad.
func (s *clientAuth) clientKeys(ctx context.Context, id, kid string, bad func(string, ...any) error) (*store.Client, *jose.JSONWebKeySet, error) {
	c, err := s.clients.get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, bad("client authentication failed: client_id %s (the client_assertion's iss) is not a registered client", echo(id))
	} else if err != nil {
		return nil, nil, err
	}
	cs, err := s.sec.get(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case c.Type != store.Confidential || !cs.Keyed():
		return nil, nil, bad("client %s registered no keys (jwks or jwks_uri): it does not authenticate with private_key_jwt", c.ID)
	case cs.keys != nil:
		return c, cs.keys, nil
	}
	keys, err := s.jwks.keys(ctx, cs.JWKSURI, kid)
	if err != nil {
		// The caller is not authenticated yet: what the fetch met (the
		// addresses a name resolves to, a refused connection, a status)
		// would map the network around the client's host for anyone.
		// The log has it for the operator.
		s.cfg.Logger.Info("oauth: jwks_uri fetch failed", "client_id", c.ID, "jwks_uri", cs.JWKSURI, "err", err)
		return nil, nil, bad("the keys of client %s could not be read from its jwks_uri; the server's log says why", c.ID)
	}
	return c, keys, nil
}

// refusal checks an assertion's audience and times against now (RFC 7523
// section 3; FAPI 2.0's clock skew): "" when they hold, or what is wrong.
// aud lists the accepted audiences, the issuer first: RFC 7523 §3 lets
// the aud name the token endpoint, and RFC 9126 §2 asks a server to take
// the issuer, the token endpoint's URL and the URL of the endpoint called
// "for interoperability". strict is the fapi2 profile's rule instead: the
// issuer identifier alone, as a JSON string (FAPI 2.0 Security Profile,
// final; draft-ietf-oauth-rfc7523bis), so that an assertion a client made
// for another audience (another server's token endpoint, an array naming
// several) is never accepted here (docs/fapi.md, "private_key_jwt").
func (c *assertionClaims) refusal(now time.Time, aud []string, strict bool) string {
	switch {
	case strict && (!c.Aud.single || c.Aud.names[0] != aud[0]):
		return fmt.Sprintf("client_assertion's aud must be the issuer identifier %s, alone and as a JSON string; it is %s: "+
			"a credential of the fapi2 profile accepts no other audience, no array (FAPI 2.0 Security Profile; draft-ietf-oauth-rfc7523bis)", echo(aud[0]), c.Aud.describe())
	case !slices.ContainsFunc(c.Aud.names, func(a string) bool { return slices.Contains(aud, a) }):
		return fmt.Sprintf("client_assertion's aud must be the issuer %s (or the token endpoint's URL %s, or this endpoint's URL %s); it is %s (RFC 7523 section 3, RFC 9126 section 2)",
			echo(aud[0]), echo(aud[1]), echo(aud[2]), c.Aud.describe())
	case c.Exp == nil:
		return "client_assertion has no exp (RFC 7523 section 3)"
	case !now.Before(unixTime(*c.Exp)):
		return fmt.Sprintf("client_assertion has expired (exp is %s ago)", now.Sub(unixTime(*c.Exp)).Round(time.Second))
	case unixTime(*c.Exp).Sub(now) > maxAssertionLife:
		return fmt.Sprintf("client_assertion's exp is %s ahead: this server accepts at most %s",
			unixTime(*c.Exp).Sub(now).Round(time.Second), maxAssertionLife)
	case c.Iat != nil && unixTime(*c.Iat).Sub(now) > clockSkew:
		return fmt.Sprintf("client_assertion's iat is in the future by more than %s: it is %s ahead of the server's clock",
			clockSkew, unixTime(*c.Iat).Sub(now).Round(time.Second))
	case c.Nbf != nil && unixTime(*c.Nbf).Sub(now) > clockSkew:
		return fmt.Sprintf("client_assertion's nbf is in the future by more than %s: it is %s ahead of the server's clock",
			clockSkew, unixTime(*c.Nbf).Sub(now).Round(time.Second))
	case c.Jti == "":
		return "client_assertion has no jti: give each assertion a unique one (RFC 7523 section 3)"
	}
	return ""
}

// verifyWith verifies a JWS with the key of set named kid, or with each
// key when kid is empty, and returns its payload.
func verifyWith(jws *jose.JSONWebSignature, set *jose.JSONWebKeySet, kid string) ([]byte, error) {
	keys := set.Keys
	if kid != "" {
		keys = set.Key(kid)
		if len(keys) == 0 {
			return nil, fmt.Errorf("no registered key has kid %q", kid)
		}
	}
	for _, k := range keys {
		if p, err := jws.Verify(k); err == nil {
			return p, nil
		}
	}
	return nil, errors.New("no registered key verifies it")
}

// requestURL is the public URL of the endpoint a request was sent to: the
// issuer's origin and the request's path.
func (s *base) requestURL(r *http.Request) string {
	u := *s.issuerURL
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, "", ""
	return u.String()
}

// basicAuth reads client_secret_basic credentials. RFC 6749 §2.3.1 has the
// client form-urlencode id and secret before Base64, so they are decoded.
func basicAuth(r *http.Request) (id, secret string, ok bool) {
	u, p, ok := r.BasicAuth()
	if !ok {
		return "", "", false
	}
	id, err1 := url.QueryUnescape(u)
	secret, err2 := url.QueryUnescape(p)
	if err1 != nil || err2 != nil || id == "" {
		return "", "", false
	}
	return id, secret, true
}

// checkSecret verifies a confidential client's secret in constant time.
// how names the method the secret came by (client_secret_basic or
// client_secret_post). An unknown client and a wrong secret get the same
// refusal, which names the client_id sent, never the secret.
func (s *clientAuth) checkSecret(ctx context.Context, id, secret, how string) (*store.Client, error) {
	bad := &Error{Code: codeInvalidClient, Description: "client authentication failed: client_id " + echo(id) + " and the client_secret sent by " + how +
		" are not those of a registered confidential client", challenge: `Basic realm="oauth"`}
	c, err := s.clients.get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, bad
	} else if err != nil {
		return nil, err
	}
	if c.Type != store.Confidential || len(c.SecretHash) == 0 ||
		subtle.ConstantTimeCompare(store.Hash(secret), c.SecretHash) != 1 {
		return nil, bad
	}
	return c, nil
}

// authenticateClient identifies the client of a token, introspection or
// revocation request: client_secret_basic or client_secret_post for a
// confidential client, client_id alone for a public one (RFC 6749 §2.3 and
// §3.2.1). Using two methods at once is refused.
func (s *clientAuth) authenticateClient(r *http.Request) (*store.Client, error) {
	c, err := s.identifyClient(r)
	if err == nil {
		tagClient(r.Context(), c)
	}
	return c, err
}

// identifyClient is authenticateClient's check.
func (s *clientAuth) identifyClient(r *http.Request) (*store.Client, error) {
	id, secret, basic := basicAuth(r)
	_, hasHeader := r.Header["Authorization"]
	form := r.PostForm
	postID, postSecret := form.Get("client_id"), form.Get("client_secret")
	_, assertion := form["client_assertion"]
	if _, typed := form["client_assertion_type"]; assertion || typed {
		// private_key_jwt (clientauth.go).
		if basic || hasHeader || postSecret != "" {
			other := "client_secret in the body"
			if basic || hasHeader {
				other = "an Authorization header"
			}
			return nil, oauthErr(codeInvalidRequest, "use one client authentication method, not two (RFC 6749 §2.3): the request sent a client_assertion and "+other)
		}
		return s.assertionClient(r)
	}
	switch {
	case hasHeader && !basic:
		return nil, &Error{Code: codeInvalidClient, Description: "malformed HTTP Basic credentials: the Authorization header's scheme is " +
			echo(authScheme(r)) + "; client_secret_basic sends Basic and the Base64 of the form-urlencoded client_id:client_secret (RFC 6749 §2.3.1)",
			challenge: `Basic realm="oauth"`}
	case basic && postSecret != "":
		return nil, oauthErr(codeInvalidRequest, "use one client authentication method, not two (RFC 6749 §2.3): the request sent HTTP Basic credentials and client_secret in the body")
	case basic:
		if postID != "" && postID != id {
			return nil, oauthErr(codeInvalidRequest, "client_id "+echo(postID)+" in the body differs from the client "+echo(id)+" of the HTTP Basic credentials").
				compared("client_id", postID, id)
		}
		return s.checkSecret(r.Context(), id, secret, "client_secret_basic")
	case postSecret != "":
		return s.checkSecret(r.Context(), postID, postSecret, "client_secret_post")
	case postID == "":
		return nil, &Error{Code: codeInvalidClient, Description: "client authentication is missing", challenge: `Basic realm="oauth"`}
	}
	c, err := s.clients.get(r.Context(), postID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, oauthErr(codeInvalidClient, "client_id "+echo(postID)+" is unknown: no client is registered with this id")
	} else if err != nil {
		return nil, err
	}
	if c.Type != store.Public {
		return nil, &Error{Code: codeInvalidClient, Description: "a confidential client must authenticate: client " + echo(c.ID) + " sent client_id alone, " +
			"which is for public clients; send its secret (client_secret_basic or client_secret_post) or a client_assertion (private_key_jwt)", challenge: `Basic realm="oauth"`}
	}
	return c, nil
}

// authScheme is the scheme of the request's Authorization header, never
// its credentials.
func authScheme(r *http.Request) string {
	scheme, _, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return scheme
}

// authenticateHost checks the host's own credential, sent with HTTP Basic
// (RFC 6749 §2.3.1), and that the client holds the host role.
func (s *clientAuth) authenticateHost(r *http.Request) (*store.Client, error) {
	id, secret, ok := basicAuth(r)
	if !ok {
		return nil, &Error{Code: codeInvalidClient, Description: "authenticate with the host's client credential (HTTP Basic)",
			challenge: `Basic realm="native-consent"`}
	}
	c, err := s.checkSecret(r.Context(), id, secret, "HTTP Basic")
	if err != nil {
		return nil, err
	}
	if !c.HasRole(store.RoleHost) {
		return nil, oauthErr(codeUnauthorizedClient, "client "+echo(c.ID)+" may not use the native-consent API: it does not hold the host role")
	}
	tagClient(r.Context(), c)
	return c, nil
}
