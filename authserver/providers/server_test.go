package providers

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// grantService answers GET /authorization as the service documents it
// (docs/authserver.md), from a table of tokens. The full flow against the
// real reference server is tested in package authserver.
type grantService struct {
	mu     sync.Mutex // guards below
	grants map[string]Grant
	calls  int
}

func (g *grantService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("X-Client-Id") != "rs-signing" || r.Header.Get("X-Client-Secret") != "s3cret" {
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"code":"invalid_client_credentials","status":401}`))
		return
	}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if code, st, ok := strings.Cut(tok, ":"); ok && strings.HasPrefix(code, "refuse-") {
		// "refuse-CODE:STATUS" is refused with that code and status.
		w.WriteHeader(map[string]int{"401": 401, "403": 403, "500": 500, "503": 503}[st])
		_, _ = w.Write([]byte(`{"code":"` + strings.TrimPrefix(code, "refuse-") + `","status":` + st + `}`))
		return
	}
	gr, ok := g.grants[tok]
	if !ok {
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"code":"expired_token","status":401}`))
		return
	}
	_ = json.NewEncoder(w).Encode(gr)
}

func detail(typ string, actions ...string) json.RawMessage {
	js, _ := json.Marshal(map[string]any{"type": typ, "actions": actions})
	return js
}

func newProviders(t *testing.T, secret string) (sign, inv *httptest.Server, cat *catalog.Catalog, gs *grantService) {
	t.Helper()
	gs = &grantService{grants: map[string]Grant{}}
	svc := httptest.NewServer(gs)
	t.Cleanup(svc.Close)
	// The providers' addresses are known only once they listen: start them
	// unstarted, build the catalog from their URLs, then start them.
	sign = httptest.NewUnstartedServer(nil)
	inv = httptest.NewUnstartedServer(nil)
	sign.Start()
	inv.Start()
	t.Cleanup(sign.Close)
	t.Cleanup(inv.Close)
	cat, err := catalog.New(catalog.Endpoints{BaseURL: svc.URL + "/bank", SigningBaseURL: sign.URL + "/api", InvoicingBaseURL: inv.URL + "/api"})
	if err != nil {
		t.Fatal(err)
	}
	client := &GrantClient{Endpoint: svc.URL + "/bank/authorization", ClientID: "rs-signing", ClientSecret: secret}
	s, err := NewSigning(Config{Catalog: cat, Grants: client})
	if err != nil {
		t.Fatal(err)
	}
	i, err := NewInvoicing(Config{Catalog: cat, Grants: client})
	if err != nil {
		t.Fatal(err)
	}
	sign.Config.Handler, inv.Config.Handler = s, i
	return sign, inv, cat, gs
}

func call(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewBufferString(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestSpecAnswers(t *testing.T) {
	sign, inv, cat, gs := newProviders(t, "s3cret")
	typ := func(k string) string { tt, _ := cat.TypeByKey(k); return tt.Name }
	org := "org-acme"
	gs.grants["all"] = Grant{OrgID: &org, Subject: "sub-1", AuthorizationDetails: []json.RawMessage{
		detail(typ("company-key"), "create"), detail(typ("signatures"), "create"), detail(typ("signing-key"), "read"), detail(typ("documents"), "read")}}
	gs.grants["read-only"] = Grant{OrgID: &org, AuthorizationDetails: []json.RawMessage{detail(typ("signing-key"), "read")}}
	gs.grants["no-org"] = Grant{AuthorizationDetails: []json.RawMessage{detail(typ("signing-key"), "read")}}

	for _, tc := range []struct {
		name, method, url, token, body string
		status                         int
		errCode                        string
	}{
		{"no bearer token", "GET", sign.URL + "/api/signing-key", "", "", 401, "missing_token"},
		{"token the service refuses", "GET", sign.URL + "/api/signing-key", "stale", "", 401, "invalid_token"},
		{"grant without the type", "POST", sign.URL + "/api/company-key", "read-only", "", 403, "insufficient_authorization"},
		{"grant with the type but not the action", "POST", inv.URL + "/api/documents", "all", `{"title":"x","amount":"1"}`, 403, "insufficient_authorization"},
		{"grant without a Company", "GET", sign.URL + "/api/signing-key", "no-org", "", 403, "insufficient_authorization"},
		{"key not ready", "GET", sign.URL + "/api/signing-key", "read-only", "", 200, ""},
		{"sign before the key exists", "POST", sign.URL + "/api/signatures", "all", `{"payload":"x"}`, 409, "key_missing"},
		{"unknown endpoint", "GET", sign.URL + "/api/keys", "all", "", 404, "not_found"},
		{"wrong method", "DELETE", sign.URL + "/api/signing-key", "all", "", 405, "method_not_allowed"},
		{"outside the resource path", "GET", sign.URL + "/signing-key", "all", "", 404, "not_found"},
		{"documents read", "GET", inv.URL + "/api/documents", "all", "", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := call(t, tc.method, tc.url, tc.token, tc.body)
			if status != tc.status || tc.errCode != "" && body["error"] != tc.errCode {
				t.Errorf("%s %s: %d %v, want %d %s", tc.method, tc.url, status, body, tc.status, tc.errCode)
			}
		})
	}

	// The full signing story: create the key, read it, sign, verify.
	status, key := call(t, "POST", sign.URL+"/api/company-key", "all", "")
	if status != 200 || key["ready"] != true {
		t.Fatalf("create key: %d %v", status, key)
	}
	_, read := call(t, "GET", sign.URL+"/api/signing-key", "all", "")
	jwk := read["public_key"].(map[string]any)
	if jwk["kid"] != key["public_key"].(map[string]any)["kid"] {
		t.Errorf("signing-key read %v, want the created key", read)
	}
	status, sig := call(t, "POST", sign.URL+"/api/signatures", "all", `{"payload":"invoice 42"}`)
	if status != 200 {
		t.Fatalf("sign: %d %v", status, sig)
	}
	b := func(s any) *big.Int {
		raw, _ := base64.RawURLEncoding.DecodeString(s.(string))
		return new(big.Int).SetBytes(raw)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(sig["signature"].(string))
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, b(jwk["x"]).FillBytes(make([]byte, 32))...), b(jwk["y"]).FillBytes(make([]byte, 32))...))
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte("invoice 42"))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:])) {
		t.Error("the signature does not verify with the Company's public key")
	}

	// Invoicing: create a document, then find it in the list.
	gs.mu.Lock()
	gs.grants["docs"] = Grant{OrgID: &org, AuthorizationDetails: []json.RawMessage{detail(typ("documents"), "read", "create")}}
	gs.mu.Unlock()
	for _, body := range []string{`{"title":"","amount":"1"}`, `{"title":"x","amount":"0100"}`, `{"title":"x","amount":"1","extra":1}`} {
		if status, out := call(t, "POST", inv.URL+"/api/documents", "docs", body); status != 400 || out["error"] != "invalid_request" {
			t.Errorf("create %s: %d %v, want 400 invalid_request", body, status, out)
		}
	}
	status, doc := call(t, "POST", inv.URL+"/api/documents", "docs", `{"title":"Invoice 42","amount":"119000"}`)
	if status != 200 || doc["currency"] != "CLP" {
		t.Fatalf("create document: %d %v", status, doc)
	}
	_, list := call(t, "GET", inv.URL+"/api/documents", "docs", "")
	if docs := list["documents"].([]any); len(docs) != 1 || docs[0].(map[string]any)["id"] != doc["id"] {
		t.Errorf("documents = %v, want the created one", list)
	}
}

// TestGrantRefusals: each refusal of the grant endpoint becomes the answer
// it means for the provider's caller: 401 invalid_token with an RFC 6750
// §3.1 challenge when it is about the caller's token (a token for another
// audience included), 502 only when the provider itself cannot read grants.
func TestGrantRefusals(t *testing.T) {
	sign, _, _, _ := newProviders(t, "s3cret")
	for _, tc := range []struct {
		refusal string
		status  int
		code    string
	}{
		{"client_not_allowed:403", 401, "invalid_token"},
		{"expired_token:401", 401, "invalid_token"},
		{"revoked_token:401", 401, "invalid_token"},
		{"invalid_token:401", 401, "invalid_token"},
		{"malformed_token:401", 401, "invalid_token"},
		{"invalid_client_credentials:401", 502, "grant_unavailable"},
		{"missing_client_credentials:401", 502, "grant_unavailable"},
		{"server_error:500", 502, "grant_unavailable"},
		{"temporarily_unavailable:503", 502, "grant_unavailable"},
	} {
		t.Run(tc.refusal, func(t *testing.T) {
			req, _ := http.NewRequest("GET", sign.URL+"/api/signing-key", nil)
			req.Header.Set("Authorization", "Bearer refuse-"+tc.refusal)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode != tc.status || out["error"] != tc.code {
				t.Fatalf("%d %v, want %d %s", resp.StatusCode, out, tc.status, tc.code)
			}
			challenge := resp.Header.Get("WWW-Authenticate")
			if tc.status == 401 && !strings.HasPrefix(challenge, `Bearer error="invalid_token"`) {
				t.Errorf("WWW-Authenticate %q, want an RFC 6750 invalid_token challenge", challenge)
			}
			if tc.status == 502 && challenge != "" {
				t.Errorf("a gateway failure carries WWW-Authenticate %q", challenge)
			}
		})
	}
}

func TestGrantServiceFailures(t *testing.T) {
	sign, _, _, _ := newProviders(t, "wrong-secret")
	// The provider's own credential is refused: a server-side problem, not the caller's token.
	if status, out := call(t, "GET", sign.URL+"/api/signing-key", "all", ""); status != 502 || out["error"] != "grant_unavailable" {
		t.Errorf("bad provider credential: %d %v, want 502 grant_unavailable", status, out)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	c := &GrantClient{Endpoint: down.URL}
	if _, err := c.Grant(t.Context(), "x"); err == nil {
		t.Error("a closed grant endpoint gave no error")
	}
}

// TestBodiesAreStrict: the example endpoints refuse text after the JSON
// object with 400 and a body over 64 KiB with 413 content_too_large.
func TestBodiesAreStrict(t *testing.T) {
	_, inv, cat, gs := newProviders(t, "s3cret")
	typ, _ := cat.TypeByKey("documents")
	org := "org-acme"
	gs.mu.Lock()
	gs.grants["docs"] = Grant{OrgID: &org, AuthorizationDetails: []json.RawMessage{detail(typ.Name, "read", "create")}}
	gs.mu.Unlock()
	valid := `{"title":"x","amount":"1"}`
	for _, body := range []string{valid + valid, valid + "x", `{"title":"x","title":"y","amount":"1"}`} {
		if status, out := call(t, "POST", inv.URL+"/api/documents", "docs", body); status != 400 || out["error"] != "invalid_request" {
			t.Errorf("%s: %d %v, want 400 invalid_request", body, status, out)
		}
	}
	if status, out := call(t, "POST", inv.URL+"/api/documents", "docs", valid+strings.Repeat(" ", maxBody)); status != 413 || out["error"] != "content_too_large" {
		t.Errorf("oversized body: %d %v, want 413 content_too_large", status, out)
	}
}
