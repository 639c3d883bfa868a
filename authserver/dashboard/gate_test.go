package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// gateServer is a dashboard whose own origin is its test server's, with
// one more allowed origin.
func gateServer(t *testing.T) *httptest.Server {
	t.Helper()
	st, err := store.Open(context.Background(), storetest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	srv.Config.Handler = New(Config{Store: st, Origin: srv.URL, AllowedOrigins: []string{"http://localhost:5173"}}).Handler()
	return srv
}

// TestCrossSiteRequestsRefused: a web page of another origin cannot change
// state through the dashboard. POST /api/projects needs no key, so it is
// the request a page would forge; a "simple" text/plain body (no CORS
// preflight) and a foreign Origin are both refused, while the CLI (no
// Origin) and the dashboard's own and configured origins are served.
func TestCrossSiteRequestsRefused(t *testing.T) {
	srv := gateServer(t)
	const body = `{"name":"Forged"}`
	for _, tc := range []struct {
		name, method, path, contentType, origin string
		status                                  int
		code                                    string
	}{
		{"text/plain, no key (a form or simple fetch)", "POST", "/api/projects", "text/plain", "", 415, "unsupported_media_type"},
		{"text/plain from a foreign page", "POST", "/api/projects", "text/plain;charset=UTF-8", "https://evil.example", 403, "origin_not_allowed"},
		{"form encoding", "POST", "/api/projects", "application/x-www-form-urlencoded", "", 415, "unsupported_media_type"},
		{"no content type", "POST", "/api/projects", "", "", 415, "unsupported_media_type"},
		{"JSON from a foreign origin", "POST", "/api/projects", "application/json", "https://evil.example", 403, "origin_not_allowed"},
		{"JSON from an opaque origin", "POST", "/api/projects", "application/json", "null", 403, "origin_not_allowed"},
		{"JSON from the own origin on another port", "POST", "/api/projects", "application/json", "http://127.0.0.1:1", 403, "origin_not_allowed"},
		{"DELETE without JSON content type", "DELETE", "/api/projects/p/credentials/c", "", "", 415, "unsupported_media_type"},
		{"DELETE from a foreign origin", "DELETE", "/api/projects/p/credentials/c", "application/json", "https://evil.example", 403, "origin_not_allowed"},
		{"no Origin: the CLI", "POST", "/api/projects", "application/json", "", 201, ""},
		{"JSON with a charset", "POST", "/api/projects", "application/json; charset=utf-8", "", 201, ""},
		{"own origin", "POST", "/api/projects", "application/json", srv.URL, 201, ""},
		{"configured origin", "POST", "/api/projects", "application/json", "http://localhost:5173", 201, ""},
		{"GET from a foreign origin is read-only", "GET", "/api/oauth/clients/nobody", "", "https://evil.example", 404, "client_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode != tc.status || tc.code != "" && out["code"] != tc.code {
				t.Fatalf("got %d %v, want %d %s", resp.StatusCode, out, tc.status, tc.code)
			}
			if tc.status == 201 && (out["key"] == nil || out["id"] == nil) {
				t.Fatalf("created without an id and key: %v", out)
			}
		})
	}
}

// TestClientPassesTheGate: the dashboard client, as the CLI uses it, sends
// state-changing requests the gate accepts, with and without a body.
func TestClientPassesTheGate(t *testing.T) {
	srv := gateServer(t)
	ctx := context.Background()
	raw, err := (&Client{BaseURL: srv.URL}).Do(ctx, "POST", "/api/projects", map[string]string{"name": "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	var p createdProject
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	c := &Client{BaseURL: srv.URL, Key: p.Key}
	if _, err := c.Do(ctx, "POST", "/api/projects/"+p.ID+"/credentials", map[string]any{"type": "confidential",
		"redirect_uris": []string{"https://shop.example/cb"}, "allowed_origins": []string{"https://shop.example"}}); err != nil {
		t.Fatal(err)
	}
	// A body-less DELETE reaches the route: the unknown credential is the
	// route's 404, not the gate's 415.
	_, err = c.Do(ctx, "DELETE", "/api/projects/"+p.ID+"/credentials/nobody", nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("DELETE: want the route's 404, got %v", err)
	}
}

// TestRebindingRefused: a page on a DNS name rebound to 127.0.0.1 reaches
// a dashboard on loopback under its own name, and is refused whatever it
// sends, a read with a stolen key included; a dashboard deployed under a
// name of its own serves every Host.
func TestRebindingRefused(t *testing.T) {
	srv := gateServer(t)
	send := func(srv *httptest.Server, method, path, host, key string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{"name":"Rebound"}`))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")
	st, p := send(srv, "POST", "/api/projects", "localhost:"+port, "")
	if st != 201 {
		t.Fatalf("create under localhost: %d %v", st, p)
	}
	for _, host := range []string{"rebound.example:" + port, "127.0.0.1.nip.io:" + port, "localhost.:" + port} {
		for _, c := range []struct{ method, path, key string }{
			{"POST", "/api/projects", ""},
			{"GET", "/api/projects/" + p["id"].(string), p["key"].(string)},
		} {
			if st, out := send(srv, c.method, c.path, host, c.key); st != 403 || out["code"] != "host_not_allowed" || out["field"] != "Host" {
				t.Errorf("%s %s with Host %s: %d %v, want 403 host_not_allowed", c.method, c.path, host, st, out)
			}
		}
	}

	st0, err := store.Open(context.Background(), storetest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st0.Close() })
	deployed := httptest.NewServer(New(Config{Store: st0, Origin: "https://dashboard.example"}).Handler())
	t.Cleanup(deployed.Close)
	if st, out := send(deployed, "POST", "/api/projects", "dashboard.example", ""); st != 201 {
		t.Errorf("a deployed dashboard under its own name: %d %v", st, out)
	}
}
