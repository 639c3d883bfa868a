package oauth

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// DPoP (RFC 9449): a client proves, with a proof JWT in the DPoP header
// of each request, that it holds a private key; tokens issued to it are
// bound to that key's thumbprint (jkt), so that a stolen token is of no
// use without the key.
//
//   - Access tokens issued with a proof carry cnf.jkt (RFC 9449 §6.1) and
//     token_type DPoP; the resources of this server (the grant endpoint,
//     automatic charges, userinfo) refuse them without a proof made with
//     that key (checkBound).
//   - Codes are bound by dpop_jkt at PAR or authorize (§10), refresh
//     tokens of public clients by the proof at the code's redemption (§5).
//     The binding is written into the code or refresh token itself, after
//     its random part ("<secret>.<jkt>"), so it costs no storage: the
//     value is looked up by its hash, so it cannot be changed.
//   - A proof's jti is used once (replay.go); a client that requires it
//     must send a server nonce (§8, §9), which is stateless: an issue time
//     and its HMAC under a key the instances share (settingNonceKey).

const (
	// dpopFuture and dpopPast bound a proof's iat around the server's
	// clock (FAPI 2.0 Security Profile §5.3.2.1 on clock skew).
	dpopFuture = 10 * time.Second
	dpopPast   = 60 * time.Second
	// nonceLife is how long a server nonce is accepted.
	nonceLife = 5 * time.Minute
	// settingNonceKey is the stored setting holding the nonce key.
	settingNonceKey = "dpop nonce key"

	codeInvalidDPoPProof = "invalid_dpop_proof"
	codeUseDPoPNonce     = "use_dpop_nonce"

	headerDPoP      = "DPoP"
	headerDPoPNonce = "DPoP-Nonce"
)

// dpopAlgs is the algs parameter of a DPoP challenge (RFC 9449 §7.1).
const dpopAlgs = "ES256 PS256 EdDSA"

// initNonceKey reads the nonce key, creating it on first start (once
// between instances starting at once on a shared database).
// dpopVerifier checks DPoP proofs (RFC 9449) at the token and PAR
// endpoints (tokenProof) and at the resources a DPoP-bound token is
// presented to (checkBound). Proofs' ids are single use (replayGuard);
// their nonces are the base's (newNonce, validNonce).
type dpopVerifier struct {
	*base
	sec    *securityCache
	replay *replayGuard
}

func (s *Server) initNonceKey(ctx context.Context) error {
	st := s.store
	return st.Exclusive(ctx, func() error {
		k, err := st.Setting(ctx, settingNonceKey)
		if errors.Is(err, store.ErrNotFound) {
			k = make([]byte, 32)
			if _, err := rand.Read(k); err != nil {
				return fmt.Errorf("oauth: nonce key: %w", err)
			}
			err = st.PutSetting(ctx, settingNonceKey, k)
		}
		if err != nil {
			return fmt.Errorf("oauth: nonce key: %w", err)
		}
		s.nonceKey = k
		return nil
	})
}

// newNonce returns a server nonce issued now.
func (s *base) newNonce() string {
	var b [8 + 16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(s.cfg.Now().Unix()))
	m := hmac.New(sha256.New, s.nonceKey)
	m.Write(b[:8])
	copy(b[8:], m.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// validNonce reports whether n is a nonce of this server's, issued at
// most nonceLife ago.
func (s *base) validNonce(n string) bool {
	b, err := base64.RawURLEncoding.DecodeString(n)
	if err != nil || len(b) != 24 {
		return false
	}
	m := hmac.New(sha256.New, s.nonceKey)
	m.Write(b[:8])
	if !hmac.Equal(m.Sum(nil)[:16], b[8:]) {
		return false
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(b[:8])), 0)
	now := s.cfg.Now()
	return now.Sub(issued) <= nonceLife && issued.Sub(now) <= dpopFuture
}

// dpopErr is a refused proof. At the token and PAR endpoints it is a 400
// JSON error; at a resource, a 401 with a DPoP challenge (resourceErr).
// A use_dpop_nonce refusal carries a fresh nonce (§8, §9).
func (s *base) dpopErr(code, desc string) *Error {
	e := oauthErr(code, desc)
	if code == codeUseDPoPNonce {
		e.nonce = s.newNonce()
	}
	return e
}

// proofClaims are a DPoP proof's claims (RFC 9449 §4.2).
type proofClaims struct {
	Jti   string   `json:"jti"`
	Htm   string   `json:"htm"`
	Htu   string   `json:"htu"`
	Iat   *float64 `json:"iat"`
	Ath   string   `json:"ath"`
	Nonce string   `json:"nonce"`
}

// proofCheck is what a proof must match: the method and the URLs it may
// name (htu, compared without query and fragment), and the access token
// it comes with (ath), if any.
type proofCheck struct {
	method string // "": any (a proof a Resource Server forwards, which checked its method)
	htu    htuRule
	token  string
	nonce  bool // a server nonce is required
}

// htuRule is the rule a proof's htu is checked by (RFC 9449 §4.3), which a
// refusal names with the values it compared: either the URL of the
// request the proof came with (sameURL), or, for a proof a Resource Server
// forwards to the grant endpoint, the Resource Server's registered
// resource address or a URL below it (grantProofCheck): the proof its
// client made for the request the Resource Server received.
type htuRule struct {
	url string // as stripQuery writes it
	// resourceServer is the client id of the Resource Server whose
	// address url is, "" for the URL of the request; then any URL below
	// url is allowed too.
	resourceServer string
}

// sameURL is the htu rule of a proof made for the request it comes with.
func sameURL(want string) htuRule { return htuRule{url: stripQuery(want)} }

// allows reports whether htu, as stripQuery writes it, passes the rule.
func (h htuRule) allows(htu string) bool {
	if htu == h.url {
		return true
	}
	return h.resourceServer != "" && len(htu) > len(h.url) && htu[len(h.url)] == '/' && htu[:len(h.url)] == h.url
}

// refusal says why sent, a proof's htu as sent, fails the rule: the rule
// and the two values it compared.
func (h htuRule) refusal(sent string) string {
	compared := ""
	if st := stripQuery(sent); st != sent && st != "" {
		compared = " (compared as " + echo(st) + ", without its query and fragment)"
	}
	if h.resourceServer == "" {
		return "the DPoP proof's htu " + echo(sent) + compared + " is not the URL of this request, " + echo(h.url) + " (RFC 9449 section 4.3)"
	}
	return "the DPoP proof's htu " + echo(sent) + compared + " is neither the address of Resource Server " + echo(h.resourceServer) +
		", " + echo(h.url) + " (its registered resource), nor a URL below it: a Resource Server forwards the proof its client made for the request " +
		"the Resource Server received, whose htu is that request's URL at the Resource Server, not the grant endpoint's (RFC 9449 section 7.1)"
}

// checkProof checks the DPoP proof of r (RFC 9449 §4.3) and returns the
// thumbprint of its key; "" and no error when r has none.
func (s *dpopVerifier) checkProof(r *http.Request, pc proofCheck) (string, error) {
	vals := r.Header.Values(headerDPoP)
	switch {
	case len(vals) == 0:
		return "", nil
	case len(vals) > 1:
		return "", s.dpopErr(codeInvalidDPoPProof, "send one DPoP header (RFC 9449 section 4.3)")
	}
	c, jkt, msg := readProof(vals[0])
	if msg == "" {
		msg = c.refusal(pc, s.cfg.Now())
	}
	if msg != "" {
		return "", s.dpopErr(codeInvalidDPoPProof, msg)
	}
	switch {
	case c.Nonce != "" && !s.validNonce(c.Nonce):
		return "", s.dpopErr(codeUseDPoPNonce, "the DPoP proof's nonce is not one this server gave, or is older than "+nonceLife.String()+": use the one in the DPoP-Nonce header")
	case c.Nonce == "" && pc.nonce:
		return "", s.dpopErr(codeUseDPoPNonce, "this client's DPoP proofs must carry a server nonce: use the one in the DPoP-Nonce header (RFC 9449 section 8)")
	}
	err := s.replay.useJTI(r.Context(), jtiKey("dpop", jkt, c.Jti), unixTime(*c.Iat).Add(dpopPast+time.Second))
	if errors.Is(err, errReplayed) {
		return "", s.dpopErr(codeInvalidDPoPProof, "the DPoP proof's jti was used before: make a new proof, with a new jti, for each request (RFC 9449 section 11.1)")
	} else if err != nil {
		return "", err
	}
	return jkt, nil
}

// readProof reads a DPoP proof (RFC 9449 §4.2): its header, its
// signature by the public key it carries, and its claims. It returns the
// claims and the key's thumbprint, or what is wrong with the proof.
func readProof(proof string) (proofClaims, string, string) {
	var c proofClaims
	h, err := readHeader("the DPoP proof", proof)
	if err == nil {
		err = checkAlg("the DPoP proof", h.Alg)
	}
	if err != nil {
		return c, "", err.Error()
	}
	if h.Typ != "dpop+jwt" {
		return c, "", fmt.Sprintf("the DPoP proof's typ is %q; it must be dpop+jwt (RFC 9449 section 4.2)", h.Typ)
	}
	jws, err := jose.ParseSignedCompact(proof, fapiAlgs)
	if err != nil || len(jws.Signatures) != 1 || jws.Signatures[0].Protected.JSONWebKey == nil {
		return c, "", "the DPoP proof must carry its public key in the jwk header (RFC 9449 section 4.2)"
	}
	jwk := jws.Signatures[0].Protected.JSONWebKey
	if !jwk.IsPublic() {
		return c, "", "the DPoP proof's jwk holds a private key: send the public key only"
	}
	payload, err := jws.Verify(jwk)
	if err != nil {
		return c, "", "the DPoP proof's signature does not verify with its jwk"
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, "", "the DPoP proof's claims are not a JSON object of jti, htm, htu, iat: " + err.Error()
	}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return c, "", "the DPoP proof's jwk has no thumbprint (RFC 7638): " + err.Error()
	}
	return c, base64.RawURLEncoding.EncodeToString(tp), ""
}

// refusal checks a proof's claims against what the request must match
// (RFC 9449 §4.3): "" when they hold, or what is wrong, naming the rule
// and the values compared.
func (c *proofClaims) refusal(pc proofCheck, now time.Time) string {
	switch {
	case c.Jti == "":
		return "the DPoP proof has no jti"
	case pc.method != "" && c.Htm != pc.method:
		return fmt.Sprintf("the DPoP proof's htm is %s; this request is %s (RFC 9449 section 4.3)", echo(c.Htm), pc.method)
	case !pc.htu.allows(stripQuery(c.Htu)):
		return pc.htu.refusal(c.Htu)
	case c.Iat == nil:
		return "the DPoP proof has no iat"
	case unixTime(*c.Iat).Sub(now) > dpopFuture:
		return fmt.Sprintf("the DPoP proof's iat is %s ahead of the server's clock; at most %s is accepted",
			unixTime(*c.Iat).Sub(now).Round(time.Second), dpopFuture)
	case now.Sub(unixTime(*c.Iat)) > dpopPast:
		return fmt.Sprintf("the DPoP proof's iat is %s old; a proof is accepted for %s: make a new one for each request",
			now.Sub(unixTime(*c.Iat)).Round(time.Second), dpopPast)
	}
	if pc.token != "" {
		sum := sha256.Sum256([]byte(pc.token))
		if want := base64.RawURLEncoding.EncodeToString(sum[:]); subtle.ConstantTimeCompare([]byte(c.Ath), []byte(want)) != 1 {
			if c.Ath == "" {
				return "the DPoP proof has no ath: a proof sent with an access token carries the token's base64url SHA-256, " + echo(want) + " (RFC 9449 section 4.2)"
			}
			return "the DPoP proof's ath " + echo(c.Ath) + " is not the base64url SHA-256 of the access token sent with it, " + echo(want) + " (RFC 9449 section 4.2)"
		}
	}
	return ""
}

// stripQuery drops a URL's query and fragment (RFC 9449 §4.3 compares htu
// without them) and lower-cases its scheme and host.
func stripQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = "", "", "", false
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String()
}

// tokenProof checks the DPoP proof of a token or PAR request for client c:
// required when the client's tokens must be DPoP-bound, with a nonce when
// it requires one. It returns the key's thumbprint, "" without a proof.
func (s *dpopVerifier) tokenProof(r *http.Request, c *store.Client) (string, error) {
	cs, err := s.sec.get(r.Context(), c)
	if err != nil {
		return "", err
	}
	jkt, err := s.checkProof(r, proofCheck{method: http.MethodPost, htu: sameURL(s.requestURL(r)), nonce: cs.DPoPNonce})
	if err != nil {
		return "", err
	}
	if jkt == "" && cs.requireDPoP() && r.URL.Path == s.path(pathToken) {
		return "", s.dpopErr(codeInvalidDPoPProof, "client "+c.ID+" must send a DPoP proof (dpop_bound_access_tokens): its access tokens are DPoP-bound (RFC 9449)")
	}
	return jkt, nil
}

// validJKT reports whether v can be a JWK SHA-256 thumbprint: 43
// base64url characters.
func validJKT(v string) bool { return validChallenge(v) }

// checkDPoPJKT checks the dpop_jkt parameter of an authorization request
// (RFC 9449 §10).
func checkDPoPJKT(params map[string][]string) error {
	v, ok := params["dpop_jkt"]
	switch {
	case !ok:
		return nil
	case len(v) != 1:
		return repeatedErr(params, "dpop_jkt")
	case !validJKT(v[0]):
		return oauthErr(codeInvalidRequest, fmt.Sprintf("dpop_jkt %s is %d bytes long; it must be the base64url SHA-256 JWK thumbprint (RFC 7638) of the client's DPoP key: 43 characters",
			echo(v[0]), len(v[0])))
	}
	return nil
}

// jktOf is the dpop_jkt of a checked request, "" without one.
func jktOf(v *validated) string {
	if d := v.params["dpop_jkt"]; len(d) == 1 {
		return d[0]
	}
	return ""
}

// bindSecret binds a code or refresh token to a DPoP key by appending the
// thumbprint; secretJKT reads it back.
func bindSecret(secret, jkt string) string {
	if jkt == "" {
		return secret
	}
	return secret + "." + jkt
}

func secretJKT(secret string) string {
	_, jkt, _ := strings.Cut(secret, ".")
	return jkt
}

// cnfClaim is an access token's confirmation (RFC 9449 §6.1).
type cnfClaim struct {
	Jkt string `json:"jkt"`
}

// tokenJKT is the cnf.jkt of an access token this server issued (its
// hash was found, so its claims are its own), "" when it is not bound.
func tokenJKT(tok string) string {
	_, rest, _ := strings.Cut(tok, ".")
	payload, _, _ := strings.Cut(rest, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || !strings.Contains(string(raw), `"cnf"`) {
		return ""
	}
	var c struct {
		Cnf *cnfClaim `json:"cnf"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Cnf == nil {
		return ""
	}
	return c.Cnf.Jkt
}

// presentedToken reads the access token of a request to a resource of
// this server: Authorization: Bearer <jwt> or DPoP <jwt> (RFC 9449 §7.1).
func presentedToken(r *http.Request) (tok string, dpop bool, err error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false, oauthErr(codeMissingToken, "send Authorization: Bearer <access token>, or DPoP <access token> with a DPoP proof")
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !(strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "DPoP")) || !wellFormedJWT(tok) {
		return "", false, oauthErr(codeMalformedToken, "the Authorization header is not \"Bearer\" or \"DPoP\" followed by a JWT")
	}
	return tok, strings.EqualFold(scheme, "DPoP"), nil
}

// checkBound checks, at a resource, that a DPoP-bound token comes with a
// proof of its key for this request (htu), and that a token that is not
// bound is not presented as DPoP. Refusals are 401 with a DPoP challenge
// (RFC 9449 §7.1), and with a fresh nonce when the token's client
// requires one.
func (s *dpopVerifier) checkBound(r *http.Request, tok string, dpop bool, g *store.Grant, method string, htu htuRule) error {
	bound := tokenJKT(tok)
	switch {
	case bound == "" && !dpop:
		return nil
	case bound == "":
		return resourceErr(oauthErr(codeInvalidToken, "the token is not DPoP-bound: send it as Authorization: Bearer"))
	case !dpop:
		return resourceErr(oauthErr(codeInvalidToken, "the token is DPoP-bound: send it as Authorization: DPoP, with a DPoP proof of its key (RFC 9449 section 7.1)"))
	}
	nonce := false
	if c, err := s.clients.get(r.Context(), g.ClientID); err == nil {
		cs, err := s.sec.get(r.Context(), c)
		if err != nil {
			return err
		}
		nonce = cs.DPoPNonce
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	jkt, err := s.checkProof(r, proofCheck{method: method, htu: htu, token: tok, nonce: nonce})
	switch {
	case err != nil:
		return resourceErr(err)
	case jkt == "":
		return resourceErr(s.dpopErr(codeInvalidDPoPProof, "the token is DPoP-bound: send a DPoP proof of its key in the DPoP header"))
	case jkt != bound:
		return resourceErr(s.dpopErr(codeInvalidDPoPProof, "the DPoP proof is made with another key than the one the token is bound to: the proof's key is "+
			echo(jkt)+", the token's (its cnf.jkt, RFC 9449 section 6.1) "+echo(bound)))
	}
	return nil
}

// grantProofCheck is what a DPoP proof sent to the grant endpoint must
// name: its own URL and GET when the token's client calls it; when a
// Resource Server calls it, the proof its client sent it, forwarded, whose
// htu is below the Resource Server's resource address (the Resource Server
// checked its method and URL; here its key, token, age and single use).
func (s *base) grantProofCheck(c *store.Client, g *store.Grant) (string, htuRule) {
	if c.ID == g.ClientID {
		return http.MethodGet, sameURL(s.cfg.baseURL() + grantPathSuffix)
	}
	return "", htuRule{url: stripQuery(strings.TrimSuffix(s.resourceOf(c), "/")), resourceServer: c.ID}
}

// resourceErr makes err the refusal of a resource: 401 with a DPoP
// challenge naming the error (RFC 9449 §7.1).
func resourceErr(err error) error {
	var oe *Error
	if !errors.As(err, &oe) {
		return err
	}
	oe.dpopChallenge = `DPoP error="` + oe.Code + `", error_description="` + oe.describe() + `", algs="` + dpopAlgs + `"`
	return oe
}

// writeDPoPHeaders sets the headers a DPoP refusal carries: the challenge
// of a resource, and a nonce. Every writer of an error calls it.
func writeDPoPHeaders(w http.ResponseWriter, oe *Error) bool {
	if oe.nonce != "" {
		w.Header().Set(headerDPoPNonce, oe.nonce)
	}
	if oe.dpopChallenge != "" {
		w.Header().Set("WWW-Authenticate", oe.dpopChallenge)
		return true
	}
	return false
}
