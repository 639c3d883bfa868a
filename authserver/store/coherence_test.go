package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// twoStores opens two Stores on one new PostgreSQL database, as two server
// instances do, with the world of open; changes returns what b hears.
func twoStores(t *testing.T) (a, b *Store, changes <-chan Change) {
	t.Helper()
	ctx := context.Background()
	dsn := storetest.Postgres(t)
	var err error
	if a, err = Open(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Open(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ch := make(chan Change, 64)
	b.OnChange(func(c Change) { ch <- c })
	if err := a.PutProject(ctx, Project{ID: "p", Name: "P"}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutClient(ctx, &Client{ID: "c", ProjectID: "p", Name: "C", Type: Public, RedirectURIs: []string{"https://a/cb"}}); err != nil {
		t.Fatal(err)
	}
	return a, b, ch
}

// await returns the first change of kind that b hears; the test fails if
// none comes (the test binary's deadline).
func await(t *testing.T, changes <-chan Change, kind string) Change {
	t.Helper()
	for c := range changes {
		if c.Kind == kind {
			return c
		}
	}
	panic("unreachable")
}

// A grant revoked through one instance is revoked for another that had it
// cached, as soon as the notification arrives; so is a single access token.
func TestRevocationReachesOtherInstance(t *testing.T) {
	ctx := context.Background()
	a, b, changes := twoStores(t)
	now := time.Now()
	newGrant(a, t, "g1", now)
	at := &AccessToken{Hash: Hash("at1"), GrantID: "g1", JTI: "j1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := a.AddTokens(ctx, at, nil); err != nil {
		t.Fatal(err)
	}
	// b reads both, which caches them.
	for range 2 {
		if _, g, err := b.LookupAccessToken(ctx, at.Hash); err != nil || g.Revoked() {
			t.Fatalf("before revocation: %v, %+v", err, g)
		}
	}
	start := time.Now()
	if err := a.RevokeGrant(ctx, "g1", now); err != nil {
		t.Fatal(err)
	}
	c := await(t, changes, ChangedGrant)
	t.Logf("the revocation reached the other instance %v after the commit returned", time.Since(start))
	if c.Key != "g1" {
		t.Fatalf("heard %+v, want grant g1", c)
	}
	if _, g, err := b.LookupAccessToken(ctx, at.Hash); err != nil || !g.Revoked() {
		t.Fatalf("after revocation the other instance answers %v, revoked %v", err, g != nil && g.Revoked())
	}
	if g, err := b.Grant(ctx, "g1"); err != nil || !g.Revoked() {
		t.Fatalf("the other instance's grant: %v, %+v", err, g)
	}

	newGrant(a, t, "g2", now)
	at2 := &AccessToken{Hash: Hash("at2"), GrantID: "g2", JTI: "j2", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := a.AddTokens(ctx, at2, nil); err != nil {
		t.Fatal(err)
	}
	if tok, _, err := b.LookupAccessToken(ctx, at2.Hash); err != nil || tok.Revoked {
		t.Fatalf("before revocation: %v, %+v", err, tok)
	}
	if err := a.RevokeAccessToken(ctx, at2.Hash); err != nil {
		t.Fatal(err)
	}
	await(t, changes, ChangedToken)
	if tok, _, err := b.LookupAccessToken(ctx, at2.Hash); err != nil || !tok.Revoked {
		t.Fatalf("after revocation the other instance answers %v, %+v", err, tok)
	}
}

// A replayed code, redeemed through the other instance, revokes the grant
// everywhere, and a code is spent once across instances.
func TestCodeSingleUseAcrossInstances(t *testing.T) {
	ctx := context.Background()
	a, b, _ := twoStores(t)
	now := time.Now()
	newGrant(a, t, "g", now)
	if _, err := b.RedeemCode(ctx, Hash("code-g"), now); err != nil {
		t.Fatalf("first redemption, other instance: %v", err)
	}
	if _, err := a.Grant(ctx, "g"); err != nil { // cached in a
		t.Fatal(err)
	}
	if _, err := a.RedeemCode(ctx, Hash("code-g"), now); err != ErrReplayed {
		t.Fatalf("second redemption through the first instance: %v, want ErrReplayed", err)
	}
	if g, err := b.Grant(ctx, "g"); err != nil || !g.Revoked() {
		t.Fatalf("the replay did not revoke the grant for the other instance: %v %+v", err, g)
	}
}

// A client changed through one instance, a world write and a review
// decision are heard by the other.
func TestChangesHeard(t *testing.T) {
	ctx := context.Background()
	a, b, changes := twoStores(t)
	if err := a.SetClientSecret(ctx, "c", Hash("s")); err == nil {
		t.Fatal("a public client took a secret")
	}
	if err := a.PutClient(ctx, &Client{ID: "c", ProjectID: "p", Name: "C2", Type: Public, RedirectURIs: []string{"https://a/cb"}}); err != nil {
		t.Fatal(err)
	}
	if c := await(t, changes, ChangedClient); c.Key != "c" {
		t.Fatalf("heard %+v, want client c", c)
	}
	// b's world snapshot is read, then replaced by a's write.
	if _, err := b.Project(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if err := a.PutProject(ctx, Project{ID: "p", Name: "Renamed"}); err != nil {
		t.Fatal(err)
	}
	await(t, changes, ChangedWorld)
	if p, err := b.Project(ctx, "p"); err != nil || p.Name != "Renamed" {
		t.Fatalf("the other instance's project: %+v, %v", p, err)
	}
}

// When the listening connection is lost, the caches are bypassed until it
// is back, and then emptied: a revocation made while it was down is never
// answered from a stale cache.
func TestLostListenerBypassesCaches(t *testing.T) {
	ctx := context.Background()
	a, b, changes := twoStores(t)
	now := time.Now()
	newGrant(a, t, "g", now)
	if g, err := b.Grant(ctx, "g"); err != nil || g.Revoked() { // cached in b
		t.Fatal(err, g)
	}
	// The server ends b's listening session, as a restart or a network
	// failure would.
	var n int
	if err := a.r.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("terminated %d listening sessions (%v), want both instances'", n, err)
	}
	// Until b hears ChangedAll it may be without a listener; what it
	// answers must be the database's.
	if _, err := a.w.ExecContext(ctx, `UPDATE grants SET revoked_at = ? WHERE id = 'g'`, now.Unix()); err != nil {
		t.Fatal(err)
	}
	for !b.cacheable() || len(changes) == 0 {
		if b.cacheable() {
			break // reconnected; ChangedAll is on its way or in the channel
		}
		if g, err := b.Grant(ctx, "g"); err != nil || !g.Revoked() {
			t.Fatalf("without a listener the other instance answered from its cache: %v %+v", err, g)
		}
	}
	await(t, changes, ChangedAll)
	if g, err := b.Grant(ctx, "g"); err != nil || !g.Revoked() {
		t.Fatalf("after reconnecting the other instance answers %v %+v", err, g)
	}
}

// A remembered consent written, revoked or dropped with its client through
// one instance is seen by another that had it (or its absence) cached, as
// soon as the notification arrives: a revoked consent is asked for again
// at every instance.
func TestConsentChangesReachOtherInstance(t *testing.T) {
	ctx := context.Background()
	a, b, changes := twoStores(t)
	now := time.Now()
	if err := a.PutConsent(ctx, &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"p1"}, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	await(t, changes, ChangedConsent)
	for range 2 { // the second read is answered from b's cache
		if c, err := b.Consent(ctx, "u", "c"); err != nil || len(c.Permissions) != 1 {
			t.Fatalf("before revocation: %+v %v", c, err)
		}
	}
	if err := a.RevokeConsent(ctx, "u", "c", now); err != nil {
		t.Fatal(err)
	}
	await(t, changes, ChangedConsent)
	for range 2 {
		if _, err := b.Consent(ctx, "u", "c"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after revocation through the other instance: %v", err)
		}
	}
	if err := a.PutConsent(ctx, &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"p1", "p2"}, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	await(t, changes, ChangedConsent)
	if c, err := b.Consent(ctx, "u", "c"); err != nil || len(c.Permissions) != 2 {
		t.Fatalf("after a new consent through the other instance: %+v %v", c, err)
	}
	if err := a.RemoveClient(ctx, "c", now); err != nil {
		t.Fatal(err)
	}
	await(t, changes, ChangedConsent)
	if _, err := b.Consent(ctx, "u", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the client's removal through the other instance: %v", err)
	}
}
