package playground

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/miniapp-host/miniapp-host/devapp"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// TestNewMiniappInPlainTab: the Miniapp `miniapp-host new` writes, run by
// Playground.Dev without a window, signs in from a plain browser tab in
// headless Chromium with the same code it runs in the host: the redirect
// to the service's sign-in and consent pages with PKCE, then its code
// redeemed by the page's own fetch at the token endpoint, which answers
// CORS for the client's allowed origin. A page on another origin cannot
// read the token endpoint's answers. The folder's config.json names the
// default issuer, as `new` writes it, while this playground listens on
// free ports: Dev serves it with the running one.
func TestNewMiniappInPlainTab(t *testing.T) {
	p := start(t, Config{})
	dir := t.TempDir()
	if _, err := devapp.New(dir, devapp.NewConfig{ID: "tab-app"}); err != nil {
		t.Fatal(err)
	}
	if p.Services().Issuer == devapp.DefaultIssuer {
		t.Fatal("the test's playground runs on the default ports: the issuer served is not put to the test")
	}
	app, err := devapp.Start(devapp.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	launched := make(chan DevEvent, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Dev(ctx, app, func(ev DevEvent) {
			if ev.Kind == DevLaunched || ev.Kind == DevFailed {
				launched <- ev
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case ev := <-launched:
		if ev.Kind != DevLaunched || ev.Launch.Report.Outcome != resolver.OutcomeAccepted {
			t.Fatalf("dev: %+v", ev)
		}
	case <-time.After(time.Minute):
		t.Fatal("dev launched nothing")
	}

	bctx := browser(t)
	closeFirst(t, bctx)
	if err := chromedp.Do(bctx, chromedp.Navigate(app.Origin().String()+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, bctx, "the page signed out", `document.body.dataset.state === "signed-out"`)
	click(t, bctx, "#signin")
	signIn(t, bctx, "sub_ana")
	poll(t, bctx, "the page signed in", `document.body.dataset.state === "signed-in" || document.body.dataset.state === "error"`)
	if state := eval[string](t, bctx, `document.body.dataset.state + ": " + document.getElementById("error").textContent`); state != "signed-in: " {
		t.Fatalf("the tab's sign-in ended %q", state)
	}
	if got := eval[string](t, bctx, `document.querySelector("#detail dd").textContent`); got == "" || got == "none chosen" {
		t.Errorf("the tab shows accounts %q, want the one chosen on the consent page", got)
	}
	if u := eval[string](t, bctx, `location.href`); u != app.Origin().String()+"/" {
		t.Errorf("the address bar still holds the authorization response: %s", u)
	}
	if png, err := chromedp.Run(bctx, chromedp.FullScreenshot(90)); err == nil {
		writeArtifact(t, "new-miniapp-tab.png", png)
	}

	// Another origin: the token endpoint's answer is not readable there.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>elsewhere</title>"))
	}))
	t.Cleanup(other.Close)
	redeem := `fetch(` + strconv.Quote(p.Services().Token) + `, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"},
		body: "grant_type=authorization_code&code=x&client_id=tab-app&redirect_uri=x&code_verifier=x"})
		.then((r) => "read " + r.status, () => "blocked")`
	evalAwait := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return s
	}
	if got := evalAwait(redeem); got != "read 400" {
		t.Errorf("from the Miniapp's origin, a bad code: %q, want the token endpoint's 400 readable", got)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(other.URL)); err != nil {
		t.Fatal(err)
	}
	if got := evalAwait(redeem); got != "blocked" {
		t.Errorf("from another origin: %q, want the answer blocked by CORS", got)
	}
}
