package authserver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMetricsDocs: the scrape configuration and the alerting rules of
// docs/deploy.md ("Metrics") are what Prometheus' promtool accepts, and
// every metric the rules and the table name is one the server exposes.
func TestMetricsDocs(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian's prometheus package) is not installed: scripts/deps.sh installs it (%v)", err)
	}
	raw, err := os.ReadFile(filepath.Join("..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "\n## Metrics\n")
	if start < 0 {
		t.Fatal(`docs/deploy.md has no "## Metrics" section`)
	}
	sec := doc[start+1:]
	if end := strings.Index(sec, "\n## "); end >= 0 {
		sec = sec[:end]
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(sec, -1)
	if len(blocks) != 2 {
		t.Fatalf("the Metrics section has %d yaml blocks, want the scrape configuration and the rules", len(blocks))
	}
	dir := t.TempDir()
	rules, config := filepath.Join(dir, "rules.yml"), filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(rules, []byte(blocks[1][1]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(blocks[0][1]+"rule_files: [rules.yml]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", rules}, {"check", "config", config}} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Every miniapp_host_ name of the section is exposed (a histogram's
	// by its _bucket, _count or _sum).
	e := startMetered(t)
	// One request of each kind the section names, so that each metric has a series.
	v, c := pkce(t)
	e.publicTokens(e.authParams(c), v)
	if st, _ := e.exchange("no-such-code", v); st != 400 {
		t.Fatalf("an unknown code: %d, want 400", st)
	}
	exposed := map[string]bool{}
	for k := range scrape(t, e) {
		exposed[k[:strings.IndexByte(k, '{')]] = true
	}
	for _, m := range regexp.MustCompile(`miniapp_host_[a-z_]+`).FindAllString(sec, -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
		// The notifications between instances exist on PostgreSQL only
		// (TestPrometheusScrapesInstances queries them).
		if !exposed[base] && base != "miniapp_host_store_notifications_sent_total" && base != "miniapp_host_store_notifications_received_total" {
			t.Errorf("docs/deploy.md names %s, which the server does not expose", m)
		}
	}
}
