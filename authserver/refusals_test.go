package authserver_test

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// noFollow fetches without following redirects: an error redirect goes
// to the client's redirect_uri, a host no test resolves.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestRefusalsNameSentAndExpected: a refusal of the authorization
// endpoint (its error page and its error redirect), of the native-consent
// API, of the token and PAR endpoints and of the grant endpoint says what
// the request sent and what the server expected (docs/authserver.md,
// "Refusals"): the redirect_uri sent and the registered ones, the
// response_type, the redirect_uri and PKCE challenge of the code, the
// org_id, and, for a DPoP proof a Resource Server forwards, the rule that
// applied (the Resource Server's address) and the htu sent. Each
// description stays within RFC 6749 §5.2's characters, quotes a long value
// cut short, and never a secret (the state, the client_secret, the
// code_verifier).
func TestRefusalsNameSentAndExpected(t *testing.T) {
	e := start(t)
	verifier, challenge := pkce(t)
	has := func(t *testing.T, where, desc string, want ...string) {
		t.Helper()
		if where != "error page" && !conforms(desc) {
			t.Errorf("%s: %q has characters RFC 6749 section 5.2 does not allow", where, desc)
		}
		for _, w := range want {
			if !strings.Contains(desc, w) {
				t.Errorf("%s: %q does not say %q", where, desc, w)
			}
		}
	}

	t.Run("redirect_uri not registered", func(t *testing.T) {
		q := e.authParams(challenge)
		q.Set("redirect_uri", "https://app.example/cb/other")
		want := []string{"redirect_uri 'https://app.example/cb/other' is not registered for client 'test-public'",
			"its registered redirect URIs are 'https://app.example/cb'", "exact match required"}
		resp, err := noFollow.Get(e.u.Authorization + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("error page: want 400, got %d", resp.StatusCode)
		}
		has(t, "error page", html.UnescapeString(string(body)), want...)
		st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
		if st != http.StatusBadRequest || m["redirect_url"] != nil {
			t.Fatalf("native: want 400 without redirect_url, got %d %v", st, m)
		}
		has(t, "native", m["error_description"].(string), want...)
	})

	t.Run("a fragment", func(t *testing.T) {
		q := e.authParams(challenge)
		q.Set("redirect_uri", publicRedir+"#x")
		st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
		if st != http.StatusBadRequest {
			t.Fatalf("want 400, got %d %v", st, m)
		}
		has(t, "native", m["error_description"].(string), "'https://app.example/cb#x'", "must not have a fragment")
	})

	t.Run("long and hostile values are cut and cleaned", func(t *testing.T) {
		q := e.authParams(challenge)
		long := publicRedir + "/" + strings.Repeat("a", 1500) + "\x01\"z"
		q.Set("redirect_uri", long)
		st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
		if st != http.StatusBadRequest {
			t.Fatalf("want 400, got %d %v", st, m)
		}
		d := m["error_description"].(string)
		has(t, "native", d, "'"+publicRedir+"/aaaa", "...'")
		if strings.Contains(d, strings.Repeat("a", 300)) || len(d) > 1000 {
			t.Errorf("the redirect_uri is quoted whole (%d bytes): %q", len(d), d)
		}
	})

	t.Run("error redirect", func(t *testing.T) {
		q := e.authParams(challenge)
		q.Set("response_type", "token")
		resp, err := noFollow.Get(e.u.Authorization + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc.String(), publicRedir+"?") {
			t.Fatalf("want 303 to the redirect_uri, got %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		has(t, "error_description", loc.Query().Get("error_description"), "response_type 'token' is not supported: only response_type=code is")
	})

	t.Run("repeated state is withheld", func(t *testing.T) {
		q := e.authParams(challenge)
		q.Add("state", "my-state-secret-value")
		st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
		if st != http.StatusBadRequest {
			t.Fatalf("want 400, got %d %v", st, m)
		}
		d := m["error_description"].(string)
		has(t, "native", d, "state is sent 2 times (withheld, withheld)")
		if strings.Contains(d, "my-state-secret-value") {
			t.Errorf("the state is quoted: %q", d)
		}
	})

	t.Run("PAR org_id", func(t *testing.T) {
		q := e.confAuthParams(challenge)
		q.Set("org_id", "org_nowhere")
		st, m, _ := e.post(e.u.PAR, q, confID, e.confSecret)
		if st != http.StatusBadRequest {
			t.Fatalf("want 400, got %d %v", st, m)
		}
		has(t, "PAR", m["error_description"].(string), "org_id names no Company: 'org_nowhere'")
	})

	t.Run("wrong client_secret", func(t *testing.T) {
		q := e.confAuthParams(challenge)
		st, m, _ := e.post(e.u.PAR, q, confID, "a-wrong-secret-of-mine")
		if st != http.StatusUnauthorized {
			t.Fatalf("want 401, got %d %v", st, m)
		}
		d := m["error_description"].(string)
		has(t, "PAR", d, "client_id 'test-confidential' and the client_secret sent by client_secret_basic")
		if strings.Contains(d, "a-wrong-secret-of-mine") {
			t.Errorf("the secret is quoted: %q", d)
		}
	})

	t.Run("token redirect_uri and PKCE", func(t *testing.T) {
		code := func() string {
			return e.nativeCode(e.authParams(challenge), subAna, map[string]string{"action": "approve"}).Get("code")
		}
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code()}, "redirect_uri": {publicRedir + "/x"},
			"code_verifier": {verifier}, "client_id": {publicID}}
		st, m := e.token(form, "", "")
		if st != http.StatusBadRequest {
			t.Fatalf("want 400, got %d %v", st, m)
		}
		has(t, "token", m["error_description"].(string), "redirect_uri 'https://app.example/cb/x' differs from the authorization request's, 'https://app.example/cb'")

		wrong, _ := pkce(t)
		form.Set("code", code())
		form.Set("redirect_uri", publicRedir)
		form.Set("code_verifier", wrong)
		st, m = e.token(form, "", "")
		if st != http.StatusBadRequest {
			t.Fatalf("want 400, got %d %v", st, m)
		}
		d := m["error_description"].(string)
		has(t, "token", d, "the S256 of the code_verifier sent is '"+s256(wrong)+"', not the authorization request's code_challenge '"+challenge+"'")
		if strings.Contains(d, wrong) {
			t.Errorf("the code_verifier is quoted: %q", d)
		}
		form.Set("grant_type", "password")
		st, m = e.token(form, "", "")
		if st != http.StatusBadRequest {
			t.Fatalf("want 400, got %d %v", st, m)
		}
		has(t, "token", m["error_description"].(string), "grant_type 'password' is not supported")
	})

	t.Run("a forwarded DPoP proof names the Resource Server's address", func(t *testing.T) {
		key := newSigner(t, jose.ES256)
		v, c := pkce(t)
		q := e.authParams(c)
		q.Set("org_id", orgAndes)
		q.Set("authorization_details", signingDetails(e))
		q.Add("resource", e.u.SigningBaseURL)
		rq := e.nativeCode(q, subAna, map[string]string{"action": "approve"})
		form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {publicRedir},
			"code_verifier": {v}, "client_id": {publicID}}
		st, m, _ := e.post(e.u.Token, form, "", "", "DPoP", key.proof(e, "POST", e.u.Token, "", ""))
		if st != http.StatusOK {
			t.Fatalf("token: %d %v", st, m)
		}
		at := m["access_token"].(string)
		// The Resource Server forwards a proof made for the grant
		// endpoint, not for the request it received.
		req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
		req.Header.Set("Authorization", "DPoP "+at)
		req.Header.Set("DPoP", key.proof(e, "GET", e.u.Grant, at, ""))
		req.Header.Set("X-Client-Id", signingID)
		req.Header.Set("X-Client-Secret", signingSecret)
		st, g, h := e.do(req)
		if st != http.StatusUnauthorized || g["code"] != "invalid_dpop_proof" {
			t.Fatalf("want 401 invalid_dpop_proof, got %d %v", st, g)
		}
		rs := strings.TrimSuffix(e.u.SigningBaseURL, "/")
		for where, d := range map[string]string{"message": g["message"].(string), "challenge": h.Get("WWW-Authenticate")} {
			has(t, where, strings.ReplaceAll(d, `"`, ""), "the DPoP proof's htu '"+e.u.Grant+"' is neither the address of Resource Server '"+signingID+"', '"+rs+"'")
			if strings.Count(d, e.u.Grant) != 1 {
				t.Errorf("%s: names the grant endpoint %d times: %q", where, strings.Count(d, e.u.Grant), d)
			}
		}
	})
}

// TestNativeParametersKind: a parameter of the native API's parameters
// form that is neither a string nor an array of strings is named, with
// what it is.
func TestNativeParametersKind(t *testing.T) {
	e := start(t)
	st, m := e.native(map[string]any{"parameters": map[string]any{"client_id": publicID, "scope": 3}, "subject": subAna})
	b, _ := json.Marshal(m)
	if st != http.StatusBadRequest || !strings.Contains(m["error_description"].(string), "parameters.'scope' must be a string or an array of strings; it is a number") {
		t.Fatalf("want 400 naming parameters.scope, got %d %s", st, b)
	}
}
