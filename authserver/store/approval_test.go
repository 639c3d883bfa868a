package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestApprovalIsOneWrite: the consent an approval leaves is stored with
// its grant, and not at all when the grant cannot be (here: a code that
// exists already), so a subject is never "remembered" for an approval
// that failed.
func TestApprovalIsOneWrite(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Now()
	g := func(id string) *Grant {
		return &Grant{ID: id, ClientID: "c", SubjectID: "u", Scopes: []string{"openid"}, InstallationID: "i", AuthTime: now, CreatedAt: now}
	}
	code := func(h string) *Code {
		return &Code{Hash: Hash(h), ClientID: "c", RedirectURI: "https://a/cb", Challenge: "x", ExpiresAt: now.Add(time.Minute)}
	}
	remember := &Consent{SubjectID: "u", ClientID: "c", OrgID: "", Permissions: []string{"openid"}, AccountID: "acc-1", UpdatedAt: now}
	if err := s.CreateGrantRemembering(ctx, g("g1"), code("k1"), remember); err != nil {
		t.Fatal(err)
	}
	got, err := s.Consent(ctx, "u", "c")
	if err != nil || got.AccountID != "acc-1" || len(got.Permissions) != 1 {
		t.Fatalf("consent after the approval: %+v %v", got, err)
	}
	// The same code again: the grant fails, and the consent stays as it was.
	changed := *remember
	changed.AccountID, changed.Permissions = "acc-2", []string{"openid", "profile"}
	if err := s.CreateGrantRemembering(ctx, g("g2"), code("k1"), &changed); err == nil {
		t.Fatal("a grant with a code that exists was stored")
	}
	if got, err := s.Consent(ctx, "u", "c"); err != nil || got.AccountID != "acc-1" {
		t.Fatalf("consent after a failed approval: %+v %v, want acc-1 kept", got, err)
	}
	if _, err := s.Grant(ctx, "g2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed grant: %v, want ErrNotFound", err)
	}
}
