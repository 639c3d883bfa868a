package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestSubjectGrants: a subject's active grants are listed newest first
// with their last use (a token lookup, to the second, never going back);
// a narrowing from a stale read changes nothing and is ErrNotFound; a
// narrowing reaches a cached token lookup at once and sets the remembered
// consent; revoking the grant sets the consent it is given (none: forgets
// it) and lists the grant no more, and another subject cannot revoke it.
func TestSubjectGrants(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	newGrant(s, t, "g1", now)
	newGrant(s, t, "g2", now.Add(time.Second))
	g1, err := s.Grant(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	at := &AccessToken{Hash: Hash("at-g1"), GrantID: "g1", JTI: "j", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.AddTokens(ctx, at, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.LookupAccessToken(ctx, at.Hash); err != nil { // cached now
		t.Fatal(err)
	}
	list, err := s.SubjectGrants(ctx, "u")
	if err != nil || len(list) != 2 || list[0].ID != "g2" || list[1].ID != "g1" || list[1].UsedAt.IsZero() || !list[0].UsedAt.IsZero() {
		t.Fatalf("listed %v %v", list, err)
	}
	used := list[1].UsedAt
	s.uses.touch("g1", used.Add(-time.Hour)) // an older use recorded late
	if list, _ = s.SubjectGrants(ctx, "u"); !list[1].UsedAt.Equal(used) {
		t.Fatalf("the last use went back from %v to %v", used, list[1].UsedAt)
	}

	if err := s.PutConsent(ctx, &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope openid", "scope profile"}, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	stale := *g1
	stale.Scopes = []string{"openid", "profile"}
	if err := s.NarrowGrant(ctx, &stale, nil, json.RawMessage(`[{"type":"x"}]`), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("narrowing from a stale read: %v", err)
	}
	if err := s.NarrowGrant(ctx, g1, []string{}, json.RawMessage(`[{"type":"x"}]`), &Remember{Consent: &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope openid"}, UpdatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if _, g, err := s.LookupAccessToken(ctx, at.Hash); err != nil || len(g.Scopes) != 0 || string(g.Details) != `[{"type":"x"}]` {
		t.Fatalf("the token's grant after the narrowing: %+v %v", g, err)
	}
	if c, err := s.Consent(ctx, "u", "c"); err != nil || len(c.Permissions) != 1 || c.Permissions[0] != "scope openid" {
		t.Fatalf("the remembered consent: %+v %v", c, err)
	}

	if err := s.RevokeSubjectGrant(ctx, "someone-else", "g1", now, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another subject revoked the grant: %v", err)
	}
	// The revocation sets the consent it is given, in its transaction.
	kept := &Remember{Consent: &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope email"}, UpdatedAt: now}}
	if err := s.RevokeSubjectGrant(ctx, "u", "g1", now, kept); err != nil {
		t.Fatal(err)
	}
	if _, g, err := s.LookupAccessToken(ctx, at.Hash); err != nil || !g.Revoked() {
		t.Fatalf("the token's grant after the revocation: %+v %v", g, err)
	}
	if c, err := s.Consent(ctx, "u", "c"); err != nil || len(c.Permissions) != 1 || c.Permissions[0] != "scope email" {
		t.Fatalf("the remembered consent after the revocation: %+v %v", c, err)
	}
	if list, _ = s.SubjectGrants(ctx, "u"); len(list) != 1 || list[0].ID != "g2" {
		t.Fatalf("listed after the revocation: %v", list)
	}
	if err := s.RevokeSubjectGrant(ctx, "u", "g1", now, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoking twice: %v", err)
	}
	if c, err := s.Consent(ctx, "u", "c"); err != nil || len(c.Permissions) != 1 {
		t.Fatalf("a refused revocation changed the remembered consent: %+v %v", c, err)
	}
	// A consent of another client is refused, and nothing changes.
	if err := s.RevokeSubjectGrant(ctx, "u", "g2", now, &Remember{Consent: &Consent{SubjectID: "u", ClientID: "other", UpdatedAt: now}}); err == nil {
		t.Fatal("revoked with another client's consent")
	}
	if list, _ = s.SubjectGrants(ctx, "u"); len(list) != 1 {
		t.Fatalf("a refused revocation revoked: %v", list)
	}
	// A consent without permissions is forgotten.
	if err := s.RevokeSubjectGrant(ctx, "u", "g2", now, &Remember{Consent: &Consent{SubjectID: "u", ClientID: "c", UpdatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consent(ctx, "u", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the remembered consent after revoking with none: %v", err)
	}
}

// TestRememberReliesOnUnchangedGrants: a revocation whose remembered
// consent keeps what another grant holds (Remember.HeldBy) is refused with
// ErrGrantsChanged, and changes nothing, once that grant was narrowed or
// revoked since it was read; read afresh, it goes through.
func TestRememberReliesOnUnchangedGrants(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	newGrant(s, t, "g1", now)
	newGrant(s, t, "g2", now)
	read := func(id string) *Grant {
		g, err := s.Grant(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	consent := &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope openid"}, UpdatedAt: now}
	if err := s.PutConsent(ctx, consent); err != nil {
		t.Fatal(err)
	}
	stale := read("g2")
	if err := s.NarrowGrant(ctx, stale, []string{}, json.RawMessage(`[{"type":"x"}]`), nil); err != nil {
		t.Fatal(err)
	}
	keep := func(held *Grant) *Remember {
		return &Remember{Consent: &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope openid"}, UpdatedAt: now.Add(time.Second)},
			HeldBy: []*Grant{held}}
	}
	if err := s.RevokeSubjectGrant(ctx, "u", "g1", now, keep(stale)); !errors.Is(err, ErrGrantsChanged) {
		t.Fatalf("revoking on a narrowed grant's stale read: %v, want ErrGrantsChanged", err)
	}
	if err := s.NarrowGrant(ctx, read("g1"), []string{}, json.RawMessage(`[{"type":"y"}]`), keep(stale)); !errors.Is(err, ErrGrantsChanged) {
		t.Fatalf("narrowing on a narrowed grant's stale read: %v, want ErrGrantsChanged", err)
	}
	// Keeping the consent as it is relies on the other grant just the same.
	if err := s.RevokeSubjectGrant(ctx, "u", "g1", now, &Remember{HeldBy: []*Grant{stale}}); !errors.Is(err, ErrGrantsChanged) {
		t.Fatalf("revoking, the consent unchanged, on a narrowed grant's stale read: %v, want ErrGrantsChanged", err)
	}
	if g := read("g1"); g.Revoked() || len(g.Scopes) != 1 {
		t.Fatalf("a refused revocation changed the grant: %+v", g)
	}
	if c, err := s.Consent(ctx, "u", "c"); err != nil || !c.UpdatedAt.Equal(now) {
		t.Fatalf("a refused revocation changed the remembered consent: %+v %v", c, err)
	}
	fresh := read("g2")
	if err := s.RevokeSubjectGrant(ctx, "u", "g1", now, keep(fresh)); err != nil {
		t.Fatalf("revoking on a fresh read: %v", err)
	}
	// g1 is revoked now: what relies on it is refused.
	newGrant(s, t, "g3", now)
	if err := s.RevokeSubjectGrant(ctx, "u", "g3", now, keep(read("g1"))); !errors.Is(err, ErrGrantsChanged) {
		t.Fatalf("revoking on a revoked grant: %v, want ErrGrantsChanged", err)
	}
}

// TestConcurrentRevocationsKeepNothingUnheld: a subject revokes two
// grants of one client at once, each keeping in the remembered consent
// what the other holds. One goes through; the other finds the first's
// grant revoked and is refused, so the remembered consent never keeps an
// entry that no active grant holds. Neither waits on the other forever
// (the grants are locked in one order).
func TestConcurrentRevocationsKeepNothingUnheld(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	for i := range 20 {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		newGrant(s, t, a, now)
		newGrant(s, t, b, now)
		ga, err := s.Grant(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		gb, err := s.Grant(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		keep := func(held *Grant) *Remember {
			return &Remember{Consent: &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope openid"}, UpdatedAt: now}, HeldBy: []*Grant{held}}
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for j, job := range []struct {
			id   string
			held *Grant
		}{{a, gb}, {b, ga}} {
			wg.Go(func() {
				<-start
				errs[j] = s.RevokeSubjectGrant(ctx, "u", job.id, now, keep(job.held))
			})
		}
		close(start)
		wg.Wait()
		ok, refused := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrGrantsChanged):
				refused++
			default:
				t.Fatalf("round %d: %v", i, err)
			}
		}
		if ok != 1 || refused != 1 {
			t.Fatalf("round %d: %d went through and %d were refused (%v), want one of each", i, ok, refused, errs)
		}
		// The one refused changed nothing: its grant is still active, and
		// revoked with nothing to keep it goes through.
		for j, id := range []string{a, b} {
			if errs[j] != nil {
				if err := s.RevokeSubjectGrant(ctx, "u", id, now, &Remember{Consent: &Consent{SubjectID: "u", ClientID: "c", UpdatedAt: now}}); err != nil {
					t.Fatalf("round %d: revoking the refused one's grant: %v", i, err)
				}
			}
		}
	}
}
