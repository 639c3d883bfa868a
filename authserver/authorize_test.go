package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestRedirectURIExactMatch sends the redirect_uri variants that loose
// matching has let through (docs/security.md, "Authorization servers"): each gets an error page,
// never a redirect, from the browser endpoint and the native API alike.
func TestRedirectURIExactMatch(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	for _, tc := range []struct{ name, uri string }{
		{"dot segments", "https://app.example/cb/../admin"},
		{"encoded dot segments", "https://app.example/cb%2F..%2F"},
		{"prefix", "https://app.example/cbx"},
		{"suffix host", "https://app.example.evil/cb"},
		{"scheme downgrade", "http://app.example/cb"},
		{"another port", "https://app.example:8443/cb"},
		{"explicit default port", "https://app.example:443/cb"},
		{"added fragment", "https://app.example/cb#x"},
		{"host case", "https://APP.example/cb"},
		{"path case", "https://app.example/CB"},
		{"query added", "https://app.example/cb?next=/admin"},
		{"trailing slash", "https://app.example/cb/"},
		{"userinfo", "https://evil.example@app.example/cb"},
		{"another client's", confRedir},
		{"missing", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := e.authParams(c)
			q.Set("redirect_uri", tc.uri)
			if tc.uri == "" {
				q.Del("redirect_uri")
			}
			p := newBrowser(t, e.u.Issuer).get(e.u.Authorization + "?" + q.Encode())
			if p.status != http.StatusBadRequest || p.header.Get("Location") != "" || !strings.Contains(p.header.Get("Content-Type"), "text/html") {
				t.Fatalf("want a 400 error page and no redirect, got %d Location=%q", p.status, p.header.Get("Location"))
			}
			if strings.Contains(p.body, "<script") {
				t.Fatal("error page reflects markup")
			}
			st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
			if st != http.StatusBadRequest || m["redirect_url"] != nil {
				t.Fatalf("native: want 400 without redirect_url, got %d %v", st, m)
			}
		})
	}
}

// TestUnknownClientGetsErrorPage: an unknown client_id is never redirected.
func TestUnknownClientGetsErrorPage(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	q := e.authParams(c)
	q.Set("client_id", "no-such-client<script>")
	p := newBrowser(t, e.u.Issuer).get(e.u.Authorization + "?" + q.Encode())
	if p.status != http.StatusBadRequest || p.header.Get("Location") != "" || strings.Contains(p.body, "<script>") {
		t.Fatalf("want a 400 invalid_client page, got %d %q", p.status, p.header.Get("Location"))
	}
	if !strings.Contains(p.body, "invalid_client") {
		t.Fatalf("error page does not name the error: %s", p.body)
	}
}

// TestAuthorizeErrorsRedirect checks the errors that go back to a verified
// redirect_uri: each carries its code, state and iss (RFC 9207), from the
// browser endpoint (GET and POST) and as the native API's redirect_url.
func TestAuthorizeErrorsRedirect(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	base := e.u.BaseURL
	charge := `{"type":"` + base + `/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["` + base + `"],"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"}}`
	for _, tc := range []struct {
		name string
		set  map[string]string
		del  []string
		add  map[string]string
		want string
	}{
		{"response_type token", map[string]string{"response_type": "token"}, nil, nil, "unsupported_response_type"},
		{"response_mode fragment", map[string]string{"response_mode": "fragment"}, nil, nil, "invalid_request"},
		{"missing PKCE", nil, []string{"code_challenge", "code_challenge_method"}, nil, "invalid_request"},
		{"plain PKCE", map[string]string{"code_challenge_method": "plain"}, nil, nil, "invalid_request"},
		{"method missing (defaults to plain)", nil, []string{"code_challenge_method"}, nil, "invalid_request"},
		{"challenge not S256-shaped", map[string]string{"code_challenge": "short"}, nil, nil, "invalid_request"},
		{"repeated state", nil, nil, map[string]string{"state": "again"}, "invalid_request"},
		{"unknown scope", map[string]string{"scope": "openid admin"}, nil, nil, "invalid_scope"},
		{"nothing requested", map[string]string{"scope": ""}, nil, nil, "invalid_scope"},
		{"resource of another server", map[string]string{"resource": "https://evil.example/api"}, nil, nil, "invalid_target"},
		{"scope without resource", nil, []string{"resource"}, nil, "invalid_target"},
		{"details malformed", map[string]string{"authorization_details": `[{"type":`}, nil, nil, "invalid_authorization_details"},
		{"details unknown type", map[string]string{"authorization_details": `[{"type":"payment_initiation","actions":["read"]}]`}, nil, nil, "invalid_authorization_details"},
		{"details unknown field", map[string]string{"authorization_details": `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1},"extra":1}]`}, nil, nil, "invalid_authorization_details"},
		{"details selection and identifiers", map[string]string{"authorization_details": `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1},"identifiers":["` + anaAccount1 + `"]}]`}, nil, nil, "invalid_authorization_details"},
		{"company detail without org_id", map[string]string{"authorization_details": "[" + charge + "]"}, nil, nil, "invalid_request"},
		{"unknown org_id", map[string]string{"authorization_details": "[" + charge + "]", "org_id": "org_nowhere"}, nil, nil, "invalid_request"},
		// OpenID Connect Core §6: request objects are refused, not ignored.
		{"request object", map[string]string{"request": "eyJhbGciOiJub25lIn0.eyJzY29wZSI6Im9wZW5pZCJ9."}, nil, nil, "request_not_supported"},
		{"request_uri", map[string]string{"request_uri": "https://app.example/request.jwt"}, nil, nil, "request_uri_not_supported"},
		// A request_uri of PAR's form is looked up instead (TestPARRefusals).
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := e.authParams(c)
			for k, v := range tc.set {
				q.Set(k, v)
			}
			for _, k := range tc.del {
				q.Del(k)
			}
			for k, v := range tc.add {
				q.Add(k, v)
			}
			check := func(how, loc string) {
				t.Helper()
				u, err := url.Parse(loc)
				if err != nil || !strings.HasPrefix(loc, publicRedir+"?") {
					t.Fatalf("%s: want a redirect to %s, got %q", how, publicRedir, loc)
				}
				rq := u.Query()
				if rq.Get("error") != tc.want || rq.Get("state") != "st-123" || rq.Get("iss") != e.u.Issuer || rq.Get("code") != "" {
					t.Fatalf("%s: want error=%s with state and iss, got %v", how, tc.want, rq)
				}
			}
			b := newBrowser(t, e.u.Issuer)
			p := b.get(e.u.Authorization + "?" + q.Encode())
			check("GET", p.header.Get("Location"))
			p = b.post(e.u.Authorization, q)
			check("POST", p.header.Get("Location"))
			st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
			if m["error"] != tc.want || st < 400 {
				t.Fatalf("native: want %s, got %d %v", tc.want, st, m)
			}
			check("native", m["redirect_url"].(string))
		})
	}
}

// TestCatalogViolationsReachTheHost: the native API returns the catalog's
// violations with their JSON pointers, so the host can show the field.
func TestCatalogViolationsReachTheHost(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	q := e.authParams(c)
	q.Set("authorization_details", `[{"type":"bank_account","actions":["read","fly"],"subject":{"type":"profile"},"selection":{"min":3,"max":1}}]`)
	st, m := e.native(map[string]any{"parameters": map[string]any{"client_id": q.Get("client_id"), "redirect_uri": q.Get("redirect_uri"),
		"response_type": "code", "scope": q.Get("scope"), "resource": []string{e.u.BaseURL}, "state": "s", "code_challenge": c,
		"code_challenge_method": "S256", "authorization_details": q.Get("authorization_details")}, "subject": subAna})
	if st != http.StatusBadRequest || m["error"] != "invalid_authorization_details" {
		t.Fatalf("want 400 invalid_authorization_details, got %d %v", st, m)
	}
	vs := jsonOf(t, m["violations"])
	for _, want := range []string{`/authorization_details/0/actions/1`, `/authorization_details/0/selection/min`} {
		if !strings.Contains(vs, want) {
			t.Errorf("violations lack %s: %s", want, vs)
		}
	}
}

// TestConsentChecksAndDenial: a subject who may not act for the Company
// cannot approve (the failed check's code, 403), and a denial redirects with access_denied, state and iss.
func TestConsentChecksAndDenial(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", companyPair(e.u.BaseURL))
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subCarla})
	if st != http.StatusCreated {
		t.Fatalf("submit: %d %v", st, m)
	}
	if !strings.Contains(jsonOf(t, m["consent"]), `"name":"company_access","outcome":"fail"`) {
		t.Fatalf("want a failed company_access check: %v", m["consent"])
	}
	id := m["request_id"].(string)
	if st, m = e.decide(id, map[string]string{"action": "approve"}); st != http.StatusForbidden || m["error"] != "company_access_denied" {
		t.Fatalf("approve with a failed check: want 403 company_access_denied, got %d %v", st, m)
	}
	if st, m = e.decide(id, map[string]string{"action": "deny"}); st != http.StatusOK {
		t.Fatalf("deny: %d %v", st, m)
	}
	rq := redirectQuery(t, m["redirect_url"].(string))
	if rq.Get("error") != "access_denied" || rq.Get("state") != "st-123" || rq.Get("iss") != e.u.Issuer {
		t.Fatalf("denial: %v", rq)
	}
	if st, m = e.decide(id, map[string]string{"action": "deny"}); st != http.StatusNotFound || m["error"] != "unknown_request" {
		t.Fatalf("second decision: want 404 unknown_request, got %d %v", st, m)
	}
}

// TestNativeAPIAuthentication: only a client with the host role, with its
// secret, may use the native-consent API.
func TestNativeAPIAuthentication(t *testing.T) {
	e := start(t)
	for _, tc := range []struct {
		name, user, pass string
		want             int
	}{
		{"no credential", "", "", http.StatusUnauthorized},
		{"wrong secret", hostID, "nope", http.StatusUnauthorized},
		{"not a host", confID, e.confSecret, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.u.Native, strings.NewReader(`{"subject":"sub_ana","parameters":{}}`))
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.pass)
			}
			st, m, _ := e.do(req)
			if st != tc.want {
				t.Fatalf("want %d, got %d %v", tc.want, st, m)
			}
		})
	}
}

// TestConsentPageEscapes: text chosen by the requester is shown escaped.
func TestConsentPageEscapes(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	base := e.u.BaseURL
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", `[{"type":"`+base+`/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["`+base+`"],`+
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"},"account_binding":{"key":"main","name":{"suggested":"<script>alert(1)</script>"}}}]`)
	b := newBrowser(t, e.u.Issuer)
	p := b.get(e.u.Authorization + "?" + q.Encode())
	f := parseForm(t, p)
	f.values.Set("subject", subAna)
	p = b.post(f.action, f.values)
	if p.status != http.StatusOK {
		t.Fatalf("consent page: %d %s", p.status, p.body)
	}
	if strings.Contains(p.body, "<script>alert(1)") || !strings.Contains(p.body, "&lt;script&gt;alert(1)") {
		t.Fatal("the suggested account name is not escaped")
	}
	if !strings.Contains(p.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatal("consent page can be framed")
	}
	if !strings.Contains(p.body, "1000 to 50000 CLP") || !strings.Contains(p.body, andesAcct) {
		t.Fatal("consent page lacks the transaction limits or the Company's accounts")
	}
	// A form post without the session's CSRF token is refused.
	f = parseForm(t, p)
	f.values.Set("csrf", "forged")
	f.values.Set("action", "approve")
	if p = b.post(f.action, f.values); p.status != http.StatusBadRequest || p.header.Get("Location") != "" {
		t.Fatalf("forged CSRF token: want 400, got %d", p.status)
	}
}

// TestBrowserSession: after sign-in the browser goes straight to consent,
// the pre-sign-in session id is dropped, and prompt=login asks again.
func TestBrowserSession(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	b := newBrowser(t, e.u.Issuer)
	q := b.browserCode(e.u.Authorization+"?"+e.authParams(c).Encode(), subAna, map[string]string{"action": "deny"})
	if q.Get("error") != "access_denied" {
		t.Fatalf("deny: %v", q)
	}
	p := b.get(e.u.Authorization + "?" + e.authParams(c).Encode())
	if p.status != http.StatusOK || !strings.HasSuffix(p.url.Path, "/oauth/consent") || !strings.Contains(p.body, "Ana Rojas") {
		t.Fatalf("second request: want the consent page for Ana, got %d %s", p.status, p.url)
	}
	lq := e.authParams(c)
	lq.Set("prompt", "login")
	if p = b.get(e.u.Authorization + "?" + lq.Encode()); !strings.HasSuffix(p.url.Path, "/oauth/login") {
		t.Fatalf("prompt=login: want the sign-in page, got %s", p.url)
	}
	// Another browser cannot use this browser's pending request.
	other := newBrowser(t, e.u.Issuer)
	if p2 := other.get(p.url.String()); p2.status != http.StatusBadRequest {
		t.Fatalf("pending request from another browser: want 400, got %d", p2.status)
	}
}

// TestNativeDecisionRules: a refused decision keeps the request pending so
// the host can correct it; a request expires after ConsentTTL.
func TestNativeDecisionRules(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	q := e.authParams(c)
	q.Set("authorization_details", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}}]`)
	submit := func() string {
		t.Helper()
		st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
		if st != http.StatusCreated {
			t.Fatalf("submit: %d %v", st, m)
		}
		return m["request_id"].(string)
	}
	id := submit()
	for _, d := range []map[string]string{
		{"action": "approve"},                          // no account
		{"action": "approve", "account_id": andesAcct}, // the Company's, not offered for bank_account
		{"action": "maybe"},
	} {
		if st, m := e.decide(id, d); st != http.StatusBadRequest || m["error"] != "invalid_request" {
			t.Fatalf("decision %v: want 400 invalid_request, got %d %v", d, st, m)
		}
	}
	if st, m := e.decide(id, map[string]string{"action": "approve", "account_id": anaAccount1}); st != http.StatusOK {
		t.Fatalf("corrected decision: %d %v", st, m)
	}
	id = submit()
	e.clock.Advance(11 * time.Minute)
	defer e.clock.Advance(-11 * time.Minute)
	if st, m := e.decide(id, map[string]string{"action": "deny"}); st != http.StatusNotFound {
		t.Fatalf("expired request: want 404, got %d %v", st, m)
	}
}

// TestNativeAuthorizationURLMustBeOurs: the caught URL must be this
// server's authorization endpoint, read as a browser reads it.
func TestNativeAuthorizationURLMustBeOurs(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	qs := e.authParams(c).Encode()
	iu, _ := url.Parse(e.u.Issuer)
	for _, tc := range []struct {
		name, url string
		ok        bool
	}{
		{"ours", e.u.Authorization + "?" + qs, true},
		{"ours, with a dot segment", e.u.Issuer + "/oauth/x/../authorize?" + qs, true},
		{"another origin", "http://evil.example/oauth/authorize?" + qs, false},
		{"another port", "http://" + iu.Hostname() + ":1/oauth/authorize?" + qs, false},
		{"another path", e.u.Issuer + "/oauth/authorizex?" + qs, false},
		{"relative", "/oauth/authorize?" + qs, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, m := e.native(map[string]any{"authorization_url": tc.url, "subject": subAna})
			if (st == http.StatusCreated) != tc.ok || (!tc.ok && (m["error"] != "invalid_request" || m["redirect_url"] != nil)) {
				t.Fatalf("got %d %v", st, m)
			}
		})
	}
}

// TestRequestObjectsRefused: discovery says request objects are not
// supported, and a request object whose outer parameters lack the
// redirect_uri (it may be inside the object) gets an error page naming
// request_not_supported rather than a missing redirect_uri; the native API
// says the same, without a redirect_url.
func TestRequestObjectsRefused(t *testing.T) {
	e := start(t)
	req, _ := http.NewRequest(http.MethodGet, e.u.Discovery, nil)
	st, md, _ := e.do(req)
	if st != http.StatusOK || md["request_parameter_supported"] != false || md["request_uri_parameter_supported"] != false {
		t.Fatalf("discovery: %d request_parameter_supported=%v request_uri_parameter_supported=%v", st,
			md["request_parameter_supported"], md["request_uri_parameter_supported"])
	}
	_, c := pkce(t)
	for param, code := range map[string]string{"request": "request_not_supported", "request_uri": "request_uri_not_supported"} {
		q := e.authParams(c)
		q.Del("redirect_uri")
		q.Set(param, "eyJhbGciOiJub25lIn0.e30.")
		p := newBrowser(t, e.u.Issuer).get(e.u.Authorization + "?" + q.Encode())
		if p.status != http.StatusBadRequest || p.header.Get("Location") != "" || !strings.Contains(p.body, code) {
			t.Errorf("%s without redirect_uri: want a 400 page naming %s, got %d Location=%q", param, code, p.status, p.header.Get("Location"))
		}
		st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
		if st != http.StatusBadRequest || m["error"] != code || m["redirect_url"] != nil {
			t.Errorf("native %s without redirect_uri: want 400 %s without redirect_url, got %d %v", param, code, st, m)
		}
	}
}
