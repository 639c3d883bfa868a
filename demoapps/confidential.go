package demoapps

import (
	"crypto/rand"
	"encoding/hex"
	"html/template"
	"image/color"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Cookie names of the confidential demo.
const (
	// LoginCookie ties the browser to the pending sign-in (verifier, state).
	LoginCookie = "demo_login"
	// SessionCookie is the signed-in session, set by the callback. It is
	// HttpOnly: scripts never see it.
	SessionCookie = "demo_session"
)

type confidential struct {
	cfg   Config
	oauth *oauth2.Config

	mu       sync.Mutex // guards below
	logins   map[string]login
	sessions map[string]*oauth2.Token
}

// login is the server side of a pending sign-in: what stays on the
// Miniapp's backend (docs/service.md §2.9, §5.4).
type login struct {
	verifier, state string
}

// StartConfidential serves the confidential demo on addr ("" for any
// loopback port). Its auth_url is /login and its callback /callback.
func StartConfidential(cfg Config, addr string) (*App, error) {
	ln, err := listen(addr)
	if err != nil {
		return nil, err
	}
	return ServeConfidential(cfg, ln), nil
}

// ServeConfidential is StartConfidential on a listener the caller opened:
// its client can be registered with the origin the listener got (a port
// 0 resolved) before the demo, which needs the client's secret, starts.
func ServeConfidential(cfg Config, ln net.Listener) *App {
	return serve(ln, func(origin string) http.Handler {
		c := &confidential{cfg: cfg, logins: map[string]login{}, sessions: map[string]*oauth2.Token{},
			oauth: &oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: origin + "/callback",
				Endpoint: oauth2.Endpoint{AuthURL: cfg.AuthURL, TokenURL: cfg.TokenURL, AuthStyle: oauth2.AuthStyleInHeader},
				Scopes:   splitScope(cfg.Scope)}}
		mux := http.NewServeMux()
		// GET /miniapp.webmanifest
		mux.HandleFunc("GET /miniapp.webmanifest", manifest(cfg, origin+"/login"))
		serveIcons(mux, "C", color.RGBA{0x6a, 0x3d, 0xb3, 0xff})
		// GET /login: the manifest's oauth.auth_url.
		mux.HandleFunc("GET /login", c.handleLogin)
		// GET /callback: the client's redirect_uri.
		mux.HandleFunc("GET /callback", c.handleCallback)
		// GET /{$}: the start page, signed in or not.
		mux.HandleFunc("GET /{$}", c.handleHome)
		return mux
	})
}

func randomID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// handleLogin starts the authorization: PKCE verifier and state stay here,
// the browser gets only a cookie naming them and a redirect to the service.
func (c *confidential) handleLogin(w http.ResponseWriter, r *http.Request) {
	id, l := randomID(), login{verifier: oauth2.GenerateVerifier(), state: randomID()}
	c.mu.Lock()
	c.logins[id] = l
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: LoginCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: 600})
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(l.verifier)}
	if c.cfg.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", c.cfg.Resource))
	}
	if c.cfg.AuthorizationDetails != "" {
		opts = append(opts, oauth2.SetAuthURLParam("authorization_details", c.cfg.AuthorizationDetails))
	}
	http.Redirect(w, r, c.oauth.AuthCodeURL(l.state, opts...), http.StatusFound)
}

// handleCallback checks state against the login's, exchanges the code with
// the verifier, and opens the session.
func (c *confidential) handleCallback(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(LoginCookie)
	c.mu.Lock()
	l, ok := login{}, false
	if err == nil {
		l, ok = c.logins[ck.Value]
		delete(c.logins, ck.Value)
	}
	c.mu.Unlock()
	q := r.URL.Query()
	switch {
	case !ok:
		http.Redirect(w, r, "/?error=no_login_session", http.StatusFound)
		return
	case q.Get("state") != l.state:
		http.Redirect(w, r, "/?error=state_mismatch", http.StatusFound)
		return
	case q.Get("error") != "":
		http.SetCookie(w, &http.Cookie{Name: LoginCookie, Path: "/", MaxAge: -1})
		http.Redirect(w, r, "/?error="+template.URLQueryEscaper(q.Get("error")), http.StatusFound)
		return
	}
	ctx := r.Context()
	if c.cfg.HTTP != nil {
		ctx = contextWithClient(ctx, c.cfg.HTTP)
	}
	tok, err := c.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(l.verifier))
	if err != nil {
		http.Redirect(w, r, "/?error=token_exchange_failed", http.StatusFound)
		return
	}
	sid := randomID()
	c.mu.Lock()
	c.sessions[sid] = tok
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: LoginCookie, Path: "/", MaxAge: -1})
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: sid, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Expires: time.Now().Add(time.Hour), MaxAge: 3600})
	http.Redirect(w, r, "/", http.StatusFound)
}

var homePage = template.Must(template.New("home").Parse(`<!doctype html><html><head><meta charset="utf-8"><title>{{.Name}}</title>` + style + `</head>
<body data-signed-in="{{.SignedIn}}" data-error="{{.Error}}">
<h1>{{.Name}}</h1>
{{if .SignedIn}}<p id="status">Signed in. Scope: <b>{{.Scope}}</b></p>
<p>The session cookie is HttpOnly. What this page's scripts can read of document.cookie:</p><pre id="cookies"></pre>
<script>document.getElementById("cookies").textContent = JSON.stringify(document.cookie);</script>
{{else}}<p id="status">Not signed in{{if .Error}} ({{.Error}}){{end}}.</p><a class="btn" id="signin" href="/login">Sign in</a>{{end}}
</body></html>`))

// handleHome shows whether the browser sent a valid session cookie.
func (c *confidential) handleHome(w http.ResponseWriter, r *http.Request) {
	var tok *oauth2.Token
	if ck, err := r.Cookie(SessionCookie); err == nil {
		c.mu.Lock()
		tok = c.sessions[ck.Value]
		c.mu.Unlock()
	}
	data := struct {
		Name, Scope, Error string
		SignedIn           bool
	}{Name: c.cfg.Name, Error: r.URL.Query().Get("error"), SignedIn: tok != nil}
	if tok != nil {
		data.Scope, _ = tok.Extra("scope").(string)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = homePage.Execute(w, data)
}
