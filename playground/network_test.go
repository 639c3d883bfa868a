package playground

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/miniapp-host/miniapp-host/netshape"
)

// TestLaunchNetworkConditions: each launch hands the window its own
// network conditions: a profile's throttle and mock rules when it names
// them, else the playground's (--network, --mock); a profile's bad rule
// launches nothing.
func TestLaunchNetworkConditions(t *testing.T) {
	o := &opener{}
	file := filepath.Join(t.TempDir(), "profiles.json")
	fast, _ := netshape.ParseThrottle("fast-3g")
	p := start(t, Config{Opener: o, Profiles: file, Network: netshape.Conditions{Throttle: fast}})
	demo := entry(t, p, DemoPublicID)
	prof := fmt.Sprintf(`{"profiles": [
	  {"name": "slow", "origin": %q, "id": %q, "network": "slow-3g", "mocks": [{"url": "http://127.0.0.1:*/api/*", "status": 500}]},
	  {"name": "plain", "origin": %q, "id": %q}
	]}`, demo.Origin, demo.ID, demo.Origin, demo.ID)
	if err := os.WriteFile(file, []byte(prof), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	last := func() OpenRequest {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.mounts[len(o.mounts)-1]
	}
	if _, err := p.Launch(ctx, demo.Origin, demo.ID); err != nil {
		t.Fatal(err)
	}
	if n := last().Network; n.Throttle.Name != "fast-3g" || len(n.Mocks) != 0 {
		t.Errorf("a launch without a profile: %+v; want the playground's fast-3g", n)
	}
	if _, err := p.LaunchProfile(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	n := last().Network
	if n.Throttle.Name != "slow-3g" || len(n.Mocks) != 1 || !n.Mocks[0].Matches("GET", "http://127.0.0.1:8701/api/x") || n.Mocks[0].Status != 500 {
		t.Errorf("the profile's launch: %+v; want its slow-3g and its rule", n)
	}
	if _, err := p.LaunchProfile(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	if n := last().Network; n.Throttle.Name != "fast-3g" {
		t.Errorf("a profile without conditions: %+v; want the playground's", n)
	}
}
