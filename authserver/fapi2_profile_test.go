package authserver_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// keyedCode pushes a request of kc, has it approved and returns the code
// and its verifier.
func (e *env) keyedCode(kc keyedClient) (code, verifier string) {
	e.t.Helper()
	verifier, challenge := pkce(e.t)
	st, m, _ := e.post(e.parEndpoint(), withAssertion(kc.params(e, challenge), kc.assertion(e, e.u.Issuer)), "", "")
	if st != http.StatusCreated {
		e.t.Fatalf("PAR: %d %v", st, m)
	}
	rq := e.nativeCode(url.Values{"client_id": {kc.id}, "request_uri": {m["request_uri"].(string)}}, subAna, map[string]string{"action": "approve"})
	return rq.Get("code"), verifier
}

// TestFAPI2Profile: on a server whose codes live 5 minutes, a code of a
// fapi2 credential is refused after 60 s while another keyed credential's
// is still good (FAPI 2.0 Security Profile §5.3.2.1); and the fapi2
// credential's refresh token is not rotated: it refreshes again and again,
// with no new refresh_token in the answer, while the other credential's
// is spent at its first use.
func TestFAPI2Profile(t *testing.T) {
	e := startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(c *authserver.Config) { c.OAuth.CodeTTL = 5 * time.Minute })
	fapi := e.newKeyedClient(map[string]any{"profile": "fapi2"})
	plain := e.newKeyedClient(nil)
	key := newSigner(t, jose.ES256)
	redeem := func(kc keyedClient, code, verifier string) (int, map[string]any) {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {keyedRedirect}, "code_verifier": {verifier}}
		st, m, _ := e.post(e.u.Token, withAssertion(form, kc.assertion(e, e.u.Issuer)), "", "", "DPoP", key.proof(e, "POST", e.u.Token, "", ""))
		return st, m
	}
	fc, fv := e.keyedCode(fapi)
	pc, pv := e.keyedCode(plain)
	e.clock.Advance(61 * time.Second)
	if st, m := redeem(fapi, fc, fv); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("fapi2 code after 61 s: want 400 invalid_grant, got %d %v", st, m)
	}
	if st, m := redeem(plain, pc, pv); st != http.StatusOK {
		t.Fatalf("other code after 61 s (server CodeTTL 5m): want 200, got %d %v", st, m)
	}

	refresh := func(kc keyedClient, rt string) (int, map[string]any) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
		st, m, _ := e.post(e.u.Token, withAssertion(form, kc.assertion(e, e.u.Issuer)), "", "", "DPoP", key.proof(e, "POST", e.u.Token, "", ""))
		return st, m
	}
	fc, fv = e.keyedCode(fapi)
	st, m := redeem(fapi, fc, fv)
	rt, _ := m["refresh_token"].(string)
	if st != http.StatusOK || rt == "" {
		t.Fatalf("fapi2 code: want 200 with a refresh token, got %d %v", st, m)
	}
	for i := range 3 {
		st, m := refresh(fapi, rt)
		if st != http.StatusOK || m["access_token"] == nil || m["token_type"] != "DPoP" || m["refresh_token"] != nil {
			t.Fatalf("fapi2 refresh %d with the same token: want 200 DPoP without a new refresh_token, got %d %v", i+1, st, m)
		}
	}
	pc, pv = e.keyedCode(plain)
	_, m = redeem(plain, pc, pv)
	prt, _ := m["refresh_token"].(string)
	if st, m := refresh(plain, prt); st != http.StatusOK || m["refresh_token"] == nil || m["refresh_token"] == prt {
		t.Fatalf("other refresh: want 200 with a new refresh_token, got %d %v", st, m)
	}
	if st, m := refresh(plain, prt); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("other refresh token used again: want 400 invalid_grant, got %d %v", st, m)
	}
}
