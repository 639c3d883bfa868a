package authserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// TestIDTokenAlgorithms: a client's ID tokens are signed with the
// algorithm it registered (id_token_signed_response_alg, OpenID Connect
// Dynamic Client Registration 1.0 §2), RS256 when it chose none, and each
// verifies with go-oidc against the published JWKS; discovery lists every
// algorithm offered; an unknown one is refused at registration.
func TestIDTokenAlgorithms(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	provider, err := oidc.NewProvider(ctx, e.u.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	var disc struct {
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&disc); err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"RS256", "ES256", "EdDSA"} {
		if !slices.Contains(disc.Algs, alg) {
			t.Errorf("discovery's id_token_signing_alg_values_supported %v lacks %s", disc.Algs, alg)
		}
	}
	for _, c := range []struct{ registered, want string }{{"", "RS256"}, {"RS256", "RS256"}, {"ES256", "ES256"}, {"EdDSA", "EdDSA"}} {
		name := "default"
		if c.registered != "" {
			name = c.registered
		}
		t.Run(name, func(t *testing.T) {
			id := "alg-" + strings.ToLower(name)
			redirect := "https://" + id + ".example/cb"
			if _, err := e.srv.RegisterClient(ctx, authserver.ClientSpec{ID: id, RedirectURIs: []string{redirect}, IDTokenAlg: c.registered}); err != nil {
				t.Fatal(err)
			}
			conf := &oauth2.Config{ClientID: id, RedirectURL: redirect, Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID}}
			verifier := oauth2.GenerateVerifier()
			authURL := conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "n-"+id), oauth2.SetAuthURLParam("resource", e.u.BaseURL))
			st, m := e.native(map[string]any{"authorization_url": authURL, "subject": subAna})
			if st != 201 {
				t.Fatalf("native submit: %d %v", st, m)
			}
			st, m = e.decide(m["request_id"].(string), map[string]string{"action": "approve"})
			if st != 200 {
				t.Fatalf("decision: %d %v", st, m)
			}
			q := redirectQuery(t, m["redirect_url"].(string))
			tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := tok.Extra("id_token").(string)
			jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA})
			if err != nil {
				t.Fatal(err)
			}
			if h := jws.Signatures[0].Header; h.Algorithm != c.want || h.ExtraHeaders["typ"] != "JWT" {
				t.Fatalf("ID token header alg %q typ %v, want %s and JWT", h.Algorithm, h.ExtraHeaders["typ"], c.want)
			}
			idt, err := provider.Verifier(&oidc.Config{ClientID: id, SupportedSigningAlgs: []string{c.want}}).Verify(ctx, raw)
			if err != nil {
				t.Fatalf("go-oidc: %v", err)
			}
			if idt.Nonce != "n-"+id || idt.Subject != subAna {
				t.Fatalf("nonce %q subject %q", idt.Nonce, idt.Subject)
			}
		})
	}
	if _, err := e.srv.RegisterClient(ctx, authserver.ClientSpec{ID: "alg-hs256", IDTokenAlg: "HS256"}); err == nil || !strings.Contains(err.Error(), "RS256, ES256, EdDSA") {
		t.Errorf("HS256: %v, want a refusal naming the algorithms offered", err)
	}
}
