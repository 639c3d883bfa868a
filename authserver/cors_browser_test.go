package authserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// chromium starts Debian's headless Chromium (scripts/deps.sh installs it)
// with a profile of its own, as the playground's browser tests do, and
// returns the context of its first tab. The browser stops before the
// server does (cleanups run last-registered first).
func chromium(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("chromium is not installed: run scripts/deps.sh (Debian package chromium)")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()))
	ctx, cancelTab := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	t0 := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Logf("chromium started in %v", time.Since(t0).Round(time.Millisecond))
	return ctx
}

// appPage serves a blank page on a loopback origin of its own, where the
// test runs its scripts.
func appPage(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><title>app</title><p>app"))
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// fetchResult is what a page's fetch came to.
type fetchResult struct {
	OK     bool           `json:"ok"`
	Status int            `json:"status"`
	Body   map[string]any `json:"body"`
	Error  string         `json:"error"` // the rejection's message, when fetch rejected
}

// pageFetch runs fetch in the page open in the tab and waits for its
// outcome.
func pageFetch(t *testing.T, ctx context.Context, script string) fetchResult {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[fetchResult](`(async () => {
		try {
			const r = await `+script+`;
			return {ok: true, status: r.status, body: await r.json(), error: ""};
		} catch (e) {
			return {ok: false, status: 0, body: null, error: String(e)};
		}
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCORSInChromium: a public client's page, on an origin in its
// allowed_origins, redeems its code at the token endpoint with fetch (PKCE)
// and reads userinfo with the token (a preflighted request); a page of
// another loopback origin cannot: the browser rejects both fetches, and the
// server spent nothing.
func TestCORSInChromium(t *testing.T) {
	e := start(t)
	ctx := chromium(t)
	app, other := appPage(t), appPage(t)
	const id = "spa"
	redirect := app + "/cb"
	if _, err := e.srv.RegisterClient(context.Background(), authserver.ClientSpec{ID: id, RedirectURIs: []string{redirect},
		AllowedOrigins: []string{app}}); err != nil {
		t.Fatal(err)
	}
	code := func() (code, verifier string) {
		v, ch := pkce(t)
		q := e.authParams(ch)
		q.Set("client_id", id)
		q.Set("redirect_uri", redirect)
		return e.nativeCode(q, subAna, map[string]string{"action": "approve"}).Get("code"), v
	}
	redeem := func(code, verifier string) string {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
			"code_verifier": {verifier}, "client_id": {id}}
		return `fetch(` + jsonOf(t, e.u.Token) + `, {method: "POST", body: new URLSearchParams(` + jsonOf(t, f.Encode()) + `)})`
	}
	userinfo := func(tok string) string {
		return `fetch(` + jsonOf(t, e.u.Issuer+"/oauth/userinfo") + `, {headers: {Authorization: "Bearer " + ` + jsonOf(t, tok) + `}})`
	}

	// Another origin: the fetch rejects, and the code is still good.
	if err := chromedp.Do(ctx, chromedp.Navigate(other+"/")); err != nil {
		t.Fatal(err)
	}
	c1, v1 := code()
	if r := pageFetch(t, ctx, redeem(c1, v1)); r.OK {
		t.Fatalf("token from %s: the page read %d %v", other, r.Status, r.Body)
	} else {
		t.Logf("token from %s: %s", other, r.Error)
	}

	// The allowed origin: the code is redeemed, userinfo read.
	if err := chromedp.Do(ctx, chromedp.Navigate(app+"/")); err != nil {
		t.Fatal(err)
	}
	r := pageFetch(t, ctx, redeem(c1, v1))
	tok, _ := r.Body["access_token"].(string)
	if !r.OK || r.Status != http.StatusOK || tok == "" {
		t.Fatalf("token from %s: %+v", app, r)
	}
	if r := pageFetch(t, ctx, userinfo(tok)); !r.OK || r.Status != http.StatusOK || r.Body["sub"] != subAna {
		t.Fatalf("userinfo from %s: %+v", app, r)
	}
	// The page reads a refusal too: the code is spent.
	if r := pageFetch(t, ctx, redeem(c1, v1)); !r.OK || r.Status != http.StatusBadRequest || r.Body["error"] != "invalid_grant" {
		t.Fatalf("replayed code from %s: %+v", app, r)
	}

	// A DPoP-bound token (RFC 9449), the proof made with WebCrypto as a
	// single-page app makes it: the preflight lets the DPoP header through,
	// and the page reads the DPoP-Nonce the answer carries for its next
	// proof (RFC 9449 §8).
	c2, v2 := code()
	f := url.Values{"grant_type": {"authorization_code"}, "code": {c2}, "redirect_uri": {redirect},
		"code_verifier": {v2}, "client_id": {id}}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(async () => {
		const b64 = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
		const txt = (o) => b64(new TextEncoder().encode(JSON.stringify(o)));
		const key = await crypto.subtle.generateKey({name: "ECDSA", namedCurve: "P-256"}, false, ["sign"]);
		const jwk = await crypto.subtle.exportKey("jwk", key.publicKey);
		const input = txt({typ: "dpop+jwt", alg: "ES256", jwk: {kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y}}) + "." +
			txt({jti: crypto.randomUUID(), htm: "POST", htu: `+jsonOf(t, e.u.Token)+`, iat: `+jsonOf(t, e.clock.Now().Unix())+`});
		const sig = await crypto.subtle.sign({name: "ECDSA", hash: "SHA-256"}, key.privateKey, new TextEncoder().encode(input));
		try {
			const r = await fetch(`+jsonOf(t, e.u.Token)+`, {method: "POST", headers: {DPoP: input + "." + b64(sig)},
				body: new URLSearchParams(`+jsonOf(t, f.Encode())+`)});
			return {status: r.status, body: await r.json(), nonce: r.headers.get("DPoP-Nonce") || ""};
		} catch (e) {
			return {status: 0, error: String(e)};
		}
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := out["body"].(map[string]any); out["status"] != float64(http.StatusOK) || body["token_type"] != "DPoP" {
		t.Fatalf("DPoP token from %s: %v", app, out)
	}
	if out["nonce"] == "" {
		t.Errorf("DPoP token from %s: the page cannot read the DPoP-Nonce of the answer (Access-Control-Expose-Headers)", app)
	}

	// Back on the other origin, a valid token does not open userinfo.
	if err := chromedp.Do(ctx, chromedp.Navigate(other+"/")); err != nil {
		t.Fatal(err)
	}
	if r := pageFetch(t, ctx, userinfo(tok)); r.OK {
		t.Fatalf("userinfo from %s: the page read %d %v", other, r.Status, r.Body)
	}
}
