package playground

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/redact"
)

// form fills and posts the server's sign-in or consent form found in page.
func form(t *testing.T, c *http.Client, page *http.Response, values url.Values) *http.Response {
	t.Helper()
	b, _ := io.ReadAll(page.Body)
	page.Body.Close()
	action := regexp.MustCompile(`<form method="post" action="([^"]+)"`).FindSubmatch(b)
	if action == nil {
		t.Fatalf("no form at %s:\n%s", page.Request.URL, b)
	}
	for _, name := range []string{"request", "csrf"} {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no %s in the form at %s", name, page.Request.URL)
		}
		values.Set(name, html.UnescapeString(string(m[1])))
	}
	to, _ := page.Request.URL.Parse(string(action[1]))
	resp, err := c.PostForm(to.String(), values)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestInspectorEventsOfATokenExchange signs a browser-like client in to the
// confidential demo through the server's web pages and finds, on the bus,
// what the inspector shows of it: the token (by fingerprint), its decoded
// claims naming the subject and tied to the code, and the grant that
// GET /authorization returned to the demo's own credential.
func TestInspectorEventsOfATokenExchange(t *testing.T) {
	p := start(t, Config{})
	sub := p.Bus().Subscribe(64)
	defer sub.Close()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	conf := entry(t, p, DemoConfidentialID)

	login, err := c.Get(conf.Origin + "/login") // -> the server's sign-in page
	if err != nil {
		t.Fatal(err)
	}
	consent := form(t, c, login, url.Values{"subject": {"sub_carla"}, "action": {"login"}})
	home := form(t, c, consent, url.Values{"action": {"approve"}})
	body, _ := io.ReadAll(home.Body)
	home.Body.Close()
	if !strings.Contains(string(body), `data-signed-in="true"`) {
		t.Fatalf("not signed in at %s:\n%s", home.Request.URL, body)
	}

	got := map[string]json.RawMessage{}
	timeout := time.After(10 * time.Second)
	for len(got) < 3 {
		select {
		case env := <-sub.C():
			var e struct {
				Kind string          `json:"kind"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(env, &e); err != nil {
				t.Fatal(err)
			}
			got[e.Kind] = e.Data
		case <-timeout:
			t.Fatalf("events %v", got)
		}
	}
	var issued bridge.TokenIssuedEvent
	var claims TokenClaimsEvent
	var grant GrantEvent
	for kind, v := range map[string]any{"token.issued": &issued, "token.claims": &claims, "grant": &grant} {
		if err := json.Unmarshal(got[kind], v); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
	if issued.ClientID != DemoConfidentialID || issued.Scope != demoScope || len(issued.Fingerprint) != 16 {
		t.Errorf("token.issued %+v", issued)
	}
	var cl struct {
		Sub      string `json:"sub"`
		ClientID string `json:"client_id"`
	}
	_ = json.Unmarshal(claims.Claims, &cl)
	if claims.Fingerprint != issued.Fingerprint || len(claims.CodeFingerprint) != 16 || cl.Sub != "sub_carla" || cl.ClientID != DemoConfidentialID {
		t.Errorf("token.claims %+v", claims)
	}
	var g struct {
		Subject string   `json:"subject"`
		Scopes  []string `json:"scopes"`
	}
	_ = json.Unmarshal(grant.Grant, &g)
	if grant.Status != http.StatusOK || grant.Fingerprint != issued.Fingerprint || g.Subject != "sub_carla" || strings.Join(g.Scopes, " ") != demoScope {
		t.Errorf("grant %+v", grant)
	}
	// Nothing on the bus carries the token itself.
	for kind, v := range got {
		if strings.Contains(string(v), "eyJ") {
			t.Errorf("%s carries a JWT: %s", kind, v)
		}
	}
}

// TestObserverPublicClient reports a public client's token without a grant
// (it has no secret to read one with), and an opaque token without claims.
func TestObserverPublicClient(t *testing.T) {
	bus := bridge.NewBus(nil)
	sub := bus.Subscribe(8)
	defer sub.Close()
	o := &observer{bus: bus}
	o.publish(nil, "pub", "", false, "the-code", []byte(`{"access_token":"opaque","token_type":"Bearer"}`))
	want := []struct{ kind, has string }{
		{"token.issued", `"fingerprint":"` + redact.Fingerprint("opaque") + `"`},
		{"token.claims", `"error":"the access token is not a JWT`},
		{"grant", `"error":"not read: GET /authorization needs a client secret`},
	}
	for _, w := range want {
		env := string(<-sub.C())
		if !strings.Contains(env, `"kind":"`+w.kind+`"`) || !strings.Contains(env, w.has) {
			t.Errorf("got %s, want %s with %s", env, w.kind, w.has)
		}
	}
}

// TestJWTClaims decodes a compact JWS's payload and refuses anything else.
func TestJWTClaims(t *testing.T) {
	for _, c := range []struct {
		token, want string
	}{
		{"eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJzdWJfYW5hIn0.c2ln", `{"sub":"sub_ana"}`},
		{"opaque", ""},
		{"a.b", ""},
		{"a.!!!.c", ""},
		{"a.bm90IGpzb24.c", ""}, // "not json"
	} {
		got, err := jwtClaims(c.token)
		if string(got) != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%q: %s %v", c.token, got, err)
		}
	}
}

// TestObserverHostClient reports, for a token the host obtained itself (the
// bridge's sign-in of a public client), the claims and what is known of the
// grant, and leaves token.issued to the host, which publishes it.
func TestObserverHostClient(t *testing.T) {
	bus := bridge.NewBus(nil)
	sub := bus.Subscribe(8)
	defer sub.Close()
	o := &observer{bus: bus, hostIssues: true}
	jwt := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzdWJfYW5hIn0.c2ln"
	o.publish(nil, "demo-public", "", false, "the-code", []byte(`{"access_token":"`+jwt+`","token_type":"Bearer","scope":"openid profile"}`))
	want := []struct{ kind, has string }{
		{"token.claims", `"claims":{"sub":"sub_ana"}`},
		{"grant", `"scope":"openid profile"`},
	}
	for _, w := range want {
		env := string(<-sub.C())
		if !strings.Contains(env, `"kind":"`+w.kind+`"`) || !strings.Contains(env, w.has) {
			t.Errorf("got %s, want %s with %s", env, w.kind, w.has)
		}
	}
}
