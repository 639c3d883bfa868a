package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestSubmissionDecidedOnce: a submission is approved or rejected once,
// and only approved policies count.
func TestSubmissionDecidedOnce(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Now()
	for _, sub := range []*Submission{
		{ID: "s1", ProjectID: "p", Kind: KindPolicy, Body: []byte(`{"scopes":["openid"],"types":[]}`), CreatedAt: now},
		{ID: "s2", ProjectID: "p", Kind: KindPolicy, Body: []byte(`{"scopes":["email"],"types":["bank_account"]}`), CreatedAt: now},
	} {
		if err := s.AddSubmission(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DecideSubmission(ctx, "s1", StatusApproved, "", "", now); err != nil {
		t.Fatal(err)
	}
	if err := s.DecideSubmission(ctx, "s2", StatusRejected, "no", "", now); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, id string
		want     error
	}{
		{"decided before", "s1", ErrDecided},
		{"unknown", "s9", ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.DecideSubmission(ctx, tc.id, StatusApproved, "", "", now); !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
		})
	}
	pol, err := s.ApprovedPolicy(ctx, "p")
	if err != nil || len(pol.Scopes) != 1 || pol.Scopes[0] != "openid" || len(pol.Types) != 0 {
		t.Fatalf("approved policy: %+v %v", pol, err)
	}
}

// TestRemoveClientRevokesGrants: a removed client is gone for lookups, its
// grants are revoked (also in the token cache), and its id is never
// reused by AddClient.
func TestRemoveClientRevokesGrants(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Now()
	newGrant(s, t, "g1", now)
	at := &AccessToken{Hash: Hash("at"), GrantID: "g1", JTI: "j", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.AddTokens(ctx, at, nil); err != nil {
		t.Fatal(err)
	}
	if _, g, err := s.LookupAccessToken(ctx, Hash("at")); err != nil || g.Revoked() {
		t.Fatalf("before: %v %v", g, err)
	}
	if err := s.RemoveClient(ctx, "c", now); err != nil {
		t.Fatal(err)
	}
	if _, g, err := s.LookupAccessToken(ctx, Hash("at")); err != nil || !g.Revoked() {
		t.Fatalf("after: the grant is not revoked: %v %v", g, err)
	}
	if _, err := s.Client(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed client found: %v", err)
	}
	if err := s.RemoveClient(ctx, "c", now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second removal: %v", err)
	}
	if err := s.AddClient(ctx, &Client{ID: "c", ProjectID: "p", Name: "again", Type: Public}); !errors.Is(err, ErrExists) {
		t.Fatalf("a removed id was reused: %v", err)
	}
}

// TestConsentRememberedAndRevoked: a consent is kept per subject and
// client, and revoking it revokes the grants of that pair only.
func TestConsentRememberedAndRevoked(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Now()
	newGrant(s, t, "g1", now) // client c, subject u
	if err := s.PutConsent(ctx, &Consent{SubjectID: "u", ClientID: "c", Permissions: []string{"scope openid"}, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Consent(ctx, "u", "c"); err != nil || len(c.Permissions) != 1 {
		t.Fatalf("consent: %+v %v", c, err)
	}
	if _, err := s.Consent(ctx, "other", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another subject's consent: %v", err)
	}
	if err := s.RevokeConsent(ctx, "u", "c", now); err != nil {
		t.Fatal(err)
	}
	if g, err := s.Grant(ctx, "g1"); err != nil || !g.Revoked() {
		t.Fatalf("grant after consent revocation: %+v %v", g, err)
	}
	if err := s.RevokeConsent(ctx, "u", "c", now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second revocation: %v", err)
	}
}

// TestMigrateFromVersion1: a database made before onboarding keeps its
// data and gains the onboarding tables.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migrations[0], "PRAGMA user_version = 1", `INSERT INTO projects(id, name) VALUES('p', 'P')`,
		`INSERT INTO clients(id, project_id, name, type, redirect_uris, allowed_origins, roles, resource) VALUES('c', 'p', 'C', 'public', '[]', '[]', '[]', '')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := s.Client(ctx, "c"); err != nil || c.Name != "C" {
		t.Fatalf("client after migration: %+v %v", c, err)
	}
	if p, err := s.Project(ctx, "p"); err != nil || p.OperatorCompany != "" {
		t.Fatalf("project after migration: %+v %v", p, err)
	}
	if subs, err := s.Submissions(ctx, SubmissionFilter{}); err != nil || len(subs) != 0 {
		t.Fatalf("submissions after migration: %v %v", subs, err)
	}
}
