package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// signingDetails requests a signing-key detail of the signing provider.
func signingDetails(e *env) string {
	return `[{"type":"` + strings.TrimSuffix(e.u.SigningBaseURL, "/api") + `/authorization-details/signing-key","actions":["read"],"locations":["` + e.u.SigningBaseURL + `"]}]`
}

// TestGrantEndpointErrors: GET {base_url}/authorization answers every
// failure with {"code", "status"} and a distinct code (docs/service.md §4.1, §7).
func TestGrantEndpointErrors(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", signingDetails(e))
	q.Add("resource", e.u.SigningBaseURL)
	tok := e.publicTokens(q, v)["access_token"].(string)
	v2, c2 := pkce(t)
	q2 := e.authParams(c2)
	q2.Set("org_id", orgAndes)
	q2.Set("authorization_details", signingDetails(e))
	q2.Add("resource", e.u.SigningBaseURL)
	rv := e.publicTokens(q2, v2)["access_token"].(string)
	resp, err := http.PostForm(e.u.Issuer+"/oauth/revoke", url.Values{"token": {rv}, "client_id": {publicID}})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", err, resp)
	}
	resp.Body.Close()
	invoicing, _ := e.srv.Credential("invoicing-provider")

	for _, tc := range []struct {
		name, header, id, secret string
		status                   int
		code                     string
	}{
		{"missing token", "", signingID, signingSecret, 401, "missing_token"},
		{"not bearer", "Basic " + tok, signingID, signingSecret, 401, "malformed_token"},
		{"not a JWT", "Bearer abc", signingID, signingSecret, 401, "malformed_token"},
		{"unknown JWT", "Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", signingID, signingSecret, 401, "invalid_token"},
		{"revoked", "Bearer " + rv, publicID, "", 401, "missing_client_credentials"},
		{"revoked with credentials", "Bearer " + rv, signingID, signingSecret, 401, "revoked_token"},
		{"missing credentials", "Bearer " + tok, "", "", 401, "missing_client_credentials"},
		{"bad secret", "Bearer " + tok, signingID, "wrong", 401, "invalid_client_credentials"},
		{"unknown client", "Bearer " + tok, "nobody", "x", 401, "invalid_client_credentials"},
		{"resource server outside the audience", "Bearer " + tok, "invoicing-provider", invoicing.ClientSecret, 403, "client_not_allowed"},
		{"client that is not the token's", "Bearer " + tok, confID, e.confSecret, 403, "client_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			if tc.id != "" {
				req.Header.Set("X-Client-Id", tc.id)
				req.Header.Set("X-Client-Secret", tc.secret)
			}
			st, m, h := e.do(req)
			if st != tc.status || m["code"] != tc.code || m["status"] != float64(tc.status) {
				t.Fatalf("want %d %s, got %d %v", tc.status, tc.code, st, m)
			}
			// RFC 6750 §3.1: a token that was sent and refused is
			// invalid_token in the challenge, whatever the body's own code
			// says of it; a request without one, or refused for its client
			// credential, gets the challenge without an error.
			challenge := h.Get("WWW-Authenticate")
			wantError := strings.HasSuffix(tc.code, "_token") && tc.code != "missing_token"
			if st == 401 && (!strings.HasPrefix(challenge, `Bearer realm="`) ||
				strings.Contains(challenge, `error="invalid_token"`) != wantError) {
				t.Errorf("WWW-Authenticate %q: want the realm, with error=\"invalid_token\" %v", challenge, wantError)
			}
		})
	}
	t.Run("resource server in the audience", func(t *testing.T) {
		st, g := e.grant(tok, signingID, signingSecret)
		if st != http.StatusOK || g["orgId"] != orgAndes || g["subject"] != subAna || g["consumerInstallationId"] == "" {
			t.Fatalf("got %d %v", st, g)
		}
		if !strings.Contains(jsonOf(t, g["authorizationDetails"]), "/authorization-details/signing-key") {
			t.Fatalf("grant lacks the signing-key detail: %v", g)
		}
		if jsonOf(t, g["scopes"]) != `["openid","profile","offline_access"]` {
			t.Fatalf("scopes: %v", g["scopes"])
		}
	})
	t.Run("expired", func(t *testing.T) {
		e.clock.Advance(11 * time.Minute)
		defer e.clock.Advance(-11 * time.Minute)
		if st, m := e.grant(tok, signingID, signingSecret); st != 401 || m["code"] != "expired_token" {
			t.Fatalf("want expired_token, got %d %v", st, m)
		}
	})
	// The caller is checked before the token's state is told: a client
	// that may not read the grant learns nothing of its expiry or
	// revocation.
	t.Run("caller checked before the token's state", func(t *testing.T) {
		e.clock.Advance(11 * time.Minute)
		defer e.clock.Advance(-11 * time.Minute)
		for _, tc := range []struct{ name, tok, id, secret string }{
			{"expired, resource server outside the audience", tok, "invoicing-provider", invoicing.ClientSecret},
			{"expired, another client", tok, confID, e.confSecret},
			{"revoked, resource server outside the audience", rv, "invoicing-provider", invoicing.ClientSecret},
		} {
			if st, m := e.grant(tc.tok, tc.id, tc.secret); st != 403 || m["code"] != "client_not_allowed" {
				t.Errorf("%s: want 403 client_not_allowed, got %d %v", tc.name, st, m)
			}
		}
		if st, m := e.grant(tok, "", ""); st != 401 || m["code"] != "missing_client_credentials" {
			t.Errorf("expired without credentials: want missing_client_credentials, got %d %v", st, m)
		}
	})
}

// TestExampleProvider: the signing provider reads the grant with its own
// credential and answers as docs/service.md §5.7 describes.
func TestExampleProvider(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", signingDetails(e))
	q.Add("resource", e.u.SigningBaseURL)
	tok := e.publicTokens(q, v)["access_token"].(string)
	call := func(method, path, tok string) (int, map[string]any) {
		req, _ := http.NewRequest(method, e.u.SigningBaseURL+path, strings.NewReader(`{}`))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		st, m, _ := e.do(req)
		return st, m
	}
	if st, m := call("GET", "/signing-key", ""); st != 401 || m["error"] != "missing_token" {
		t.Fatalf("no token: %d %v", st, m)
	}
	if st, m := call("GET", "/signing-key", tok); st != 200 {
		t.Fatalf("granted type: %d %v", st, m)
	}
	if st, m := call("POST", "/signatures", tok); st != 403 || m["error"] != "insufficient_authorization" {
		t.Fatalf("type not granted: %d %v", st, m)
	}
	// A valid token for another audience: the invoicing provider is not in
	// it, so the service refuses it the grant, and the provider answers
	// the caller 401 invalid_token (RFC 6750 §3.1), not a gateway failure.
	req, _ := http.NewRequest(http.MethodGet, e.u.InvoicingBaseURL+"/documents", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	st, m, h := e.do(req)
	if st != http.StatusUnauthorized || m["error"] != "invalid_token" || !strings.HasPrefix(h.Get("WWW-Authenticate"), `Bearer error="invalid_token"`) {
		t.Fatalf("token for another audience: %d %v %q, want 401 invalid_token with WWW-Authenticate", st, m, h.Get("WWW-Authenticate"))
	}
}

// TestIntrospectionAndRevocation covers RFC 7662 and RFC 7009.
func TestIntrospectionAndRevocation(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	q := e.confAuthParams(c)
	q.Set("authorization_details", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["`+anaAccount1+`"]}]`)
	code := e.nativeCode(q, subAna, map[string]string{"action": "approve", "account_id": anaAccount1}).Get("code")
	st, m := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {v}}, confID, e.confSecret)
	if st != 200 {
		t.Fatalf("token: %d %v", st, m)
	}
	at, rt := m["access_token"].(string), m["refresh_token"].(string)

	st, in := e.introspect(at, confID, e.confSecret)
	if st != 200 || in["active"] != true || in["sub"] != subAna || in["client_id"] != confID || in["token_type"] != "Bearer" {
		t.Fatalf("introspection: %d %v", st, in)
	}
	if !strings.Contains(jsonOf(t, in["authorization_details"]), anaAccount1) {
		t.Fatalf("introspection lacks top-level authorization_details: %v", in)
	}
	if _, in = e.introspect(rt, confID, e.confSecret); in["active"] != true || in["token_type"] != "refresh_token" {
		t.Fatalf("refresh token introspection: %v", in)
	}
	if st, _ = e.introspect(at, confID, "wrong"); st != 401 {
		t.Fatalf("introspection with a bad secret: want 401, got %d", st)
	}
	req, _ := http.NewRequest(http.MethodPost, e.u.Issuer+"/oauth/introspect", strings.NewReader(url.Values{"token": {at}, "client_id": {publicID}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if st, m, _ := e.do(req); st != 401 || m["error"] != "invalid_client" {
		t.Fatalf("introspection by a public client: want 401 invalid_client, got %d %v", st, m)
	}

	revoke := func(tok, user, pass string) int {
		req, _ := http.NewRequest(http.MethodPost, e.u.Issuer+"/oauth/revoke", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(user, pass)
		st, _, _ := e.do(req)
		return st
	}
	if st := revoke(at, hostID, hostSecret); st != 400 {
		t.Fatalf("revoking another client's token: want 400, got %d", st)
	}
	if st := revoke("never-issued", confID, e.confSecret); st != 200 {
		t.Fatalf("revoking an unknown token: want 200 (RFC 7009 §2.2), got %d", st)
	}
	if st := revoke(at, confID, e.confSecret); st != 200 {
		t.Fatalf("revoke: %d", st)
	}
	if _, in = e.introspect(at, confID, e.confSecret); in["active"] != false {
		t.Fatalf("revoked access token still active: %v", in)
	}
	if _, in = e.introspect(rt, confID, e.confSecret); in["active"] != true {
		t.Fatal("revoking the access token must not end the grant")
	}
	if st := revoke(rt, confID, e.confSecret); st != 200 {
		t.Fatalf("revoke refresh token: %d", st)
	}
	if _, in = e.introspect(rt, confID, e.confSecret); in["active"] != false {
		t.Fatalf("revoked refresh token still active: %v", in)
	}
}

// TestUserinfoRefusals: userinfo needs a live token with openid.
func TestUserinfoRefusals(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	q := e.authParams(c)
	q.Set("scope", "bank_accounts:read")
	tok := e.publicTokens(q, v)["access_token"].(string)
	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"no token", "", 401},
		{"bad token", "Bearer a.b.c", 401},
		{"without openid", "Bearer " + tok, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.u.Issuer+"/oauth/userinfo", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			st, _, h := e.do(req)
			if st != tc.status || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("want %d with a Bearer challenge, got %d %q", tc.status, st, h.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestDashboardClientConfig: the public client configuration has exactly
// redirect_uris, allowed_origins and client_type, never a secret.
func TestDashboardClientConfig(t *testing.T) {
	e := start(t)
	for _, tc := range []struct {
		id, typ string
	}{{confID, "confidential"}, {publicID, "public"}, {"demo-public", "public"}} {
		t.Run(tc.id, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.u.Dashboard+"/api/oauth/clients/"+tc.id, nil)
			st, m, _ := e.do(req)
			if st != 200 || len(m) != 3 || m["client_type"] != tc.typ || m["redirect_uris"] == nil || m["allowed_origins"] == nil {
				t.Fatalf("got %d %v", st, m)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodGet, e.u.Dashboard+"/api/oauth/clients/nobody", nil)
	if st, _, _ := e.do(req); st != 404 {
		t.Fatalf("unknown client: want 404, got %d", st)
	}
}

// TestMetadata checks what strict clients read from discovery.
func TestMetadata(t *testing.T) {
	e := start(t)
	for _, path := range []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"} {
		req, _ := http.NewRequest(http.MethodGet, e.u.Issuer+path, nil)
		st, m, _ := e.do(req)
		if st != 200 || m["issuer"] != e.u.Issuer || m["authorization_response_iss_parameter_supported"] != true ||
			jsonOf(t, m["code_challenge_methods_supported"]) != `["S256"]` {
			t.Fatalf("%s: %d %v", path, st, m)
		}
		if n := len(m["scopes_supported"].([]any)); n != 14 {
			t.Errorf("scopes_supported has %d scopes, want 14", n)
		}
		if n := len(m["authorization_details_types_supported"].([]any)); n != 8 {
			t.Errorf("authorization_details_types_supported has %d types, want 8", n)
		}
	}
}
