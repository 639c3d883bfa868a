package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestSupersedeComparesState: a merge stores its grant only if the grant
// it merges into is still as the merge read it. Here the interleaving that
// a race makes now and then is forced: the merge reads the live grant, the
// subject then revokes an entry of it (NarrowGrant), and the merge's write
// comes last. It is refused with ErrGrantSuperseded, nothing is stored,
// and the live grant stays narrowed: the revoked entry does not come back.
// A merge of the grant as it is now goes through.
func TestSupersedeComparesState(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Now()
	details := json.RawMessage(`[{"type":"a"},{"type":"b"}]`)
	first := &Grant{ID: "g1", ClientID: "c", SubjectID: "u", Scopes: []string{"openid", "email"}, Details: details,
		Audience: []string{"https://a"}, InstallationID: "i", AuthTime: now, CreatedAt: now}
	code := func(h string) *Code {
		return &Code{Hash: Hash(h), ClientID: "c", RedirectURI: "https://a/cb", Challenge: "x", ExpiresAt: now.Add(time.Minute)}
	}
	if err := s.CreateGrant(ctx, first, code("k1")); err != nil {
		t.Fatal(err)
	}
	read, err := s.LiveGrant(ctx, "g1") // what the merge's approval reads
	if err != nil {
		t.Fatal(err)
	}
	if err := s.NarrowGrant(ctx, read, []string{"openid"}, json.RawMessage(`[{"type":"a"}]`), nil); err != nil {
		t.Fatal(err)
	}
	merge := func(id string, cur *Grant) error {
		return s.CreateGrant(ctx, &Grant{ID: id, ClientID: "c", SubjectID: "u", Scopes: append(cur.Scopes, "profile"),
			Details: cur.Details, Audience: cur.Audience, InstallationID: "i", AuthTime: now, CreatedAt: now, Lineage: "g1", Supersedes: cur}, code("k-"+id))
	}
	if err := merge("g2", read); !errors.Is(err, ErrGrantSuperseded) {
		t.Fatalf("a merge of the grant as it was before the subject narrowed it: %v, want ErrGrantSuperseded", err)
	}
	live, err := s.LiveGrant(ctx, "g1")
	if err != nil || live.ID != "g1" || len(live.Scopes) != 1 || string(live.Details) != `[{"type":"a"}]` {
		t.Fatalf("the live grant after the refused merge: %+v %v, want g1 narrowed to openid and detail a", live, err)
	}
	if _, err := s.Grant(ctx, "g2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused merge's grant: %v, want ErrNotFound", err)
	}
	if err := merge("g3", live); err != nil {
		t.Fatalf("a merge of the grant as it is: %v", err)
	}
	if live, err := s.LiveGrant(ctx, "g1"); err != nil || live.ID != "g3" {
		t.Fatalf("the live grant after the merge: %+v %v, want g3", live, err)
	}
}
