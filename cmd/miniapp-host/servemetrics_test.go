package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/telemetry/telemetrytest"
)

// TestServeMetrics: serve --metrics-addr prints the metrics' URL and
// serves Prometheus' exposition there, with the requests it answered.
func TestServeMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, errs, done := startServe(t, ctx, env{args: []string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0",
		"--metrics-addr", "127.0.0.1:0"}})
	issuer, metricsURL := printed(t, out.String(), "issuer"), printed(t, out.String(), "metrics")
	if !strings.HasPrefix(metricsURL, "http://127.0.0.1:") || strings.HasPrefix(metricsURL, "http://127.0.0.1:0/") || !strings.HasSuffix(metricsURL, "/metrics") {
		t.Fatalf("metrics line %q, want http://127.0.0.1:PORT/metrics with the bound port", metricsURL)
	}
	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range []string{`miniapp_host_http_requests_total{code="200",method="GET",role="service",route="/.well-known/openid-configuration"} 1`,
		"# TYPE miniapp_host_http_request_duration_seconds histogram", "go_goroutines ", "process_cpu_seconds_total "} {
		if !strings.Contains(string(body), w) {
			t.Errorf("the metrics lack %q:\n%s", w, body)
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}

// TestServeRefusesMetricsAddress: a metrics address off loopback without
// --metrics-public, and one another process holds, are usage errors naming
// --metrics-addr, the address and the fix; nothing is printed on stdout.
func TestServeRefusesMetricsAddress(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"every interface", []string{"--metrics-addr", "0.0.0.0:9464"}, []string{`--metrics-addr "0.0.0.0:9464"`, "not a loopback address", "--metrics-public", "127.0.0.1:9464"}},
		{"no host", []string{"--metrics-addr", ":9464"}, []string{`--metrics-addr ":9464"`, "not a loopback address", "--metrics-public"}},
		{"no port", []string{"--metrics-addr", "localhost"}, []string{`--metrics-addr "localhost"`, "HOST:PORT"}},
		{"taken", []string{"--metrics-addr", held.Addr().String()}, []string{`--metrics-addr "` + held.Addr().String() + `"`, "another process may hold it", "choose another"}},
		{"taken and public", []string{"--metrics-addr", held.Addr().String(), "--metrics-public"}, []string{`--metrics-addr "` + held.Addr().String() + `"`, "another process may hold it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0"}, tc.args...)
			code := run(t.Context(), env{args: args, stdout: &out, stderr: &errs, getenv: func(string) string { return "" }})
			if code != exitUsage || out.Len() != 0 {
				t.Fatalf("exit %d, want %d and nothing printed: %s %s", code, exitUsage, out.String(), errs.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errs.String(), w) {
					t.Errorf("error lacks %q:\n%s", w, errs.String())
				}
			}
		})
	}
}

// TestServeRefusesOTLPEndpoint: a malformed OTEL_EXPORTER_OTLP_ENDPOINT
// (or its traces-specific variable) is a usage error naming the
// variable, the rule and the fix, before anything is served.
func TestServeRefusesOTLPEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, v, value string
	}{
		{"no scheme", "OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"},
		{"traces, not http", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://127.0.0.1:4317"},
		{"bad port", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:70000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := []string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0"}
			code := run(t.Context(), env{args: args, stdout: &out, stderr: &errs,
				getenv: func(k string) string { return map[string]string{tc.v: tc.value}[k] }})
			if code != exitUsage || out.Len() != 0 {
				t.Fatalf("exit %d, want %d and nothing printed: %s %s", code, exitUsage, out.String(), errs.String())
			}
			for _, w := range []string{tc.v + ` "` + tc.value + `"`, "http://127.0.0.1:4318", "unset it"} {
				if !strings.Contains(errs.String(), w) {
					t.Errorf("error lacks %q:\n%s", w, errs.String())
				}
			}
		})
	}
}

// TestPlaygroundRefusesTraceUI: a --trace-ui (or MINIAPP_HOST_TRACE_UI)
// that is no http or https URL with {trace_id} is a usage error naming
// it, with an example.
func TestPlaygroundRefusesTraceUI(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		env    string
		source string
	}{
		{"flag without placeholder", []string{"--trace-ui", "http://localhost:16686/trace/"}, "", "--trace-ui"},
		{"env not http", nil, "javascript:alert(1)//{trace_id}", "MINIAPP_HOST_TRACE_UI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"playground", "--no-window", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0"}, tc.args...)
			code := run(t.Context(), env{args: args, stdout: &out, stderr: &errs,
				getenv: func(k string) string { return map[string]string{"MINIAPP_HOST_TRACE_UI": tc.env}[k] }})
			if code != exitUsage || out.Len() != 0 {
				t.Fatalf("exit %d, want %d and nothing printed: %s %s", code, exitUsage, out.String(), errs.String())
			}
			for _, w := range []string{tc.source, "{trace_id}", "http://localhost:16686/trace/{trace_id}"} {
				if !strings.Contains(errs.String(), w) {
					t.Errorf("error lacks %q:\n%s", w, errs.String())
				}
			}
		})
	}
}

// TestServeTraces: serve with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_SERVICE_NAME prints the traces URL and exports a span per request,
// named by its route pattern, under that service name; at exit the last
// spans are flushed.
func TestServeTraces(t *testing.T) {
	sink := telemetrytest.NewSink(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	vars := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": sink.URL, "OTEL_SERVICE_NAME": "auth-eu-1"}
	out, errs, done := startServe(t, ctx, env{args: []string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0"},
		getenv: func(k string) string { return vars[k] }})
	if got := printed(t, out.String(), "traces"); got != sink.URL {
		t.Errorf("traces line %q, want %s", got, sink.URL)
	}
	for _, p := range []string{"/healthz", "/.well-known/openid-configuration?x=1"} {
		resp, err := http.Get(printed(t, out.String(), "issuer") + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cancel() // the spans are flushed at exit: no wait for the batch's delay
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	if !sink.Wait(wctx, func(spans []telemetrytest.Span, _ int) bool {
		for _, s := range spans {
			if s.Name == "GET /.well-known/openid-configuration" && s.Service == "auth-eu-1" && s.Attrs["http.response.status_code"] == "200" {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no span of the discovery request of service auth-eu-1: %+v", sink.Spans())
	}
	for _, s := range sink.Spans() {
		if strings.Contains(s.Name, "?") || strings.Contains(s.Name, "healthz") {
			t.Errorf("span %q: a query in a name, or a probe's span", s.Name)
		}
	}
}

// TestServeTracesUnreachable: with an OTLP endpoint that refuses
// connections serve answers as ever, and at exit says how many spans it
// dropped and which collector to check.
func TestServeTracesUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/v1/traces"
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, errs, done := startServe(t, ctx, env{args: []string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0"},
		getenv: func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": refused}[k] }})
	resp, err := http.Get(printed(t, out.String(), "issuer") + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("discovery: %d", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, w := range []string{"spans dropped", "in exports that failed", refused} {
		if !strings.Contains(errs.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs.String())
		}
	}
}
