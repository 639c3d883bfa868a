package demoapps

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func TestManifests(t *testing.T) {
	for _, c := range []struct {
		name    string
		start   func(Config, string) (*App, error)
		authURL bool
	}{{"confidential", StartConfidential, true}, {"public", StartPublic, false}} {
		t.Run(c.name, func(t *testing.T) {
			a, err := c.start(Config{ID: "demo-" + c.name, Name: "Demo", ClientID: "cid", AuthURL: "http://127.0.0.1:9/oauth/authorize"}, "")
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			resp, err := http.Get(a.ManifestURL())
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m struct {
				ID       string `json:"id"`
				StartURL string `json:"start_url"`
				OAuth    struct {
					ClientID string `json:"client_id"`
					AuthURL  string `json:"auth_url"`
				} `json:"oauth"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				t.Fatal(err)
			}
			if m.OAuth.ClientID != "cid" || m.StartURL != "/" || (m.OAuth.AuthURL != "") != c.authURL {
				t.Errorf("manifest %+v", m)
			}
		})
	}
}

// TestConfidentialLogin checks what the confidential backend keeps and what
// it gives away: the browser gets an HttpOnly cookie and a redirect carrying
// an S256 challenge and a state, never the verifier.
func TestConfidentialLogin(t *testing.T) {
	a, err := StartConfidential(Config{ID: "d", Name: "Demo", ClientID: "cid", ClientSecret: "s",
		AuthURL: "http://127.0.0.1:9/oauth/authorize", TokenURL: "http://127.0.0.1:9/oauth/token",
		Scope: "openid profile", Resource: "http://127.0.0.1:9/bank"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	resp, err := noRedirect().Get(a.Origin + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("login: %s %v", resp.Status, err)
	}
	q := loc.Query()
	if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || q.Get("state") == "" ||
		q.Get("redirect_uri") != a.RedirectURI() || q.Get("resource") != "http://127.0.0.1:9/bank" || q.Has("code_verifier") {
		t.Errorf("authorization request %s", loc)
	}
	var login *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == LoginCookie {
			login = c
		}
	}
	if login == nil || !login.HttpOnly || strings.Contains(loc.String(), login.Value) {
		t.Fatalf("login cookie %+v", login)
	}

	// A callback whose state does not match opens no session.
	req, _ := http.NewRequest(http.MethodGet, a.RedirectURI()+"?code=x&state=wrong", nil)
	req.AddCookie(login)
	resp, err = noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Location") != "/?error=state_mismatch" {
		t.Errorf("callback with a wrong state: %s", resp.Header.Get("Location"))
	}
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			t.Errorf("a session cookie was set: %+v", c)
		}
	}
}
