package authserver_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// authorizeNoFollow sends GET /oauth/authorize and returns the response
// without following redirects.
func authorizeNoFollow(t *testing.T, e *env, q url.Values) (int, http.Header, string) {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(e.u.Authorization + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := readPage(t, resp)
	return p.status, p.header, p.body
}

// TestAuthorizeParameterLimits: a parameter over its length limit is an
// invalid_request naming the parameter and the limit, redirected with iss
// (and state, unless state is the one too long) when client and
// redirect_uri are verified, else shown on the error page; at the limit the
// request is not refused for its length.
func TestAuthorizeParameterLimits(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	for _, tc := range []struct {
		param string
		limit int
	}{
		{"state", 2048}, {"nonce", 512}, {"scope", 2048}, {"authorization_details", 48 << 10},
		{"code_challenge", 128}, {"resource", 2048}, {"org_id", 128}, {"prompt", 128},
		{"login_hint", 512}, {"response_mode", 128}, {"ui_locales", 512}, {"some_extension", 2048},
	} {
		t.Run(tc.param, func(t *testing.T) {
			for _, n := range []int{tc.limit, tc.limit + 1} {
				q := e.authParams(c)
				q.Set(tc.param, strings.Repeat("a", n))
				st, h, body := authorizeNoFollow(t, e, q)
				if st != http.StatusSeeOther {
					t.Fatalf("%d bytes: want a redirect to the client, got %d %s", n, st, body)
				}
				rq := redirectQuery(t, h.Get("Location"))
				refused := strings.Contains(rq.Get("error_description"), "limit")
				if n == tc.limit {
					if refused {
						t.Fatalf("%d bytes, at the limit: refused for its length: %v", n, rq)
					}
					continue
				}
				want := fmt.Sprintf("%s is %d bytes long; the limit is %d bytes", tc.param, n, tc.limit)
				if rq.Get("error") != "invalid_request" || rq.Get("error_description") != want || rq.Get("iss") != e.u.Issuer {
					t.Fatalf("%d bytes: got %v, want invalid_request %q with iss", n, rq, want)
				}
				if wantState := tc.param != "state"; rq.Has("state") != wantState || wantState && rq.Get("state") != "st-123" {
					t.Fatalf("state in the redirect: %v (the state is echoed unless it is the one too long)", rq)
				}
			}
		})
	}
	// The request as a whole.
	for _, tc := range []struct {
		name string
		edit func(url.Values)
		want string
	}{
		{"too many resource values", func(q url.Values) {
			for range 16 {
				q.Add("resource", e.u.BaseURL)
			}
		}, "resource is sent 17 times; the limit is 16"},
		{"too many parameter values", func(q url.Values) {
			for i := range 60 {
				q.Set(fmt.Sprintf("x%d", i), "1")
			}
		}, "the request has 69 parameter values; the limit is 64"},
		{"too many bytes in all", func(q url.Values) {
			for i := range 40 {
				q.Set(fmt.Sprintf("x%d", i), strings.Repeat("a", 2000))
			}
		}, "the limit is 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := e.authParams(c)
			tc.edit(q)
			st, h, body := authorizeNoFollow(t, e, q)
			rq := redirectQuery(t, h.Get("Location"))
			if st != http.StatusSeeOther || rq.Get("error") != "invalid_request" || !strings.Contains(rq.Get("error_description"), tc.want) || rq.Get("state") != "st-123" {
				t.Fatalf("got %d %v %s, want invalid_request %q with state", st, rq, body, tc.want)
			}
		})
	}
	// client_id and redirect_uri cannot be verified when too long: the
	// error page, never a redirect.
	for _, p := range []struct {
		param string
		limit int
	}{{"client_id", 256}, {"redirect_uri", 2048}} {
		q := e.authParams(c)
		q.Set(p.param, strings.Repeat("a", p.limit+1))
		st, h, body := authorizeNoFollow(t, e, q)
		want := fmt.Sprintf("%s is %d bytes long; the limit is %d bytes", p.param, p.limit+1, p.limit)
		if st != http.StatusBadRequest || h.Get("Location") != "" || !strings.Contains(body, want) {
			t.Errorf("%s too long: got %d %q, want the error page saying %q", p.param, st, h.Get("Location"), want)
		}
	}
	// A megabyte in the URL is over the listener's header limit (431); in
	// a POSTed form it is over the body limit (413).
	q := e.authParams(c)
	q.Set("state", strings.Repeat("a", 1<<20))
	if st, _, _ := authorizeNoFollow(t, e, q); st != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("1 MB state in the URL: want 431, got %d", st)
	}
	resp, err := http.PostForm(e.u.Authorization, q)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MB state in a form: want 413, got %d", resp.StatusCode)
	}
}

// TestNativeParameterLimits: the native API applies the same limits, and
// the redirect_url it returns does not echo an oversized state.
func TestNativeParameterLimits(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	q := e.authParams(c)
	q.Set("state", strings.Repeat("s", 3000))
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna})
	if st != http.StatusBadRequest || m["error"] != "invalid_request" || !strings.Contains(m["error_description"].(string), "state is 3000 bytes long; the limit is 2048 bytes") {
		t.Fatalf("got %d %v", st, m)
	}
	if rq := redirectQuery(t, m["redirect_url"].(string)); rq.Has("state") || rq.Get("error") != "invalid_request" {
		t.Fatalf("redirect_url: %v", rq)
	}
}
