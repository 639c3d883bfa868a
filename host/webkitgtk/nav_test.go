//go:build linux && cgo

package webkitgtk

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// triggerApp serves one page per navigation trigger, each aimed at the
// service's authorization endpoint, plus /r302, a server redirect to it.
func triggerApp(t *testing.T, pages map[string]string, auth string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/r302" {
			http.Redirect(w, r, auth, http.StatusFound)
			return
		}
		body, ok := pages[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><meta charset=utf-8>%s</head><body>trigger</body></html>", body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestNavigationTriggersAreCaught drives every way a page can head for the
// authorization endpoint and checks that the host caught it (consent
// instead of a load) or blocked it (fetch, XHR), and that the service's log
// shows no request to its authorization endpoint.
func TestNavigationTriggersAreCaught(t *testing.T) {
	e := testEnv(t)
	auth := e.PublicAuthorizeURL()
	au, _ := url.Parse(auth)
	var hidden strings.Builder
	for k, vs := range au.Query() {
		fmt.Fprintf(&hidden, `<input type=hidden name="%s" value="%s">`, html.EscapeString(k), html.EscapeString(vs[0]))
	}
	action := html.EscapeString(e.Authorize)
	js := func(s string) string { return fmt.Sprintf("%q", s) } // a JS string literal (JSON-compatible)
	blockedProbe := func(call string) string {
		return `<script>document.addEventListener("DOMContentLoaded", function(){ document.body.dataset.result = "pending"; ` + call +
			`.then(function(){ document.body.dataset.result = "loaded"; }, function(err){ document.body.dataset.result = "blocked: " + err; }); });</script>`
	}
	xhr := `new Promise(function(ok, fail){ var x = new XMLHttpRequest(); x.open("GET", ` + js(auth) + `); x.onload = ok; x.onerror = function(){ fail("xhr error"); }; x.send(); })`
	cases := []struct {
		name  string
		page  string
		click string // element to click once loaded (a user gesture)
		fetch bool   // not a navigation: expect it blocked, no consent
	}{
		{name: "location.href", page: `<script>location.href = ` + js(auth) + `</script>`},
		{name: "location.replace", page: `<script>location.replace(` + js(auth) + `)</script>`},
		{name: "link click", page: `<a id=go href="` + html.EscapeString(auth) + `">go</a>`, click: "go"},
		{name: "form GET", page: `<form id=f method=get action="` + action + `">` + hidden.String() + `<button id=go>go</button></form>`, click: "go"},
		{name: "form POST", page: `<form id=f method=post action="` + action + `">` + hidden.String() + `<button id=go>go</button></form>`, click: "go"},
		{name: "server 302", page: `<script>location.href = "/r302"</script>`},
		{name: "meta refresh", page: `<meta http-equiv=refresh content="0;url=` + html.EscapeString(auth) + `">`},
		{name: "target=_blank", page: `<a id=go target=_blank href="` + html.EscapeString(auth) + `">go</a>`, click: "go"},
		{name: "window.open", page: `<button id=go onclick='window.open(` + html.EscapeString(js(auth)) + `)'>go</button>`, click: "go"},
		{name: "iframe src", page: `<iframe src="` + html.EscapeString(auth) + `"></iframe>`},
		{name: "fetch", page: blockedProbe(`fetch(` + js(auth) + `)`), fetch: true},
		{name: "fetch redirected", page: blockedProbe(`fetch("/r302")`), fetch: true},
		{name: "XHR", page: blockedProbe(xhr), fetch: true},
		{name: "fetch of an escaped path", page: blockedProbe(`fetch(` + js(strings.Replace(auth, "/oauth/authorize", "/oauth/%61uthorize", 1)) + `)`), fetch: true},
	}
	pages := map[string]string{}
	for i, c := range cases {
		pages[fmt.Sprint(i)] = c.page
	}
	app := triggerApp(t, pages, auth)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.AuthorizeHits()
			rec := mount(t, host.Miniapp{Name: "triggers", LoadURL: mustURL(t, fmt.Sprintf("%s/%d", app.URL, i)),
				Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{app.URL}}, Consent: e.Consent})
			if c.click != "" {
				testWin.Eval(`document.getElementById(` + js(c.click) + `).click()`)
			}
			if c.fetch {
				pollJS(t, `document.body.dataset.result.slice(0, 7)`, "blocked")
				time.Sleep(200 * time.Millisecond) // a late consent would show here
				if got := rec.All(kind(host.EventConsentRequested)); len(got) != 0 {
					t.Errorf("fetch/XHR started a consent: %v", got)
				}
			} else {
				ev := rec.Wait(t, "consent requested", kind(host.EventConsentRequested))
				if !strings.HasPrefix(ev.URL, e.Authorize) {
					t.Errorf("consent for %q, want the authorization endpoint", ev.URL)
				}
				rec.Wait(t, "host view shown", kind(host.EventHostShown))
			}
			if n := e.AuthorizeHits() - before; n != 0 {
				t.Errorf("the authorization endpoint received %d requests from the view", n)
			}
			if top := testWin.TopURL(); top == nil || !strings.HasPrefix(top.String(), app.URL) {
				t.Errorf("the view left the Miniapp: top URL %v", top)
			}
			testWin.CloseConsent()
		})
	}
}

// TestExternalLinks: an http(s) link outside the allowed origins followed on
// a user gesture goes to the system browser; the same URL reached by script
// without a gesture is only blocked. The view stays on the Miniapp.
func TestExternalLinks(t *testing.T) {
	e := testEnv(t)
	target := e.Other.URL + "/docs"
	app := triggerApp(t, map[string]string{
		"link":   `<a id=go href="` + html.EscapeString(target) + `">docs</a>`,
		"script": `<script>setTimeout(function () { location.href = ` + fmt.Sprintf("%q", target) + `; }, 10)</script>`,
	}, e.Authorize)
	for _, c := range []struct {
		page     string
		click    bool
		want     host.Action
		external bool
	}{{"link", true, host.External, true}, {"script", false, host.Block, false}} {
		t.Run(c.page, func(t *testing.T) {
			externals.mu.Lock()
			before := len(externals.urls)
			externals.mu.Unlock()
			rec := mount(t, host.Miniapp{Name: "links", LoadURL: mustURL(t, app.URL+"/"+c.page),
				Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{app.URL}}, Consent: e.Consent})
			if c.click {
				testWin.Eval(`document.getElementById("go").click()`)
			}
			ev := rec.Wait(t, "decision on "+target, func(ev host.Event) bool { return ev.Kind == host.EventNavigation && ev.URL == target })
			if ev.Action != c.want {
				t.Errorf("decision %v (rule %s), want %v", ev.Action, ev.Rule, c.want)
			}
			time.Sleep(100 * time.Millisecond)
			externals.mu.Lock()
			got := externals.urls[before:]
			externals.mu.Unlock()
			if c.external != (len(got) == 1 && got[0] == target) {
				t.Errorf("system browser got %v", got)
			}
			if top := testWin.TopURL(); top == nil || !strings.HasPrefix(top.String(), app.URL) {
				t.Errorf("the view left the Miniapp: %v", top)
			}
		})
	}
}
