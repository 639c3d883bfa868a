package authserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
)

// chargeToken returns an access token with an automatic-charge detail of
// the Andes Company (limits 1000 to 50000 CLP).
func (e *env) chargeToken() string {
	e.t.Helper()
	base := e.u.BaseURL
	v, c := pkce(e.t)
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", `[{"type":"`+base+`/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["`+base+`"],`+
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"}}]`)
	rq := e.nativeCode(q, subAna, map[string]string{"action": "approve", "account_id": andesAcct})
	st, m := e.exchange(rq.Get("code"), v)
	if st != http.StatusOK {
		e.t.Fatalf("token: %d %v", st, m)
	}
	return m["access_token"].(string)
}

// jsonEndpoint is one endpoint of the server that reads a JSON body, with
// a valid body and the credentials it needs.
type jsonEndpoint struct {
	name, url, body string
	auth            func(*http.Request)
	limit           int // the endpoint's body limit
}

func (e *env) jsonEndpoints() []jsonEndpoint {
	e.t.Helper()
	hostAuth := func(r *http.Request) { r.SetBasicAuth(hostID, hostSecret) }
	_, c := pkce(e.t)
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + e.authParams(c).Encode(), "subject": subAna})
	if st != http.StatusCreated {
		e.t.Fatalf("native submit: %d %v", st, m)
	}
	pid, key := e.project("bodies")
	tok := e.chargeToken()
	submit := jsonOf(e.t, map[string]any{"authorization_url": e.u.Authorization + "?" + e.authParams(c).Encode(), "subject": subAna})
	return []jsonEndpoint{
		{"native submit", e.u.Native, submit, hostAuth, 256 << 10},
		{"native decision", e.u.Native + "/" + m["request_id"].(string) + "/decision", `{"action":"deny"}`, hostAuth, 256 << 10},
		{"automatic charge", e.u.BaseURL + "/automatic-charges", `{"amount":"1000","currency":"CLP"}`,
			func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }, 256 << 10},
		{"dashboard project", e.u.Dashboard + "/api/projects", `{"name":"p2"}`, func(*http.Request) {}, 1 << 20},
		{"dashboard credential", e.u.Dashboard + "/api/projects/" + pid + "/credentials",
			`{"client_type":"public","redirect_uris":["https://x.example/cb"],"allowed_origins":["https://x.example"]}`,
			func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) }, 1 << 20},
		{"dashboard review decision", e.u.Dashboard + "/api/review/none/reject", `{"reason":"no"}`,
			func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+e.srv.OperatorKey()) }, 1 << 20},
	}
}

func (e *env) postRaw(u, body string, auth func(*http.Request)) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	auth(req)
	st, m, _ := e.do(req)
	return st, m
}

// TestJSONBodiesAreStrict: every endpoint that reads JSON refuses a second
// value or any text after the first with 400, and a body over its limit
// with 413 content_too_large (RFC 9110 §15.5.14).
func TestJSONBodiesAreStrict(t *testing.T) {
	e := start(t)
	for _, ep := range e.jsonEndpoints() {
		t.Run(ep.name, func(t *testing.T) {
			for _, tail := range []string{ep.body, "[]", "x", `{"a":1}`} {
				st, m := e.postRaw(ep.url, ep.body+tail, ep.auth)
				if st != http.StatusBadRequest {
					t.Errorf("body followed by %q: want 400, got %d %v", tail, st, m)
				}
			}
			pad := strings.Repeat(" ", ep.limit) // whitespace: valid JSON if it were read
			st, m := e.postRaw(ep.url, ep.body+pad, ep.auth)
			if st != http.StatusRequestEntityTooLarge || (m["error"] != "content_too_large" && m["code"] != "content_too_large") {
				t.Errorf("body over %d bytes: want 413 content_too_large, got %d %v", ep.limit, st, m)
			}
		})
	}
}

// TestFormBodiesOverTheLimit: the form endpoints answer 413 too: JSON for
// the token endpoint, an error page for a POSTed authorization request.
func TestFormBodiesOverTheLimit(t *testing.T) {
	e := start(t)
	big := "grant_type=authorization_code&pad=" + strings.Repeat("a", 256<<10)
	for _, path := range []string{"/oauth/token", "/oauth/introspect", "/oauth/revoke"} {
		req, _ := http.NewRequest(http.MethodPost, e.u.Issuer+path, strings.NewReader(big))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(confID, e.confSecret)
		if st, m, _ := e.do(req); st != http.StatusRequestEntityTooLarge || m["error"] != "content_too_large" {
			t.Errorf("%s: want 413 content_too_large, got %d %v", path, st, m)
		}
	}
	resp, err := http.PostForm(e.u.Authorization, url.Values{"client_id": {publicID}, "pad": {strings.Repeat("a", 256<<10)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "content_too_large") {
		t.Errorf("POST /oauth/authorize: want a 413 page, got %d %s", resp.StatusCode, body)
	}
}

// startHTTP runs a server with the given listener limits.
func startHTTP(t *testing.T, hc httplimit.Config) *env {
	t.Helper()
	clk := &clock{t: time.Now()}
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: storetest.DB(t), Now: clk.Now,
		Secrets: map[string]string{hostID: hostSecret}, HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &env{t: t, srv: srv, u: srv.URLs(), clock: clk}
}

// dialFrom opens a TCP connection to the host:port of rawURL from a given
// loopback source address (all of 127.0.0.0/8 is loopback on Linux).
func dialFrom(t *testing.T, src, rawURL string) net.Conn {
	t.Helper()
	u, _ := url.Parse(rawURL)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClosed reads until the server closes the connection and returns what
// it sent. The deadline only turns a server that never closes into a
// failure instead of a hung test; the test waits on the close itself.
func waitClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server did not close the connection; it sent %q", b)
	}
	return string(b)
}

// TestStalledBodyIsCut: a client that sends headers announcing a body and
// then stops is cut off at the read deadline on every listener, so stalled
// connections cannot pile up.
func TestStalledBodyIsCut(t *testing.T) {
	e := startHTTP(t, httplimit.Config{ReadTimeout: 300 * time.Millisecond})
	for _, target := range []struct{ name, url, path string }{
		{"token endpoint", e.u.Issuer, "/oauth/token"},
		{"native API", e.u.Issuer, "/native/requests"},
		{"discovery (a handler that never reads the body)", e.u.Issuer, "/.well-known/openid-configuration"},
		{"dashboard", e.u.Dashboard, "/api/projects"},
		{"signing provider", e.u.SigningBaseURL, "/api/signatures"},
	} {
		t.Run(target.name, func(t *testing.T) {
			c := dialFrom(t, "127.0.0.1", target.url)
			method := "POST"
			if strings.Contains(target.path, "well-known") {
				method = "GET"
			}
			fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", method, target.path)
			waitClosed(t, c)
		})
	}
	// The server still answers afterwards.
	if body := get(t, e.u.Discovery); !strings.Contains(body, "issuer") {
		t.Fatalf("discovery after the stalled bodies: %s", body)
	}
}

// TestConnectionCapPerSource: connections beyond the cap of one source
// address are closed at accept, while another source still gets in.
func TestConnectionCapPerSource(t *testing.T) {
	const capN = 4
	e := startHTTP(t, httplimit.Config{MaxConnsPerSource: capN})
	ask := func(c net.Conn) (*http.Response, error) {
		fmt.Fprintf(c, "GET /.well-known/openid-configuration HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	// capN kept-alive connections from 127.0.0.2, each answered (so each
	// is accepted and counted).
	for range capN {
		c := dialFrom(t, "127.0.0.2", e.u.Issuer)
		if resp, err := ask(c); err != nil || resp.StatusCode != 200 {
			t.Fatalf("connection within the cap: %v %v", resp, err)
		}
	}
	over := dialFrom(t, "127.0.0.2", e.u.Issuer)
	if got := waitClosed(t, over); got != "" {
		t.Fatalf("connection over the cap got %q, want it closed unanswered", got)
	}
	other := dialFrom(t, "127.0.0.3", e.u.Issuer)
	if resp, err := ask(other); err != nil || resp.StatusCode != 200 {
		t.Fatalf("another source: %v %v", resp, err)
	}
}
