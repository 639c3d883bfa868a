package store

import (
	"context"
	"testing"
	"time"
)

func count(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPurge: rows expired for longer than the grace period go; rows still
// valid, or expired within it, stay; the grant itself stays.
func TestPurge(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Now()
	old := now.Add(-48 * time.Hour)
	newGrant(s, t, "old", old)   // its code expired 48 h ago
	newGrant(s, t, "fresh", now) // its code expires in a minute
	tok := func(id string, exp time.Time) *AccessToken {
		return &AccessToken{Hash: Hash("at-" + id), GrantID: "old", JTI: id, IssuedAt: exp.Add(-time.Hour), ExpiresAt: exp}
	}
	for id, exp := range map[string]time.Time{"long-expired": old, "just-expired": now.Add(-time.Hour), "valid": now.Add(time.Hour)} {
		var rt *RefreshToken
		if id != "valid" {
			rt = &RefreshToken{Hash: Hash("rt-" + id), GrantID: "old", IssuedAt: exp.Add(-time.Hour), ExpiresAt: exp}
		}
		if err := s.AddTokens(ctx, tok(id, exp), rt); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Purge(ctx, now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("Purge removed %d rows, want 3 (the old code, one access and one refresh token)", n)
	}
	if c, a, r := count(t, s, "codes"), count(t, s, "access_tokens"), count(t, s, "refresh_tokens"); c != 1 || a != 2 || r != 1 {
		t.Errorf("left %d codes, %d access tokens, %d refresh tokens; want 1, 2, 1", c, a, r)
	}
	if count(t, s, "grants") != 2 {
		t.Error("Purge removed a grant")
	}
	if _, _, err := s.LookupAccessToken(ctx, Hash("at-valid")); err != nil {
		t.Errorf("a valid token is gone: %v", err)
	}
	if n, err := s.Purge(ctx, now, 24*time.Hour); err != nil || n != 0 {
		t.Errorf("second Purge = %d, %v; want 0", n, err)
	}
}
