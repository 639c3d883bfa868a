package authserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"
)

// TestFullFlows runs the authorization code flow with golang.org/x/oauth2
// as the client (PKCE S256) and verifies the ID token with go-oidc, for a
// public and a confidential client, through the browser pages and through
// the native-consent API.
func TestFullFlows(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	provider, err := oidc.NewProvider(ctx, e.u.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	details := `[{"type":"bank_account","actions":["read","read_movements"],"subject":{"type":"profile"},"selection":{"min":1,"max":1},"locations":["` + e.u.BaseURL + `"]}]`
	for _, tc := range []struct {
		name, clientID, secret, redirect string
		native                           bool
	}{
		{"public/browser", publicID, "", publicRedir, false},
		{"public/native", publicID, "", publicRedir, true},
		{"confidential/browser", confID, e.confSecret, confRedir, false},
		{"confidential/native", confID, e.confSecret, confRedir, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := &oauth2.Config{
				ClientID: tc.clientID, ClientSecret: tc.secret, RedirectURL: tc.redirect,
				Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email", "offline_access"},
			}
			verifier := oauth2.GenerateVerifier()
			authURL := conf.AuthCodeURL("state-"+tc.name, oauth2.S256ChallengeOption(verifier),
				oauth2.SetAuthURLParam("nonce", "nonce-"+tc.name), oauth2.SetAuthURLParam("resource", e.u.BaseURL),
				oauth2.SetAuthURLParam("authorization_details", details))
			var q url.Values
			if tc.native {
				st, m := e.native(map[string]any{"authorization_url": authURL, "subject": subAna})
				if st != http.StatusCreated {
					t.Fatalf("native submit: %d %v", st, m)
				}
				model := m["consent"].(map[string]any)
				if model["subject"].(map[string]any)["id"] != subAna || model["client"].(map[string]any)["id"] != tc.clientID {
					t.Fatalf("consent model names the wrong parties: %v", model)
				}
				accounts := model["accounts"].([]any)
				if len(accounts) != 2 || model["account_required"] != true {
					t.Fatalf("want Ana's two personal accounts offered, got %v", accounts)
				}
				st, m = e.decide(m["request_id"].(string), map[string]string{"action": "approve", "account_id": anaAccount1})
				if st != http.StatusOK {
					t.Fatalf("decision: %d %v", st, m)
				}
				q = redirectQuery(t, m["redirect_url"].(string))
			} else {
				q = newBrowser(t, e.u.Issuer).browserCode(authURL, subAna, map[string]string{"action": "approve", "account_id": anaAccount1})
			}
			if q.Get("state") != "state-"+tc.name || q.Get("iss") != e.u.Issuer || q.Get("code") == "" {
				t.Fatalf("authorization response: want code, state and iss, got %v", q)
			}
			tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if tok.TokenType != "Bearer" || tok.RefreshToken == "" {
				t.Fatalf("want a Bearer token and a refresh token, got %+v", tok)
			}
			raw, _ := tok.Extra("id_token").(string)
			idt, err := provider.Verifier(&oidc.Config{ClientID: tc.clientID}).Verify(ctx, raw)
			if err != nil {
				t.Fatalf("id token: %v", err)
			}
			if idt.Nonce != "nonce-"+tc.name || idt.Subject != subAna {
				t.Fatalf("id token: nonce %q subject %q", idt.Nonce, idt.Subject)
			}
			granted := jsonOf(t, tok.Extra("authorization_details"))
			if !strings.Contains(granted, `"identifiers":["`+anaAccount1+`"]`) || strings.Contains(granted, "selection") {
				t.Fatalf("token response: want the detail bound to the chosen account, got %s", granted)
			}
			checkAccessToken(t, e, provider, tok.AccessToken, tc.clientID)

			// The grant endpoint returns what was granted, to the client itself.
			st, g := e.grant(tok.AccessToken, tc.clientID, tc.secret)
			if tc.secret == "" {
				// A public client has no credential to call it with.
				if st != http.StatusUnauthorized || g["code"] != "missing_client_credentials" {
					t.Fatalf("grant endpoint without credential: %d %v", st, g)
				}
			} else if st != http.StatusOK || g["subject"] != subAna || !strings.Contains(jsonOf(t, g["authorizationDetails"]), anaAccount1) {
				t.Fatalf("grant endpoint: %d %v", st, g)
			}

			// The refresh token rotates.
			src := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken})
			nt, err := src.Token()
			if err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if nt.AccessToken == tok.AccessToken || nt.RefreshToken == tok.RefreshToken || nt.RefreshToken == "" {
				t.Fatal("refresh: want a new access token and a new refresh token")
			}

			// userinfo answers with the profile and email claims.
			ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(nt))
			if err != nil {
				t.Fatalf("userinfo: %v", err)
			}
			var claims map[string]any
			ui.Claims(&claims)
			if ui.Subject != subAna || ui.Email != "ana.rojas@example.com" || claims["name"] != "Ana Rojas" {
				t.Fatalf("userinfo: %v", claims)
			}
		})
	}
}

// checkAccessToken verifies an access token as a strict RFC 9068 resource
// server would: typ at+jwt, ES256 from the JWKS, the required claims, and
// no authorization_details (docs/service.md §5.6).
func checkAccessToken(t *testing.T, e *env, provider *oidc.Provider, tok, clientID string) {
	t.Helper()
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatalf("access token: %v", err)
	}
	if typ := jws.Signatures[0].Header.ExtraHeaders["typ"]; typ != "at+jwt" {
		t.Fatalf("access token typ = %v, want at+jwt", typ)
	}
	resp, err := http.Get(e.u.Issuer + "/oauth/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	json.NewDecoder(resp.Body).Decode(&set)
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatalf("access token kid %q not in the JWKS", jws.Signatures[0].Header.KeyID)
	}
	payload, err := jws.Verify(keys[0].Key)
	if err != nil {
		t.Fatalf("access token signature: %v", err)
	}
	var c map[string]any
	json.Unmarshal(payload, &c)
	for _, k := range []string{"iss", "sub", "aud", "exp", "iat", "jti", "client_id", "scope"} {
		if _, ok := c[k]; !ok {
			t.Errorf("access token lacks %s: %v", k, c)
		}
	}
	if c["iss"] != e.u.Issuer || c["client_id"] != clientID || c["aud"] != e.u.BaseURL {
		t.Errorf("access token claims: %v", c)
	}
	if _, ok := c["authorization_details"]; ok {
		t.Error("access token carries authorization_details; docs/service.md §5.6 forbids it")
	}
}

// TestRestartKeepsGrants closes the server and opens the same database
// file on the same addresses: a grant issued before the restart is still
// returned by GET {base_url}/authorization after it, and the signing keys
// are the same, so tokens issued before still verify.
func TestRestartKeepsGrants(t *testing.T) {
	clk := &clock{t: time.Now()}
	db := storetest.DB(t)
	e := startAt(t, db, clk)
	v, c := pkce(t)
	q := e.confAuthParams(c)
	q.Set("scope", "openid organizations:list")
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", companyPair(e.u.BaseURL))
	rq := e.nativeCode(q, subAna, map[string]string{"action": "approve"})
	st, m := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {confRedir},
		"code_verifier": {v}}, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, m)
	}
	tok := m["access_token"].(string)
	st, before := e.grant(tok, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("grant before restart: %d %v", st, before)
	}
	jwks := get(t, e.u.Issuer+"/oauth/jwks")
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := startAt(t, db, clk, e.srv.URLs())
	if e2.u.Issuer != e.u.Issuer {
		t.Fatalf("issuer changed across the restart: %s, then %s", e.u.Issuer, e2.u.Issuer)
	}
	st, after := e2.grant(tok, confID, e2.confSecret)
	if st != http.StatusOK || jsonOf(t, after) != jsonOf(t, before) {
		t.Fatalf("grant after restart: %d %v, want %v", st, after, before)
	}
	if after["orgId"] != orgAndes || after["subject"] != subAna {
		t.Fatalf("grant: %v", after)
	}
	if got := get(t, e2.u.Issuer+"/oauth/jwks"); got != jwks {
		t.Fatalf("keys changed across the restart:\n%s\n%s", jwks, got)
	}
}

// companyPair is the company-identity and company-addresses details, which
// are requested together (docs/service.md §2.5).
func companyPair(base string) string {
	return `[{"type":"` + base + `/authorization-details/company-identity","actions":["read"],"locations":["` + base + `"]},` +
		`{"type":"` + base + `/authorization-details/company-addresses","actions":["read"],"locations":["` + base + `"]}]`
}
