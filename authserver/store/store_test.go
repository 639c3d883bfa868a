package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// open returns a store on a new database (storetest.DB: SQLite, or
// PostgreSQL with MINIAPP_HOST_TEST_STORE=postgres) with one client.
func open(t testing.TB) *Store {
	t.Helper()
	return openOn(t, storetest.DB(t))
}

// openOn returns a store on the new database db with one client.
func openOn(t testing.TB, db string) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.PutProject(ctx, Project{ID: "p", Name: "P"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutClient(ctx, &Client{ID: "c", ProjectID: "p", Name: "C", Type: Public, RedirectURIs: []string{"https://a/cb"}}); err != nil {
		t.Fatal(err)
	}
	return s
}

func newGrant(s *Store, t testing.TB, id string, now time.Time) {
	t.Helper()
	g := &Grant{ID: id, ClientID: "c", SubjectID: "u", Scopes: []string{"openid"}, Audience: []string{"https://a"},
		InstallationID: "i", AuthTime: now, CreatedAt: now}
	if err := s.CreateGrant(context.Background(), g, &Code{Hash: Hash("code-" + id), ClientID: "c", RedirectURI: "https://a/cb",
		Challenge: "x", ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
}

// TestCodeIsSingleUse: the second redemption revokes the grant, and the
// revocation reaches cached token lookups at once.
func TestCodeIsSingleUse(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	now := time.Now()
	newGrant(s, t, "g1", now)
	if _, err := s.RedeemCode(ctx, Hash("code-g1"), now); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTokens(ctx, &AccessToken{Hash: Hash("at"), GrantID: "g1", JTI: "j", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, g, err := s.LookupAccessToken(ctx, Hash("at")); err != nil || g.Revoked() {
		t.Fatalf("before replay: %v %v", g, err)
	}
	if _, err := s.RedeemCode(ctx, Hash("code-g1"), now); !errors.Is(err, ErrReplayed) {
		t.Fatalf("replay: want ErrReplayed, got %v", err)
	}
	if _, g, err := s.LookupAccessToken(ctx, Hash("at")); err != nil || !g.Revoked() {
		t.Fatalf("after replay the grant must be revoked: %v %v", g, err)
	}
	if _, err := s.RedeemCode(ctx, Hash("never"), now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown code: want ErrNotFound, got %v", err)
	}
}

// TestBatchIsolation: a failing write in a group commit fails alone.
func TestBatchIsolation(t *testing.T) {
	s := open(t)
	now := time.Now()
	var wg sync.WaitGroup
	var failed, ok atomic.Int32
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("g%d", i)
			if i%10 == 0 {
				id = "dup" // five writers insert the same primary key
			}
			g := &Grant{ID: id, ClientID: "c", SubjectID: "u", Audience: []string{"a"}, InstallationID: "i", AuthTime: now, CreatedAt: now}
			err := s.CreateGrant(context.Background(), g, &Code{Hash: Hash(fmt.Sprint("code", i)), ClientID: "c", RedirectURI: "r", Challenge: "x", ExpiresAt: now})
			if err != nil {
				failed.Add(1)
			} else {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 4 || ok.Load() != 46 {
		t.Fatalf("want 4 failures (duplicate ids) and 46 successes, got %d and %d", failed.Load(), ok.Load())
	}
}

// BenchmarkRedeemAndIssue is the token endpoint's storage work: redeem a
// code, then store an access token.
func BenchmarkRedeemAndIssue(b *testing.B) {
	s := open(b)
	now := time.Now()
	for i := range b.N {
		newGrant(s, b, fmt.Sprint(i), now)
	}
	var next atomic.Int64
	b.ResetTimer()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			i := next.Add(1) - 1
			c, err := s.RedeemCode(ctx, Hash(fmt.Sprint("code-", i)), now)
			if err != nil {
				b.Error(err)
				return
			}
			if err := s.AddTokens(ctx, &AccessToken{Hash: Hash(fmt.Sprint("at", i)), GrantID: c.GrantID, JTI: "j", IssuedAt: now, ExpiresAt: now}, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
