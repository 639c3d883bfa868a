package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// childConfig is what an instance of a deployment is started with, in this
// process or in a child (kill_test.go).
type childConfig struct {
	DB, Issuer, DashboardURL, SigningURL, InvoicingURL, OperatorKey string
	Secrets                                                         map[string]string
}

// sharedConfig is the configuration every instance of a deployment gets
// (docs/deploy.md): one database, the proxy's public addresses, the same
// operator key and secrets.
func sharedConfig(db, issuer string) childConfig {
	return childConfig{DB: db, Issuer: issuer, DashboardURL: "https://dashboard.example.test",
		SigningURL: "https://signing.example.test", InvoicingURL: "https://invoicing.example.test",
		OperatorKey: "operator-key-for-tests", Secrets: map[string]string{hostID: hostSecret, signingID: signingSecret}}
}

func (c childConfig) apply(cfg *authserver.Config) {
	cfg.DB, cfg.Issuer, cfg.DashboardURL, cfg.SigningURL, cfg.InvoicingURL = c.DB, c.Issuer, c.DashboardURL, c.SigningURL, c.InvoicingURL
	cfg.OperatorKey, cfg.Secrets = c.OperatorKey, c.Secrets
}

// TestRevocationHonouredByOtherInstance: two instances on one PostgreSQL
// database. A token read through the second (which then holds its grant in
// its cache) is revoked through the first (RFC 7009); the second refuses it
// as soon as the first's notification arrives, and so does a refresh with
// the revoked grant's refresh token. The time it took is logged, not
// asserted: docs/deploy.md and BENCHMARKS.md report it.
func TestRevocationHonouredByOtherInstance(t *testing.T) {
	db := storetest.Postgres(t)
	shared := sharedConfig(db, "http://service.example.test")
	a := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	b := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	// The instances' own listeners, as a proxy would reach them.
	at := func(e *env, u string) string {
		p, _ := url.Parse(u)
		p.Scheme, p.Host = "http", e.srv.ListenAddrs().Service
		return p.String()
	}
	for _, e := range []*env{a, b} {
		e.u.Native, e.u.Token, e.u.Grant = at(e, e.u.Native), at(e, e.u.Token), at(e, e.u.Grant)
	}
	// b registered the confidential client last: its secret is the one.
	a.confSecret = b.confSecret

	v, c := pkce(t)
	q := a.nativeCode(a.confAuthParams(c), subAna, map[string]string{"action": "approve"})
	st, tok := a.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {confRedir},
		"code_verifier": {v}}, confID, a.confSecret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, tok)
	}
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	for range 2 { // the second answer comes from b's cache
		if st, g := b.grant(access, confID, b.confSecret); st != http.StatusOK {
			t.Fatalf("the other instance, before the revocation: %d %v", st, g)
		}
	}

	// Revoke the refresh token through a: RFC 7009 §2.1, the grant and its
	// access tokens go with it.
	req, _ := http.NewRequest(http.MethodPost, at(a, a.u.Issuer+"/oauth/revoke"),
		strings.NewReader(url.Values{"token": {refresh}, "token_type_hint": {"refresh_token"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(confID, a.confSecret)
	if st, m, _ := a.do(req); st != http.StatusOK {
		t.Fatalf("revocation: %d %v", st, m)
	}
	revoked := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st, _ := b.grant(access, confID, b.confSecret)
		if st == http.StatusUnauthorized {
			break
		}
		if st != http.StatusOK {
			t.Fatalf("the other instance answered %d", st)
		}
		<-tick.C
	}
	t.Logf("the other instance refused the revoked grant's access token %v after the revocation returned", time.Since(revoked))
	st, m := b.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, confID, b.confSecret)
	if st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("refresh with the revoked token at the other instance: %d %v", st, m)
	}
}
