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

// pendingCharge charges a browser request to its source, its client and
// all browsers, as package oauth does.
func pendingCharge(source, client string) Charge {
	return Charge{Period: time.Minute / 16, Quotas: []Quota{{"source:" + source, 2}, {"client:" + client, 3}, {"browser", 100}}}
}

func addPending(t *testing.T, s *Store, id, source, client string, now time.Time) error {
	t.Helper()
	return s.AddPending(context.Background(), &PendingRequest{IDHash: Hash(id), Params: map[string][]string{"client_id": {client}},
		Source: source, ExpiresAt: now.Add(time.Minute)}, pendingCharge(source, client), now)
}

// TestPendingQuotasInDatabase: each quota refuses only the requests
// charged to it, naming itself; a decision gives the request's place back
// at once, and expiry gives it back once the quota's period has ended.
func TestPendingQuotasInDatabase(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Unix(1_000_000, 0)
	for i, step := range []struct {
		source, client string
		refused        string // the quota key of the refusal, "" for admitted
	}{
		{"1.1.1.1", "a", ""},
		{"1.1.1.1", "a", ""},
		{"1.1.1.1", "a", "source:1.1.1.1"},
		{"1.1.1.1", "b", "source:1.1.1.1"},
		{"2.2.2.2", "a", ""},
		{"3.3.3.3", "a", "client:a"},
		{"3.3.3.3", "b", ""},
	} {
		err := addPending(t, s, fmt.Sprint("r", i), step.source, step.client, now)
		var qe *QuotaError
		switch {
		case step.refused == "" && err != nil:
			t.Fatalf("step %d refused: %v", i, err)
		case step.refused != "" && (!errors.As(err, &qe) || qe.Key != step.refused):
			t.Fatalf("step %d: %v, want a refusal by %s", i, err, step.refused)
		}
		if step.refused != "" {
			if _, err := s.Pending(ctx, Hash(fmt.Sprint("r", i)), now); !errors.Is(err, ErrNotFound) {
				t.Fatalf("step %d: a refused request was stored (%v)", i, err)
			}
		}
	}
	p, err := s.Pending(ctx, Hash("r0"), now)
	if err != nil || p.Source != "1.1.1.1" || p.Params["client_id"][0] != "a" {
		t.Fatalf("read back: %+v %v", p, err)
	}
	// Denying r0 frees its place at once.
	if err := s.DecidePending(ctx, Hash("r0"), "", now, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := addPending(t, s, "r7", "1.1.1.1", "b", now); err != nil {
		t.Fatalf("after a decision: %v", err)
	}
	// Past the requests' lifetime and their quota period, everything is
	// free again and the reads say so.
	later := now.Add(time.Minute + time.Minute/16)
	if _, err := s.Pending(ctx, Hash("r1"), later); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an expired request: %v, want ErrNotFound", err)
	}
	for i := range 2 {
		if err := addPending(t, s, fmt.Sprint("late", i), "1.1.1.1", "a", later); err != nil {
			t.Fatalf("after expiry: %v", err)
		}
	}
	n, err := s.Purge(ctx, later, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if left := count(t, s, "pending_requests"); left != 2 || n < 5 {
		t.Fatalf("purge removed %d rows and left %d pending requests; want the 5 expired ones gone and the 2 new kept", n, left)
	}
}

// TestPendingDecidedOnce: two stores on one database (two server
// instances) decide the same request at the same moment; exactly one
// decision is stored, the other is ErrNotFound, and a decision checked for
// another subject than the one recorded is refused.
func TestPendingDecidedOnce(t *testing.T) {
	db := storetest.Postgres(t)
	ctx := context.Background()
	var stores []*Store
	for range 2 {
		s, err := Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	if err := stores[0].PutProject(ctx, Project{ID: "p", Name: "P"}); err != nil {
		t.Fatal(err)
	}
	if err := stores[0].PutClient(ctx, &Client{ID: "c", ProjectID: "p", Name: "C", Type: Public, RedirectURIs: []string{"https://a/cb"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for round := range 20 {
		id := Hash(fmt.Sprint("req", round))
		if err := stores[0].AddPending(ctx, &PendingRequest{IDHash: id, Params: map[string][]string{}, Host: "h", ExpiresAt: now.Add(time.Minute)},
			Charge{Period: time.Second, Quotas: []Quota{{"host:h", 1}}}, now); err != nil {
			t.Fatal(err)
		}
		if err := stores[1].SetPendingSubject(ctx, id, "u"); err != nil {
			t.Fatal(err)
		}
		if err := stores[0].DecidePending(ctx, id, "someone-else", now, nil, nil, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a decision for another subject: %v, want ErrNotFound", err)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				gid := fmt.Sprintf("g%d-%d", round, i)
				g := &Grant{ID: gid, ClientID: "c", SubjectID: "u", InstallationID: "i", AuthTime: now, CreatedAt: now}
				c := &Code{Hash: Hash("code-" + gid), ClientID: "c", RedirectURI: "https://a/cb", Challenge: "x", ExpiresAt: now.Add(time.Minute)}
				errs[i] = s.DecidePending(ctx, id, "u", now, g, c, nil)
			})
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrNotFound):
				t.Fatalf("round %d, store %d: %v", round, i, err)
			}
			if _, gerr := stores[0].Grant(ctx, fmt.Sprintf("g%d-%d", round, i)); (gerr == nil) != (err == nil) {
				t.Fatalf("round %d, store %d: decision %v but grant lookup %v", round, i, err, gerr)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d decisions stored, want exactly 1", round, won)
		}
	}
	// Each decision gave the host's quota of one back.
	if err := stores[1].AddPending(ctx, &PendingRequest{IDHash: Hash("last"), Params: map[string][]string{}, Host: "h", ExpiresAt: now.Add(time.Minute)},
		Charge{Period: time.Second, Quotas: []Quota{{"host:h", 1}}}, now); err != nil {
		t.Fatalf("after the decisions: %v", err)
	}
}

// TestSessionsInDatabase: a signed-in session at its source's cap evicts
// that source's oldest session, never another source's; the total cap
// refuses; a refused sign-in leaves the session it was to replace; and a
// session is found by its id's hash until it expires.
func TestSessionsInDatabase(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Unix(1_000_000, 0)
	signed := func(src string) Charge {
		return Charge{Period: 12 * time.Hour / 16, Evict: "signed:" + src, Quotas: []Quota{{"signed:" + src, 3}, {"signed", 5}}}
	}
	add := func(i int, src string) error {
		return s.AddSession(ctx, &Session{IDHash: Hash(fmt.Sprint("s", i)), Bind: []byte{byte(i)}, Source: []byte(src), Subject: "u",
			ExpiresAt: now.Add(12 * time.Hour).Add(time.Duration(i) * time.Millisecond)}, signed(src), now)
	}
	live := func(i int) bool {
		_, err := s.Session(ctx, Hash(fmt.Sprint("s", i)), now)
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if err := add(100, "b"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := add(i, "a"); err != nil {
			t.Fatalf("sign-in %d from a source at its cap: %v, want its oldest session evicted", i, err)
		}
	}
	for i := range 10 {
		if want := i >= 7; live(i) != want {
			t.Errorf("session %d of source a live %v, want %v (the newest 3 kept)", i, live(i), want)
		}
	}
	if !live(100) {
		t.Fatal("source b's session was evicted")
	}
	if err := add(200, "c"); err != nil {
		t.Fatal(err)
	}
	var qe *QuotaError
	if err := add(201, "d"); !errors.As(err, &qe) || qe.Key != "signed" {
		t.Fatalf("over the total cap: %v, want a refusal by the total", err)
	}
	// A session not signed in, replaced by a signed-in one: refused by the
	// total, the first one stays; with room, it is gone and the new one is
	// there.
	anon := Charge{Period: time.Minute, Quotas: []Quota{{"anon:e", 10}}}
	if err := s.AddSession(ctx, &Session{IDHash: Hash("anon"), Bind: []byte("b"), Source: []byte("e"), ExpiresAt: now.Add(10 * time.Minute)}, anon, now); err != nil {
		t.Fatal(err)
	}
	next := &Session{IDHash: Hash("s300"), Bind: []byte("b"), Source: []byte("e"), Subject: "u", ExpiresAt: now.Add(12 * time.Hour)}
	if err := s.ReplaceSession(ctx, Hash("anon"), next, signed("e"), now); !errors.As(err, &qe) {
		t.Fatalf("a sign-in over the total: %v, want a refusal", err)
	}
	if _, err := s.Session(ctx, Hash("anon"), now); err != nil {
		t.Fatalf("the session a refused sign-in was to replace: %v", err)
	}
	if err := s.ReplaceSession(ctx, Hash("anon"), next, Charge{Period: time.Hour, Quotas: []Quota{{"signed:e", 3}}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, Hash("anon"), now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the replaced session: %v, want ErrNotFound", err)
	}
	if se, err := s.Session(ctx, Hash("s300"), now); err != nil || se.Subject != "u" || string(se.Bind) != "b" {
		t.Fatalf("the new session: %+v %v", se, err)
	}
	if _, err := s.Session(ctx, Hash("s300"), now.Add(13*time.Hour)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an expired session: %v, want ErrNotFound", err)
	}
}

// TestShardedQuotaExactAcrossInstances: a quota's count is spread over
// shards; two stores on one database (two server instances) admit 60
// requests of one host at once against a limit of 40, and exactly 40 are
// stored, the others refused naming the quota; a decision then gives one
// place back.
func TestShardedQuotaExactAcrossInstances(t *testing.T) {
	db := storetest.Postgres(t)
	ctx := context.Background()
	var stores []*Store
	for range 2 {
		s, err := Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	const limit, tries = 40, 60
	now := time.Now()
	charge := Charge{Period: time.Minute / 16, Quotas: []Quota{{"host:h", limit}}}
	add := func(s *Store, i int) error {
		return s.AddPending(ctx, &PendingRequest{IDHash: Hash(fmt.Sprint("q", i)), Params: map[string][]string{}, Host: "h",
			ExpiresAt: now.Add(time.Minute)}, charge, now)
	}
	errs := make([]error, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = add(stores[i%2], i)
		}()
	}
	wg.Wait()
	admitted, first := 0, -1
	for i, err := range errs {
		var qe *QuotaError
		switch {
		case err == nil:
			admitted++
			if first < 0 {
				first = i
			}
		case !errors.As(err, &qe) || qe.Key != "host:h" || qe.Limit != limit:
			t.Fatalf("admission %d: %v, want a refusal by host:h of %d", i, err, limit)
		}
	}
	if admitted != limit || count(t, stores[0], "pending_requests") != limit {
		t.Fatalf("%d admitted, %d stored; want exactly %d", admitted, count(t, stores[0], "pending_requests"), limit)
	}
	if err := add(stores[0], tries); err == nil {
		t.Fatal("an admission past the limit was stored")
	}
	if err := stores[1].DecidePending(ctx, Hash(fmt.Sprint("q", first)), "", now, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := add(stores[0], tries+1); err != nil {
		t.Fatalf("after a decision gave a place back: %v", err)
	}
}

// TestNativePendingReadBackAcrossInstances: a native request admitted
// through one instance reads back the same through it (its own copy) and
// through another (the database); once decided through the other, a
// decision through the first finds it gone, and so does a second one
// through either.
func TestNativePendingReadBackAcrossInstances(t *testing.T) {
	db := storetest.Postgres(t)
	ctx := context.Background()
	var stores []*Store
	for range 2 {
		s, err := Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	now := time.Now()
	charge := Charge{Period: time.Minute / 16, Quotas: []Quota{{"host:h", 10}}}
	for round := range 10 {
		id := Hash(fmt.Sprint("native", round))
		want := &PendingRequest{IDHash: id, Params: map[string][]string{"client_id": {"c"}, "scope": {"a b"}}, Host: "h", Subject: "u",
			ExpiresAt: now.Add(time.Minute)}
		if err := stores[0].AddPending(ctx, want, charge, now); err != nil {
			t.Fatal(err)
		}
		for i, s := range stores {
			p, err := s.Pending(ctx, id, now)
			if err != nil || p.Host != "h" || p.Subject != "u" || fmt.Sprint(p.Params) != fmt.Sprint(want.Params) || !p.ExpiresAt.Equal(want.ExpiresAt) {
				t.Fatalf("round %d: read back through instance %d: %+v, %v", round, i, p, err)
			}
		}
		if p, err := stores[0].Pending(ctx, id, now.Add(2*time.Minute)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("round %d: an expired request read back: %+v, %v", round, p, err)
		}
		decider, other := stores[round%2], stores[1-round%2]
		if err := decider.DecidePending(ctx, id, "u", now, nil, nil, nil); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, s := range []*Store{other, decider} {
			if err := s.DecidePending(ctx, id, "u", now, nil, nil, nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("round %d: a decided request decided again: %v, want ErrNotFound", round, err)
			}
		}
	}
	// Every request gave its place back: the quota admits ten again.
	for i := range 10 {
		if err := stores[1].AddPending(ctx, &PendingRequest{IDHash: Hash(fmt.Sprint("again", i)), Params: map[string][]string{}, Host: "h", Subject: "u",
			ExpiresAt: now.Add(time.Minute)}, charge, now); err != nil {
			t.Fatalf("admission %d after the decisions: %v", i, err)
		}
	}
}
