package host

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"
	"time"
)

func TestCookiesFor(t *testing.T) {
	cb, _ := url.Parse("http://127.0.0.1:8702/auth/callback?code=c")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		in   http.Cookie
		want *Cookie // nil: dropped
	}{
		{"host-only session cookie, flags kept", http.Cookie{Name: "s", Value: "v", Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode},
			&Cookie{Name: "s", Value: "v", Domain: "127.0.0.1", Path: "/", MaxAge: -1, HTTPOnly: true, Secure: true, SameSite: SameSiteStrict}},
		{"max-age kept", http.Cookie{Name: "s", Value: "v", Path: "/", MaxAge: 3600, SameSite: http.SameSiteLaxMode},
			&Cookie{Name: "s", Value: "v", Domain: "127.0.0.1", Path: "/", MaxAge: 3600, SameSite: SameSiteLax}},
		{"expires becomes max-age", http.Cookie{Name: "s", Value: "v", Path: "/", Expires: now.Add(90 * time.Second)},
			&Cookie{Name: "s", Value: "v", Domain: "127.0.0.1", Path: "/", MaxAge: 90, SameSite: SameSiteNone}},
		{"deletion", http.Cookie{Name: "s", Path: "/", MaxAge: -1},
			&Cookie{Name: "s", Domain: "127.0.0.1", Path: "/", MaxAge: 0, SameSite: SameSiteNone}},
		{"default path", http.Cookie{Name: "s", Value: "v"},
			&Cookie{Name: "s", Value: "v", Domain: "127.0.0.1", Path: "/auth", MaxAge: -1, SameSite: SameSiteNone}},
		{"domain naming the host stays host-only", http.Cookie{Name: "s", Value: "v", Path: "/", Domain: "127.0.0.1"},
			&Cookie{Name: "s", Value: "v", Domain: "127.0.0.1", Path: "/", MaxAge: -1, SameSite: SameSiteNone}},
		{"another domain is dropped", http.Cookie{Name: "s", Value: "v", Path: "/", Domain: "evil.example"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := cookiesFor(cb, []*http.Cookie{&c.in}, now)
			switch {
			case c.want == nil && len(got) != 0:
				t.Errorf("got %+v, want it dropped", got)
			case c.want != nil && (len(got) != 1 || !reflect.DeepEqual(got[0], *c.want)):
				t.Errorf("got %+v, want %+v", got, *c.want)
			}
		})
	}
}

func TestCallback(t *testing.T) {
	var gotCookie string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/callback":
			gotCookie = r.Header.Get("Cookie")
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "new", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
			http.SetCookie(w, &http.Cookie{Name: "tracker", Value: "x", Domain: "elsewhere.example"})
			w.Header().Set("Location", "../home?x=1")
			w.WriteHeader(http.StatusFound)
		case "/plain":
			w.WriteHeader(http.StatusOK)
		default:
			t.Errorf("the host followed the redirect to %s", r.URL)
		}
	}))
	defer srv.Close()
	cb, _ := url.Parse(srv.URL + "/callback?code=c&state=s")
	start, _ := url.Parse(srv.URL + "/start")
	res, err := callback(context.Background(), srv.Client(), cb, "login=abc", start, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if gotCookie != "login=abc" {
		t.Errorf("callback got Cookie %q, want the view's cookies", gotCookie)
	}
	if res.Next.String() != srv.URL+"/home?x=1" || res.Status != http.StatusFound {
		t.Errorf("next %s status %d", res.Next, res.Status)
	}
	if len(res.Cookies) != 1 || res.Cookies[0].Name != "session" || !res.Cookies[0].HTTPOnly {
		t.Errorf("cookies %+v, want only the Miniapp origin's session cookie", res.Cookies)
	}

	plain, _ := url.Parse(srv.URL + "/plain")
	res, err = callback(context.Background(), srv.Client(), plain, "", start, time.Now())
	if err != nil || res.Next != start {
		t.Errorf("a callback that does not redirect leads to %v (%v), want the start_url", res, err)
	}
}
