package launchprofile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNetworkConditionsInProfiles: a profile may carry a throttle and
// mock rules, which it launches with; a file without them (one written
// before they existed) reads as it did; a bad throttle or rule is reported
// with its profile and field, and kept in the file.
func TestNetworkConditionsInProfiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.json")
	hand := `{"profiles": [
  {"name": "old", "origin": "http://127.0.0.1:8701", "id": "demo-public", "device": "iphone-15"},
  {"name": "slow", "origin": "http://127.0.0.1:8701", "id": "demo-public", "network": "slow-3g",
   "mocks": [{"method": "GET", "url": "http://127.0.0.1:*/api/*", "status": 503, "headers": {"Retry-After": "5"}, "body": "busy", "delay": "100ms"}]},
  {"name": "typo-net", "origin": "http://127.0.0.1:8701", "id": "demo-public", "network": "slow-4g"},
  {"name": "bad-rule", "origin": "http://127.0.0.1:8701", "id": "demo-public", "mocks": [{"url": "https://127.0.0.1/*"}]},
  {"name": "bad-member", "origin": "http://127.0.0.1:8701", "id": "demo-public", "mocks": [{"url": "http://a/", "stauts": 500}]}
]}
`
	if err := os.WriteFile(path, []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Profiles) != 2 {
		t.Fatalf("usable profiles %+v; problems %v", f.Profiles, f.Problems)
	}
	old, _ := f.Get("old")
	if c, err := old.Conditions(); err != nil || !c.IsZero() {
		t.Errorf("a profile without conditions: %+v, %v; want none", c, err)
	}
	slow, _ := f.Get("slow")
	c, err := slow.Conditions()
	if err != nil || c.Throttle.Name != "slow-3g" || c.Throttle.Latency != 2*time.Second || len(c.Mocks) != 1 ||
		!c.Mocks[0].Matches("GET", "http://127.0.0.1:8701/api/orders") || c.Mocks[0].Matches("POST", "http://127.0.0.1:8701/api/orders") {
		t.Errorf("slow: %+v, %v", c, err)
	}
	var problems []string
	for _, p := range f.Problems {
		problems = append(problems, p.Error())
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{
		`launch profile typo-net: network: network "slow-4g": use offline, slow-3g, fast-3g`,
		`launch profile bad-rule: mocks/0/url: "https://127.0.0.1/*": an https request reaches the host's proxy as a tunnel`,
		`launch profile #5: profile: json: unknown field "stauts"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	// Saving another profile keeps every entry, the conditions included.
	if err := f.Put(Profile{Name: "new", Origin: "http://127.0.0.1:8701", ID: "demo-public", Network: "100ms/800/800"}); err != nil {
		t.Fatal(err)
	}
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Profiles) != 3 || len(g.Problems) != 3 {
		t.Fatalf("after save: %d profiles, %v", len(g.Profiles), g.Problems)
	}
	again, _ := g.Get("slow")
	if c, err := again.Conditions(); err != nil || len(c.Mocks) != 1 || c.Mocks[0].Status != 503 || c.Mocks[0].Headers["Retry-After"] != "5" {
		t.Errorf("slow after save: %+v, %v", c, err)
	}
	if err := f.Put(Profile{Name: "x", Origin: "http://127.0.0.1:8701", ID: "demo-public", Network: "fast"}); err == nil || !strings.Contains(err.Error(), "network") {
		t.Errorf("Put with a bad network: %v", err)
	}
}
