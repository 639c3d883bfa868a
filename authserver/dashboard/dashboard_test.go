package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

func TestClientConfig(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutProject(ctx, store.Project{ID: "p", Name: "P"}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutClient(ctx, &store.Client{ID: "conf", ProjectID: "p", Name: "C", Type: store.Confidential,
		SecretHash: store.Hash("s3cret"), RedirectURIs: []string{"https://a.example/cb"}, AllowedOrigins: []string{"https://a.example"}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(Config{Store: st}).Handler())
	defer srv.Close()
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/api/oauth/clients/conf", 200, `{"redirect_uris":["https://a.example/cb"],"allowed_origins":["https://a.example"],"client_type":"confidential"}`},
		{"/api/oauth/clients/nobody", 404, `{"code":"client_not_found","status":404}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var v any
			json.NewDecoder(resp.Body).Decode(&v)
			got, _ := json.Marshal(v)
			var want any
			json.Unmarshal([]byte(tc.body), &want)
			wantJS, _ := json.Marshal(want)
			if resp.StatusCode != tc.status || string(got) != string(wantJS) {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, got, tc.status, wantJS)
			}
			if strings.Contains(string(got), "secret") {
				t.Fatal("a secret field leaked")
			}
		})
	}
}

// TestService: GET /api/service names the issuer of the authorization
// server the dashboard's clients are registered with, to every origin (a
// host that knows only the dashboard finds the service there); a dashboard
// started without one says so, and how to do without it.
func TestService(t *testing.T) {
	st, err := store.Open(context.Background(), storetest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		name, issuer string
		status       int
		want         string
	}{
		{"configured", "https://id.example.test/miniapp", 200, `{"issuer":"https://id.example.test/miniapp"}`},
		{"not configured", "", 404, `"code":"issuer_unknown"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(New(Config{Store: st, Issuer: tc.issuer}).Handler())
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/service", nil)
			req.Header.Set("Origin", "https://host.example")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			if _, err := io.Copy(&b, resp.Body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || !strings.Contains(b.String(), tc.want) {
				t.Fatalf("got %d %s, want %d with %s", resp.StatusCode, b.String(), tc.status, tc.want)
			}
			if tc.status == 200 && resp.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("Access-Control-Allow-Origin %q, want * (hosts in browsers read it)", resp.Header.Get("Access-Control-Allow-Origin"))
			}
			if tc.status == 404 && !strings.Contains(b.String(), "--service") {
				t.Errorf("the refusal %s does not say how to name the service instead", b.String())
			}
		})
	}
}

// TestIssuerValidate: an issuer the host could not use is refused when
// the dashboard is configured, naming the rule.
func TestIssuerValidate(t *testing.T) {
	for _, bad := range []string{"id.example", "ftp://id.example", "https://id.example?x=1", "https://id.example#f", "https://u@id.example", "https://"} {
		cfg := Config{Issuer: bad}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "RFC 8414") {
			t.Errorf("Validate(%q) = %v, want a refusal citing RFC 8414", bad, err)
		}
	}
	for _, good := range []string{"", "http://127.0.0.1:8600", "https://id.example/miniapp"} {
		cfg := Config{Issuer: good}
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%q) = %v", good, err)
		}
	}
}
