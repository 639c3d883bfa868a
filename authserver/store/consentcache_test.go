package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestConsentServedFromMemoryStaysCurrent: once read, a consent (or its
// absence) is answered from memory, and every write is seen by the next
// read: a put, a new grant that remembers, a revocation, a client's
// removal.
func TestConsentServedFromMemoryStaysCurrent(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Now()
	if _, err := s.Consent(ctx, "u", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before any consent: %v", err)
	}
	if _, found, _ := s.consents.get("u", "c"); !found {
		t.Fatal("the absence was not remembered")
	}
	if err := s.PutConsent(ctx, &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"a"}, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Consent(ctx, "u", "c")
	if err != nil || len(c.Permissions) != 1 || c.Permissions[0] != "a" {
		t.Fatalf("after put: %+v %v", c, err)
	}
	c.Permissions[0] = "changed by the caller" // a caller's copy
	g := &Grant{ID: "g1", ClientID: "c", SubjectID: "u", Audience: []string{"https://a"}, InstallationID: "i", AuthTime: now, CreatedAt: now}
	if err := s.CreateGrantRemembering(ctx, g, &Code{Hash: Hash("code"), ClientID: "c", RedirectURI: "https://a/cb", Challenge: "x", ExpiresAt: now.Add(time.Minute)},
		&Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"a", "b"}, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Consent(ctx, "u", "c"); err != nil || fmt.Sprint(c.Permissions) != "[a b]" {
		t.Fatalf("after an approval that remembers: %+v %v", c, err)
	}
	if err := s.RevokeConsent(ctx, "u", "c", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consent(ctx, "u", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after revocation: %v", err)
	}
	if err := s.PutConsent(ctx, &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"a"}, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consent(ctx, "u", "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveClient(ctx, "c", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consent(ctx, "u", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the client's removal: %v", err)
	}
}

// TestConsentCacheBoundedByBytes: large consents take more of the budget,
// so fewer are kept, the oldest dropped first.
func TestConsentCacheBoundedByBytes(t *testing.T) {
	cc := newConsentCache(64 << 10)
	big := make([]string, 100)
	for i := range big {
		big[i] = fmt.Sprintf("permission-%0100d", i) // ~130 bytes each
	}
	for i := range 20 {
		sub := fmt.Sprint("u", i)
		cc.written(sub, "c", &Consent{SubjectID: sub, ClientID: "c", Permissions: big})
	}
	if cc.bytes > 64<<10 {
		t.Fatalf("holds %d bytes, over its bound", cc.bytes)
	}
	if n := len(cc.m); n >= 20 || n == 0 {
		t.Fatalf("holds %d of 20 large consents", n)
	}
	if _, found, _ := cc.get("u19", "c"); !found {
		t.Fatal("the newest was dropped")
	}
	if _, found, _ := cc.get("u0", "c"); found {
		t.Fatal("the oldest was kept")
	}
}
