package authserver_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// spaClient is a public credential of an approved project, made on the
// dashboard, for the credential update tests.
type spaClient struct {
	project, key, id string
}

// newSPAClient creates a project whose policy (openid, profile) the
// operator approved, with a public credential of the given addresses.
func (e *env) newSPAClient(redirect, orig string) spaClient {
	e.t.Helper()
	prj, key := e.project("Single page app")
	sub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/policy", key, map[string]any{"scopes": []string{"openid", "profile"}})
	e.mustDash(http.StatusOK, "POST", "/api/review/"+sub["id"].(string)+"/approve", e.srv.OperatorKey(), nil)
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key,
		map[string]any{"type": "public", "redirect_uris": []string{redirect}, "allowed_origins": []string{orig}})
	return spaClient{prj, key, c["client_id"].(string)}
}

// spaParams are the parameters of an authorization request of c.
func (e *env) spaParams(c spaClient, redirect, challenge string) url.Values {
	q := e.authParams(challenge)
	q.Set("client_id", c.id)
	q.Set("redirect_uri", redirect)
	q.Set("scope", "openid profile")
	return q
}

// submitStatus submits an authorization request to the native-consent API
// and returns its status and answer.
func (e *env) submitStatus(q url.Values) (int, map[string]any) {
	e.t.Helper()
	return e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
}

// TestCredentialUpdate: a credential's redirect URIs and allowed origins
// change on the dashboard; the public client configuration says so at
// once, an authorization with the new redirect URI works while the old one
// is refused (the OAuth server had the client in its cache), and the token
// endpoint's CORS follows the new origins. A refused update names the
// field and changes nothing.
func TestCredentialUpdate(t *testing.T) {
	e := start(t)
	const (
		oldOrigin, oldRedirect = "http://127.0.0.1:5000", "http://127.0.0.1:5000/cb"
		newOrigin, newRedirect = "http://localhost:5001", "http://localhost:5001/signed-in"
	)
	c := e.newSPAClient(oldRedirect, oldOrigin)
	path := "/api/projects/" + c.project + "/credentials/" + c.id
	// An authorization before the update puts the client in the cache.
	_, ch := pkce(t)
	if q := e.nativeCode(e.spaParams(c, oldRedirect, ch), subAna, map[string]string{"action": "approve"}); q.Get("code") == "" {
		t.Fatalf("before the update: %v", q)
	}

	for _, bad := range []struct {
		body        any
		code, field string
	}{
		{map[string]any{"allowed_origins": []string{"http://localhost:5001/app"}}, "invalid_field", "/allowed_origins/0"},
		{map[string]any{"allowed_origins": []string{newOrigin, "https://*.example"}}, "invalid_field", "/allowed_origins/1"},
		{map[string]any{"redirect_uris": []string{"http://shop.example/cb"}}, "invalid_field", "/redirect_uris/0"},
		{map[string]any{"redirect_uris": []string{"https://shop.example/cb#x"}}, "invalid_field", "/redirect_uris/0"},
		{map[string]any{"redirect_uris": slices.Repeat([]string{newRedirect}, 21)}, "invalid_field", "/redirect_uris"},
		{map[string]any{}, "missing_field", "/redirect_uris"},
		{map[string]any{"type": "confidential"}, "invalid_body", "/type"},
	} {
		st, m := e.dash("PATCH", path, c.key, bad.body)
		if st != http.StatusBadRequest || m["code"] != bad.code || m["field"] != bad.field || m["message"] == "" {
			t.Errorf("PATCH %s: %d %v, want 400 %s at %s", jsonOf(t, bad.body), st, m, bad.code, bad.field)
		}
	}
	_, otherKey := e.project("Someone else")
	if st, m := e.dash("PATCH", path, otherKey, map[string]any{"allowed_origins": []string{newOrigin}}); st != http.StatusUnauthorized {
		t.Errorf("another project's key: %d %v", st, m)
	}
	if st, m := e.dash("PATCH", "/api/projects/"+c.project+"/credentials/cli_none", c.key, map[string]any{"allowed_origins": []string{newOrigin}}); st != http.StatusNotFound || m["code"] != "credential_not_found" {
		t.Errorf("unknown credential: %d %v", st, m)
	}
	cfg := e.mustDash(http.StatusOK, "GET", "/api/oauth/clients/"+c.id, "", nil)
	if jsonOf(t, cfg["redirect_uris"]) != jsonOf(t, []string{oldRedirect}) || jsonOf(t, cfg["allowed_origins"]) != jsonOf(t, []string{oldOrigin}) {
		t.Fatalf("a refused update changed the client: %v", cfg)
	}

	m := e.mustDash(http.StatusOK, "PATCH", path, c.key, map[string]any{"redirect_uris": []string{newRedirect}, "allowed_origins": []string{newOrigin}})
	if m["client_id"] != c.id || jsonOf(t, m["redirect_uris"]) != jsonOf(t, []string{newRedirect}) || m["client_secret"] != nil {
		t.Fatalf("PATCH: %v", m)
	}
	cfg = e.mustDash(http.StatusOK, "GET", "/api/oauth/clients/"+c.id, "", nil)
	if jsonOf(t, cfg["redirect_uris"]) != jsonOf(t, []string{newRedirect}) || jsonOf(t, cfg["allowed_origins"]) != jsonOf(t, []string{newOrigin}) ||
		cfg["client_type"] != "public" {
		t.Fatalf("client configuration after the update: %v", cfg)
	}
	// One member alone leaves the other as it is.
	e.mustDash(http.StatusOK, "PATCH", path, c.key, map[string]any{"allowed_origins": []string{newOrigin, oldOrigin}})
	cfg = e.mustDash(http.StatusOK, "GET", "/api/oauth/clients/"+c.id, "", nil)
	if jsonOf(t, cfg["redirect_uris"]) != jsonOf(t, []string{newRedirect}) || jsonOf(t, cfg["allowed_origins"]) != jsonOf(t, []string{newOrigin, oldOrigin}) {
		t.Fatalf("client configuration after updating the origins: %v", cfg)
	}
	e.mustDash(http.StatusOK, "PATCH", path, c.key, map[string]any{"allowed_origins": []string{newOrigin}})

	if st, m := e.submitStatus(e.spaParams(c, oldRedirect, ch)); st != http.StatusBadRequest || m["error"] != "invalid_request" {
		t.Fatalf("the old redirect URI after the update: %d %v", st, m)
	}
	v, ch := pkce(t)
	q := e.nativeCode(e.spaParams(c, newRedirect, ch), subAna, map[string]string{"action": "approve"})
	f := url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {newRedirect},
		"code_verifier": {v}, "client_id": {c.id}}
	if st, _, h := e.corsRequest("POST", e.u.Token, oldOrigin, f, ""); st != http.StatusBadRequest {
		t.Fatalf("token from the removed origin: %d", st)
	} else {
		checkCORS(t, "token from the removed origin", h, "")
	}
	st, tok, h := e.corsRequest("POST", e.u.Token, newOrigin, f, "")
	if st != http.StatusOK || tok["access_token"] == nil {
		t.Fatalf("token from the new origin: %d %v", st, tok)
	}
	checkCORS(t, "token from the new origin", h, newOrigin)
}

// TestCredentialUpdateSeenByOtherInstance: two instances on one PostgreSQL
// database. The second holds the client in its cache (it served an
// authorization); the update through the first's dashboard reaches it by
// the client-change notification: it then refuses the old redirect URI
// and accepts the new one.
func TestCredentialUpdateSeenByOtherInstance(t *testing.T) {
	db := storetest.Postgres(t)
	shared := sharedConfig(db, "http://service.example.test")
	a := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	b := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	for _, e := range []*env{a, b} {
		e.u.Native = "http://" + e.srv.ListenAddrs().Service + "/native/requests"
		e.u.Dashboard = "http://" + e.srv.ListenAddrs().Dashboard
	}
	const oldRedirect, newRedirect = "https://spa.example/cb", "https://spa.example/signed-in"
	c := a.newSPAClient(oldRedirect, "https://spa.example")
	_, ch := pkce(t)
	if st, m := b.submitStatus(b.spaParams(c, oldRedirect, ch)); st != http.StatusCreated {
		t.Fatalf("b, before the update: %d %v", st, m)
	}
	a.mustDash(http.StatusOK, "PATCH", "/api/projects/"+c.project+"/credentials/"+c.id, c.key,
		map[string]any{"redirect_uris": []string{newRedirect}})
	updated := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st, m := b.submitStatus(b.spaParams(c, newRedirect, ch))
		if st == http.StatusCreated {
			break
		}
		if st != http.StatusBadRequest {
			t.Fatalf("b, the new redirect URI: %d %v", st, m)
		}
		<-tick.C
	}
	t.Logf("the other instance accepted the new redirect URI %v after the update returned", time.Since(updated))
	if st, m := b.submitStatus(b.spaParams(c, oldRedirect, ch)); st != http.StatusBadRequest {
		t.Fatalf("b, the old redirect URI after the update: %d %v", st, m)
	}
}
