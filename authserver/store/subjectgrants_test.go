package store

import (
	"context"
	"encoding/json"
	"errors"
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
	if err := s.NarrowGrant(ctx, g1, []string{}, json.RawMessage(`[{"type":"x"}]`), &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope openid"}, UpdatedAt: now}); err != nil {
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
	kept := &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope email"}, UpdatedAt: now}
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
	if err := s.RevokeSubjectGrant(ctx, "u", "g2", now, &Consent{SubjectID: "u", ClientID: "other", UpdatedAt: now}); err == nil {
		t.Fatal("revoked with another client's consent")
	}
	if list, _ = s.SubjectGrants(ctx, "u"); len(list) != 1 {
		t.Fatalf("a refused revocation revoked: %v", list)
	}
	// A consent without permissions is forgotten.
	if err := s.RevokeSubjectGrant(ctx, "u", "g2", now, &Consent{SubjectID: "u", ClientID: "c", UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consent(ctx, "u", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the remembered consent after revoking with none: %v", err)
	}
}
