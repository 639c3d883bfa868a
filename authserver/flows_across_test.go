package authserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// alternator is a reverse proxy on loopback that sends each request to the
// next of its backends in turn, and notes which one served it.
type alternator struct {
	srv      *httptest.Server
	backends []*url.URL // set once the instances listen, before any request
	n        atomic.Uint64

	mu     sync.Mutex
	served []int // backend index of each request, in order
}

func newAlternator(t *testing.T) *alternator {
	t.Helper()
	rr := &alternator{}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		i := int(rr.n.Add(1)-1) % len(rr.backends)
		rr.mu.Lock()
		rr.served = append(rr.served, i)
		rr.mu.Unlock()
		pr.SetURL(rr.backends[i])
		pr.Out.Host = pr.In.Host
	}}
	rr.srv = httptest.NewServer(rp)
	t.Cleanup(rr.srv.Close)
	return rr
}

// alternated reports whether every request since the mark'th went to
// another backend than the one before it, and how many there were.
func (rr *alternator) alternated(mark int) (bool, int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for i := max(mark, 1); i < len(rr.served); i++ {
		if rr.served[i] == rr.served[i-1] {
			return false, len(rr.served) - mark
		}
	}
	return true, len(rr.served) - mark
}

func (rr *alternator) mark() int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return len(rr.served)
}

// twoInstances starts two servers at once on one new, empty PostgreSQL
// database, each role behind an alternating proxy, both advertising the
// proxies' addresses (Config.Issuer and the other public addresses). It returns the env of the service proxy (every
// helper request alternates between the instances), the proxies by role,
// and the two servers.
func twoInstances(t *testing.T, oc oauth.Config) (*env, map[string]*alternator, [2]*authserver.Server) {
	t.Helper()
	db := storetest.Postgres(t)
	roles := []string{"service", "dashboard", "signing", "invoicing"}
	proxies := map[string]*alternator{}
	for _, r := range roles {
		proxies[r] = newAlternator(t)
	}
	clk := &clock{t: time.Now()}
	var srvs [2]*authserver.Server
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range srvs {
		cfg := authserver.Config{
			DB: db, Now: clk.Now, OAuth: oc, PurgeEvery: -1,
			Issuer: proxies["service"].srv.URL, DashboardURL: proxies["dashboard"].srv.URL,
			SigningURL: proxies["signing"].srv.URL, InvoicingURL: proxies["invoicing"].srv.URL,
			// The example providers of both instances read grants with
			// their own credentials, so both must know them; the operator
			// key and the demo clients' secrets are left to the instances.
			Secrets: map[string]string{hostID: hostSecret, signingID: signingSecret, "invoicing-provider": "invoicing-secret-for-tests"},
		}
		wg.Go(func() { srvs[i], errs[i] = authserver.Start(context.Background(), cfg) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		t.Cleanup(func() { srvs[i].Close() })
	}
	for _, srv := range srvs {
		la := srv.ListenAddrs()
		for r, addr := range map[string]string{"service": la.Service, "dashboard": la.Dashboard, "signing": la.Signing, "invoicing": la.Invoicing} {
			proxies[r].backends = append(proxies[r].backends, &url.URL{Scheme: "http", Host: addr})
		}
	}
	e := &env{t: t, srv: srvs[0], u: srvs[0].URLs(), db: db, clock: clk}
	ctx := context.Background()
	if _, err := srvs[0].RegisterClient(ctx, authserver.ClientSpec{ID: publicID, RedirectURIs: []string{publicRedir},
		AllowedOrigins: []string{"https://app.example"}}); err != nil {
		t.Fatal(err)
	}
	cred, err := srvs[0].RegisterClient(ctx, authserver.ClientSpec{ID: confID, Confidential: true,
		RedirectURIs: []string{confRedir}, AllowedOrigins: []string{"https://conf.example"}})
	if err != nil {
		t.Fatal(err)
	}
	e.confSecret = cred.ClientSecret
	return e, proxies, srvs
}

// in is the env for a subtest.
func (e *env) in(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// TestFlowsAcrossInstances: two instances on one PostgreSQL database, each
// role behind an alternating proxy, so that every request of a flow reaches the
// other instance than the one before: browser flows (authorize, sign-in
// page, sign-in, consent page, decision) and native-consent flows (submit,
// decision) complete, their codes redeem, refresh tokens rotate and the
// grant endpoint answers; a decision sent to both instances at once is
// made once; quotas count the requests of both; and the two instances,
// started at once on the empty database, seeded it once between them.
func TestFlowsAcrossInstances(t *testing.T) {
	e, proxies, srvs := twoInstances(t, oauth.Config{MaxPendingPerHost: 3})
	svc := proxies["service"]
	ctx := context.Background()

	t.Run("seeded once", func(t *testing.T) {
		e := e.in(t)
		// One set of signing keys, published by both.
		jwks := []string{get(t, e.u.Issuer+"/oauth/jwks"), get(t, e.u.Issuer+"/oauth/jwks")}
		var set struct{ Keys []json.RawMessage }
		if err := json.Unmarshal([]byte(jwks[0]), &set); err != nil || len(set.Keys) != 3 || jwks[0] != jwks[1] {
			t.Fatalf("JWKS of the two instances: %s\n%s\nwant the same 3 keys", jwks[0], jwks[1])
		}
		// The secret of a seeded client and the operator key were set by
		// one instance, and the other kept them rather than replacing them:
		// what the first printed works at both.
		var secret, op string
		for _, s := range srvs {
			c, _ := s.Credential("demo-confidential")
			if c.ClientSecret != "" {
				if secret != "" {
					t.Fatal("both instances set demo-confidential's secret")
				}
				secret = c.ClientSecret
			}
			if s.OperatorKey() != "" {
				if op != "" {
					t.Fatal("both instances set the operator key")
				}
				op = s.OperatorKey()
			}
		}
		if secret == "" || op == "" {
			t.Fatalf("no instance set demo-confidential's secret (%q) or the operator key (%q)", secret, op)
		}
		for range 2 {
			if st, m := e.introspect("not-a-token", "demo-confidential", secret); st != http.StatusOK || m["active"] != false {
				t.Fatalf("introspection as demo-confidential with the secret one instance set: %d %v", st, m)
			}
			e.mustDash(http.StatusOK, "GET", "/api/review", op, nil)
		}
	})

	provider, err := oidc.NewProvider(ctx, e.u.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	details := `[{"type":"bank_account","actions":["read","read_movements"],"subject":{"type":"profile"},"selection":{"min":1,"max":1},"locations":["` + e.u.BaseURL + `"]}]`
	conf := &oauth2.Config{ClientID: confID, ClientSecret: e.confSecret, RedirectURL: confRedir,
		Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "offline_access"}}
	authURL := func(state, verifier string, extra ...oauth2.AuthCodeOption) string {
		return conf.AuthCodeURL(state, append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier),
			oauth2.SetAuthURLParam("nonce", "nonce-"+state), oauth2.SetAuthURLParam("resource", e.u.BaseURL),
			oauth2.SetAuthURLParam("authorization_details", details)}, extra...)...)
	}
	// redeem exchanges a code, verifies the ID token, rotates the refresh
	// token and reads the grant, each request at the next instance.
	redeem := func(t *testing.T, q url.Values, state, verifier string) {
		t.Helper()
		if q.Get("state") != state || q.Get("iss") != e.u.Issuer || q.Get("code") == "" {
			t.Fatalf("authorization response: want code, state and iss, got %v", q)
		}
		tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		raw, _ := tok.Extra("id_token").(string)
		idt, err := provider.Verifier(&oidc.Config{ClientID: confID}).Verify(ctx, raw)
		if err != nil || idt.Nonce != "nonce-"+state || idt.Subject != subAna {
			t.Fatalf("id token: %v %+v", err, idt)
		}
		nt, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
		if err != nil || nt.RefreshToken == tok.RefreshToken {
			t.Fatalf("refresh: %v %+v", err, nt)
		}
		for _, at := range []string{tok.AccessToken, nt.AccessToken} {
			st, g := e.grant(at, confID, e.confSecret)
			if st != http.StatusOK || g["subject"] != subAna || !strings.Contains(jsonOf(t, g["authorizationDetails"]), anaAccount1) {
				t.Fatalf("grant endpoint: %d %v", st, g)
			}
		}
	}

	t.Run("browser", func(t *testing.T) {
		e := e.in(t)
		mark := svc.mark()
		v := oauth2.GenerateVerifier()
		b := newBrowser(t, e.u.Issuer)
		q := b.browserCode(authURL("browser", v, oauth2.SetAuthURLParam("prompt", "consent")), subAna,
			map[string]string{"action": "approve", "account_id": anaAccount1})
		redeem(t, q, "browser", v)
		// The consent is remembered; the signed-in browser gets a code
		// without any page, with prompt=none too.
		v2 := oauth2.GenerateVerifier()
		b.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		p := b.get(authURL("silent", v2, oauth2.SetAuthURLParam("prompt", "none")))
		if p.status != http.StatusSeeOther {
			t.Fatalf("prompt=none: %d %s", p.status, p.body)
		}
		redeem(t, redirectQuery(t, p.header.Get("Location")), "silent", v2)
		if ok, n := svc.alternated(mark); !ok || n < 12 {
			t.Fatalf("the service proxy served %d requests, alternating: %v", n, ok)
		}
	})

	t.Run("native", func(t *testing.T) {
		e := e.in(t)
		mark := svc.mark()
		v := oauth2.GenerateVerifier()
		st, m := e.native(map[string]any{"authorization_url": authURL("native", v, oauth2.SetAuthURLParam("prompt", "consent")), "subject": subAna})
		if st != http.StatusCreated || len(m["consent"].(map[string]any)["accounts"].([]any)) != 2 {
			t.Fatalf("native submit: %d %v", st, m)
		}
		id := m["request_id"].(string)
		// An account the model does not offer is refused by the other
		// instance, which keeps the request for a valid decision.
		if st, m := e.decide(id, map[string]string{"action": "approve", "account_id": andesAcct}); st != http.StatusBadRequest {
			t.Fatalf("a decision with an account not offered: %d %v", st, m)
		}
		st, m = e.decide(id, map[string]string{"action": "approve", "account_id": anaAccount1})
		if st != http.StatusOK {
			t.Fatalf("native decision: %d %v", st, m)
		}
		redeem(t, redirectQuery(t, m["redirect_url"].(string)), "native", v)
		if ok, _ := svc.alternated(mark); !ok {
			t.Fatal("the service proxy did not alternate")
		}
	})

	t.Run("decided once", func(t *testing.T) {
		e := e.in(t)
		for round := range 6 {
			v := oauth2.GenerateVerifier()
			st, m := e.native(map[string]any{"authorization_url": authURL("twice", v, oauth2.SetAuthURLParam("prompt", "consent")), "subject": subAna})
			if st != http.StatusCreated {
				t.Fatalf("native submit: %d %v", st, m)
			}
			id := m["request_id"].(string)
			// Two decisions at once reach the two instances.
			statuses := make([]int, 2)
			var wg sync.WaitGroup
			for i := range statuses {
				wg.Go(func() {
					statuses[i], _ = e.decide(id, map[string]string{"action": "approve", "account_id": anaAccount1})
				})
			}
			wg.Wait()
			if ok := (statuses[0] == http.StatusOK) != (statuses[1] == http.StatusOK); !ok || statuses[0]+statuses[1] != http.StatusOK+http.StatusNotFound {
				t.Fatalf("round %d: decisions answered %v, want one 200 and one 404", round, statuses)
			}
		}
		for round := range 4 {
			b := newBrowser(t, e.u.Issuer)
			p := b.get(authURL("twice", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "consent")))
			// Signing in, then the consent page, at the next instances.
			f := parseForm(t, p)
			f.values.Set("subject", subAna)
			p = b.post(f.action, f.values)
			if !strings.Contains(p.url.Path, "/oauth/consent") {
				t.Fatalf("round %d: want the consent page, got %d %s", round, p.status, p.url)
			}
			f = parseForm(t, p)
			f.values.Set("action", "approve")
			f.values.Set("account_id", anaAccount1)
			pages := make([]page, 2)
			var wg sync.WaitGroup
			for i := range pages {
				wg.Go(func() {
					resp, err := b.hc.PostForm(f.action, f.values)
					if err != nil {
						t.Error(err)
						return
					}
					pages[i] = readPage(t, resp)
				})
			}
			wg.Wait()
			codes := 0
			for _, p := range pages {
				if p.status == http.StatusSeeOther && redirectQuery(t, p.header.Get("Location")).Get("code") != "" {
					codes++
				} else if p.status != http.StatusBadRequest {
					t.Fatalf("round %d: the losing decision answered %d: %s", round, p.status, p.body)
				}
			}
			if codes != 1 {
				t.Fatalf("round %d: %d codes from two decisions at once, want 1", round, codes)
			}
		}
	})

	t.Run("dashboard onboarding", func(t *testing.T) {
		e := e.in(t)
		op := srvs[0].OperatorKey() + srvs[1].OperatorKey() // one of them is empty
		id, key := e.project("Across instances")
		app := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+id+"/credentials", key,
			map[string]any{"type": "public", "redirect_uris": []string{"https://across.example/cb"}})
		clientID := app["client_id"].(string)
		for range 2 {
			e.mustDash(http.StatusOK, "GET", "/api/oauth/clients/"+clientID, "", nil)
		}
		pol := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+id+"/policy", key, map[string]any{"scopes": []string{"openid", "profile"}})
		e.mustDash(http.StatusOK, "POST", "/api/review/"+pol["id"].(string)+"/approve", op, map[string]any{"reason": "ok"})
		if st, m := e.dash("POST", "/api/review/"+pol["id"].(string)+"/approve", op, nil); st != http.StatusConflict {
			t.Fatalf("the same approval at the other instance: %d %v", st, m)
		}
		ac := &oauth2.Config{ClientID: clientID, RedirectURL: "https://across.example/cb", Scopes: []string{"openid", "profile"},
			Endpoint: oauth2.Endpoint{AuthURL: e.u.Authorization, TokenURL: e.u.Token, AuthStyle: oauth2.AuthStyleInParams}}
		v := oauth2.GenerateVerifier()
		u := ac.AuthCodeURL("onb", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.u.BaseURL))
		st, m := e.native(map[string]any{"authorization_url": u, "subject": subAna})
		if st != http.StatusCreated {
			t.Fatalf("native submit: %d %v", st, m)
		}
		st, m = e.decide(m["request_id"].(string), map[string]string{"action": "approve"})
		if st != http.StatusOK {
			t.Fatalf("native decision for a project approved at the other instance: %d %v", st, m)
		}
		if _, err := ac.Exchange(ctx, redirectQuery(t, m["redirect_url"].(string)).Get("code"), oauth2.VerifierOption(v)); err != nil {
			t.Fatalf("exchange: %v", err)
		}
	})

	t.Run("host quota", func(t *testing.T) {
		e := e.in(t)
		body := func() map[string]any {
			return map[string]any{"authorization_url": authURL("quota", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "consent")), "subject": subAna}
		}
		var first string
		for i := range 3 {
			st, m := e.native(body())
			if st != http.StatusCreated {
				t.Fatalf("within the quota of 3 (request %d): %d %v", i, st, m)
			}
			if i == 0 {
				first = m["request_id"].(string)
			}
		}
		if st, m := e.native(body()); st != http.StatusServiceUnavailable || !strings.Contains(m["error_description"].(string), "from this host") {
			t.Fatalf("over the host quota counted across instances: %d %v", st, m)
		}
		if st, m := e.decide(first, map[string]string{"action": "deny"}); st != http.StatusOK {
			t.Fatalf("deny: %d %v", st, m)
		}
		if st, m := e.native(body()); st != http.StatusCreated {
			t.Fatalf("after a decision gave a place back: %d %v", st, m)
		}
	})
}
