package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"flag"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

var benchProfile = flag.String("store.benchprofile", "", "write a CPU profile of the timed part of BenchmarkRedeemCode to this file")

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// prefill stores n redeemed grants, each with its code and access token,
// in large transactions: the tables a server has after n sign-ins, whose
// random keys spread over many more pages than any cache holds.
func prefill(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	now := time.Now()
	for done := 0; done < n; {
		k := min(5000, n-done)
		err := s.write(ctx, func(tx *sql.Tx) error {
			for range k {
				id := uuid.Must(uuid.NewV7()).String()
				if _, err := tx.Stmt(s.stmts.insertGrant).Exec(id, "c", "u", "", "bank_accounts:read", "[]", `["https://a"]`, "i", now.Unix(), now.Unix()); err != nil {
					return err
				}
				if _, err := tx.Exec(`INSERT INTO codes(hash, grant_id, client_id, redirect_uri, challenge, nonce, expires_at, used)
					VALUES(?, ?, 'c', 'https://a/cb', 'x', '', ?, 1)`, Hash(rand.Text()), id, now.Unix()); err != nil {
					return err
				}
				if _, err := tx.Stmt(s.stmts.insertAT).Exec(Hash(rand.Text()), id, rand.Text(), now.Unix(), now.Unix()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		done += k
	}
}

// BenchmarkRedeemCode is the store's part of a token request: read the
// code and its grant (both cached since the approval), then spend the
// code and store the access token in one write, from 32 concurrent
// requests, on a database that already holds 50,000 grants (with
// hash-only keys, the form before credkeys.go). cpu-us/op is the
// process's CPU per redemption (the writer goroutine's included). Run it
// with -benchtime under 16,384x, the grant cache's size: a server redeems
// a code seconds after the approval cached its grant.
func BenchmarkRedeemCode(b *testing.B) {
	s := open(b)
	prefill(b, s, 50_000)
	ctx := context.Background()
	now := time.Now()
	codes := make([][]byte, b.N)
	grants := make([]string, b.N)
	for i := range b.N {
		grants[i] = uuid.Must(uuid.NewV7()).String()
		code, err := NewSecret(rand.Reader, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		codes[i] = SecretKey(code)
		g := &Grant{ID: grants[i], ClientID: "c", SubjectID: "u", Scopes: []string{"bank_accounts:read"}, Audience: []string{"https://a"},
			InstallationID: "i", AuthTime: now, CreatedAt: now}
		if err := s.CreateGrant(ctx, g, &Code{Hash: codes[i], ClientID: "c", RedirectURI: "https://a/cb", Challenge: "x",
			ExpiresAt: now.Add(time.Hour)}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.SetParallelism(16) // 32 on 2 cores, as the side-by-side benchmark's clients
	b.ReportAllocs()
	if *benchProfile != "" {
		f, err := os.Create(*benchProfile)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			c, _, err := s.PeekCode(ctx, codes[i])
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := s.Grant(ctx, c.GrantID); err != nil {
				b.Error(err)
				return
			}
			jti, _ := NewJTI(rand.Reader, time.Now())
			key := AccessTokenKey(fakeJWS(`{"jti":"` + jti + `","iss":"https://as.example"}`))
			at := &AccessToken{Hash: key, GrantID: c.GrantID, JTI: jti, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := s.RedeemCodeFor(ctx, codes[i], now, at, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
}
