package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// TestCredentialSecurityFlags: credential add and update register a JWK
// Set from a file or a jwks_uri instead of a secret, the fapi2 profile and
// require_pushed_authorization_requests (docs/fapi.md, "Credential
// settings"); the dashboard's refusals of a private key, an alg outside
// ES256/PS256/EdDSA and an http jwks_uri are printed with their field.
func TestCredentialSecurityFlags(t *testing.T) {
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "a.db"), OperatorKey: "op-key-for-the-cli-tests"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := srv.URLs().Dashboard
	var prj struct{ ID, Key string }
	if code, out, errs := cli(t, "", "project", "create", "--dashboard", d, "FAPI Inc.", "--json"); code != exitOK || json.Unmarshal([]byte(out), &prj) != nil {
		t.Fatalf("project create: %d %s %s", code, out, errs)
	}
	t.Setenv(keyEnv, prj.Key)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	write := func(name string, v any) string {
		b, _ := json.Marshal(v)
		f := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	pub := write("jwks.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	priv := write("priv.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: k, KeyID: "k1"}}})
	hs := write("hs.json", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k1", Algorithm: "HS256"}}})

	code, out, errs := cli(t, "", "credential", "add", "--dashboard", d, "--project", prj.ID, "--type", "confidential",
		"--redirect-uri", "https://fapi.example/cb", "--jwks", pub, "--profile", "fapi2", "--require-par")
	if code != exitOK || strings.Contains(out, "client_secret") ||
		!strings.Contains(out, "authenticates with private_key_jwt, keys registered, profile fapi2, require_pushed_authorization_requests") {
		t.Fatalf("credential add --jwks --profile fapi2 --require-par: %d %q %q", code, out, errs)
	}
	id := strings.Fields(strings.TrimPrefix(out, "added confidential credential "))[0]

	for _, tc := range []struct {
		name  string
		args  []string
		field string
		rule  string
	}{
		{"private key", []string{"--jwks", priv}, "/jwks/keys/0", "has its private part"},
		{"HS256", []string{"--jwks", hs}, "/jwks/keys/0", `alg "HS256" is not allowed`},
		{"http jwks_uri", []string{"--jwks-uri", "http://keys.example/jwks.json"}, "/jwks_uri", "plain http"},
	} {
		args := append([]string{"credential", "add", "--dashboard", d, "--project", prj.ID, "--type", "confidential"}, tc.args...)
		code, out, errs := cli(t, "", args...)
		if code != exitRejected || !strings.Contains(errs, tc.field) || !strings.Contains(errs, tc.rule) {
			t.Errorf("%s: want exit %d naming %s and %q, got %d %q %q", tc.name, exitRejected, tc.field, tc.rule, code, out, errs)
		}
	}
	if code, _, errs := cli(t, "", "credential", "add", "--dashboard", d, "--project", prj.ID, "--type", "confidential",
		"--jwks", pub, "--jwks-uri", "https://keys.example/jwks.json"); code != exitUsage || !strings.Contains(errs, "contradict") {
		t.Errorf("--jwks with --jwks-uri: want usage error, got %d %q", code, errs)
	}

	// The keys move to a jwks_uri (on loopback: the server's issuer is on
	// loopback); PAR is no longer required of the credential itself.
	set, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	keys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(set) }))
	defer keys.Close()
	code, out, errs = cli(t, "", "credential", "update", id, "--dashboard", d, "--project", prj.ID, "--jwks-uri", keys.URL+"/jwks.json", "--require-par=false")
	if code != exitOK || !strings.Contains(out, "keys at "+keys.URL+"/jwks.json, profile fapi2") || strings.Contains(out, "require_pushed") {
		t.Fatalf("credential update --jwks-uri --require-par=false: %d %q %q", code, out, errs)
	}
	code, out, _ = cli(t, "", "credential", "list", "--dashboard", d, "--project", prj.ID, "--json")
	if code != exitOK || !strings.Contains(out, `"jwks_uri":"`+keys.URL+`/jwks.json"`) || !strings.Contains(out, `"require_pushed_authorization_requests":false`) {
		t.Fatalf("credential list: %d %s", code, out)
	}
}
