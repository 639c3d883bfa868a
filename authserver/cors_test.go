package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// corsRequest sends a form POST (or a GET with a Bearer token when form is
// nil) to u with the given Origin ("" for none).
func (e *env) corsRequest(method, u, orig string, form url.Values, bearer string) (int, map[string]any, http.Header) {
	e.t.Helper()
	var req *http.Request
	if form != nil {
		req, _ = http.NewRequest(method, u, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req, _ = http.NewRequest(method, u, nil)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if orig != "" {
		req.Header.Set("Origin", orig)
	}
	return e.do(req)
}

// preflight sends a CORS preflight for method to u from orig.
func (e *env) preflight(u, orig, method, headers string) (int, http.Header) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodOptions, u, nil)
	if orig != "" {
		req.Header.Set("Origin", orig)
	}
	req.Header.Set("Access-Control-Request-Method", method)
	if headers != "" {
		req.Header.Set("Access-Control-Request-Headers", headers)
	}
	st, _, h := e.do(req)
	return st, h
}

// checkCORS fails unless h lets exactly orig read the answer ("" for no
// origin), with Vary: Origin and never credentials.
func checkCORS(t *testing.T, what string, h http.Header, orig string) {
	t.Helper()
	if got := h.Values("Access-Control-Allow-Origin"); orig == "" && len(got) != 0 || orig != "" && (len(got) != 1 || got[0] != orig) {
		t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", what, got, orig)
	}
	if got := h.Get("Access-Control-Allow-Credentials"); got != "" {
		t.Errorf("%s: Access-Control-Allow-Credentials %q: never", what, got)
	}
	if !strings.Contains(h.Get("Vary"), "Origin") {
		t.Errorf("%s: Vary %q lacks Origin", what, h.Get("Vary"))
	}
}

// TestCORSPreflight: the token, revocation and userinfo endpoints answer a
// preflight from any origin without credentials; the authorization
// endpoint, the pages and the other endpoints answer none.
func TestCORSPreflight(t *testing.T) {
	e := start(t)
	const page = "http://127.0.0.1:5000"
	for _, c := range []struct{ path, methods string }{
		{"/oauth/token", "POST"}, {"/oauth/revoke", "POST"}, {"/oauth/userinfo", "GET, POST"},
	} {
		st, h := e.preflight(e.u.Issuer+c.path, page, "POST", "content-type,authorization")
		if st != http.StatusNoContent {
			t.Errorf("OPTIONS %s: %d", c.path, st)
		}
		checkCORS(t, "OPTIONS "+c.path, h, page)
		if h.Get("Access-Control-Allow-Methods") != c.methods || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") {
			t.Errorf("OPTIONS %s: methods %q headers %q", c.path, h.Get("Access-Control-Allow-Methods"), h.Get("Access-Control-Allow-Headers"))
		}
		// An opaque origin (a sandboxed frame, a file: page) and a value
		// that is no origin are answered nothing.
		for _, bad := range []string{"null", "http://127.0.0.1:5000/app", "*", ""} {
			_, h := e.preflight(e.u.Issuer+c.path, bad, "POST", "")
			checkCORS(t, "OPTIONS "+c.path+" from "+bad, h, "")
		}
	}
	for _, path := range []string{"/oauth/authorize", "/oauth/login", "/oauth/consent", "/oauth/introspect",
		"/native/requests", "/bank/authorization", "/.well-known/openid-configuration"} {
		_, h := e.preflight(e.u.Issuer+path, page, "POST", "")
		if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("OPTIONS %s answered a preflight: %v", path, h)
		}
	}
	// The authorization endpoint's GET carries no CORS either.
	_, ch := pkce(t)
	req, _ := http.NewRequest(http.MethodGet, e.u.Authorization+"?"+e.authParams(ch).Encode(), nil)
	req.Header.Set("Origin", "https://app.example")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("GET /oauth/authorize: Access-Control-Allow-Origin %q", got)
	}
}

// TestCORSByClient: an actual request from an origin in the client's
// allowed_origins may be read by it; from any other origin it is refused
// before anything is done, and its answer carries no
// Access-Control-Allow-Origin.
func TestCORSByClient(t *testing.T) {
	e := start(t)
	const allowed = "https://app.example" // publicID's allowed_origins
	notAllowed := []string{"https://app.example.evil", "http://app.example", "https://app.example:8443",
		"https://evil.example", "null", "https://conf.example"}

	codeOf := func() (code, verifier string) {
		v, ch := pkce(t)
		return e.nativeCode(e.authParams(ch), subAna, map[string]string{"action": "approve"}).Get("code"), v
	}
	redeem := func(code, verifier string) url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {publicRedir},
			"code_verifier": {verifier}, "client_id": {publicID}}
	}

	t.Run("token", func(t *testing.T) {
		code, v := codeOf()
		for _, o := range notAllowed {
			st, m, h := e.corsRequest("POST", e.u.Token, o, redeem(code, v), "")
			if st != http.StatusBadRequest || m["error"] != "invalid_request" || !strings.Contains(m["error_description"].(string), "allowed_origins of client "+publicID) {
				t.Errorf("token from %s: %d %v", o, st, m)
			}
			checkCORS(t, "token from "+o, h, "")
		}
		// The refusals did not spend the code.
		st, m, h := e.corsRequest("POST", e.u.Token, allowed, redeem(code, v), "")
		if st != http.StatusOK || m["access_token"] == nil {
			t.Fatalf("token from %s: %d %v", allowed, st, m)
		}
		checkCORS(t, "token from "+allowed, h, allowed)
		// An error of an allowed origin is readable by its page.
		st, m, h = e.corsRequest("POST", e.u.Token, allowed, redeem(code, v), "")
		if st != http.StatusBadRequest || m["error"] != "invalid_grant" {
			t.Errorf("replayed code: %d %v", st, m)
		}
		checkCORS(t, "replay from "+allowed, h, allowed)
		// A program sends no Origin and is answered without CORS.
		code, v = codeOf()
		st, m, h = e.corsRequest("POST", e.u.Token, "", redeem(code, v), "")
		if st != http.StatusOK {
			t.Fatalf("token without Origin: %d %v", st, m)
		}
		checkCORS(t, "token without Origin", h, "")
	})

	t.Run("confidential client", func(t *testing.T) {
		v, ch := pkce(t)
		code := e.nativeCode(e.confAuthParams(ch), subAna, map[string]string{"action": "approve"}).Get("code")
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir},
			"code_verifier": {v}, "client_id": {confID}, "client_secret": {e.confSecret}}
		if st, m, h := e.corsRequest("POST", e.u.Token, allowed, f, ""); st != http.StatusBadRequest || m["error"] != "invalid_request" {
			t.Errorf("confidential client from another client's origin: %d %v", st, m)
		} else {
			checkCORS(t, "confidential", h, "")
		}
	})

	t.Run("userinfo and revocation", func(t *testing.T) {
		code, v := codeOf()
		_, tok, _ := e.corsRequest("POST", e.u.Token, "", redeem(code, v), "")
		at, rt := tok["access_token"].(string), tok["refresh_token"].(string)
		for _, o := range notAllowed {
			st, m, h := e.corsRequest("GET", e.u.Issuer+"/oauth/userinfo", o, nil, at)
			if st != http.StatusBadRequest || m["error"] != "invalid_request" || m["sub"] != nil {
				t.Errorf("userinfo from %s: %d %v", o, st, m)
			}
			checkCORS(t, "userinfo from "+o, h, "")
			st, m, h = e.corsRequest("POST", e.u.Issuer+"/oauth/revoke", o, url.Values{"token": {rt}, "client_id": {publicID}}, "")
			if st != http.StatusBadRequest || m["error"] != "invalid_request" {
				t.Errorf("revoke from %s: %d %v", o, st, m)
			}
			checkCORS(t, "revoke from "+o, h, "")
		}
		st, m, h := e.corsRequest("GET", e.u.Issuer+"/oauth/userinfo", allowed, nil, at)
		if st != http.StatusOK || m["sub"] != subAna {
			t.Fatalf("userinfo from %s: %d %v", allowed, st, m)
		}
		checkCORS(t, "userinfo from "+allowed, h, allowed)
		// The refused revocations revoked nothing (revoking the refresh
		// token revokes the grant, and the access token with it); the
		// allowed origin's does.
		st, _, h = e.corsRequest("POST", e.u.Issuer+"/oauth/revoke", allowed, url.Values{"token": {rt}, "client_id": {publicID}}, "")
		if st != http.StatusOK {
			t.Fatalf("revoke from %s: %d", allowed, st)
		}
		checkCORS(t, "revoke from "+allowed, h, allowed)
		st, m, h = e.corsRequest("GET", e.u.Issuer+"/oauth/userinfo", allowed, nil, at)
		if st != http.StatusUnauthorized || m["error"] != "invalid_token" {
			t.Errorf("userinfo after revocation: %d %v", st, m)
		}
		checkCORS(t, "userinfo after revocation", h, allowed)
	})
}
