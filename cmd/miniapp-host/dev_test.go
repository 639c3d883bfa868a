package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/devapp"
	"github.com/miniapp-host/miniapp-host/host"
)

// TestNewThenDev is the docs' first example from the command line:
// `new DIR`, then `dev --no-window --ready-file F DIR`, then a sign-in of
// the generated Miniapp's public client through the native-consent API,
// as the host makes it (PKCE, the bank_account detail, an account chosen),
// its code redeemed at the token endpoint; then Ctrl-C ends dev cleanly.
func TestNewThenDev(t *testing.T) {
	hostSecret := randomString(t)
	t.Setenv("MINIAPP_HOST_SECRET", hostSecret)
	dir := filepath.Join(t.TempDir(), "My Bank App")
	var out, errs syncBuffer
	if code := run(context.Background(), env{args: []string{"new", dir}, stdout: &out, stderr: &errs}); code != exitOK {
		t.Fatalf("new: exit %d: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), "next: miniapp-host dev "+dir) {
		t.Errorf("new does not say what comes next:\n%s", out.String())
	}
	// A second `new` into the same folder overwrites nothing.
	if code := run(context.Background(), env{args: []string{"new", dir}, stdout: &out, stderr: &errs}); code != exitUsage ||
		!strings.Contains(errs.String(), "is not empty") {
		t.Errorf("new into a non-empty folder: exit %d, %q", code, errs.String())
	}

	ready := filepath.Join(t.TempDir(), "ready.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var devOut syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, env{args: []string{"dev", "--no-window", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0",
			"--app-addr", "127.0.0.1:0", "--ready-file", ready, dir}, stdout: &devOut, stderr: &errs})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(devOut.String(), "launch   launch-1: ") {
		select {
		case code := <-done:
			t.Fatalf("dev ended with %d: %s %s", code, devOut.String(), errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev launched nothing: %s %s", devOut.String(), errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(devOut.String(), "launch   launch-1: accepted") ||
		!strings.Contains(devOut.String(), "client   my-bank-app (public) in the development project") {
		t.Fatalf("dev output:\n%s", devOut.String())
	}
	fi, err := os.Stat(ready)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("ready file mode %v, want 0600", fi.Mode().Perm())
	}
	var r devapp.Ready
	b, _ := os.ReadFile(ready)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != "my-bank-app" || r.Outcome != "accepted" || r.OperatorKey == "" || r.Automation.URL == "" || r.Automation.Token == "" ||
		!strings.HasPrefix(r.Launcher, "http://127.0.0.1:") || !strings.HasPrefix(r.Origin, "http://127.0.0.1:") {
		t.Errorf("ready file %+v", r)
	}

	signInThroughNativeConsent(t, r, hostSecret)

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("dev exit %d: %s", code, errs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("dev did not stop after Ctrl-C")
	}
}

// signInThroughNativeConsent signs the generated Miniapp's client in as
// the host does for a public client: the authorization request with PKCE
// and the bank_account detail goes to the native-consent API with the
// host's credential, the subject approves with an offered account, and the
// code is redeemed at the token endpoint.
func signInThroughNativeConsent(t *testing.T, r devapp.Ready, hostSecret string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var meta struct {
		Authorization string `json:"authorization_endpoint"`
		Token         string `json:"token_endpoint"`
		Grant         string `json:"grant_endpoint"`
		Native        string `json:"native_consent_endpoint"`
	}
	getJSON(t, r.Issuer+"/.well-known/openid-configuration", &meta)
	conf := &oauth2.Config{ClientID: r.ID, RedirectURL: r.Origin + "/", Scopes: []string{"openid"},
		Endpoint: oauth2.Endpoint{AuthURL: meta.Authorization, TokenURL: meta.Token, AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	state := randomString(t)
	authz, err := url.Parse(conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", strings.TrimSuffix(meta.Grant, "/authorization")),
		oauth2.SetAuthURLParam("authorization_details", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}}]`)))
	if err != nil {
		t.Fatal(err)
	}
	nc := &host.NativeConsent{Endpoint: meta.Native, ClientID: "miniapp-host", ClientSecret: hostSecret}
	screen, err := nc.Begin(ctx, authz, "sub_ana")
	if err != nil {
		t.Fatal(err)
	}
	if screen.RequestID == "" {
		t.Fatalf("the native consent answered with a redirect, not a consent screen: %v", screen.Redirect)
	}
	var model consent.Model
	if err := json.Unmarshal(screen.Model, &model); err != nil {
		t.Fatal(err)
	}
	if len(model.Accounts) == 0 || !model.AccountRequired {
		t.Fatalf("consent model offers accounts %+v (required %v)", model.Accounts, model.AccountRequired)
	}
	redirect, err := nc.Decide(ctx, screen.RequestID, consent.Decision{Action: "approve", AccountID: model.Accounts[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	q := redirect.Query()
	if q.Get("state") != state || q.Get("iss") != r.Issuer || q.Get("code") == "" {
		t.Fatalf("authorization response %s", redirect)
	}
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	details, _ := json.Marshal(tok.Extra("authorization_details"))
	if !strings.Contains(string(details), model.Accounts[0].ID) {
		t.Errorf("token response's authorization_details %s lack the chosen account %s", details, model.Accounts[0].ID)
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

func randomString(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
