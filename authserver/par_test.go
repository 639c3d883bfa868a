package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// metadata returns the discovery document.
func (e *env) metadata() map[string]any {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.u.Discovery, nil)
	st, md, _ := e.do(req)
	if st != http.StatusOK {
		e.t.Fatalf("discovery: %d", st)
	}
	return md
}

// parEndpoint is the PAR endpoint as discovery names it.
func (e *env) parEndpoint() string {
	e.t.Helper()
	u, _ := e.metadata()["pushed_authorization_request_endpoint"].(string)
	if u == "" {
		e.t.Fatal("discovery names no pushed_authorization_request_endpoint")
	}
	return u
}

// post posts a form to an endpoint of the service, with HTTP Basic when
// user is not empty and the extra headers.
func (e *env) post(endpoint string, form url.Values, user, pass string, hdr ...string) (int, map[string]any, http.Header) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return e.do(req)
}

// push pushes an authorization request and returns its request_uri.
func (e *env) push(form url.Values, user, pass string) string {
	e.t.Helper()
	st, m, _ := e.post(e.parEndpoint(), form, user, pass)
	if st != http.StatusCreated {
		e.t.Fatalf("PAR: want 201, got %d %v", st, m)
	}
	uri, _ := m["request_uri"].(string)
	if !strings.HasPrefix(uri, "urn:ietf:params:oauth:request_uri:") || m["expires_in"] != float64(60) {
		e.t.Fatalf("PAR: want a request_uri urn:ietf:params:oauth:request_uri:... expiring in 60 s, got %v", m)
	}
	return uri
}

// byReference is the authorization URL of a pushed request.
func (e *env) byReference(clientID, requestURI string, extra ...string) string {
	q := url.Values{"client_id": {clientID}, "request_uri": {requestURI}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return e.u.Authorization + "?" + q.Encode()
}

// TestPAR: a confidential client pushes its request (RFC 9126) and sends
// the browser with client_id and request_uri only; the browser signs in and
// consents, the redirect carries the pushed state (not one added to the
// URL) and iss, and the code redeems. The request_uri is then used up: the
// browser that tries it again gets the error page, as does the native API.
// Discovery names the endpoint and says PAR is not required server-wide.
func TestPAR(t *testing.T) {
	e := start(t)
	md := e.metadata()
	if md["pushed_authorization_request_endpoint"] != e.u.Issuer+"/oauth/par" || md["require_pushed_authorization_requests"] != false {
		t.Fatalf("discovery: pushed_authorization_request_endpoint=%v require_pushed_authorization_requests=%v",
			md["pushed_authorization_request_endpoint"], md["require_pushed_authorization_requests"])
	}
	verifier, challenge := pkce(t)
	uri := e.push(e.confAuthParams(challenge), confID, e.confSecret)
	b := newBrowser(t, e.u.Issuer)
	rq := b.browserCode(e.byReference(confID, uri, "state", "not-the-pushed-one"), subAna, map[string]string{"action": "approve"})
	if rq.Get("code") == "" || rq.Get("state") != "st-123" || rq.Get("iss") != e.u.Issuer {
		t.Fatalf("redirect: want the code with the pushed state and iss, got %v", rq)
	}
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {confRedir},
		"code_verifier": {verifier}}, confID, e.confSecret)
	if st != http.StatusOK || tok["access_token"] == nil {
		t.Fatalf("token: %d %v", st, tok)
	}
	p := b.get(e.byReference(confID, uri))
	if p.status != http.StatusBadRequest || p.header.Get("Location") != "" || !strings.Contains(p.body, "invalid_request_uri") {
		t.Fatalf("request_uri used again: want a 400 page naming invalid_request_uri, got %d %q", p.status, p.header.Get("Location"))
	}
	st, m := e.native(map[string]any{"authorization_url": e.byReference(confID, uri), "subject": subAna})
	if st != http.StatusBadRequest || m["error"] != "invalid_request_uri" || m["redirect_url"] != nil {
		t.Fatalf("native, request_uri used again: want 400 invalid_request_uri without redirect_url, got %d %v", st, m)
	}
}

// TestPARNative: a host submits the authorization URL of a pushed request
// to the native-consent API, which takes the pushed request as the
// browser endpoint does.
func TestPARNative(t *testing.T) {
	e := start(t)
	verifier, challenge := pkce(t)
	q := e.authParams(challenge)
	uri := e.push(q, "", "") // a public client identifies itself with client_id
	rq := e.nativeCode(url.Values{"client_id": {publicID}, "request_uri": {uri}}, subAna, map[string]string{"action": "approve"})
	if rq.Get("code") == "" || rq.Get("state") != "st-123" {
		t.Fatalf("native: %v", rq)
	}
	if st, m := e.exchange(rq.Get("code"), verifier); st != http.StatusOK {
		t.Fatalf("token: %d %v", st, m)
	}
}

// TestPARRefusals: the PAR endpoint authenticates the client as the token
// endpoint does and checks the request as the authorization endpoint does
// (the same function), answering in JSON; a request_uri that is unknown,
// another client's or expired gets the error page at the authorization
// endpoint, never a redirect, since no redirect_uri was verified.
func TestPARRefusals(t *testing.T) {
	e := start(t)
	_, challenge := pkce(t)
	par := e.parEndpoint()
	for _, tc := range []struct {
		name       string
		change     func(url.Values)
		user, pass string
		status     int
		code, desc string
	}{
		{"no client authentication", func(q url.Values) { q.Del("client_id") }, "", "", 401, "invalid_client", "client authentication is missing"},
		{"wrong secret", nil, confID, "wrong", 401, "invalid_client", "client authentication failed"},
		{"confidential client without secret", nil, "", "", 401, "invalid_client", "a confidential client must authenticate"},
		{"request_uri pushed", func(q url.Values) { q.Set("request_uri", "urn:ietf:params:oauth:request_uri:x") }, confID, "", 400, "invalid_request", "request_uri must not be pushed"},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge") }, confID, "", 400, "invalid_request", "code_challenge is required"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, confID, "", 400, "invalid_request", "code_challenge_method must be S256"},
		{"unregistered redirect_uri", func(q url.Values) { q.Set("redirect_uri", confRedir+"/") }, confID, "", 400, "invalid_request", "exact match required"},
		{"no redirect_uri", func(q url.Values) { q.Del("redirect_uri") }, confID, "", 400, "invalid_request", "redirect_uri is missing"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "openid admin") }, confID, "", 400, "invalid_scope", "admin"},
		{"resource of another server", func(q url.Values) { q.Set("resource", "https://evil.example/api") }, confID, "", 400, "invalid_target", ""},
		{"unknown org_id", func(q url.Values) {
			q.Set("org_id", "org_nowhere")
			q.Set("authorization_details", companyPair(e.u.BaseURL))
		}, confID, "", 400, "invalid_request", "org_id names no Company"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := e.confAuthParams(challenge)
			if tc.change != nil {
				tc.change(q)
			}
			pass := tc.pass
			if tc.user != "" && pass == "" {
				pass = e.confSecret
			}
			st, m, _ := e.post(par, q, tc.user, pass)
			desc, _ := m["error_description"].(string)
			if st != tc.status || m["error"] != tc.code || !strings.Contains(desc, tc.desc) || m["request_uri"] != nil {
				t.Fatalf("want %d %s (%q), got %d %v", tc.status, tc.code, tc.desc, st, m)
			}
		})
	}

	page := func(t *testing.T, u, why string) {
		t.Helper()
		p := newBrowser(t, e.u.Issuer).get(u)
		if p.status != http.StatusBadRequest || p.header.Get("Location") != "" || !strings.Contains(p.body, "invalid_request_uri") {
			t.Fatalf("%s: want a 400 page naming invalid_request_uri, got %d %q", why, p.status, p.header.Get("Location"))
		}
	}
	t.Run("unknown request_uri", func(t *testing.T) {
		page(t, e.byReference(confID, "urn:ietf:params:oauth:request_uri:abc"), "unknown")
	})
	t.Run("another client's request_uri", func(t *testing.T) {
		uri := e.push(e.confAuthParams(challenge), confID, e.confSecret)
		page(t, e.byReference(publicID, uri), "another client's")
		// Not spent by the attempt: its own client still uses it.
		p := newBrowser(t, e.u.Issuer).get(e.byReference(confID, uri))
		if p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/login") {
			t.Fatalf("own client after another's attempt: want the sign-in page, got %d %s", p.status, p.url)
		}
	})
	t.Run("expired request_uri", func(t *testing.T) {
		uri := e.push(e.confAuthParams(challenge), confID, e.confSecret)
		e.clock.Advance(61 * time.Second)
		page(t, e.byReference(confID, uri), "expired")
	})
	t.Run("request_uri without client_id", func(t *testing.T) {
		uri := e.push(e.confAuthParams(challenge), confID, e.confSecret)
		p := newBrowser(t, e.u.Issuer).get(e.u.Authorization + "?" + url.Values{"request_uri": {uri}}.Encode())
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "client_id is missing") {
			t.Fatalf("want a 400 page saying client_id is missing, got %d", p.status)
		}
	})
}

// fapiProject creates a project whose policy the operator approved
// (openid, profile, offline_access) and returns its id and key.
func (e *env) fapiProject() (string, string) {
	e.t.Helper()
	prj, key := e.project("FAPI app")
	sub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/policy", key,
		map[string]any{"scopes": []string{"openid", "profile", "offline_access"}})
	e.mustDash(http.StatusOK, "POST", "/api/review/"+sub["id"].(string)+"/approve", e.srv.OperatorKey(), nil)
	return prj, key
}

// TestPARRequiredByCredential: a credential that requires PAR (a dashboard
// setting, shown with the credential) has a request that was not pushed
// refused, redirected with invalid_request, state and iss, at the browser
// endpoint and in the native-consent API, while its pushed requests work
// and other clients are not affected. Turning the setting off lifts it at
// once.
func TestPARRequiredByCredential(t *testing.T) {
	e := start(t)
	prj, key := e.fapiProject()
	const redirect = "https://fapi.example/cb"
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key, map[string]any{
		"type": "confidential", "redirect_uris": []string{redirect}, "require_pushed_authorization_requests": true})
	if c["require_pushed_authorization_requests"] != true || c["token_endpoint_auth_method"] != "client_secret_basic" {
		t.Fatalf("credential: %v", c)
	}
	id, secret := c["client_id"].(string), c["client_secret"].(string)
	_, challenge := pkce(t)
	q := e.authParams(challenge)
	q.Set("client_id", id)
	q.Set("redirect_uri", redirect)
	q.Set("scope", "openid profile")
	p := newBrowser(t, e.u.Issuer).get(e.u.Authorization + "?" + q.Encode())
	loc, _ := url.Parse(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || !strings.HasPrefix(loc.String(), redirect+"?") {
		t.Fatalf("not pushed: want a redirect to the client, got %d %q", p.status, loc)
	}
	rq := loc.Query()
	if rq.Get("error") != "invalid_request" || !strings.Contains(rq.Get("error_description"), "requires pushed authorization requests") ||
		rq.Get("state") != "st-123" || rq.Get("iss") != e.u.Issuer {
		t.Fatalf("not pushed: want invalid_request saying PAR is required, with state and iss, got %v", rq)
	}
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusBadRequest || m["error"] != "invalid_request" || m["redirect_url"] == nil {
		t.Fatalf("native, not pushed: want 400 invalid_request with a redirect_url, got %d %v", st, m)
	}
	uri := e.push(q, id, secret)
	if rq := newBrowser(t, e.u.Issuer).browserCode(e.byReference(id, uri), subAna, map[string]string{"action": "approve"}); rq.Get("code") == "" {
		t.Fatalf("pushed: %v", rq)
	}
	// Another client is not affected.
	_, ch := pkce(t)
	if rq := e.nativeCode(e.authParams(ch), subAna, map[string]string{"action": "approve"}); rq.Get("code") == "" {
		t.Fatalf("public client: %v", rq)
	}
	// Turned off, the credential's plain requests work at once.
	c = e.mustDash(http.StatusOK, "PATCH", "/api/projects/"+prj+"/credentials/"+id, key,
		map[string]any{"require_pushed_authorization_requests": false})
	if c["require_pushed_authorization_requests"] != false {
		t.Fatalf("after PATCH: %v", c)
	}
	if rq := e.nativeCode(q, subAna, map[string]string{"action": "approve"}); rq.Get("code") == "" {
		t.Fatalf("after PATCH: %v", rq)
	}
}

// TestPARRequiredByServer: with PAR required server-wide, discovery says
// so and every client's request that was not pushed is refused.
func TestPARRequiredByServer(t *testing.T) {
	e := startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(cfg *authserver.Config) {
		cfg.OAuth = oauth.Config{FAPI: oauth.FAPIConfig{RequirePAR: true}}
	})
	if md := e.metadata(); md["require_pushed_authorization_requests"] != true {
		t.Fatalf("discovery: require_pushed_authorization_requests=%v", md["require_pushed_authorization_requests"])
	}
	_, challenge := pkce(t)
	q := e.authParams(challenge)
	p := newBrowser(t, e.u.Issuer).get(e.u.Authorization + "?" + q.Encode())
	loc, _ := url.Parse(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || loc.Query().Get("error") != "invalid_request" ||
		!strings.Contains(loc.Query().Get("error_description"), "this server requires pushed authorization requests") {
		t.Fatalf("not pushed: want invalid_request, got %d %q", p.status, loc)
	}
	uri := e.push(q, "", "")
	if rq := e.nativeCode(url.Values{"client_id": {publicID}, "request_uri": {uri}}, subAna, map[string]string{"action": "approve"}); rq.Get("code") == "" {
		t.Fatalf("pushed: %v", rq)
	}
}

// TestPARAcrossInstances: on two instances sharing a PostgreSQL database,
// a request pushed to one is used at the other; and a request_uri sent to
// both at once is taken by one of them only.
func TestPARAcrossInstances(t *testing.T) {
	e, _, srvs := twoInstances(t, oauth.Config{})
	verifier, challenge := pkce(t)
	// Through the alternating proxy: the push reaches one instance, the
	// submission the other.
	uri := e.push(e.authParams(challenge), "", "")
	rq := e.nativeCode(url.Values{"client_id": {publicID}, "request_uri": {uri}}, subAna, map[string]string{"action": "approve"})
	if st, m := e.exchange(rq.Get("code"), verifier); st != http.StatusOK {
		t.Fatalf("token: %d %v", st, m)
	}
	for range 5 {
		uri := e.push(e.authParams(challenge), "", "")
		statuses := make([]int, 2)
		var wg sync.WaitGroup
		for i, srv := range srvs {
			wg.Go(func() {
				b := newBrowser(t, "http://"+srv.ListenAddrs().Service)
				p := b.get("http://" + srv.ListenAddrs().Service + "/oauth/authorize?" + url.Values{"client_id": {publicID}, "request_uri": {uri}}.Encode())
				statuses[i] = p.status
			})
		}
		wg.Wait()
		// The winner is sent on to sign in (the browser follows within the
		// instance's own origin: 200); the other gets the error page.
		if !(statuses[0] == 200 && statuses[1] == 400 || statuses[0] == 400 && statuses[1] == 200) {
			t.Fatalf("one request_uri at both instances: want one 200 and one 400, got %v", statuses)
		}
	}
}
