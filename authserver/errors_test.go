package authserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// conforms reports whether desc uses only the characters RFC 6749 §4.1.2.1
// and §5.2 allow in error_description: %x20-21 / %x23-5B / %x5D-7E.
func conforms(desc string) bool {
	for i := 0; i < len(desc); i++ {
		if c := desc[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// TestErrorDescriptionCharset walks the error paths of every endpoint that
// writes an error_description (authorization redirects, browser and native;
// token; introspection; revocation; userinfo with its WWW-Authenticate
// challenge; the grant endpoint's message), with requests that make the
// server quote parameters, cite RFC sections and echo non-ASCII input, and
// checks each description where it is written: the JSON body, the redirect
// URL and the challenge header.
func TestErrorDescriptionCharset(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	hostile := `Pacífico "§" \ ñ` + "\t\u2026"
	authorize := func(set map[string]string, add ...string) string {
		q := e.authParams(c)
		for k, v := range set {
			q.Set(k, v)
		}
		for i := 0; i+1 < len(add); i += 2 {
			q.Add(add[i], add[i+1])
		}
		return e.u.Authorization + "?" + q.Encode()
	}
	authURLs := map[string]string{
		"response_type":          authorize(map[string]string{"response_type": hostile}),
		"response_mode":          authorize(map[string]string{"response_mode": hostile}),
		"plain PKCE":             authorize(map[string]string{"code_challenge_method": "plain"}),
		"repeated state":         authorize(nil, "state", hostile),
		"unknown scope":          authorize(map[string]string{"scope": "openid " + hostile}),
		"details malformed":      authorize(map[string]string{"authorization_details": `[{"type":`}),
		"details without type":   authorize(map[string]string{"authorization_details": `[{"actions":["read"]}]`}),
		"details unknown type":   authorize(map[string]string{"authorization_details": `[{"type":"` + strings.ReplaceAll(hostile, `"`, `\"`) + `","actions":["read"]}]`}),
		"resource":               authorize(map[string]string{"resource": "https://évil.example/" + hostile}),
		"unknown org_id":         authorize(map[string]string{"org_id": hostile}),
		"request object":         authorize(map[string]string{"request": hostile}),
		"request_uri":            authorize(map[string]string{"request_uri": hostile}),
		"prompt=none signed out": authorize(map[string]string{"prompt": "none"}),
	}
	type probe struct {
		name string
		req  *http.Request
	}
	var probes []probe
	add := func(name string, req *http.Request) { probes = append(probes, probe{name, req}) }
	for name, u := range authURLs {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		add("authorize GET: "+name, req)
		b, _ := json.Marshal(map[string]any{"authorization_url": u, "subject": "sub_ana"})
		req, _ = http.NewRequest(http.MethodPost, e.u.Native, bytes.NewReader(b))
		req.SetBasicAuth(hostID, hostSecret)
		req.Header.Set("Content-Type", "application/json")
		add("native: "+name, req)
	}
	form := func(name, user, pass string, v url.Values) {
		req, _ := http.NewRequest(http.MethodPost, e.u.Token, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
		}
		add("token: "+name, req)
	}
	form("grant_type", "", "", url.Values{"grant_type": {hostile}, "client_id": {publicID}})
	form("two methods", confID, e.confSecret, url.Values{"grant_type": {"authorization_code"}, "client_id": {confID}, "client_secret": {e.confSecret}})
	form("unknown client", "", "", url.Values{"grant_type": {"authorization_code"}, "client_id": {hostile}, "code": {"x"}})
	form("bad code", "", "", url.Values{"grant_type": {"authorization_code"}, "client_id": {publicID}, "code": {hostile},
		"redirect_uri": {publicRedir}, "code_verifier": {hostile}})
	form("bad refresh token", "", "", url.Values{"grant_type": {"refresh_token"}, "client_id": {publicID}, "refresh_token": {hostile}, "scope": {hostile}})
	for _, path := range []string{"/oauth/introspect", "/oauth/revoke"} {
		req, _ := http.NewRequest(http.MethodPost, e.u.Issuer+path, strings.NewReader(url.Values{"token": {hostile}, "client_id": {hostile}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		add(path, req)
	}
	for _, h := range []string{"", "Basic " + hostile, "Bearer abc", "Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"} {
		req, _ := http.NewRequest(http.MethodGet, e.u.Issuer+"/oauth/userinfo", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		add("userinfo "+h, req)
		req, _ = http.NewRequest(http.MethodGet, e.u.Grant, nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		req.Header.Set("X-Client-Id", signingID)
		req.Header.Set("X-Client-Secret", signingSecret)
		add("grant endpoint "+h, req)
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	checked := 0
	check := func(t *testing.T, where, desc string) {
		t.Helper()
		if !conforms(desc) {
			t.Errorf("%s: error_description %q has characters RFC 6749 §5.2 forbids", where, desc)
		}
		if desc != "" {
			checked++
		}
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			resp, err := noRedirect.Do(p.req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode < 300 {
				t.Fatalf("no error: %d %s", resp.StatusCode, raw)
			}
			found := false
			if loc := resp.Header.Get("Location"); loc != "" {
				u, err := url.Parse(loc)
				if err != nil {
					t.Fatal(err)
				}
				check(t, "redirect", u.Query().Get("error_description"))
				found = u.Query().Get("error_description") != ""
			}
			if strings.Contains(resp.Header.Get("Content-Type"), "json") {
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatalf("%s", raw)
				}
				for _, k := range []string{"error_description", "message"} {
					if d, ok := m[k].(string); ok {
						check(t, "JSON "+k, d)
						found = true
					}
				}
				if ru, ok := m["redirect_url"].(string); ok {
					u, _ := url.Parse(ru)
					check(t, "native redirect_url", u.Query().Get("error_description"))
				}
			}
			if ch := resp.Header.Get("WWW-Authenticate"); strings.Contains(ch, "error_description=") {
				d := strings.TrimSuffix(ch[strings.Index(ch, `error_description="`)+len(`error_description="`):], `"`)
				check(t, "WWW-Authenticate", d)
			}
			if !found && !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
				t.Errorf("%d without an error_description: %s", resp.StatusCode, raw)
			}
		})
	}
	if checked < len(probes) {
		t.Errorf("checked %d descriptions for %d error paths", checked, len(probes))
	}
}
