package oauth

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// TestExpiredEntriesLeaveFromTheFront: expiry takes the entries whose
// deadline passed from the front of the list and stops at the first live
// one, giving their quota back.
func TestExpiredEntriesLeaveFromTheFront(t *testing.T) {
	s := newExpirySet[int]()
	t0 := time.Unix(1_000_000, 0)
	for i := range 1000 {
		s.add(strconv.Itoa(i), []string{"k"}, t0.Add(time.Duration(i)*time.Second), i)
	}
	s.expire(t0.Add(499*time.Second + time.Millisecond)) // 0..499 are past their deadline
	if s.len() != 500 || s.used["k"] != 500 {
		t.Fatalf("after expiry: %d entries, %d charged; want 500 and 500", s.len(), s.used["k"])
	}
	if f := s.order.Front().Value.(*expiryEntry[int]); f.v != 500 {
		t.Fatalf("front is %d, want 500", f.v)
	}
	if _, ok := s.get("499", t0); ok {
		t.Fatal("an expired entry is still found")
	}
	if _, ok := s.get("999", t0.Add(2000*time.Second)); ok {
		t.Fatal("get returned an entry past its deadline")
	}
	s.expire(t0.Add(time.Hour))
	if s.len() != 0 || len(s.used) != 0 {
		t.Fatalf("everything expired: %d entries, quota map %v", s.len(), s.used)
	}
}

// TestPendingQuotas: each quota refuses only requests charged to it.
func TestPendingQuotas(t *testing.T) {
	ps := newPendingSet(pendingQuotas{perClient: 3, perSource: 2, browser: 100, perHost: 1, ttl: time.Minute})
	now := time.Unix(1_000_000, 0)
	n := 0
	browser := func(client, src string) error {
		n++
		return ps.add(&pending{id: fmt.Sprint(n), v: &validated{client: &store.Client{ID: client}}, source: src, expires: now.Add(time.Minute)}, now)
	}
	host := func(h string) error {
		n++
		return ps.add(&pending{id: fmt.Sprint(n), host: h, expires: now.Add(time.Minute)}, now)
	}
	for _, step := range []struct {
		err  error
		want string // "" for admitted, else a phrase of the refusal
	}{
		{browser("a", "1.1.1.1"), ""},
		{browser("a", "1.1.1.1"), ""},
		{browser("a", "1.1.1.1"), "from this source address"},
		{browser("b", "1.1.1.1"), "from this source address"},
		{browser("a", "2.2.2.2"), ""},
		{browser("a", "3.3.3.3"), "for this client"},
		{browser("b", "3.3.3.3"), ""},
		{host("h"), ""},
		{host("h"), "from this host"},
		{host("h2"), ""},
	} {
		switch {
		case step.want == "" && step.err != nil:
			t.Fatalf("refused: %v", step.err)
		case step.want != "" && (step.err == nil || !strings.Contains(step.err.Error(), step.want)):
			t.Fatalf("got %v, want a refusal %q", step.err, step.want)
		}
	}
	// Expiry gives the quotas back.
	now = now.Add(2 * time.Minute)
	if err := browser("a", "1.1.1.1"); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if ps.len() != 1 {
		t.Fatalf("after expiry %d requests held, want 1", ps.len())
	}
}

// BenchmarkPendingAdd: admitting a request (and deciding it) costs the
// same whether the set is empty or holds 100,000 live requests, and when
// each admission also expires an old one.
func BenchmarkPendingAdd(b *testing.B) {
	for _, held := range []int{0, 100_000} {
		for _, expiring := range []bool{false, true} {
			b.Run(fmt.Sprintf("held=%d/expiring=%v", held, expiring), func(b *testing.B) {
				ps := newPendingSet(pendingQuotas{perClient: 1 << 30, perSource: 1 << 30, browser: 1 << 30, perHost: 1 << 30, ttl: time.Minute})
				now := time.Unix(1_000_000, 0)
				v := &validated{client: &store.Client{ID: "c"}}
				for i := range held {
					ps.add(&pending{id: "h" + strconv.Itoa(i), v: v, source: strconv.Itoa(i % 250), expires: now.Add(time.Minute)}, now)
				}
				ids := make([]string, b.N)
				for i := range ids {
					ids[i] = strconv.Itoa(i)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if expiring {
						// Each step moves the clock so that one held request expires.
						now = now.Add(time.Minute / time.Duration(max(held, 1)))
					}
					if err := ps.add(&pending{id: ids[i], v: v, source: "s", expires: now.Add(time.Minute)}, now); err != nil {
						b.Fatal(err)
					}
					if !expiring {
						ps.take(ids[i], now)
					}
				}
			})
		}
	}
}
