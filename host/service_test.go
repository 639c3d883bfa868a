package host_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
)

// metadataServer serves one metadata document at path, naming issuer
// (the server's own URL followed by issuerPath).
func metadataServer(t *testing.T, path func(issuerPath string) string, issuerPath string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path(issuerPath) {
			http.NotFound(w, r)
			return
		}
		iss := srv.URL + issuerPath
		json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "authorization_endpoint": iss + "/oauth/authorize",
			"token_endpoint": iss + "/oauth/token", "native_consent_endpoint": iss + "/native/consent"})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDiscover: the host reads the RFC 8414 metadata, with the well-known
// segment before the issuer's path, or OpenID Connect Discovery's where
// only that exists, and trusts no document that names another issuer.
func TestDiscover(t *testing.T) {
	rfc8414 := func(p string) string { return "/.well-known/oauth-authorization-server" + p }
	oidc := func(p string) string { return p + "/.well-known/openid-configuration" }
	for _, c := range []struct {
		name       string
		path       func(string) string
		issuerPath string
	}{
		{"RFC 8414", rfc8414, ""},
		{"RFC 8414, issuer with a path", rfc8414, "/tenant/a"},
		{"OpenID Connect Discovery only", oidc, "/tenant/a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := metadataServer(t, c.path, c.issuerPath)
			svc, err := host.Discover(t.Context(), nil, srv.URL+c.issuerPath)
			if err != nil {
				t.Fatal(err)
			}
			if want := srv.URL + c.issuerPath + "/oauth/authorize"; svc.Authorize != want {
				t.Errorf("authorization endpoint %s, want %s", svc.Authorize, want)
			}
		})
	}
	t.Run("another issuer", func(t *testing.T) {
		srv := metadataServer(t, rfc8414, "/tenant/a")
		// The document at /tenant/b's place names /tenant/a: refused.
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL + "/tenant/a", "authorization_endpoint": srv.URL + "/x",
				"token_endpoint": srv.URL + "/y", "native_consent_endpoint": srv.URL + "/z"})
		}))
		defer other.Close()
		_, err := host.Discover(t.Context(), nil, other.URL+"/tenant/b")
		if err == nil || !strings.Contains(err.Error(), "names issuer") {
			t.Errorf("Discover of a document naming another issuer: %v", err)
		}
	})
	t.Run("not an issuer", func(t *testing.T) {
		_, err := host.Discover(t.Context(), nil, "127.0.0.1:8600")
		if err == nil || !strings.Contains(err.Error(), "RFC 8414") {
			t.Errorf("Discover of a bare address: %v", err)
		}
	})
}

// TestServiceIssuer: the dashboard names the issuer; a dashboard that
// cannot, or a wrong --dashboard, is an error that says to give the issuer
// with --service.
func TestServiceIssuer(t *testing.T) {
	dash := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/service" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	iss, err := host.ServiceIssuer(t.Context(), nil, dash(200, `{"issuer":"http://127.0.0.1:8610"}`))
	if err != nil || iss != "http://127.0.0.1:8610" {
		t.Errorf("ServiceIssuer = %q, %v; want http://127.0.0.1:8610", iss, err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, c := range []struct {
		name, dashboard string
		want            []string
	}{
		{"unknown issuer", dash(404, `{"code":"issuer_unknown","status":404}`), []string{"does not name its authorization server", "issuer_unknown", "--service"}},
		{"no such route", dash(404, "404 page not found"), []string{"does not name its authorization server", "no such route", "--service"}},
		{"not an issuer", dash(200, `{"issuer":"127.0.0.1:8600"}`), []string{"not an absolute http(s) URL"}},
		{"not JSON", dash(200, `<html>`), []string{"not the JSON object"}},
		{"failing", dash(500, `{}`), []string{"500"}},
		{"unreachable", closed.URL, []string{"check --dashboard", "--service"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := host.ServiceIssuer(context.Background(), nil, c.dashboard)
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("ServiceIssuer: %v; want an error with %q", err, w)
				}
			}
		})
	}
}
