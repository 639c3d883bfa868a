package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// jaegerBinary is bin/jaeger at the repository's root, built from
// tools/jaeger when missing (make jaeger builds it too).
func jaegerBinary(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "jaeger")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	buildJaeger.Do(func() {
		t.Logf("building %s from tools/jaeger (make jaeger; about 10 minutes the first time)", bin)
		cmd := exec.Command("go", "build", "-o", bin, "github.com/jaegertracing/jaeger/cmd/jaeger")
		cmd.Dir = filepath.Join(root, "tools", "jaeger")
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildJaegerErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildJaegerErr != nil {
		t.Fatalf("bin/jaeger is missing and could not be built from tools/jaeger (run make jaeger): %v", buildJaegerErr)
	}
	return bin
}

var (
	buildJaeger    sync.Once
	buildJaegerErr error
)

// freePorts returns n free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var lns []net.Listener
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// jaeger is a running Jaeger all-in-one (v2): its OTLP/HTTP receiver's
// base URL and its query API's.
type jaeger struct {
	otlp, query string
}

// startJaeger runs bin/jaeger on free loopback ports with memory storage
// until the test ends, and waits until its query API answers and its
// OTLP receiver accepts connections.
func startJaeger(t *testing.T, ctx context.Context) *jaeger {
	t.Helper()
	bin := jaegerBinary(t)
	p := freePorts(t, 3)
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [], exporters: [jaeger_storage_exporter]}
  telemetry: {metrics: {level: none}, traces: {level: none}, logs: {level: warn}}
extensions:
  jaeger_query:
    storage: {traces: mem}
    http: {endpoint: 127.0.0.1:%d}
    grpc: {endpoint: 127.0.0.1:%d}
  jaeger_storage:
    backends: {mem: {memory: {max_traces: 1000}}}
receivers:
  otlp: {protocols: {http: {endpoint: 127.0.0.1:%d}}}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
`, p[0], p[1], p[2])
	file := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "file:"+file)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { cmd.Wait(); close(ended) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-ended
	})
	j := &jaeger{otlp: fmt.Sprintf("http://127.0.0.1:%d", p[2]), query: fmt.Sprintf("http://127.0.0.1:%d", p[0])}
	poll(t, ctx, ended, "jaeger's query API and OTLP receiver", &logs, func() bool {
		resp, err := http.Get(j.query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p[2]))
		if err != nil {
			return false
		}
		c.Close()
		return resp.StatusCode == http.StatusOK
	})
	return j
}

// poll asks ok again at each tick until it holds, the process ends or
// ctx ends: the state polled is another process's (Jaeger's), which
// sends no event of its own.
func poll(t *testing.T, ctx context.Context, ended <-chan struct{}, what string, logs fmt.Stringer, ok func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-tick.C:
		case <-ended:
			t.Fatalf("waiting for %s: the process ended:\n%s", what, logs)
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v:\n%s", what, ctx.Err(), logs)
		}
	}
}

// jaegerTrace is a trace of Jaeger's query API (GET /api/traces/{id}).
type jaegerTrace struct {
	Spans []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		ProcessID     string `json:"processID"`
		References    []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

// span is a span of a Jaeger trace as the test reads it.
type span struct {
	id, name, service, parent string
	tags                      map[string]string
}

func (j *jaeger) trace(id string) ([]span, error) {
	resp, err := http.Get(j.query + "/api/traces/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/traces/%s: %d", id, resp.StatusCode)
	}
	var out struct {
		Data []jaegerTrace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	var spans []span
	for _, tr := range out.Data {
		for _, s := range tr.Spans {
			sp := span{id: s.SpanID, name: s.OperationName, service: tr.Processes[s.ProcessID].ServiceName, tags: map[string]string{}}
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" {
					sp.parent = r.SpanID
				}
			}
			for _, tg := range s.Tags {
				sp.tags[tg.Key] = fmt.Sprint(tg.Value)
			}
			spans = append(spans, sp)
		}
	}
	return spans, nil
}

// TestTracesInJaeger: a sign-in in the playground's window (the
// confidential demo, its caught navigation, the consent approved through
// the automation channel, the host's callback), with the OTEL_* variables
// pointed at a real Jaeger, is ONE trace in Jaeger's query API whose id
// the flow inspector shows: the host's caught navigation its root
// (service miniapp-host), the native-consent calls its children and the
// parents of the server's endpoint spans (service miniapp-host-server),
// the store calls under those, the completion with its callback
// (docs/deploy.md, "Traces"). It needs a display (xvfb-run -a, as make
// test runs).
func TestTracesInJaeger(t *testing.T) {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		t.Fatal("no display: run the test under xvfb-run -a (make test does)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	j := startJaeger(t, ctx)

	cmd := exec.Command(os.Args[0], "playground", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0",
		"--trace-ui", "http://127.0.0.1:16686/trace/{trace_id}")
	cmd.Env = childEnv("XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "OTEL_SERVICE_NAME=",
		telemetry.EnvEndpoint+"="+j.otlp, telemetry.EnvTracesEndpoint+"=", telemetry.EnvScheduleDelay+"=20")
	out := newLineLog()
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { cmd.Wait(); close(ended) }()
	t.Cleanup(func() {
		select {
		case <-ended:
		default:
			cmd.Process.Kill()
			<-ended
		}
	})
	out.wait(t, ctx, ended, "the playground's addresses", func(l string) bool { return strings.Contains(l, "Ctrl-C stops everything") })
	text := out.String()
	field := func(re string) string {
		m := regexp.MustCompile(`(?m)` + re).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("the playground printed no %s:\n%s", re, text)
		}
		return m[1]
	}
	wsURL, token := field(`^automation channel\s+(ws://\S+)$`), field(`^automation token\s+(\S+)$`)
	launcher := field(`^launcher\s+(http://127\.0\.0\.1:\d+)/#token=`)
	demo := field(`^demo Miniapp\s+(http://127\.0\.0\.1:\d+)  --id demo-confidential`)

	c, err := client.Dial(ctx, wsURL, token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Open(ctx, demo, "demo-confidential"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitFor(ctx, client.Kind("consent.shown")); err != nil {
		t.Fatal(err)
	}
	if err := c.Approve(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	var fe struct {
		Flow    string `json:"flow"`
		Outcome string `json:"outcome"`
	}
	ev, err := c.WaitFor(ctx, client.Kind("flow.ended"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ev.Data, &fe); err != nil || fe.Outcome != "completed" {
		t.Fatalf("flow.ended %s (%v), want completed", ev.Data, err)
	}

	// The inspector's flow list names the flow's trace.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, launcher+"/api/flows", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Flows []struct {
			ID      string `json:"id"`
			TraceID string `json:"trace_id"`
		} `json:"flows"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	traceID := ""
	for _, f := range list.Flows {
		if f.ID == fe.Flow {
			traceID = f.TraceID
		}
	}
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(traceID) {
		t.Fatalf("GET /api/flows: flow %s has trace id %q (%v), want 32 hex digits: %+v", fe.Flow, traceID, err, list)
	}

	// The server's audit events of the sign-in carry the same trace id
	// (its native-consent calls brought the traceparent), which is how
	// the launcher's Server events pane selects this flow.
	var evs struct {
		Events []struct {
			Kind    string `json:"kind"`
			TraceID string `json:"trace_id"`
		} `json:"events"`
	}
	poll(t, ctx, ended, "the sign-in's server events with trace "+traceID, stringer(func() string { return fmt.Sprintf("%+v", evs) }), func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, launcher+"/api/server-events?client=demo-confidential", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if json.NewDecoder(resp.Body).Decode(&evs) != nil {
			return false
		}
		seen := map[string]bool{}
		for _, e := range evs.Events {
			if e.TraceID == traceID {
				seen[e.Kind] = true
			}
		}
		return seen["signin.started"] && seen["consent.approved"]
	})

	// Jaeger holds the whole trace once both processes' batches arrived.
	want := []string{"navigation.caught", "native_consent.begin", "native_consent.decide", "completion", "completion.callback",
		"POST /native/requests", "POST /native/requests/{id}/decision", "check.project_approval", "consent.build", "consent.decide", "store.client"}
	var spans []span
	poll(t, ctx, ended, "trace "+traceID+" with spans "+strings.Join(want, ", ")+" in Jaeger", stringer(func() string {
		return fmt.Sprintf("%+v\n%s", spans, stderr.String())
	}), func() bool {
		spans, _ = j.trace(traceID)
		have := map[string]bool{}
		for _, s := range spans {
			have[s.name] = true
		}
		for _, w := range want {
			if !have[w] {
				return false
			}
		}
		return true
	})
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.id] = s
	}
	roots := 0
	for _, s := range spans {
		p := byID[s.parent]
		switch {
		case s.parent == "":
			roots++
			if s.name != "navigation.caught" || s.service != telemetry.HostService {
				t.Errorf("root span %s of %s, want navigation.caught of %s", s.name, s.service, telemetry.HostService)
			}
		case strings.HasPrefix(s.name, "native_consent."), s.name == "completion":
			if p.name != "navigation.caught" || s.service != telemetry.HostService {
				t.Errorf("%s (%s) is under %q, want the caught navigation", s.name, s.service, p.name)
			}
		case strings.HasPrefix(s.name, "POST /native/requests"):
			if !strings.HasPrefix(p.name, "native_consent.") || p.service != telemetry.HostService || s.service != telemetry.ServerService {
				t.Errorf("server span %s (%s) is under %q of %s, want a native-consent call of the host", s.name, s.service, p.name, p.service)
			}
		case strings.HasPrefix(s.name, "store."):
			for strings.HasPrefix(p.name, "check.") || strings.HasPrefix(p.name, "consent.") {
				p = byID[p.parent]
			}
			if !strings.HasPrefix(p.name, "POST /native/") || s.service != telemetry.ServerService {
				t.Errorf("store span %s is under %q, want a native-consent endpoint's span", s.name, p.name)
			}
		}
		for k, v := range s.tags {
			if strings.Contains(v, "code=") || strings.Contains(k, "secret") || strings.Contains(k, "verifier") {
				t.Errorf("span %s carries %s=%s", s.name, k, v)
			}
		}
	}
	if roots != 1 {
		t.Errorf("trace %s has %d roots, want the caught navigation alone", traceID, roots)
	}
	cancel()
}

// stringer is a fmt.Stringer of a function.
type stringer func() string

func (s stringer) String() string { return s() }
