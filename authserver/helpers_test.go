package authserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"

	"golang.org/x/net/html"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// Clients every test registers, with redirect URIs on made-up origins: the
// tests read the redirect instead of following it.
const (
	publicID      = "test-public"
	publicRedir   = "https://app.example/cb"
	confID        = "test-confidential"
	confRedir     = "https://conf.example/cb"
	hostID        = "miniapp-host"
	hostSecret    = "host-secret-for-the-tests"
	signingID     = "signing-provider"
	signingSecret = "signing-secret-for-tests"
)

// Seeded world ids the tests use.
const (
	subAna      = "sub_ana"
	subCarla    = "sub_carla"
	orgAndes    = "org_andes"
	anaAccount1 = "6f1c2a4e-3b5d-4c7e-9f10-2a3b4c5d6e71"
	andesAcct   = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a running server with its registered test clients.
type env struct {
	t          *testing.T
	srv        *authserver.Server
	u          authserver.URLs
	db         string
	clock      *clock
	confSecret string
}

// start runs a server on a fresh database in the test's temp dir.
func start(t *testing.T) *env {
	t.Helper()
	return startAt(t, storetest.DB(t), &clock{t: time.Now()})
}

// startAt runs a server on the given database file, on the addresses of
// a previous run when one is given.
func startAt(t *testing.T, db string, clk *clock, prev ...authserver.URLs) *env {
	t.Helper()
	return startWith(t, db, clk, func(cfg *authserver.Config) {
		if len(prev) > 0 {
			hostOf := func(u string) string { p, _ := url.Parse(u); return p.Host }
			cfg.ServiceAddr, cfg.DashboardAddr = hostOf(prev[0].Issuer), hostOf(prev[0].Dashboard)
			cfg.SigningAddr, cfg.InvoicingAddr = hostOf(prev[0].SigningBaseURL), hostOf(prev[0].InvoicingBaseURL)
		}
	})
}

// startWith runs a server on the given database file with the test
// configuration changed by set.
func startWith(t *testing.T, db string, clk *clock, set func(*authserver.Config)) *env {
	t.Helper()
	cfg := authserver.Config{
		DB: db, Now: clk.Now,
		Secrets: map[string]string{hostID: hostSecret, signingID: signingSecret},
	}
	set(&cfg)
	srv, err := authserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	e := &env{t: t, srv: srv, u: srv.URLs(), db: db, clock: clk}
	ctx := context.Background()
	if _, err := srv.RegisterClient(ctx, authserver.ClientSpec{ID: publicID, RedirectURIs: []string{publicRedir},
		AllowedOrigins: []string{"https://app.example"}}); err != nil {
		t.Fatal(err)
	}
	cred, err := srv.RegisterClient(ctx, authserver.ClientSpec{ID: confID, Confidential: true,
		RedirectURIs: []string{confRedir}, AllowedOrigins: []string{"https://conf.example"}})
	if err != nil {
		t.Fatal(err)
	}
	e.confSecret = cred.ClientSecret
	return e
}

// pkce returns a fresh verifier and its S256 challenge.
func pkce(t *testing.T) (verifier, challenge string) {
	t.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	return verifier, s256(verifier)
}

// authParams are the parameters of a valid request of the public client.
func (e *env) authParams(challenge string) url.Values {
	return url.Values{
		"client_id": {publicID}, "redirect_uri": {publicRedir}, "response_type": {"code"},
		"scope": {"openid profile offline_access"}, "resource": {e.u.BaseURL}, "state": {"st-123"}, "nonce": {"n-456"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"},
	}
}

// confAuthParams are authParams for the confidential demo client.
func (e *env) confAuthParams(challenge string) url.Values {
	q := e.authParams(challenge)
	q.Set("client_id", confID)
	q.Set("redirect_uri", confRedir)
	return q
}

// do sends a request and decodes a JSON answer into a map.
func (e *env) do(req *http.Request) (int, map[string]any, http.Header) {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(raw) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(raw, &m); err != nil {
			e.t.Fatalf("%s %s: body is not JSON: %s", req.Method, req.URL, raw)
		}
	}
	return resp.StatusCode, m, resp.Header
}

// native posts a submission to the native-consent API as the host.
func (e *env) native(body any) (int, map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, e.u.Native, bytes.NewReader(b))
	req.SetBasicAuth(hostID, hostSecret)
	req.Header.Set("Content-Type", "application/json")
	st, m, _ := e.do(req)
	return st, m
}

// decide posts a decision for a native request.
func (e *env) decide(id string, decision any) (int, map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(decision)
	req, _ := http.NewRequest(http.MethodPost, e.u.Native+"/"+id+"/decision", bytes.NewReader(b))
	req.SetBasicAuth(hostID, hostSecret)
	st, m, _ := e.do(req)
	return st, m
}

// nativeCode runs the native flow for the parameters and returns the
// redirect URL's query.
func (e *env) nativeCode(q url.Values, subject string, decision map[string]string) url.Values {
	e.t.Helper()
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subject})
	if st != http.StatusCreated {
		e.t.Fatalf("native submit: %d %v", st, m)
	}
	st, m = e.decide(m["request_id"].(string), decision)
	if st != http.StatusOK {
		e.t.Fatalf("native decision: %d %v", st, m)
	}
	return redirectQuery(e.t, m["redirect_url"].(string))
}

func redirectQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// token posts to the token endpoint; user/pass set HTTP Basic when user
// is not empty.
func (e *env) token(form url.Values, user, pass string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.u.Token, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	st, m, _ := e.do(req)
	return st, m
}

// exchange redeems a code for the public client.
func (e *env) exchange(code, verifier string) (int, map[string]any) {
	e.t.Helper()
	return e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {publicRedir},
		"code_verifier": {verifier}, "client_id": {publicID}}, "", "")
}

// grant calls GET {base_url}/authorization.
func (e *env) grant(token, clientID, secret string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if clientID != "" {
		req.Header.Set("X-Client-Id", clientID)
		req.Header.Set("X-Client-Secret", secret)
	}
	st, m, _ := e.do(req)
	return st, m
}

// publicTokens runs a native flow of the public client and returns the
// token response.
func (e *env) publicTokens(q url.Values, verifier string) map[string]any {
	e.t.Helper()
	rq := e.nativeCode(q, subAna, map[string]string{"action": "approve"})
	st, m := e.exchange(rq.Get("code"), verifier)
	if st != http.StatusOK {
		e.t.Fatalf("token: %d %v", st, m)
	}
	return m
}

// browser is a user agent with a cookie jar that stops at the client's
// redirect_uri.
type browser struct {
	t  *testing.T
	hc *http.Client
}

func newBrowser(t *testing.T, issuer string) *browser {
	t.Helper()
	return newBrowserFrom(t, issuer, "")
}

// newBrowserFrom is newBrowser connecting from a source address of
// 127.0.0.0/8 ("" for the default).
func newBrowserFrom(t *testing.T, issuer, src string) *browser {
	t.Helper()
	var tr http.RoundTripper = http.DefaultTransport
	if src != "" {
		tr = transportFrom(t, src)
	}
	return newBrowserVia(t, issuer, tr)
}

// transportFrom is a transport whose connections come from src; closed
// when the test ends.
func transportFrom(t *testing.T, src string) *http.Transport {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// newBrowserVia is a browser with its own cookie jar over a shared
// transport, as tabs of one browser share connections.
func newBrowserVia(t *testing.T, issuer string, tr http.RoundTripper) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	iu, _ := url.Parse(issuer)
	return &browser{t: t, hc: &http.Client{Jar: jar, Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != iu.Host {
			return http.ErrUseLastResponse
		}
		return nil
	}}}
}

// page is a fetched response with its body.
type page struct {
	status int
	url    *url.URL
	header http.Header
	body   string
}

func (b *browser) get(u string) page {
	b.t.Helper()
	resp, err := b.hc.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	return readPage(b.t, resp)
}

func (b *browser) post(u string, form url.Values) page {
	b.t.Helper()
	resp, err := b.hc.PostForm(u, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return readPage(b.t, resp)
}

func readPage(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, url: resp.Request.URL, header: resp.Header, body: string(raw)}
}

// form is a parsed HTML form: its action and the values a browser would
// submit by default (hidden inputs, checked radios and checked checkboxes
// that are not disabled).
type form struct {
	action string
	values url.Values
}

// parseForm reads the first form of a page.
func parseForm(t *testing.T, p page) form {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(p.body))
	if err != nil {
		t.Fatal(err)
	}
	f := form{values: url.Values{}}
	found := false
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			attr := map[string]string{}
			checked, disabled := false, false
			for _, a := range n.Attr {
				attr[a.Key] = a.Val
				checked = checked || a.Key == "checked"
				disabled = disabled || a.Key == "disabled"
			}
			switch n.Data {
			case "form":
				if !found {
					found = true
					f.action = attr["action"]
				}
			case "input":
				// What a browser sends of a form left as it is.
				if attr["type"] == "hidden" || attr["type"] == "text" || (attr["type"] == "radio" && checked) || (attr["type"] == "checkbox" && checked && !disabled) {
					f.values.Add(attr["name"], attr["value"])
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if !found {
		t.Fatalf("no form on %s (status %d): %s", p.url, p.status, p.body)
	}
	action, _ := p.url.Parse(f.action)
	f.action = action.String()
	return f
}

// browserCode drives sign-in and consent for an authorization URL and
// returns the query of the final redirect to the client.
func (b *browser) browserCode(authURL, subject string, decision map[string]string) url.Values {
	b.t.Helper()
	p := b.get(authURL)
	if p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/login") {
		b.t.Fatalf("authorize: want the sign-in page, got %d %s: %s", p.status, p.url, p.body)
	}
	f := parseForm(b.t, p)
	f.values.Set("subject", subject)
	p = b.post(f.action, f.values)
	if p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/consent") {
		b.t.Fatalf("sign-in: want the consent page, got %d %s: %s", p.status, p.url, p.body)
	}
	f = parseForm(b.t, p)
	for k, v := range decision {
		f.values.Set(k, v)
	}
	p = b.post(f.action, f.values)
	if p.status != http.StatusSeeOther {
		b.t.Fatalf("consent: want a redirect to the client, got %d: %s", p.status, p.body)
	}
	return redirectQuery(b.t, p.header.Get("Location"))
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// get fetches a URL and returns its body.
func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// introspect calls the introspection endpoint as a client.
func (e *env) introspect(tok, clientID, secret string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.u.Issuer+"/oauth/introspect", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	st, m, _ := e.do(req)
	return st, m
}

func s256(v string) string {
	h := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// postOK posts body to target with hc, set preparing the request, and
// returns the JSON object of a 2xx answer; any other answer is an error
// naming the status and the body.
func postOK(hc *http.Client, target, body string, set func(*http.Request)) (map[string]any, error) {
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	set(req)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("POST %s: %d %v %v", target, resp.StatusCode, m, err)
	}
	return m, nil
}

// asHost authenticates a native-consent API request as the host.
func asHost(r *http.Request) {
	r.SetBasicAuth(hostID, hostSecret)
	r.Header.Set("Content-Type", "application/json")
}
