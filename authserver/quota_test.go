package authserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/oauth"
)

// startQuotas runs a server with small pending and session quotas.
func startQuotas(t *testing.T, oc oauth.Config) *env {
	t.Helper()
	clk := &clock{t: time.Now()}
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: storetest.DB(t), Now: clk.Now,
		Secrets: map[string]string{hostID: hostSecret}, OAuth: oc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	e := &env{t: t, srv: srv, u: srv.URLs(), clock: clk}
	ctx := context.Background()
	if _, err := srv.RegisterClient(ctx, authserver.ClientSpec{ID: publicID, RedirectURIs: []string{publicRedir}}); err != nil {
		t.Fatal(err)
	}
	cred, err := srv.RegisterClient(ctx, authserver.ClientSpec{ID: confID, Confidential: true, RedirectURIs: []string{confRedir}})
	if err != nil {
		t.Fatal(err)
	}
	e.confSecret = cred.ClientSecret
	return e
}

// junk sends n cookie-less authorization requests of the public client
// from src and returns how many reached sign-in and the last refusal.
func junk(t *testing.T, e *env, src string, n int, q func() string) (admitted int, refusal map[string]string) {
	t.Helper()
	tr := transportFrom(t, src)
	for range n {
		b := newBrowserVia(t, e.u.Issuer, tr) // a new cookie jar each time
		b.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		p := b.get(e.u.Authorization + "?" + q())
		loc := p.header.Get("Location")
		switch {
		case strings.HasPrefix(loc, "/oauth/login"):
			admitted++
		case p.status == http.StatusSeeOther:
			rq := redirectQuery(t, loc)
			refusal = map[string]string{"error": rq.Get("error"), "error_description": rq.Get("error_description"), "state": rq.Get("state")}
		default:
			t.Fatalf("authorize: %d %s %s", p.status, loc, p.body)
		}
	}
	return admitted, refusal
}

// TestFloodingSourceIsRefusedAlone: once one source has used its quota of
// sessions and pending requests, its further requests are refused with
// temporarily_unavailable naming the quota, while another source and the
// host's native-consent API still complete flows.
func TestFloodingSourceIsRefusedAlone(t *testing.T) {
	e := startQuotas(t, oauth.Config{MaxPendingPerSource: 10, MaxSessionsPerSource: 15})
	_, c := pkce(t)
	q := func() string { return e.authParams(c).Encode() }
	admitted, refusal := junk(t, e, "127.0.0.2", 30, q)
	if admitted != 10 {
		t.Fatalf("the flooding source got %d requests admitted, want its quota of 10", admitted)
	}
	if refusal["error"] != "temporarily_unavailable" || refusal["state"] != "st-123" ||
		!strings.Contains(refusal["error_description"], "from this source address") || !strings.Contains(refusal["error_description"], "quota is") {
		t.Fatalf("refusal: %v", refusal)
	}
	// Another source completes a browser flow...
	v, c2 := pkce(t)
	b := newBrowserFrom(t, e.u.Issuer, "127.0.0.3")
	rq := b.browserCode(e.u.Authorization+"?"+e.authParams(c2).Encode(), subAna, map[string]string{"action": "approve"})
	if st, m := e.exchange(rq.Get("code"), v); st != http.StatusOK {
		t.Fatalf("token for the other source: %d %v", st, m)
	}
	// ...and so does the native-consent API, whatever the host's address.
	v3, c3 := pkce(t)
	e.publicTokens(e.authParams(c3), v3)
	// The quota comes back when the flooding source's requests expire.
	e.clock.Advance(11 * time.Minute)
	if admitted, _ := junk(t, e, "127.0.0.2", 1, q); admitted != 1 {
		t.Fatal("after ConsentTTL the source's quota did not come back")
	}
}

// TestClientQuota: the pending requests of one client are capped across
// sources, and a full client refuses nobody else's requests.
func TestClientQuota(t *testing.T) {
	e := startQuotas(t, oauth.Config{MaxPendingPerClient: 6})
	_, c := pkce(t)
	q := func() string { return e.authParams(c).Encode() }
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		if admitted, _ := junk(t, e, src, 3, q); admitted != 3 {
			t.Fatalf("%s: %d admitted", src, admitted)
		}
	}
	admitted, refusal := junk(t, e, "127.0.0.4", 1, q)
	if admitted != 0 || refusal["error"] != "temporarily_unavailable" || !strings.Contains(refusal["error_description"], "for this client") {
		t.Fatalf("the full client: admitted %d, refusal %v", admitted, refusal)
	}
	// Another client from the same source goes on.
	b := newBrowserFrom(t, e.u.Issuer, "127.0.0.4")
	if rq := b.browserCode(e.u.Authorization+"?"+e.confAuthParams(c).Encode(), subAna, map[string]string{"action": "approve"}); rq.Get("code") == "" {
		t.Fatalf("the other client: %v", rq)
	}
}

// TestHostQuota: the native-consent API has its own quota per host client.
func TestHostQuota(t *testing.T) {
	e := startQuotas(t, oauth.Config{MaxPendingPerHost: 2})
	_, c := pkce(t)
	body := map[string]any{"authorization_url": e.u.Authorization + "?" + e.authParams(c).Encode(), "subject": subAna}
	for range 2 {
		if st, m := e.native(body); st != http.StatusCreated {
			t.Fatalf("within the quota: %d %v", st, m)
		}
	}
	st, m := e.native(body)
	if st != http.StatusServiceUnavailable || m["error"] != "temporarily_unavailable" || !strings.Contains(m["error_description"].(string), "from this host") {
		t.Fatalf("over the host quota: %d %v", st, m)
	}
	// Browsers are not affected by the host's quota.
	b := newBrowser(t, e.u.Issuer)
	if rq := b.browserCode(e.u.Authorization+"?"+e.authParams(c).Encode(), subAna, map[string]string{"action": "approve"}); rq.Get("code") == "" {
		t.Fatalf("browser: %v", rq)
	}
}

// forwardedFor is a transport that says, as a reverse proxy does, whom it
// forwards for.
type forwardedFor struct {
	base   http.RoundTripper
	client string
}

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.client)
	return f.base.RoundTrip(r)
}

// TestTrustedProxyCountsTheClient: behind a trusted reverse proxy, the
// per-source quotas count the client the proxy names, so one client's
// flood through the proxy refuses that client only; a peer that is not a
// trusted proxy is counted as itself whatever X-Forwarded-For it writes.
func TestTrustedProxyCountsTheClient(t *testing.T) {
	proxies, err := httplimit.ParseProxies("127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: storetest.DB(t),
		HTTP: httplimit.Config{TrustedProxies: proxies}, OAuth: oauth.Config{MaxPendingPerSource: 5, MaxSessionsPerSource: 10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	e := &env{t: t, srv: srv, u: srv.URLs(), clock: &clock{t: time.Now()}}
	if _, err := srv.RegisterClient(context.Background(), authserver.ClientSpec{ID: publicID, RedirectURIs: []string{publicRedir}}); err != nil {
		t.Fatal(err)
	}
	_, c := pkce(t)
	q := func() string { return e.authParams(c).Encode() }
	admitted := func(peer, client string, n int) int {
		tr := forwardedFor{base: transportFrom(t, peer), client: client}
		got := 0
		for range n {
			b := newBrowserVia(t, e.u.Issuer, tr)
			b.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			if p := b.get(e.u.Authorization + "?" + q()); strings.HasPrefix(p.header.Get("Location"), "/oauth/login") {
				got++
			}
		}
		return got
	}
	if n := admitted("127.0.0.2", "198.51.100.1", 8); n != 5 {
		t.Fatalf("a client flooding through the proxy got %d requests admitted, want its quota of 5", n)
	}
	if n := admitted("127.0.0.2", "198.51.100.2", 1); n != 1 {
		t.Fatal("another client through the same proxy was refused: the proxy's clients share one quota")
	}
	// Not a trusted proxy: its X-Forwarded-For is not believed.
	if n := admitted("127.0.0.3", "198.51.100.3", 5) + admitted("127.0.0.3", "198.51.100.4", 3); n != 5 {
		t.Fatalf("a peer writing a new X-Forwarded-For each time got %d requests admitted, want its own quota of 5", n)
	}
}
