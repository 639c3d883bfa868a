package authserver_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// TestDevClockExpiresACode: moving the development clock through the
// dashboard's /api/dev/clock expires an authorization code through the
// token endpoint's own lifetime check (60 s, docs/authserver.md), and
// reset brings real time back.
func TestDevClockExpiresACode(t *testing.T) {
	e := start(t)
	key := e.srv.OperatorKey()
	v, c := pkce(t)
	code := e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	m := e.mustDash(http.StatusOK, "POST", "/api/dev/clock", key, map[string]any{"advance": "61s"})
	if m["offset"] != "1m1s" || m["offset_seconds"] != 61.0 {
		t.Fatalf("advance 61s: want offset 1m1s, got %v", m)
	}
	if st, m := e.exchange(code, v); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("a code 61 s old on the development clock: want invalid_grant, got %d %v", st, m)
	}
	if m := e.mustDash(http.StatusOK, "GET", "/api/dev/clock", key, nil); m["offset"] != "1m1s" {
		t.Fatalf("show: want the offset 1m1s, got %v", m)
	}
	if m := e.mustDash(http.StatusOK, "POST", "/api/dev/clock", key, map[string]any{"reset": true}); m["offset"] != "0s" {
		t.Fatalf("reset: want offset 0s, got %v", m)
	}
	v, c = pkce(t)
	code = e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	if st, m := e.exchange(code, v); st != http.StatusOK {
		t.Fatalf("after reset a fresh code is redeemed: got %d %v", st, m)
	}
}

// TestDevClockBadInput: each refusal names the member and the fix, and
// changes nothing.
func TestDevClockBadInput(t *testing.T) {
	e := start(t)
	key := e.srv.OperatorKey()
	for _, x := range []struct {
		body        map[string]any
		field, want string
	}{
		{map[string]any{"advance": "ten minutes"}, "/advance", "is not a duration"},
		{map[string]any{"advance": "-5m"}, "/advance", "positive duration"},
		{map[string]any{"advance": "100000h"}, "/advance", "at most"},
		{map[string]any{"set": "tomorrow"}, "/set", "RFC 3339"},
		{map[string]any{"reset": false}, "/reset", "reset"},
		{map[string]any{"advance": "1m", "reset": true}, "", "exactly one"},
		{map[string]any{"rewind": "1m"}, "/rewind", "unknown field"},
	} {
		st, m := e.dash("POST", "/api/dev/clock", key, x.body)
		msg, _ := m["message"].(string)
		if st != http.StatusBadRequest || (x.field != "" && m["field"] != x.field) || !strings.Contains(msg, x.want) {
			t.Errorf("%v: want 400 at %q saying %q, got %d %v", x.body, x.field, x.want, st, m)
		}
	}
	if m := e.mustDash(http.StatusOK, "GET", "/api/dev/clock", key, nil); m["offset"] != "0s" {
		t.Fatalf("refused changes moved the clock: %v", m)
	}
}

// TestDevControlsGate: only the operator credential opens the
// development controls, and a server whose issuer is not on loopback has
// none (every route 403 development_only), whatever the key.
func TestDevControlsGate(t *testing.T) {
	e := start(t)
	if st, m := e.dash("GET", "/api/dev/clock", "", nil); st != http.StatusUnauthorized {
		t.Fatalf("no key: want 401, got %d %v", st, m)
	}
	_, pkey := e.project("acme")
	if st, m := e.dash("GET", "/api/dev/clock", pkey, nil); st != http.StatusForbidden || m["code"] != "operator_only" {
		t.Fatalf("a project's key: want 403 operator_only, got %d %v", st, m)
	}
	if st, m := e.dash("GET", "/api/dev/nothing", e.srv.OperatorKey(), nil); st != http.StatusNotFound {
		t.Fatalf("an unknown control: want 404, got %d %v", st, m)
	}

	pub := startWith(t, filepath.Join(t.TempDir(), "pub.db"), &clock{t: time.Now()}, func(c *authserver.Config) {
		c.Issuer = "https://id.example"
	})
	if pub.srv.Clock() != nil {
		t.Fatal("a server on a public issuer has a development clock")
	}
	for _, path := range []string{"/api/dev/clock", "/api/dev/faults", "/api/dev/fixtures", "/api/dev/fixtures/reset", "/api/dev/explain"} {
		if st, m := pub.dash("POST", path, pub.srv.OperatorKey(), map[string]any{"advance": "1m"}); st != http.StatusForbidden || m["code"] != "development_only" {
			t.Errorf("%s on a public issuer: want 403 development_only, got %d %v", path, st, m)
		}
	}
}
