package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// openPG returns a store on a new PostgreSQL database with one client.
func openPG(t *testing.T) *Store {
	t.Helper()
	return openOn(t, storetest.Postgres(t))
}

// TestGroupedDecisionsAndRedemptions: one batch of decisions and
// redemptions, as concurrent requests would queue them, does what each
// would have done alone: of two decisions of one request one is stored,
// a decision for another subject finds nothing, of two redemptions of one
// code one is stored, an unknown code finds nothing; and the decided
// requests give their places in the host's quota back.
func TestGroupedDecisionsAndRedemptions(t *testing.T) {
	s := openPG(t)
	ctx := context.Background()
	now := time.Now()
	charge := Charge{Period: time.Minute / 16, Quotas: []Quota{{"host:h", 3}}}
	add := func(name string) error {
		return s.AddPending(ctx, &PendingRequest{IDHash: Hash(name), Params: map[string][]string{}, Host: "h", Subject: "u",
			ExpiresAt: now.Add(time.Minute)}, charge, now)
	}
	for _, r := range []string{"r1", "r2", "r3"} {
		if err := add(r); err != nil {
			t.Fatal(err)
		}
	}
	var qe *QuotaError
	if err := add("r4"); !errors.As(err, &qe) {
		t.Fatalf("a fourth request on a quota of 3: %v, want a QuotaError", err)
	}
	newGrant(s, t, "old", now)

	decide := func(req, gid, subject string) *durableOp {
		g := &Grant{ID: gid, ClientID: "c", SubjectID: "u", Scopes: []string{"openid"}, InstallationID: "i", AuthTime: now, CreatedAt: now}
		c := &Code{Hash: Hash("code-" + gid), ClientID: "c", RedirectURI: "https://a/cb", Challenge: "x", ExpiresAt: now.Add(time.Minute)}
		return &durableOp{groupOp: groupOp{done: make(chan struct{})},
			decide: &decideArgs{idHash: Hash(req), subject: subject, now: now.UnixNano(), in: s.prepareGrant(g, c, nil)}}
	}
	redeem := func(code, grant, jti string) *durableOp {
		return &durableOp{groupOp: groupOp{done: make(chan struct{})}, redeem: &redeemArgs{hash: Hash(code),
			at: &AccessToken{Hash: Hash("at-" + jti), GrantID: grant, JTI: jti, IssuedAt: now, ExpiresAt: now.Add(time.Hour)},
			rt: &RefreshToken{Hash: Hash("rt-" + jti), GrantID: grant, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}}
	}
	d1a, d1b, d2, d3 := decide("r1", "g1a", "u"), decide("r1", "g1b", "u"), decide("r2", "g2", "someone-else"), decide("r3", "g3", "")
	j1, j2, j3 := redeem("code-old", "old", "j1"), redeem("code-old", "old", "j2"), redeem("code-none", "old", "j3")
	s.durableBatch([]*durableOp{d1a, j1, d1b, d2, j2, d3, j3})

	for name, op := range map[string]*durableOp{"d1a": d1a, "d1b": d1b, "d2": d2, "d3": d3, "j1": j1, "j2": j2, "j3": j3} {
		select {
		case <-op.done:
		default:
			t.Fatalf("%s was not finished by its batch", name)
		}
	}
	oneWins := func(a, b groupOutcome) bool {
		return a == groupDone && b == groupNotFound || a == groupNotFound && b == groupDone
	}
	if !oneWins(d1a.out, d1b.out) {
		t.Fatalf("two decisions of one request: %v and %v, want one done and one not found", d1a.out, d1b.out)
	}
	if d2.out != groupNotFound || d3.out != groupDone {
		t.Fatalf("a decision for another subject: %v, want not found; a decision for any subject: %v, want done", d2.out, d3.out)
	}
	if !oneWins(j1.out, j2.out) || j3.out != groupNotFound {
		t.Fatalf("two redemptions of one code: %v and %v, want one done and one not found; an unknown code: %v", j1.out, j2.out, j3.out)
	}
	for gid, want := range map[string]bool{"g1a": d1a.out == groupDone, "g1b": d1b.out == groupDone, "g2": false, "g3": true} {
		if _, err := s.Grant(ctx, gid); (err == nil) != want {
			t.Errorf("grant %s: %v, want stored %v", gid, err, want)
		}
		if _, _, err := s.PeekCode(ctx, Hash("code-"+gid)); (err == nil) != want {
			t.Errorf("code of grant %s: %v, want stored %v", gid, err, want)
		}
	}
	winner := "j1"
	if j2.out == groupDone {
		winner = "j2"
	}
	if _, g, err := s.LookupAccessToken(ctx, Hash("at-"+winner)); err != nil || g.ID != "old" {
		t.Fatalf("the stored redemption's access token: %v %v", g, err)
	}
	if n := count(t, s, "access_tokens"); n != 1 {
		t.Fatalf("%d access tokens stored, want 1", n)
	}
	if n := count(t, s, "refresh_tokens"); n != 1 {
		t.Fatalf("%d refresh tokens stored, want 1", n)
	}
	// (In the database: the batch was run directly, past RedeemCodeFor's
	// update of the cached code.)
	var used int
	if err := s.r.QueryRow(`SELECT used FROM codes WHERE hash = ?`, Hash("code-old")).Scan(&used); err != nil || used != 1 {
		t.Fatalf("the redeemed code: used %v, %v", used, err)
	}
	// r1 and r3 were decided: two places are back, r2 still holds one.
	for _, r := range []string{"r5", "r6"} {
		if err := add(r); err != nil {
			t.Fatalf("%s after two decisions gave their places back: %v", r, err)
		}
	}
	if err := add("r7"); !errors.As(err, &qe) {
		t.Fatalf("r7 past the quota: %v, want a QuotaError", err)
	}
}

// TestGroupedAdmissionsAtTheLimit: a batch of admissions that would put a
// quota shard over its part of the limit stores nothing, and each
// admission then runs alone, which admits exactly the limit; a batch that
// fits is stored whole.
func TestGroupedAdmissionsAtTheLimit(t *testing.T) {
	s := openPG(t)
	ctx := context.Background()
	now := time.Now()
	exp := now.Add(time.Minute)
	q := Quota{"host:h", 2} // two shards of one place each
	period := time.Minute / 16
	end := endOf(exp, period)
	op := func(name string, start byte) *admitOp {
		return newAdmitOp(&PendingRequest{IDHash: Hash(name), Params: map[string][]string{}, Host: "h", Subject: "u", ExpiresAt: exp},
			"{}", []byte{}, q, start, end, now.UnixNano())
	}
	// Both to shard 0 (start 0 and 2 of 2 shards): over its one place.
	a, b := op("a", 0), op("b", 2)
	s.admitBatch([]*admitOp{a, b})
	if a.out != groupAlone || b.out != groupAlone {
		t.Fatalf("a batch over a shard's part: %v, %v; want each to run alone", a.out, b.out)
	}
	if n := count(t, s, "pending_requests"); n != 0 {
		t.Fatalf("%d requests stored by a batch over the limit, want 0", n)
	}
	charge := Charge{Period: period, Quotas: []Quota{q}}
	add := func(name string) error {
		return s.AddPending(ctx, &PendingRequest{IDHash: Hash(name), Params: map[string][]string{}, Host: "h", Subject: "u", ExpiresAt: exp}, charge, now)
	}
	for _, name := range []string{"a", "b"} {
		if err := add(name); err != nil {
			t.Fatalf("%s alone: %v", name, err)
		}
	}
	var qe *QuotaError
	if err := add("c"); !errors.As(err, &qe) {
		t.Fatalf("a third request on a quota of 2: %v, want a QuotaError", err)
	}

	// Another host's quota of 4: two admissions to two shards fit.
	q = Quota{"host:k", 4}
	d, e := op("d", 0), op("e", 1)
	s.admitBatch([]*admitOp{d, e})
	if d.out != groupDone || e.out != groupDone {
		t.Fatalf("a batch that fits: %v, %v; want both done", d.out, e.out)
	}
	for _, name := range []string{"d", "e"} {
		if p, err := s.Pending(ctx, Hash(name), now); err != nil || p.Host != "h" || p.Subject != "u" {
			t.Fatalf("request %s of a batch: %+v, %v", name, p, err)
		}
	}
}

// TestGroupedFlowsConcurrently: many native flows at once (admission,
// decision, redemption), whose writes the store sends in batches: every
// flow succeeds, each grant has its code spent and its tokens, and the
// host's quota is whole again once every request was decided.
func TestGroupedFlowsConcurrently(t *testing.T) {
	s := openPG(t)
	ctx := context.Background()
	now := time.Now()
	const workers, flows = 24, 8
	charge := Charge{Period: time.Minute / 16, Quotas: []Quota{{"host:h", workers * flows}}}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for f := range flows {
				id := fmt.Sprintf("w%d-f%d", w, f)
				if err := s.AddPending(ctx, &PendingRequest{IDHash: Hash("req-" + id), Params: map[string][]string{}, Host: "h", Subject: "u",
					ExpiresAt: now.Add(time.Minute)}, charge, now); err != nil {
					errs[w] = fmt.Errorf("flow %s: admission: %w", id, err)
					return
				}
				g := &Grant{ID: "g-" + id, ClientID: "c", SubjectID: "u", Scopes: []string{"openid"}, InstallationID: "i", AuthTime: now, CreatedAt: now}
				c := &Code{Hash: Hash("code-" + id), ClientID: "c", RedirectURI: "https://a/cb", Challenge: "x", ExpiresAt: now.Add(time.Minute)}
				if err := s.DecidePending(ctx, Hash("req-"+id), "u", now, g, c, nil); err != nil {
					errs[w] = fmt.Errorf("flow %s: decision: %w", id, err)
					return
				}
				at := &AccessToken{Hash: Hash("at-" + id), GrantID: g.ID, JTI: id, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
				if err := s.RedeemCodeFor(ctx, c.Hash, now, at, nil); err != nil {
					errs[w] = fmt.Errorf("flow %s: redemption: %w", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "grants"); n != workers*flows {
		t.Fatalf("%d grants, want %d", n, workers*flows)
	}
	if n := count(t, s, "access_tokens"); n != workers*flows {
		t.Fatalf("%d access tokens, want %d", n, workers*flows)
	}
	var unspent, pending int
	if err := s.r.QueryRow(`SELECT count(*) FROM codes WHERE used = 0`).Scan(&unspent); err != nil || unspent != 0 {
		t.Fatalf("%d codes unspent (%v), want 0", unspent, err)
	}
	if pending = count(t, s, "pending_requests"); pending != 0 {
		t.Fatalf("%d requests still pending, want 0", pending)
	}
	// Every place is back: the whole quota admits again, and no more.
	for i := range workers * flows {
		if err := s.AddPending(ctx, &PendingRequest{IDHash: Hash(fmt.Sprint("again", i)), Params: map[string][]string{}, Host: "h",
			ExpiresAt: now.Add(time.Minute)}, charge, now); err != nil {
			t.Fatalf("admission %d after every request was decided: %v", i, err)
		}
	}
	var qe *QuotaError
	if err := s.AddPending(ctx, &PendingRequest{IDHash: Hash("one-more"), Params: map[string][]string{}, Host: "h",
		ExpiresAt: now.Add(time.Minute)}, charge, now); !errors.As(err, &qe) {
		t.Fatalf("one admission past the quota: %v, want a QuotaError", err)
	}
}

// TestGroupedReads: the reads another instance makes of this one's rows,
// sent as one query: a request and a code are found by their keys (twice
// in one batch as well), a missing key is not, an expired request is
// gone for a reader whose clock is past its expiry, and a code brings its
// grant into the reader's cache.
func TestGroupedReads(t *testing.T) {
	db := storetest.Postgres(t)
	a := openOn(t, db)
	b, err := Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	now := time.Now()
	charge := Charge{Period: time.Minute / 16, Quotas: []Quota{{"host:h", 10}}}
	if err := a.AddPending(ctx, &PendingRequest{IDHash: Hash("r1"), Params: map[string][]string{"client_id": {"c"}}, Host: "h", Subject: "u",
		ExpiresAt: now.Add(time.Minute)}, charge, now); err != nil {
		t.Fatal(err)
	}
	newGrant(a, t, "g1", now)

	l := &b.pg.groups.reads
	ops := []*lookupOp[pendingRow]{{key: string(Hash("r1"))}, {key: string(Hash("r1"))}, {key: string(Hash("none"))}}
	for _, op := range ops {
		op.done = make(chan struct{})
	}
	l.pending.run(b.r, ops)
	for i, want := range []bool{true, true, false} {
		if ops[i].alone || ops[i].found != want {
			t.Fatalf("read %d: found %v alone %v, want found %v", i, ops[i].found, ops[i].alone, want)
		}
	}
	if r := ops[0].row; r.p.Host != "h" || r.p.Subject != "u" || r.params != `{"client_id":["c"]}` {
		t.Fatalf("the request read: %+v", r)
	}

	if p, err := b.Pending(ctx, Hash("r1"), now); err != nil || p.Params["client_id"][0] != "c" {
		t.Fatalf("the request through the other instance: %+v, %v", p, err)
	}
	if _, err := b.Pending(ctx, Hash("r1"), now.Add(2*time.Minute)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the request past its expiry: %v, want ErrNotFound", err)
	}
	if g, _ := b.cache.grant("g1"); g != nil {
		t.Fatal("the grant was cached before its code was read")
	}
	c, used, err := b.PeekCode(ctx, Hash("code-g1"))
	if err != nil || used || c.GrantID != "g1" || c.RedirectURI != "https://a/cb" {
		t.Fatalf("the code through the other instance: %+v used %v, %v", c, used, err)
	}
	if g, _ := b.cache.grant("g1"); g == nil || g.ClientID != "c" || g.SubjectID != "u" {
		t.Fatalf("the code's grant in the reader's cache: %+v", g)
	}
	if _, _, err := b.PeekCode(ctx, Hash("no-such-code")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown code: %v, want ErrNotFound", err)
	}
	if _, err := b.Grant(ctx, "no-such-grant"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown grant: %v, want ErrNotFound", err)
	}
}
