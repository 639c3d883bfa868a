package demoapps_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/demoapps"
)

// TestFAPIDemo runs the FAPI demo's backend against the reference server
// on loopback, with its client registered with the fapi2 profile and the
// demo's key, a host's part played through the native-consent API: /login
// pushes the request and redirects with client_id and request_uri only;
// the native-consent API reads the pushed request (openid and the
// signing-key detail); approved, the callback redeems the code for a
// DPoP-bound token, and the start page shows the grant that GET
// {base_url}/authorization answered for the token with its proof.
func TestFAPIDemo(t *testing.T) {
	ctx := context.Background()
	srv, err := authserver.Start(ctx, authserver.Config{DB: filepath.Join(t.TempDir(), "svc.db"),
		Secrets: map[string]string{"miniapp-host": "host-secret-of-the-fapi-demo-test-0123"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	u := srv.URLs()
	key, err := demoapps.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	ln, origin, err := demoapps.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.RegisterClient(ctx, authserver.ClientSpec{ID: "demo-fapi", Confidential: true, RedirectURIs: []string{origin + "/callback"},
		AllowedOrigins: []string{origin}, JWKS: demoapps.PublicJWKS(key), Profile: "fapi2"}); err != nil {
		t.Fatal(err)
	}
	signing := strings.TrimSuffix(u.SigningBaseURL, "/api")
	details := `[{"type":"` + signing + `/authorization-details/signing-key","actions":["read"],"locations":["` + u.SigningBaseURL + `"]}]`
	app := demoapps.ServeFAPI(demoapps.FAPIConfig{Config: demoapps.Config{ID: "demo-fapi", Name: "FAPI", ClientID: "demo-fapi",
		AuthURL: u.Authorization, TokenURL: u.Token, Scope: "openid", Resource: u.BaseURL, AuthorizationDetails: details},
		Issuer: u.Issuer, PARURL: u.PAR, GrantURL: u.Grant, OrgID: "org_andes", Key: key}, ln)
	t.Cleanup(func() { app.Close() })

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(origin + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	caught, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusSeeOther || len(caught.Query()) != 2 || caught.Query().Get("client_id") != "demo-fapi" ||
		!strings.HasPrefix(caught.Query().Get("request_uri"), "urn:ietf:params:oauth:request_uri:") {
		t.Fatalf("/login: want a 303 to the authorization endpoint with client_id and request_uri only, got %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	native := func(target string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(b))
		req.SetBasicAuth("miniapp-host", "host-secret-of-the-fapi-demo-test-0123")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		raw, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(raw, &m) != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d %s", target, resp.StatusCode, raw)
		}
		return m
	}
	m := native(u.Native, map[string]any{"authorization_url": caught.String(), "subject": "sub_ana"})
	read := m["request"].(map[string]any)
	if read["pushed"] != true || read["redirect_uri"] != origin+"/callback" || read["dpop_jkt"] == nil || read["org_id"] != "org_andes" {
		t.Fatalf("the request read: want the pushed one, bound to the demo's DPoP key, got %v", read)
	}
	m = native(u.Native+"/"+m["request_id"].(string)+"/decision", map[string]string{"action": "approve"})
	resp, err = browser.Get(m["redirect_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("callback: want a 303 to /, got %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = browser.Get(origin + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`data-signed-in="true"`, `data-token-type="DPoP"`, `data-grant-status="200"`, `authorization-details/signing-key`, `&#34;orgId&#34;: &#34;org_andes&#34;`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the start page lacks %s:\n%s", want, page)
		}
	}
}
