package authserver_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestHealthAndReadiness: every role's listener answers GET /healthz and
// GET /readyz, before the roles' own routing (the dashboard's gate, the
// providers' bearer check) and without shadowing it; after Drain readiness
// is 503 "shutting down" while everything else still serves.
func TestHealthAndReadiness(t *testing.T) {
	e := start(t)
	la := e.srv.ListenAddrs()
	if e.u.Issuer != "http://"+la.Service || e.u.Dashboard != "http://"+la.Dashboard {
		t.Fatalf("without public addresses the URLs are the listeners': %+v %+v", e.u, la)
	}
	roles := map[string]string{"service": la.Service, "dashboard": la.Dashboard, "signing": la.Signing, "invoicing": la.Invoicing}
	check := func(method, u string, want int, body string) {
		t.Helper()
		st, got := send(t, http.DefaultClient, mustRequest(t, method, u, ""))
		if st != want || !strings.HasPrefix(got, body) {
			t.Errorf("%s %s: %d %q, want %d %q", method, u, st, got, want, body)
		}
	}
	for _, addr := range roles {
		base := "http://" + addr
		check("GET", base+"/healthz", http.StatusOK, "ok\n")
		check("GET", base+"/readyz", http.StatusOK, "ready\n")
		check("HEAD", base+"/readyz", http.StatusOK, "")
		check("POST", base+"/readyz", http.StatusMethodNotAllowed, "use GET or HEAD")
		// Only the exact paths are the checks'.
		check("GET", base+"/healthz/more", http.StatusNotFound, "")
	}
	// The contract's routes are untouched (docs/service.md §4.1, §4.2).
	check("GET", e.u.Dashboard+"/api/oauth/clients/"+publicID, http.StatusOK, "{")
	check("GET", e.u.Grant, http.StatusUnauthorized, "{")

	e.srv.Drain()
	for _, addr := range roles {
		check("GET", "http://"+addr+"/readyz", http.StatusServiceUnavailable, "not ready: shutting down\n")
		check("GET", "http://"+addr+"/healthz", http.StatusOK, "ok\n")
	}
	check("GET", e.u.Discovery, http.StatusOK, "{")
	check("GET", e.u.Dashboard+"/api/oauth/clients/"+publicID, http.StatusOK, "{")
}
