package dashboard

import (
	"context"
	"encoding/json"
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
