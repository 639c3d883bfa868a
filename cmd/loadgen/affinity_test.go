package main

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// hostCount counts the requests of each listener (host:port) it carries.
type hostCount struct {
	base http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (h *hostCount) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.n[req.URL.Host]++
	h.mu.Unlock()
	return h.base.RoundTrip(req)
}

// TestAffinity: with -affinity, every request of a client's flows
// (submit, decision, token) goes to that client's instance, w mod n, and
// the flows succeed there, as behind a balancer with session affinity;
// without it the requests of one client go to every instance in turn.
func TestAffinity(t *testing.T) {
	g, closeAll, err := newGen(context.Background(), storetest.Postgres(t), 2, 4)
	t.Cleanup(closeAll)
	if err != nil {
		t.Fatal(err)
	}
	rr := g.hc.Transport.(*roundRobin)
	counts := &hostCount{base: rr.base, n: map[string]int{}}
	rr.base = counts
	flows := func(g *gen) {
		t.Helper()
		for range 3 {
			cs, err := g.codes("bank_accounts:read", 1)
			if err == nil {
				err = g.exchange(cs[0])
			}
			if err != nil {
				t.Fatalf("flow: %v", err)
			}
		}
	}
	flows(g.worker(1))
	if counts.n[rr.targets[0]] == 0 || counts.n[rr.targets[1]] == 0 {
		t.Fatalf("without affinity, requests per instance %v; want both instances used", counts.n)
	}

	g.affinity = true
	for w := range 4 {
		counts.mu.Lock()
		counts.n = map[string]int{}
		counts.mu.Unlock()
		flows(g.worker(w))
		want := rr.targets[w%2]
		if len(counts.n) != 1 || counts.n[want] != 9 {
			t.Fatalf("client %d with affinity: requests per instance %v; want all 9 to %s", w, counts.n, want)
		}
	}
}
