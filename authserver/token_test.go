package authserver_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// TestCodeReplayRevokesTokens: a code presented twice is refused, and every
// token issued from it stops working (RFC 6749 §4.1.2).
func TestCodeReplayRevokesTokens(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	q := e.confAuthParams(c)
	code := e.nativeCode(q, subAna, map[string]string{"action": "approve"}).Get("code")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {v}}
	st, m := e.token(form, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("first redemption: %d %v", st, m)
	}
	at, rt := m["access_token"].(string), m["refresh_token"].(string)
	if st, g := e.grant(at, confID, e.confSecret); st != http.StatusOK {
		t.Fatalf("grant before replay: %d %v", st, g)
	}
	if st, m = e.token(form, confID, e.confSecret); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("replay: want 400 invalid_grant, got %d %v", st, m)
	}
	if st, g := e.grant(at, confID, e.confSecret); st != http.StatusUnauthorized || g["code"] != "revoked_token" {
		t.Fatalf("access token after replay: want revoked_token, got %d %v", st, g)
	}
	st, m = e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, confID, e.confSecret)
	if st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("refresh token after replay: want invalid_grant, got %d %v", st, m)
	}
}

// TestConcurrentRedemption: of many simultaneous redemptions of one code,
// exactly one succeeds.
func TestConcurrentRedemption(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	code := e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, _ := e.exchange(code, v); st == http.StatusOK {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("%d redemptions succeeded, want exactly 1", ok)
	}
}

// TestRefreshReuseRevokesGrant: refresh tokens rotate, and presenting a
// spent one revokes the grant with every token issued from it.
func TestRefreshReuseRevokesGrant(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	m := e.publicTokens(e.authParams(c), v)
	rt1 := m["refresh_token"].(string)
	refresh := func(rt string) (int, map[string]any) {
		return e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}, "", "")
	}
	st, m2 := refresh(rt1)
	if st != http.StatusOK || m2["refresh_token"] == rt1 {
		t.Fatalf("rotation: %d %v", st, m2)
	}
	if m2["id_token"] == nil || m2["scope"] != "openid profile offline_access" {
		t.Fatalf("refresh response: %v", m2)
	}
	at2, rt2 := m2["access_token"].(string), m2["refresh_token"].(string)
	if st, m = refresh(rt1); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("reuse: want invalid_grant, got %d %v", st, m)
	}
	if st, m = refresh(rt2); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("the rotated token after reuse: want invalid_grant, got %d %v", st, m)
	}
	st, in := e.introspect(at2, confID, e.confSecret)
	if st != http.StatusOK || in["active"] != false {
		t.Fatalf("access token after reuse: want inactive, got %v", in)
	}
}

// TestTokenEndpointRefusals covers the token endpoint's MUSTs: PKCE,
// redirect_uri binding, client binding, expiry and client authentication.
func TestTokenEndpointRefusals(t *testing.T) {
	e := start(t)
	newCode := func(t *testing.T) (code, verifier string) {
		t.Helper()
		v, c := pkce(t)
		return e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code"), v
	}
	type tc struct {
		name       string
		edit       func(f url.Values, verifier string)
		user, pass string
		status     int
		want       string
	}
	for _, x := range []tc{
		{"wrong verifier", func(f url.Values, v string) { f.Set("code_verifier", v[:42]+"AAAAAAAAAA") }, "", "", 400, "invalid_grant"},
		{"missing verifier", func(f url.Values, v string) { f.Del("code_verifier") }, "", "", 400, "invalid_grant"},
		{"verifier is the challenge (plain)", func(f url.Values, v string) { f.Set("code_verifier", s256(v)) }, "", "", 400, "invalid_grant"},
		{"redirect_uri differs", func(f url.Values, v string) { f.Set("redirect_uri", publicRedir+"/x") }, "", "", 400, "invalid_grant"},
		{"redirect_uri missing", func(f url.Values, v string) { f.Del("redirect_uri") }, "", "", 400, "invalid_grant"},
		{"another client", func(f url.Values, v string) { f.Del("client_id") }, confID, "", 401, "invalid_client"},
		{"another client authenticated", func(f url.Values, v string) { f.Del("client_id") }, confID, "secret", 401, "invalid_client"},
		{"public client with a secret", func(f url.Values, v string) { f.Set("client_secret", "x") }, "", "", 401, "invalid_client"},
		{"two authentication methods", func(f url.Values, v string) { f.Set("client_secret", "x") }, publicID, "x", 400, "invalid_request"},
		{"no client", func(f url.Values, v string) { f.Del("client_id") }, "", "", 401, "invalid_client"},
		{"unsupported grant type", func(f url.Values, v string) { f.Set("grant_type", "password") }, "", "", 400, "unsupported_grant_type"},
		{"unknown code", func(f url.Values, v string) { f.Set("code", "nope") }, "", "", 400, "invalid_grant"},
	} {
		t.Run(x.name, func(t *testing.T) {
			code, v := newCode(t)
			f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {publicRedir},
				"code_verifier": {v}, "client_id": {publicID}}
			x.edit(f, v)
			if x.name == "another client authenticated" {
				x.pass = e.confSecret
				x.status, x.want = 400, "invalid_grant"
			}
			st, m := e.token(f, x.user, x.pass)
			if st != x.status || m["error"] != x.want {
				t.Fatalf("want %d %s, got %d %v", x.status, x.want, st, m)
			}
			if x.name == "another client authenticated" {
				// Another client's attempt acts on nothing: the code
				// is still its own client's (TestStrangerCannotSpendACode).
				if st, m := e.exchange(code, v); st != http.StatusOK {
					t.Fatalf("code after another client's attempt: want it redeemable by its client, got %d %v", st, m)
				}
				return
			}
			if x.want == "invalid_grant" && x.name != "unknown code" {
				// The code is spent by the failed attempt: the right
				// verifier cannot be tried after a wrong one.
				if st, m := e.exchange(code, v); st != http.StatusBadRequest {
					t.Fatalf("code still redeemable after a failed attempt: %d %v", st, m)
				}
			}
		})
	}
	t.Run("expired code", func(t *testing.T) {
		code, v := newCode(t)
		e.clock.Advance(2 * time.Minute)
		defer e.clock.Advance(-2 * time.Minute)
		if st, m := e.exchange(code, v); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
			t.Fatalf("want invalid_grant, got %d %v", st, m)
		}
	})
	t.Run("client_secret_post", func(t *testing.T) {
		v, c := pkce(t)
		q := e.confAuthParams(c)
		q.Set("scope", "openid")
		code := e.nativeCode(q, subAna, map[string]string{"action": "approve"}).Get("code")
		st, m := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir},
			"code_verifier": {v}, "client_id": {confID}, "client_secret": {e.confSecret}}, "", "")
		if st != http.StatusOK || m["refresh_token"] != nil || m["id_token"] == nil {
			t.Fatalf("want tokens without a refresh token (no offline_access): %d %v", st, m)
		}
	})
}

// TestVerifierWithoutStoredChallenge: a code stored without a challenge
// (which the authorization endpoint never issues) cannot be redeemed by
// sending a verifier: PKCE cannot be downgraded (RFC 9700 §4.8.2).
func TestVerifierWithoutStoredChallenge(t *testing.T) {
	// The code is written while no server owns the database (one process
	// owns it at a time), between two runs on the same file.
	first := start(t)
	if err := first.srv.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), first.db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	g := &store.Grant{ID: "grant-no-pkce", ClientID: publicID, SubjectID: subAna, Scopes: []string{"openid"},
		Audience: []string{first.u.BaseURL}, InstallationID: "i", AuthTime: now, CreatedAt: now}
	if err := st.CreateGrant(context.Background(), g, &store.Code{Hash: store.Hash("code-no-pkce"), ClientID: publicID,
		RedirectURI: publicRedir, ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	e := startAt(t, first.db, first.clock)
	v, _ := pkce(t)
	if code, m := e.exchange("code-no-pkce", v); code != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("want invalid_grant, got %d %v", code, m)
	}
}

// TestRefreshRefusalsSpendNothing: a refresh request that names another
// client, fails the client's authentication or widens the scope is refused
// and spends nothing: whoever stole a refresh token cannot revoke the
// grant without the client's secret, and the owner's next refresh works.
func TestRefreshRefusalsSpendNothing(t *testing.T) {
	e := start(t)
	v, c := pkce(t)
	code := e.nativeCode(e.confAuthParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	st, m := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {v}},
		confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("redemption: %d %v", st, m)
	}
	rt := m["refresh_token"].(string)
	granted := m["scope"].(string)
	refusals := []struct {
		name       string
		form       url.Values
		id, secret string
		status     int
		code       string
	}{
		{"another client named", url.Values{"client_id": {publicID}}, "", "", http.StatusBadRequest, "invalid_grant"},
		{"a wrong secret", nil, confID, "not-the-secret", http.StatusUnauthorized, "invalid_client"},
		{"no client authentication", nil, "", "", http.StatusUnauthorized, "invalid_client"},
		{"a widened scope", url.Values{"scope": {granted + " signing:sign"}}, confID, e.confSecret, http.StatusBadRequest, "invalid_scope"},
	}
	for _, r := range refusals {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
		for k, vs := range r.form {
			form[k] = vs
		}
		if st, m := e.token(form, r.id, r.secret); st != r.status || m["error"] != r.code {
			t.Errorf("%s: %d %v, want %d %s", r.name, st, m, r.status, r.code)
		}
	}
	st, m = e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, confID, e.confSecret)
	if st != http.StatusOK || m["scope"] != granted {
		t.Fatalf("the owner's refresh after the refusals: %d %v, want new tokens of scope %q", st, m, granted)
	}
	if st, g := e.grant(m["access_token"].(string), confID, e.confSecret); st != http.StatusOK {
		t.Fatalf("the grant after the owner's refresh: %d %v", st, g)
	}
}

// TestStrangerCannotSpendACode: a code sent by a client it was not issued
// to (any public client names itself with client_id alone), or with
// another DPoP key than the one it is bound to, is refused and left as it
// is: an unredeemed code is still redeemed by its client afterwards, and a
// spent one does not revoke its grant. The code's own client replaying it
// still revokes the grant (RFC 6749 §4.1.2).
func TestStrangerCannotSpendACode(t *testing.T) {
	e := start(t)
	const strangerID = "stranger-public"
	if _, err := e.srv.RegisterClient(t.Context(), authserver.ClientSpec{ID: strangerID, RedirectURIs: []string{"https://stranger.example/cb"},
		AllowedOrigins: []string{"https://stranger.example"}}); err != nil {
		t.Fatal(err)
	}
	// redeem is the owner, the confidential client, with its secret.
	redeem := func(code, verifier string, hdr ...string) (int, map[string]any) {
		t.Helper()
		st, m, _ := e.post(e.u.Token, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir},
			"code_verifier": {verifier}}, confID, e.confSecret, hdr...)
		return st, m
	}
	strangers := func(code, verifier string) {
		t.Helper()
		for _, s := range []struct{ id, redirect string }{{strangerID, "https://stranger.example/cb"}, {strangerID, confRedir}, {publicID, confRedir}} {
			st, m, _ := e.post(e.u.Token, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {s.redirect},
				"code_verifier": {verifier}, "client_id": {s.id}}, "", "")
			if desc, _ := m["error_description"].(string); st != http.StatusBadRequest || m["error"] != "invalid_grant" || !strings.Contains(desc, "another client") {
				t.Fatalf("the code sent by %s: want 400 invalid_grant (another client), got %d %v", s.id, st, m)
			}
		}
	}
	live := func(what, at string, hdr ...string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
		req.Header.Set("X-Client-Id", confID)
		req.Header.Set("X-Client-Secret", e.confSecret)
		req.Header.Set("Authorization", "Bearer "+at)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		if st, g, _ := e.do(req); st != http.StatusOK || g["subject"] != subAna {
			t.Fatalf("%s: want the owner's token live (200), got %d %v", what, st, g)
		}
	}

	// An unredeemed code: the strangers' attempts leave it to its client.
	v, c := pkce(t)
	code := e.nativeCode(e.confAuthParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	strangers(code, v)
	st, tr := redeem(code, v)
	if st != http.StatusOK {
		t.Fatalf("the owner redeems after the strangers: want 200, got %d %v", st, tr)
	}
	// The spent code: the strangers' replays revoke nothing.
	strangers(code, v)
	live("after strangers replayed the spent code", tr["access_token"].(string))
	if st, rt := e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr["refresh_token"].(string)}}, confID, e.confSecret); st != http.StatusOK {
		t.Fatalf("the owner's refresh after strangers replayed its code: want 200, got %d %v", st, rt)
	}

	// A code bound to a DPoP key (dpop_jkt): its own client with another
	// key, or without a proof, neither burns it nor, once spent, revokes
	// its grant.
	key, other := newSigner(t, jose.ES256), newSigner(t, jose.ES256)
	v, c = pkce(t)
	q := e.confAuthParams(c)
	q.Set("dpop_jkt", key.thumbprint(t))
	bound := e.nativeCode(q, subAna, map[string]string{"action": "approve"}).Get("code")
	wrongKey := func() {
		t.Helper()
		st, m := redeem(bound, v, "DPoP", other.proof(e, "POST", e.u.Token, "", ""))
		if desc, _ := m["error_description"].(string); st != http.StatusBadRequest || m["error"] != "invalid_grant" || !strings.Contains(desc, "bound to a DPoP key") {
			t.Fatalf("the bound code with another key: want 400 invalid_grant, got %d %v", st, m)
		}
		if st, m := redeem(bound, v); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
			t.Fatalf("the bound code without a proof: want 400 invalid_grant, got %d %v", st, m)
		}
	}
	wrongKey()
	st, btr := redeem(bound, v, "DPoP", key.proof(e, "POST", e.u.Token, "", ""))
	if st != http.StatusOK || btr["token_type"] != "DPoP" {
		t.Fatalf("the bound code with its key: want 200 DPoP, got %d %v", st, btr)
	}
	wrongKey()
	bat := btr["access_token"].(string)
	live("after replays of the bound code with another key", bat, "Authorization", "DPoP "+bat, "DPoP", key.proof(e, "GET", e.u.Grant, bat, ""))

	// The code's own client replaying it, with its key, revokes the grant.
	if st, m := redeem(bound, v, "DPoP", key.proof(e, "POST", e.u.Token, "", "")); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("the owner's replay: want 400 invalid_grant, got %d %v", st, m)
	}
	if st, g := e.grant(tr["access_token"].(string), confID, e.confSecret); st != http.StatusOK {
		t.Fatalf("the other grant after the bound code's replay: want 200, got %d %v", st, g)
	}
	req, _ := http.NewRequest(http.MethodGet, e.u.Grant, nil)
	req.Header.Set("Authorization", "DPoP "+bat)
	req.Header.Set("DPoP", key.proof(e, "GET", e.u.Grant, bat, ""))
	req.Header.Set("X-Client-Id", confID)
	req.Header.Set("X-Client-Secret", e.confSecret)
	if st, g, _ := e.do(req); st != http.StatusUnauthorized || g["code"] != "revoked_token" {
		t.Fatalf("the bound token after its owner's replay: want 401 revoked_token, got %d %v", st, g)
	}
}
