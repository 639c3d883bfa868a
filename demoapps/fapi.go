package demoapps

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// The FAPI demo is a confidential Miniapp on the FAPI 2.0 Security
// Profile (docs/fapi.md, "Running a Miniapp on the profile"). Its backend
// authenticates with private_key_jwt (RFC 7523 §2.2) by an ES256 key whose
// public part its client registered; pushes its authorization request
// (RFC 9126) with PKCE (RFC 7636) and authorization_details (RFC 9396),
// with a DPoP proof (RFC 9449 §10.1) that binds the code to a key it makes
// for the sign-in; sends the browser to the authorization endpoint with
// client_id and request_uri only; redeems the code with an assertion and
// a proof for a DPoP-bound token; and reads the grant behind the token at
// GET {base_url}/authorization with its assertion (X-Client-Assertion) and
// a proof of the token's key. A server nonce (use_dpop_nonce, RFC 9449
// §8) is taken and the request sent again.

// FAPIConfig describes the FAPI demo: Config's members (ClientSecret
// unused: the client has keys) and the endpoints and key of the profile.
type FAPIConfig struct {
	Config
	// Issuer is the service's issuer: the aud of client assertions.
	Issuer string
	// PARURL is the pushed authorization request endpoint, GrantURL the
	// grant endpoint GET {base_url}/authorization.
	PARURL, GrantURL string
	// OrgID is the Company the authorization_details act for (org_id).
	OrgID string
	// Key is the client's private_key_jwt key; its public JWK Set
	// (PublicJWKS) is registered with the client.
	Key *ecdsa.PrivateKey
}

// NewKey makes an ES256 (P-256) key for private_key_jwt or DPoP.
func NewKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("demoapps: %w", err)
	}
	return k, nil
}

// fapiKeyID names the client key in its JWK Set and assertions.
const fapiKeyID = "fapi-demo-es256"

// PublicJWKS is the JWK Set (RFC 7517 §5) of k's public part, as the
// client registers it.
func PublicJWKS(k *ecdsa.PrivateKey) json.RawMessage {
	jwk := publicJWK(&k.PublicKey)
	jwk["kid"], jwk["alg"], jwk["use"] = fapiKeyID, "ES256", "sig"
	b, _ := json.Marshal(map[string]any{"keys": []map[string]string{jwk}})
	return b
}

// publicJWK is an EC P-256 public key as a JWK (RFC 7518 §6.2.1).
func publicJWK(k *ecdsa.PublicKey) map[string]string {
	b, err := k.Bytes() // 0x04, X, Y (SEC 1 §2.3.3), 32 bytes each on P-256
	if err != nil || len(b) != 65 {
		b = make([]byte, 65) // not a P-256 key: NewKey makes only those
	}
	return map[string]string{"kty": "EC", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(b[1:33]), "y": base64.RawURLEncoding.EncodeToString(b[33:])}
}

// Thumbprint is the RFC 7638 SHA-256 thumbprint of k's public key, the
// jkt of the tokens it binds.
func Thumbprint(k *ecdsa.PublicKey) string {
	j := publicJWK(k)
	sum := sha256.Sum256([]byte(`{"crv":"P-256","kty":"EC","x":"` + j["x"] + `","y":"` + j["y"] + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// signES256 makes a compact JWS (RFC 7515 §7.1) with ES256 (RFC 7518
// §3.4: R and S, 32 bytes each).
func signES256(k *ecdsa.PrivateKey, header, claims map[string]any) (string, error) {
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	in := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	sum := sha256.Sum256([]byte(in))
	r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return in + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func randomJTI() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// fapiSession is a sign-in: pending (verifier, state, the DPoP key) until
// the callback, then the bound token.
type fapiSession struct {
	verifier, state string
	dpop            *ecdsa.PrivateKey
	token           *fapiToken
}

// fapiToken is the token response the callback got (RFC 6749 §5.1, RFC
// 9449 §5).
type fapiToken struct {
	AccessToken          string          `json:"access_token"`
	TokenType            string          `json:"token_type"`
	Scope                string          `json:"scope"`
	AuthorizationDetails json.RawMessage `json:"authorization_details"`
}

type fapiApp struct {
	cfg    FAPIConfig
	origin string

	mu       sync.Mutex // guards below
	logins   map[string]*fapiSession
	sessions map[string]*fapiSession
	nonce    string // the service's latest DPoP-Nonce
}

// ServeFAPI serves the FAPI demo on a listener the caller opened (its
// client is registered with the listener's origin and PublicJWKS first).
// Its auth_url is /login and its callback /callback.
func ServeFAPI(cfg FAPIConfig, ln net.Listener) *App {
	return serve(ln, func(origin string) http.Handler {
		a := &fapiApp{cfg: cfg, origin: origin, logins: map[string]*fapiSession{}, sessions: map[string]*fapiSession{}}
		mux := http.NewServeMux()
		// GET /miniapp.webmanifest
		mux.HandleFunc("GET /miniapp.webmanifest", manifest(cfg.Config, origin+"/login"))
		serveIcons(mux, "F", color.RGBA{0x0b, 0x6e, 0x6e, 0xff})
		// GET /login: the manifest's oauth.auth_url.
		mux.HandleFunc("GET /login", a.handleLogin)
		// GET /callback: the client's redirect_uri.
		mux.HandleFunc("GET /callback", a.handleCallback)
		// GET /{$}: the start page, signed in (with the grant) or not.
		mux.HandleFunc("GET /{$}", a.handleHome)
		return mux
	})
}

func (a *fapiApp) client() *http.Client {
	if a.cfg.HTTP != nil {
		return a.cfg.HTTP
	}
	return http.DefaultClient
}

// assertion is a client assertion (RFC 7523 §3) for aud, valid a minute.
func (a *fapiApp) assertion(aud string) (string, error) {
	now := time.Now()
	return signES256(a.cfg.Key, map[string]any{"alg": "ES256", "typ": "JWT", "kid": fapiKeyID},
		map[string]any{"iss": a.cfg.ClientID, "sub": a.cfg.ClientID, "aud": aud, "jti": randomJTI(),
			"iat": now.Unix(), "exp": now.Add(time.Minute).Unix()})
}

// proof is a DPoP proof (RFC 9449 §4.2) of key for method and htu, with
// ath for a token and the server's latest nonce.
func (a *fapiApp) proof(key *ecdsa.PrivateKey, method, htu, token string) (string, error) {
	claims := map[string]any{"jti": randomJTI(), "htm": method, "htu": htu, "iat": time.Now().Unix()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	a.mu.Lock()
	if a.nonce != "" {
		claims["nonce"] = a.nonce
	}
	a.mu.Unlock()
	jwk := publicJWK(&key.PublicKey)
	return signES256(key, map[string]any{"alg": "ES256", "typ": "dpop+jwt", "jwk": jwk}, claims)
}

// send makes a request with a fresh DPoP proof (and whatever build adds),
// keeps the service's DPoP-Nonce, and sends it once more when the answer
// asks for that nonce (use_dpop_nonce, RFC 9449 §8.2 and §9).
func (a *fapiApp) send(req func() (*http.Request, error), key *ecdsa.PrivateKey, token string) (int, []byte, error) {
	for try := 0; ; try++ {
		r, err := req()
		if err != nil {
			return 0, nil, err
		}
		p, err := a.proof(key, r.Method, r.URL.String(), token)
		if err != nil {
			return 0, nil, err
		}
		r.Header.Set("DPoP", p)
		ans, err := jsonhttp.Do(a.client(), r, 1<<20)
		if err != nil {
			return 0, nil, err
		}
		body := ans.Body
		nonce := ans.Header.Get("DPoP-Nonce")
		if nonce != "" {
			a.mu.Lock()
			a.nonce = nonce
			a.mu.Unlock()
		}
		asked := strings.Contains(ans.Header.Get("WWW-Authenticate"), "use_dpop_nonce") || strings.Contains(string(body), `"use_dpop_nonce"`)
		if try == 0 && nonce != "" && asked {
			continue
		}
		return ans.Status, body, nil
	}
}

// postForm posts form to endpoint with a client assertion and a proof.
func (a *fapiApp) postForm(endpoint string, form url.Values, key *ecdsa.PrivateKey) (int, []byte, error) {
	return a.send(func() (*http.Request, error) {
		as, err := a.assertion(a.cfg.Issuer)
		if err != nil {
			return nil, err
		}
		f := url.Values{"client_id": {a.cfg.ClientID}, "client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
			"client_assertion": {as}}
		for k, v := range form {
			f[k] = v
		}
		r, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(f.Encode()))
		if err == nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		return r, err
	}, key, "")
}

// handleLogin pushes the authorization request and sends the browser to
// the authorization endpoint with client_id and request_uri only (RFC
// 9126 §4).
func (a *fapiApp) handleLogin(w http.ResponseWriter, r *http.Request) {
	key, err := NewKey()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s := &fapiSession{verifier: oauth2.GenerateVerifier(), state: randomID(), dpop: key}
	sum := sha256.Sum256([]byte(s.verifier))
	form := url.Values{"response_type": {"code"}, "client_id": {a.cfg.ClientID}, "redirect_uri": {a.origin + "/callback"},
		"scope": {a.cfg.Scope}, "state": {s.state}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}}
	if a.cfg.Resource != "" {
		form.Set("resource", a.cfg.Resource)
	}
	if a.cfg.AuthorizationDetails != "" {
		form.Set("authorization_details", a.cfg.AuthorizationDetails)
	}
	if a.cfg.OrgID != "" {
		form.Set("org_id", a.cfg.OrgID)
	}
	// The proof at PAR binds the code to s.dpop (RFC 9449 §10.1).
	st, body, err := a.postForm(a.cfg.PARURL, form, key)
	var par struct {
		RequestURI string `json:"request_uri"`
		Error      string `json:"error"`
		Desc       string `json:"error_description"`
	}
	if err == nil {
		err = json.Unmarshal(body, &par)
	}
	if err != nil || st != http.StatusCreated || par.RequestURI == "" {
		msg := fmt.Sprintf("par_failed: %d %s %s", st, par.Error, par.Desc)
		if err != nil {
			msg = "par_failed: " + err.Error()
		}
		http.Redirect(w, r, "/?error="+url.QueryEscape(msg), http.StatusSeeOther)
		return
	}
	id := randomID()
	a.mu.Lock()
	a.logins[id] = s
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: LoginCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: 600})
	q := url.Values{"client_id": {a.cfg.ClientID}, "request_uri": {par.RequestURI}}
	http.Redirect(w, r, a.cfg.AuthURL+"?"+q.Encode(), http.StatusSeeOther)
}

// handleCallback checks state, redeems the code with an assertion, the
// verifier and a proof of the sign-in's key, and opens the session.
func (a *fapiApp) handleCallback(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(LoginCookie)
	a.mu.Lock()
	var s *fapiSession
	if err == nil {
		s = a.logins[ck.Value]
		delete(a.logins, ck.Value)
	}
	a.mu.Unlock()
	q := r.URL.Query()
	fail := func(code string) {
		http.SetCookie(w, &http.Cookie{Name: LoginCookie, Path: "/", MaxAge: -1})
		http.Redirect(w, r, "/?error="+url.QueryEscape(code), http.StatusSeeOther)
	}
	switch {
	case s == nil:
		fail("no_login_session")
		return
	case q.Get("state") != s.state:
		fail("state_mismatch")
		return
	case q.Get("error") != "":
		fail(q.Get("error"))
		return
	case q.Get("iss") != a.cfg.Issuer:
		fail("iss_mismatch") // RFC 9207 §2.4
		return
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {a.origin + "/callback"},
		"code_verifier": {s.verifier}}
	st, body, err := a.postForm(a.cfg.TokenURL, form, s.dpop)
	var tok fapiToken
	if err == nil {
		err = json.Unmarshal(body, &tok)
	}
	if err != nil || st != http.StatusOK || tok.AccessToken == "" {
		fail(fmt.Sprintf("token_exchange_failed: %d", st))
		return
	}
	s.token = &tok
	sid := randomID()
	a.mu.Lock()
	a.sessions[sid] = s
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: LoginCookie, Path: "/", MaxAge: -1})
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: sid, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Expires: time.Now().Add(time.Hour), MaxAge: 3600})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// readGrant asks GET {base_url}/authorization (docs/service.md §4.1)
// about the session's token, presented as DPoP with a proof of its key
// (RFC 9449 §7.1), the client authenticated by its assertion in
// X-Client-Assertion (docs/fapi.md).
func (a *fapiApp) readGrant(s *fapiSession) (int, []byte, error) {
	return a.send(func() (*http.Request, error) {
		as, err := a.assertion(a.cfg.Issuer)
		if err != nil {
			return nil, err
		}
		r, err := http.NewRequest(http.MethodGet, a.cfg.GrantURL, nil)
		if err == nil {
			r.Header.Set("Authorization", "DPoP "+s.token.AccessToken)
			r.Header.Set("X-Client-Id", a.cfg.ClientID)
			r.Header.Set("X-Client-Assertion", as)
		}
		return r, err
	}, s.dpop, s.token.AccessToken)
}

var fapiHome = template.Must(template.New("fapi").Parse(`<!doctype html><html><head><meta charset="utf-8"><title>{{.Name}}</title>` + style + `</head>
<body data-signed-in="{{.SignedIn}}" data-error="{{.Error}}" data-token-type="{{.TokenType}}" data-grant-status="{{.GrantStatus}}" data-jkt="{{.JKT}}">
<h1>{{.Name}}</h1>
<p>FAPI 2.0: pushed authorization request, private_key_jwt, DPoP, PKCE and authorization_details.</p>
{{if .SignedIn}}<p id="status">Signed in. Token type <b>{{.TokenType}}</b>, bound to the key <code>{{.JKT}}</code>.</p>
<p>GET /authorization with the token and a DPoP proof answered <b id="grant-status">{{.GrantStatus}}</b>:</p><pre id="grant">{{.Grant}}</pre>
{{else}}<p id="status">Not signed in{{if .Error}} ({{.Error}}){{end}}.</p><a class="btn" id="signin" href="/login">Sign in</a>{{end}}
</body></html>`))

// handleHome shows the session: the token's type and key, and the grant
// endpoint's answer for it.
func (a *fapiApp) handleHome(w http.ResponseWriter, r *http.Request) {
	var s *fapiSession
	if ck, err := r.Cookie(SessionCookie); err == nil {
		a.mu.Lock()
		s = a.sessions[ck.Value]
		a.mu.Unlock()
	}
	data := struct {
		Name, Error, TokenType, JKT, Grant string
		GrantStatus                        int
		SignedIn                           bool
	}{Name: a.cfg.Name, Error: r.URL.Query().Get("error"), SignedIn: s != nil}
	if s != nil {
		data.TokenType, data.JKT = s.token.TokenType, Thumbprint(&s.dpop.PublicKey)
		st, body, err := a.readGrant(s)
		data.GrantStatus, data.Grant = st, string(body)
		if err != nil {
			data.Grant = err.Error()
		} else if pretty, perr := indentJSON(body); perr == nil {
			data.Grant = pretty
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = fapiHome.Execute(w, data)
}

func indentJSON(b []byte) (string, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", errors.New("not JSON")
	}
	out, err := json.MarshalIndent(v, "", "  ")
	return string(out), err
}
