package authserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// front is a TLS reverse proxy on loopback, a deployment's front in
// miniature: it forwards every request, path and Host unchanged, to one
// role's listener, set once the server has started.
type front struct {
	*httptest.Server
	target atomic.Pointer[url.URL]
}

func newFront(t *testing.T) *front {
	t.Helper()
	f := &front{}
	f.Server = httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(f.target.Load())
		r.SetXForwarded()
		r.Out.Host = r.In.Host
	}})
	t.Cleanup(f.Close)
	return f
}

func (f *front) to(listen string) { f.target.Store(&url.URL{Scheme: "http", Host: listen}) }

// TestPublicAddressesBehindAProxy runs the server behind TLS proxies with
// public addresses that differ from its listeners, the issuer with a path:
// discovery, every endpoint, the sign-in pages, the authorization
// response's iss, the tokens' iss and aud, the catalog's provider types,
// the grant endpoint, the example provider, the native-consent API and the
// dashboard's origin check all use the public addresses, and a client that
// knows only them completes a flow.
func TestPublicAddressesBehindAProxy(t *testing.T) {
	svc, dash, sign, inv := newFront(t), newFront(t), newFront(t), newFront(t)
	issuer := svc.URL + "/miniapp"
	e := startWith(t, filepath.Join(t.TempDir(), "a.db"), &clock{t: time.Now()}, func(c *authserver.Config) {
		// The dashboard's origin written with a final slash: it is an
		// origin, so the slash goes.
		c.Issuer, c.DashboardURL, c.SigningURL, c.InvoicingURL = issuer, dash.URL+"/", sign.URL, inv.URL
	})
	la := e.srv.ListenAddrs()
	svc.to(la.Service)
	dash.to(la.Dashboard)
	sign.to(la.Signing)
	inv.to(la.Invoicing)
	u := e.srv.URLs()
	want := authserver.URLs{Issuer: issuer, BaseURL: issuer + "/bank", Dashboard: dash.URL, SigningBaseURL: sign.URL + "/api",
		InvoicingBaseURL: inv.URL + "/api", Discovery: issuer + "/.well-known/openid-configuration",
		Authorization: issuer + "/oauth/authorize", Token: issuer + "/oauth/token", Grant: issuer + "/bank/authorization",
		Native: issuer + "/native/requests", PAR: issuer + "/oauth/par"}
	if u != want {
		t.Fatalf("URLs:\n got %+v\nwant %+v", u, want)
	}
	hc := svc.Client() // trusts the proxies' certificate
	ctx := context.WithValue(oidc.ClientContext(context.Background(), hc), oauth2.HTTPClient, hc)

	// go-oidc requires the discovery document's issuer to be the URL it
	// was fetched for; every endpoint is below the issuer.
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	md := getJSON(t, hc, u.Discovery)
	for k, v := range md {
		if s, ok := v.(string); ok && (strings.HasSuffix(k, "_endpoint") || k == "jwks_uri") {
			if !strings.HasPrefix(s, issuer+"/") {
				t.Errorf("discovery %s = %q, not below the issuer %s", k, v, issuer)
			}
		}
	}
	// RFC 8414 §3.1: the well-known segment goes before the issuer's path.
	if as := getJSON(t, hc, svc.URL+"/.well-known/oauth-authorization-server/miniapp"); as["issuer"] != issuer {
		t.Errorf("RFC 8414 metadata: issuer %v", as["issuer"])
	}
	signingKey := sign.URL + "/authorization-details/signing-key"
	if !strings.Contains(jsonOf(t, md["authorization_details_types_supported"]), `"`+signingKey+`"`) {
		t.Errorf("discovery lacks the signing type on the public origin %s: %v", signingKey, md["authorization_details_types_supported"])
	}
	if _, ok := e.srv.Catalog().Type(signingKey); !ok {
		t.Errorf("catalog lacks %s", signingKey)
	}

	// The browser flow through the proxy: the redirects, the pages' forms
	// and their stylesheet stay below the issuer's path.
	conf := &oauth2.Config{ClientID: publicID, RedirectURL: publicRedir, Endpoint: provider.Endpoint(),
		Scopes: []string{oidc.ScopeOpenID, "profile"}}
	verifier := oauth2.GenerateVerifier()
	details := `[{"type":"` + signingKey + `","actions":["read"],"locations":["` + u.SigningBaseURL + `"]}]`
	authURL := conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "n"),
		oauth2.SetAuthURLParam("resource", u.BaseURL), oauth2.SetAuthURLParam("org_id", orgAndes),
		oauth2.SetAuthURLParam("authorization_details", details))
	authURL += "&resource=" + url.QueryEscape(u.SigningBaseURL)
	first := noRedirect(t, hc, authURL)
	if loc := first.Header.Get("Location"); first.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/miniapp/oauth/login?") {
		t.Fatalf("authorize: want a redirect to /miniapp/oauth/login, got %d %q", first.StatusCode, loc)
	}
	if ck := first.Header.Get("Set-Cookie"); !strings.Contains(ck, "Path=/miniapp/") || !strings.Contains(ck, "Secure") {
		t.Errorf("session cookie not scoped to the issuer's path, or not Secure on https: %q", ck)
	}
	b := newBrowserVia(t, issuer, hc.Transport)
	if css := b.get(issuer + "/oauth/static/style.css"); css.status != http.StatusOK {
		t.Errorf("stylesheet below the issuer's path: %d", css.status)
	}
	q := b.browserCode(authURL, subAna, map[string]string{"action": "approve"})
	if q.Get("iss") != issuer || q.Get("code") == "" {
		t.Fatalf("authorization response: %v", q)
	}
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange at the public token endpoint: %v", err)
	}
	// go-oidc checks the ID token's iss against the issuer.
	if _, err := provider.Verifier(&oidc.Config{ClientID: publicID}).Verify(ctx, tok.Extra("id_token").(string)); err != nil {
		t.Fatalf("id token: %v", err)
	}
	claims := accessClaims(t, tok.AccessToken)
	if claims["iss"] != issuer || !strings.Contains(jsonOf(t, claims["aud"]), `"`+u.SigningBaseURL+`"`) ||
		!strings.Contains(jsonOf(t, claims["aud"]), `"`+u.BaseURL+`"`) {
		t.Errorf("access token iss %v aud %v, want %s and both public resource addresses", claims["iss"], claims["aud"], issuer)
	}

	// The grant endpoint at its public address, and the example provider
	// at its public origin (it reads the grant from its own process).
	req, _ := http.NewRequest(http.MethodGet, u.Grant, nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("X-Client-Id", signingID)
	req.Header.Set("X-Client-Secret", signingSecret)
	if st, body := send(t, hc, req); st != http.StatusOK || !strings.Contains(body, signingKey) {
		t.Errorf("grant endpoint: %d %s", st, body)
	}
	req, _ = http.NewRequest(http.MethodGet, u.SigningBaseURL+"/signing-key", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	if st, body := send(t, hc, req); st != http.StatusOK {
		t.Errorf("signing provider at its public origin: %d %s", st, body)
	}

	// The native-consent API accepts the public authorization endpoint and
	// refuses the listener's, which is not this server's endpoint.
	_, challenge := pkce(t)
	params := e.authParams(challenge)
	params.Set("resource", u.BaseURL)
	for _, tc := range []struct {
		authz string
		want  int
	}{
		{u.Authorization, http.StatusCreated},
		{"http://" + la.Service + "/miniapp/oauth/authorize", http.StatusBadRequest},
	} {
		body, _ := json.Marshal(map[string]any{"authorization_url": tc.authz + "?" + params.Encode(), "subject": subAna})
		req, _ := http.NewRequest(http.MethodPost, u.Native, bytes.NewReader(body))
		req.SetBasicAuth(hostID, hostSecret)
		req.Header.Set("Content-Type", "application/json")
		if st, body := send(t, hc, req); st != tc.want {
			t.Errorf("native submission of %s: %d, want %d: %s", tc.authz, st, tc.want, body)
		}
	}

	// The dashboard: the client configuration at {dashboard_url}, and a
	// state-changing request from a page of the public dashboard origin is
	// accepted, one naming the listener's origin is not.
	if st, body := send(t, hc, mustRequest(t, http.MethodGet, u.Dashboard+"/api/oauth/clients/"+publicID, "")); st != http.StatusOK ||
		!strings.Contains(body, publicRedir) {
		t.Errorf("client configuration at the public dashboard: %d %s", st, body)
	}
	for _, tc := range []struct {
		origin string
		want   int
	}{{dash.URL, http.StatusCreated}, {"http://" + la.Dashboard, http.StatusForbidden}} {
		req := mustRequest(t, http.MethodPost, u.Dashboard+"/api/projects", `{"name":"Proxied"}`)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", tc.origin)
		if st, body := send(t, hc, req); st != tc.want {
			t.Errorf("create a project from Origin %s: %d, want %d: %s", tc.origin, st, tc.want, body)
		}
	}
}

// TestPublicAddressValidation: Start refuses a public address that breaks
// its rule with an *AddressError naming the field and the rule, before it
// listens; canonical addresses are accepted.
func TestPublicAddressValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   authserver.Config
		field string
		rule  string // part of the rule; "" means accepted
	}{
		{"issuer", authserver.Config{Issuer: "https://id.example"}, "", ""},
		{"issuer with a path", authserver.Config{Issuer: "https://id.example/tenant/miniapp"}, "", ""},
		{"http issuer", authserver.Config{Issuer: "http://127.0.0.1:8600"}, "", ""},
		{"issuer with a query", authserver.Config{Issuer: "https://id.example/x?a=b"}, "Issuer", "no query"},
		{"issuer with an empty query", authserver.Config{Issuer: "https://id.example?"}, "Issuer", "no query"},
		{"issuer with a fragment", authserver.Config{Issuer: "https://id.example#top"}, "Issuer", "no fragment"},
		{"issuer ending in a slash", authserver.Config{Issuer: "https://id.example/"}, "Issuer", `write "https://id.example"`},
		{"relative issuer", authserver.Config{Issuer: "id.example"}, "Issuer", "not an absolute http(s) URL"},
		{"issuer of another scheme", authserver.Config{Issuer: "ftp://id.example"}, "Issuer", "https (or http)"},
		{"issuer with a user", authserver.Config{Issuer: "https://me@id.example"}, "Issuer", "user name"},
		{"issuer with an upper-case host", authserver.Config{Issuer: "https://ID.example"}, "Issuer", `write it as "https://id.example"`},
		{"issuer with the default port", authserver.Config{Issuer: "https://id.example:443/x"}, "Issuer", `write it as "https://id.example/x"`},
		{"issuer with dot segments", authserver.Config{Issuer: "https://id.example/a/../b"}, "Issuer", `write it as "https://id.example/b"`},
		{"issuer with an encoded path", authserver.Config{Issuer: "https://id.example/a%20b"}, "Issuer", "only letters, digits"},
		{"issuer on port 0", authserver.Config{Issuer: "http://127.0.0.1:0"}, "Issuer", "port 0"},
		{"dashboard origin", authserver.Config{DashboardURL: "https://dash.example:8443"}, "", ""},
		{"dashboard origin with a path", authserver.Config{DashboardURL: "https://dash.example/console"}, "DashboardURL", "no path"},
		{"signing origin with a query", authserver.Config{SigningURL: "https://sign.example?x"}, "SigningURL", "no query"},
		{"invoicing origin with a fragment", authserver.Config{InvoicingURL: "https://inv.example#x"}, "InvoicingURL", "no fragment"},
		{"invoicing origin of another scheme", authserver.Config{InvoicingURL: "wss://inv.example"}, "InvoicingURL", "http or https"},
		{"signing origin on port 0", authserver.Config{SigningURL: "http://127.0.0.1:0"}, "SigningURL", "port 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ae *authserver.AddressError
			if !errors.As(err, &ae) || ae.Field != tc.field || !strings.Contains(ae.Rule, tc.rule) {
				t.Fatalf("want an AddressError on %s saying %q, got %v", tc.field, tc.rule, err)
			}
			// Start refuses it before listening: the port stays free.
			tc.cfg.DB, tc.cfg.ServiceAddr = filepath.Join(t.TempDir(), "a.db"), "127.0.0.1:0"
			if srv, err := authserver.Start(context.Background(), tc.cfg); !errors.As(err, &ae) {
				if srv != nil {
					srv.Close()
				}
				t.Fatalf("Start: want the AddressError, got %v", err)
			}
		})
	}
}

func getJSON(t *testing.T, hc *http.Client, u string) map[string]any {
	t.Helper()
	st, body := send(t, hc, mustRequest(t, http.MethodGet, u, ""))
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); st != http.StatusOK || err != nil {
		t.Fatalf("GET %s: %d %s", u, st, body)
	}
	return m
}

func mustRequest(t *testing.T, method, u, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// send sends a request and returns the status and body.
func send(t *testing.T, hc *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// noRedirect sends a GET and returns the first response, unfollowed.
func noRedirect(t *testing.T, hc *http.Client, u string) *http.Response {
	t.Helper()
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// accessClaims returns an access token's claims, unverified: the flow test
// verifies signatures, this one reads the addresses.
func accessClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c); err != nil {
		t.Fatal(err)
	}
	return c
}
