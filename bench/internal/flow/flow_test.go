package flow

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// server is a small authorization server on loopback whose sign-in and
// consent pages are plain HTML forms, as the benchmarked servers' are:
// the consent form has two submit buttons, deny first.
type server struct {
	*httptest.Server
	mu    sync.Mutex
	codes map[string]string // code -> code_challenge
	next  int
}

func newServer(t *testing.T) *server {
	s := &server{codes: map[string]string{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Server = httptest.NewUnstartedServer(mux)
	s.Listener.Close()
	s.Listener = l
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"authorization_endpoint": s.URL + "/auth", "token_endpoint": s.URL + "/token"})
	})
	mux.HandleFunc("GET /auth", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "c1" || q.Get("authorization_details") == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if q.Get("redirect_uri") == "http://127.0.0.1:9/away" {
			http.Redirect(w, r, "https://as.example/elsewhere", http.StatusSeeOther)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "tx", Value: url.QueryEscape(q.Encode()), Path: "/"})
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><form method="get" action="/search"><input name="q"></form>
<form method="POST" action="/login"><input type="text" name="user"><input type="password" name="pass" value="">
<input type="submit" value="Sign in"></form></html>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if _, err := r.Cookie("tx"); err != nil || r.FormValue("user") != "bench-user" || r.FormValue("pass") != "bench-user" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, "/consent", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /consent", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<form method="post" action='consent'>
<input type="checkbox" name="remember" checked><input type="checkbox" name="share" value="yes">
<input type="radio" name="account" value="a1"><input type="radio" name="account" value="a2" checked>
<input type="hidden" name="csrf" value="t&amp;k">
<button type="submit" name="decision" value="deny">Deny</button><button name="decision" value="approve">Approve</button>
<input type="reset" name="r" value="x"></form>`)
	})
	mux.HandleFunc("POST /consent", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("tx")
		if err != nil || r.FormValue("csrf") != "t&k" || r.FormValue("remember") != "on" || r.FormValue("account") != "a2" ||
			r.Form.Has("share") || r.Form.Has("r") {
			http.Error(w, "bad consent form: "+r.Form.Encode(), http.StatusBadRequest)
			return
		}
		raw, _ := url.QueryUnescape(c.Value)
		q, _ := url.ParseQuery(raw)
		back, _ := url.Parse(q.Get("redirect_uri"))
		out := url.Values{"state": {q.Get("state")}}
		if d := r.Form["decision"]; len(d) > 1 || len(d) == 1 && d[0] == "deny" {
			out.Set("error", "access_denied")
			out.Set("error_description", "the subject denied")
		} else {
			s.mu.Lock()
			s.next++
			code := fmt.Sprintf("code-%d", s.next)
			s.codes[code] = q.Get("code_challenge")
			s.mu.Unlock()
			out.Set("code", code)
		}
		back.RawQuery = out.Encode()
		http.Redirect(w, r, back.String(), http.StatusSeeOther)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		s.mu.Lock()
		challenge, ok := s.codes[r.FormValue("code")]
		delete(s.codes, r.FormValue("code"))
		s.mu.Unlock()
		sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
		if id != "c1" || secret != "s%3A1" || !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": "h.p.s", "refresh_token": "rt",
			"authorization_details": []any{map[string]any{"type": "bank_account"}}})
	})
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func testConfig(redirect string) *Config {
	return &Config{ClientID: "c1", Secret: "s:1", RedirectURI: redirect, Scope: "openid", Resource: "http://127.0.0.1/api",
		Details: `[{"type":"bank_account"}]`, Prompt: "consent", Login: "bench-user", MaxSteps: 12}
}

// flowOnce runs one flow as the drivers do: discovery, the walk through
// the pages with a cookie jar, the token request.
func flowOnce(t *testing.T, s *server, cfg *Config) (Token, int, error) {
	t.Helper()
	tr := NewTransport(1)
	defer tr.CloseIdleConnections()
	eps, err := Discover(tr, s.URL+"/", 0)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Transport: tr, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	u, state, verifier, err := cfg.AuthorizeURL(eps.Authorization)
	if err != nil {
		t.Fatal(err)
	}
	code, hops, err := cfg.WalkToCode(client, u, state)
	if err != nil {
		return Token{}, hops, err
	}
	tok, err := cfg.Redeem(client, eps.Token, code, verifier)
	return tok, hops, err
}

// TestFlowThroughTheForms: the walk signs in and consents through the
// pages as a browser would and the code redeems; as the side-by-side
// driver presses "approve" over the form's first button, and as the peer's
// driver presses none; pressing the first button (deny) ends in the
// server's error.
func TestFlowThroughTheForms(t *testing.T) {
	s := newServer(t)
	for _, tc := range []struct {
		name    string
		press   bool
		prefer  []string
		wantErr string
	}{
		{"side-by-side: approve pressed", true, []string{"approve", "login"}, ""},
		{"peer: no button pressed", false, nil, ""},
		{"first button pressed: deny", true, nil, "authorization error access_denied: the subject denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("http://127.0.0.1:9/cb")
			cfg.PressButton, cfg.Press = tc.press, tc.prefer
			var sent []string
			cfg.Do = func(c *http.Client, r *http.Request) (*http.Response, error) {
				sent = append(sent, r.Method+" "+r.URL.Path)
				return c.Do(r)
			}
			tok, hops, err := flowOnce(t, s, cfg)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := "GET /auth, GET /login, POST /login, GET /consent, POST /consent, POST /token"
			if strings.Join(sent, ", ") != want || hops != 5 {
				t.Fatalf("requests %q (%d hops), want %q (5 hops)", sent, hops, want)
			}
			if !tok.RAR || !tok.Refresh || tok.IDToken || !tok.JWTAT || !strings.Contains(string(tok.Body), `"access_token":"h.p.s"`) {
				t.Fatalf("token %+v %s", tok, tok.Body)
			}
		})
	}
}

// TestWalkStaysOnLoopback: a redirect off loopback is refused, never
// followed.
func TestWalkStaysOnLoopback(t *testing.T) {
	s := newServer(t)
	_, _, err := flowOnce(t, s, testConfig("http://127.0.0.1:9/away"))
	if err == nil || err.Error() != `refusing non-loopback URL "https://as.example/elsewhere"` {
		t.Fatalf("err %v", err)
	}
	for raw, ok := range map[string]bool{"http://127.0.0.1:1/": true, "http://localhost/x": true, "http://[::1]:8/": true,
		"http://10.0.0.1/": false, "https://as.example/": false, "http://127.0.0.1.example/": false} {
		if err := RequireLoopback(raw); (err == nil) != ok {
			t.Errorf("RequireLoopback(%q) = %v", raw, err)
		}
	}
}

// TestCollectAndSummarize: skipped operations are left out, the rest
// counted, latencies of the successful ones sorted, errors grouped.
func TestCollectAndSummarize(t *testing.T) {
	c := Collect([]Result{{Dur: 3}, {Err: ErrSkipped}, {Dur: 1, Requests: 6, Token: Token{RAR: true, JWTAT: true}},
		{Err: fmt.Errorf("token: 400 Bad Request")}, {Err: fmt.Errorf("token: 400 Bad Request")}})
	if len(c.Results) != 4 || c.OK != 2 || c.Errors != 2 {
		t.Fatalf("collected %+v", c)
	}
	s := Summarize(c.Results)
	if fmt.Sprint(s.Latencies) != "[1ns 3ns]" || s.Requests != 6 || s.RAR != 1 || s.JWTAT != 1 || s.Refresh != 0 ||
		s.ErrorSamples["token: 400 Bad Request"] != 2 || len(s.ErrorSamples) != 1 {
		t.Fatalf("summary %+v", s)
	}
	if Pct(s.Latencies, 0.5) != 1 || Pct(s.Latencies, 0.99) != 3 || Pct(nil, 0.5) != 0 {
		t.Fatal("nearest rank")
	}
}

// TestRunKeepsItsBound: every operation runs, its result in its place;
// past the bound none starts, and the run says it was stopped.
func TestRunKeepsItsBound(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	op := func() Result {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return Result{Requests: calls}
	}
	res, _, stopped := Run(7, 3, time.Minute, op)
	seen := map[int]bool{}
	for _, r := range res {
		seen[r.Requests] = true
	}
	if stopped || calls != 7 || len(res) != 7 || len(seen) != 7 || seen[0] {
		t.Fatalf("results %+v, %d calls, stopped %v", res, calls, stopped)
	}
	res, _, stopped = Run(5, 2, -time.Second, op)
	if c := Collect(res); !stopped || calls != 7 || len(c.Results) != 0 {
		t.Fatalf("past the bound: %+v, %d calls, stopped %v", res, calls, stopped)
	}
}
