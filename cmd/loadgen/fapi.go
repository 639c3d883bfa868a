package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// The fapi phase (-only fapi) times full FAPI 2.0 flows beside plain ones
// (docs/fapi.md): a credential of the fapi2 profile, registered through
// the dashboard API with one ES256 key, pushes its request (RFC 9126)
// with a client assertion (private_key_jwt, RFC 7523) and a DPoP proof,
// the subject approves it through the native-consent API, and the code is
// redeemed with another assertion and proof for a DPoP-bound token (RFC
// 9449). The plain flow is the flow phase's: the native request in the
// URL, client_secret_basic, a Bearer token. The two alternate, round after
// round, so that both see the same load on a shared machine and their
// ratio is fair; the client's signing (two ES256 assertions and two
// proofs per flow) is on the same cores, as the client's own cost always
// is in loadgen.

// fapiClient is the fapi2 credential: its id, its assertion key, and the
// DPoP key it binds its tokens to.
type fapiClient struct {
	id     string
	assert jose.Signer
	dpop   jose.Signer
}

// setupFAPI registers the fapi2 credential: a project, its policy of
// bank_accounts:read approved by the operator, and the credential with its
// public key.
func (g *gen) setupFAPI(operatorKey string) (*fapiClient, error) {
	dash := func(path, key string, body, out any) error {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, g.u.Dashboard+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		return g.send(req, out)
	}
	var prj struct{ ID, Key string }
	if err := dash("/api/projects", "", map[string]string{"name": "loadgen FAPI"}, &prj); err != nil {
		return nil, err
	}
	var sub struct{ ID string }
	if err := dash("/api/projects/"+prj.ID+"/policy", prj.Key, map[string]any{"scopes": []string{"bank_accounts:read"}}, &sub); err != nil {
		return nil, err
	}
	if err := dash("/api/review/"+sub.ID+"/approve", operatorKey, map[string]any{}, nil); err != nil {
		return nil, err
	}
	ak, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	dk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub := jose.JSONWebKey{Key: &ak.PublicKey, KeyID: "loadgen-es256", Algorithm: "ES256", Use: "sig"}
	var cred struct {
		ClientID string `json:"client_id"`
	}
	if err := dash("/api/projects/"+prj.ID+"/credentials", prj.Key, map[string]any{"type": "confidential", "redirect_uris": []string{redirect},
		"token_endpoint_auth_method": "private_key_jwt", "jwks": jose.JSONWebKeySet{Keys: []jose.JSONWebKey{pub}}, "profile": "fapi2"}, &cred); err != nil {
		return nil, err
	}
	fc := &fapiClient{id: cred.ClientID}
	if fc.assert, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: ak, KeyID: pub.KeyID}},
		(&jose.SignerOptions{}).WithType("JWT")); err != nil {
		return nil, err
	}
	if fc.dpop, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: dk},
		(&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt")); err != nil {
		return nil, err
	}
	return fc, nil
}

// jti is a fresh single-use id.
func jti() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sign signs claims with s as a compact JWS.
func sign(s jose.Signer, claims any) (string, error) {
	payload, _ := json.Marshal(claims)
	jws, err := s.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// authenticated adds a client assertion to form and sends it with a DPoP
// proof for u.
func (g *gen) authenticated(fc *fapiClient, u string, form url.Values, out any) error {
	now := time.Now().Unix()
	a, err := sign(fc.assert, map[string]any{"iss": fc.id, "sub": fc.id, "aud": g.u.Issuer, "iat": now, "exp": now + 60, "jti": jti()})
	if err != nil {
		return err
	}
	p, err := sign(fc.dpop, map[string]any{"jti": jti(), "htm": "POST", "htu": u, "iat": now})
	if err != nil {
		return err
	}
	form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	form.Set("client_assertion", a)
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("DPoP", p)
	return g.send(req, out)
}

// fapiFlow runs one FAPI 2.0 flow: PAR, consent, a DPoP-bound token.
func (g *gen) fapiFlow(fc *fapiClient) error {
	b := make([]byte, 32)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(v))
	var par struct {
		RequestURI string `json:"request_uri"`
	}
	if err := g.authenticated(fc, g.u.Issuer+"/oauth/par", url.Values{"client_id": {fc.id}, "redirect_uri": {redirect},
		"response_type": {"code"}, "scope": {"bank_accounts:read"}, "resource": {g.u.BaseURL}, "state": {"s"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}, &par); err != nil {
		return err
	}
	var sub struct {
		RequestID string `json:"request_id"`
	}
	q := url.Values{"client_id": {fc.id}, "request_uri": {par.RequestURI}}
	if err := g.postJSON(g.u.Native, map[string]string{"authorization_url": g.u.Authorization + "?" + q.Encode(), "subject": "sub_ana"}, &sub); err != nil {
		return err
	}
	var dec struct {
		RedirectURL string `json:"redirect_url"`
	}
	if err := g.postJSON(g.u.Native+"/"+sub.RequestID+"/decision", map[string]string{"action": "approve"}, &dec); err != nil {
		return err
	}
	ru, err := url.Parse(dec.RedirectURL)
	if err != nil {
		return err
	}
	var tr struct {
		TokenType string `json:"token_type"`
	}
	if err := g.authenticated(fc, g.u.Token, url.Values{"grant_type": {"authorization_code"}, "code": {ru.Query().Get("code")},
		"redirect_uri": {redirect}, "code_verifier": {v}}, &tr); err != nil {
		return err
	}
	if tr.TokenType != "DPoP" {
		return fmt.Errorf("token_type %q, want DPoP", tr.TokenType)
	}
	return nil
}

// fapiPhase alternates a plain flow phase and a FAPI flow phase, rounds
// times, and prints each, then the medians and their ratio.
func (g *gen) fapiPhase(operatorKey string, rounds int) error {
	fc, err := g.setupFAPI(operatorKey)
	if err != nil {
		return fmt.Errorf("fapi phase: registering the fapi2 credential: %w", err)
	}
	if err := g.fapiFlow(fc); err != nil { // a first flow, untimed: the setup works
		return fmt.Errorf("fapi phase: first flow: %w", err)
	}
	var plain, fapi, plainCPU, fapiCPU []float64
	for i := range rounds {
		r := g.phase(g.max, func(g *gen) error {
			cs, err := g.codes("bank_accounts:read", 1)
			if err != nil {
				return err
			}
			return g.exchange(cs[0])
		})
		fmt.Printf("round %d: plain flow (native request, client_secret_basic, Bearer token): %s%s\n", i+1, r, loadavg())
		plain, plainCPU = append(plain, r.rate()), append(plainCPU, r.perCPU())
		r = g.phase(g.max, func(g *gen) error { return g.fapiFlow(fc) })
		fmt.Printf("round %d: FAPI 2.0 flow (PAR + private_key_jwt + DPoP, fapi2 profile): %s%s\n", i+1, r, loadavg())
		fapi, fapiCPU = append(fapi, r.rate()), append(fapiCPU, r.perCPU())
	}
	mp, mf := median(plain), median(fapi)
	fmt.Printf("median of %d rounds: plain %.0f flows/s, FAPI %.0f flows/s, FAPI/plain %.2f\n", rounds, mp, mf, mf/mp)
	// On a shared machine the share of the cores a phase gets varies; per
	// CPU-second of the process, the ratio is of the work alone.
	cp, cf := median(plainCPU), median(fapiCPU)
	fmt.Printf("median of %d rounds per CPU-second: plain %.0f flows, FAPI %.0f flows, FAPI/plain %.2f\n", rounds, cp, cf, cf/cp)
	return nil
}

// rate is the phase's operations per second.
func (r result) rate() float64 { return float64(r.ok) / r.elapsed.Seconds() }

// perCPU is the phase's operations per CPU-second of the process.
func (r result) perCPU() float64 { return float64(r.ok) / r.cpu.Seconds() }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else if n > 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return 0
}
