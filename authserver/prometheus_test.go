package authserver_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// prometheusServer is a real Prometheus server (Debian's prometheus)
// scraping targets every second, on a loopback port, with its data in the
// test's temporary directory.
type prometheusServer struct {
	t    *testing.T
	base string // http://127.0.0.1:PORT
}

// startPrometheus starts Prometheus scraping the metrics listeners
// targets (HOST:PORT) and waits until it is ready (GET /-/ready).
func startPrometheus(t *testing.T, targets ...string) *prometheusServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus (Debian's prometheus package) is not installed: scripts/deps.sh installs it (%v)", err)
	}
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, a := range targets {
		quoted[i] = strconv.Quote(a)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: miniapp-host
    metrics_path: /metrics
    static_configs:
      - targets: [%s]
`, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// A free loopback port for its web API: Prometheus prints no port it
	// chose itself.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs syncBuffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // it dies with a killed test binary
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	p := &prometheusServer{t: t, base: "http://" + addr}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited: %v\n%s", err, logs.String())
		default:
		}
		if resp, err := http.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within a minute:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling its readiness, an observable state
	}
}

// query runs an instant query through Prometheus' HTTP API
// (/api/v1/query) and returns each result's value by its instance label.
func (p *prometheusServer) query(q string) (map[string]float64, error) {
	resp, err := http.Get(p.base + "/api/v1/query?" + url.Values{"query": {q}}.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, body.Error)
	}
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v", q, r.Value)
		}
		out[r.Metric["instance"]] = v
	}
	return out, nil
}

// await polls q until ok accepts its result, as Prometheus scrapes every
// second; it fails after a minute with the last result.
func (p *prometheusServer) await(q string, ok func(map[string]float64) bool) map[string]float64 {
	p.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := p.query(q)
		if err == nil && ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("Prometheus' answer to %s never came: last %v (error %v)", q, got, err)
		}
		time.Sleep(100 * time.Millisecond) // the next scrape is at most a second away
	}
}

// TestPrometheusScrapesInstances: a real Prometheus server scrapes two
// instances on one PostgreSQL database, each on its own metrics listener,
// and its query API sees what the test did on each: two native sign-ins
// and token exchanges on the first, three on the second, a replayed code
// on the first (refused invalid_grant, its grant revoked), whose
// notification the second received; and Go's runtime metrics of both.
func TestPrometheusScrapesInstances(t *testing.T) {
	db := storetest.Postgres(t)
	instance := func() *env {
		return startWith(t, db, &clock{t: time.Now()}, func(c *authserver.Config) { c.MetricsAddr = "127.0.0.1:0" })
	}
	a, b := instance(), instance()
	ia, ib := a.srv.ListenAddrs().Metrics, b.srv.ListenAddrs().Metrics
	if ia == "" || ib == "" || ia == ib {
		t.Fatalf("metrics listeners %q and %q, want two", ia, ib)
	}
	prom := startPrometheus(t, ia, ib)

	flows := func(e *env, n int) (code, verifier string) {
		for range n {
			v, c := pkce(t)
			code = e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
			if st, m := e.exchange(code, v); st != http.StatusOK {
				t.Fatalf("token: %d %v", st, m)
			}
			verifier = v
		}
		return code, verifier
	}
	code, v := flows(a, 2)
	flows(b, 3)
	if st, m := a.exchange(code, v); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("replayed code: %d %v, want 400 invalid_grant", st, m)
	}

	want := func(wa, wb float64) func(map[string]float64) bool {
		return func(got map[string]float64) bool { return got[ia] == wa && got[ib] == wb }
	}
	prom.await(`up{job="miniapp-host"}`, want(1, 1))
	prom.await(`miniapp_host_tokens_issued_total{grant_type="authorization_code"}`, want(2, 3))
	prom.await(`miniapp_host_signins_total{flow="native",outcome="completed"}`, want(2, 3))
	prom.await(`sum by (instance) (miniapp_host_http_requests_total{route="/oauth/token",code="200"})`, want(2, 3))
	prom.await(`sum by (instance) (miniapp_host_oauth_refusals_total{route="/oauth/token",error="invalid_grant"})`,
		func(got map[string]float64) bool { _, onB := got[ib]; return got[ia] == 1 && !onB })
	// The revocation of the replayed code's grant reached the second
	// instance as a notification, with its lag.
	prom.await(`miniapp_host_store_notifications_received_total{kind="grant"}`, func(got map[string]float64) bool { return got[ib] >= 1 })
	prom.await(`miniapp_host_store_notification_lag_seconds_count`, func(got map[string]float64) bool { return got[ib] >= 1 })
	prom.await(`sum by (instance) (miniapp_host_store_notifications_sent_total{kind="grant"})`, func(got map[string]float64) bool { return got[ia] >= 1 })
	// PostgreSQL's batchers and Go's runtime, on each.
	prom.await(`sum by (instance) (miniapp_host_store_batch_size_count)`, func(got map[string]float64) bool { return got[ia] > 0 && got[ib] > 0 })
	prom.await(`go_goroutines`, func(got map[string]float64) bool { return got[ia] > 0 && got[ib] > 0 })
}
