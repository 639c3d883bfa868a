package authserver_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// rpDir is the Node suite that drives the server as a FAPI 2.0 relying
// party with oauth4webapi (docs/fapi.md, "Proof with a certified relying
// party").
const rpDir = "fapi-rp"

// rpInstall installs the suite's npm packages (package-lock.json) once per
// test process, unless node_modules already has the locked oauth4webapi.
var rpInstall = sync.OnceValues(func() ([]byte, error) {
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	raw, err := os.ReadFile(filepath.Join(rpDir, "package-lock.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &lock); err != nil {
		return nil, err
	}
	want := lock.Packages["node_modules/oauth4webapi"].Version
	var have struct {
		Version string `json:"version"`
	}
	if raw, err := os.ReadFile(filepath.Join(rpDir, "node_modules", "oauth4webapi", "package.json")); err == nil &&
		json.Unmarshal(raw, &have) == nil && have.Version == want && want != "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = rpDir
	return cmd.CombinedOutput()
})

// fapiRPClient registers, through the dashboard, a credential of the fapi2
// profile (private_key_jwt with one generated ES256 key; PAR and DPoP
// required) under a project whose approved policy holds openid and the
// automatic-charge and signing-key types, plus the extra members; it
// returns the client_id and the private JWK.
func (e *env) fapiRPClient(prj, key, redirect string, extra map[string]any) (string, string) {
	e.t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	pub := jose.JSONWebKey{Key: &k.PublicKey, KeyID: "rp-es256", Algorithm: "ES256", Use: "sig"}
	body := map[string]any{"type": "confidential", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "private_key_jwt",
		"jwks": jose.JSONWebKeySet{Keys: []jose.JSONWebKey{pub}}, "profile": "fapi2"}
	for n, v := range extra {
		body[n] = v
	}
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key, body)
	priv, err := json.Marshal(jose.JSONWebKey{Key: k, KeyID: "rp-es256", Algorithm: "ES256", Use: "sig"})
	if err != nil {
		e.t.Fatal(err)
	}
	return c["client_id"].(string), string(priv)
}

// TestFAPIRelyingParty runs the Node suite fapi-rp (node --test) against
// a server on loopback: oauth4webapi, a certified FAPI 2.0 relying party,
// discovers the server, pushes a request with private_key_jwt and DPoP,
// has the subject approve it through the native-consent API, redeems the
// code for a DPoP-bound token with authorization_details, and reads the
// grant at GET {base_url}/authorization as a Resource Server forwarding
// the client's proof; the suite also checks each refusal (docs/fapi.md).
// The test fails with node's output when a Node test fails.
func TestFAPIRelyingParty(t *testing.T) {
	if out, err := rpInstall(); err != nil {
		t.Fatalf("npm ci in authserver/%s (needs node and npm: scripts/deps.sh installs them): %v\n%s", rpDir, err, out)
	}
	// The relying party signs with the real clock, so the server runs on
	// it, moved ahead by the suite through a control address on loopback
	// (a code redeemed after 60 s, without waiting 60 s).
	var ahead atomic.Int64
	e := startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(c *authserver.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load()) * time.Second) }
	})
	clockCtl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("ahead"))
		if r.Method != http.MethodPost || err != nil || n < 0 || n > 3600 {
			http.Error(w, "POST ?ahead=SECONDS (0 to 3600)", http.StatusBadRequest)
			return
		}
		ahead.Store(int64(n))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer clockCtl.Close()
	prj, key := e.project("FAPI relying party")
	sub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/policy", key, map[string]any{
		"scopes": []string{"openid"},
		"types": []string{e.u.BaseURL + "/authorization-details/automatic-charge",
			strings.TrimSuffix(e.u.SigningBaseURL, "/api") + "/authorization-details/signing-key"}})
	e.mustDash(http.StatusOK, "POST", "/api/review/"+sub["id"].(string)+"/approve", e.srv.OperatorKey(), nil)
	const redirect = "https://rp.example/cb"
	id, jwk := e.fapiRPClient(prj, key, redirect, nil)
	nonceID, nonceJWK := e.fapiRPClient(prj, key, redirect, map[string]any{"require_dpop_nonce": true})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "--test-reporter=spec")
	cmd.Dir = rpDir
	cmd.Env = append(os.Environ(),
		"FAPI_ISSUER="+e.u.Issuer, "FAPI_BASE_URL="+e.u.BaseURL, "FAPI_GRANT_URL="+e.u.Grant,
		"FAPI_SIGNING_BASE_URL="+e.u.SigningBaseURL, "FAPI_NATIVE_URL="+e.u.Native,
		"FAPI_CLIENT_ID="+id, "FAPI_CLIENT_JWK="+jwk, "FAPI_NONCE_CLIENT_ID="+nonceID, "FAPI_NONCE_CLIENT_JWK="+nonceJWK,
		"FAPI_REDIRECT_URI="+redirect, "FAPI_CLOCK_URL="+clockCtl.URL, "FAPI_HOST_ID="+hostID, "FAPI_HOST_SECRET="+hostSecret,
		"FAPI_RS_ID="+signingID, "FAPI_RS_SECRET="+signingSecret,
		"FAPI_SUBJECT="+subAna, "FAPI_ORG_ID="+orgAndes, "FAPI_ACCOUNT_ID="+andesAcct)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node --test failed (%v):\n%s", err, out.String())
		}
		t.Fatalf("node --test (needs node 20 or later: scripts/deps.sh installs it): %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "fail 0") || !strings.Contains(out.String(), "pass 8") {
		t.Fatalf("node --test reported failures:\n%s", out.String())
	}
}
