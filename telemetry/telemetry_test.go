package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/telemetry"
	"github.com/miniapp-host/miniapp-host/telemetry/telemetrytest"
)

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestEndpoint: the traces URL of the standard variables, the
// traces-specific one first; a malformed one is an *EnvError naming the
// variable, the rule and the fix.
func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		vars      map[string]string
		want      string
		errVar    string
		errDetail string
	}{
		{nil, "", "", ""},
		{map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:4318"}, "http://127.0.0.1:4318/v1/traces", "", ""},
		{map[string]string{telemetry.EnvEndpoint: "https://collector.example/otlp/"}, "https://collector.example/otlp/v1/traces", "", ""},
		{map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:4318", telemetry.EnvTracesEndpoint: "http://127.0.0.1:9/custom"}, "http://127.0.0.1:9/custom", "", ""},
		{map[string]string{telemetry.EnvEndpoint: "localhost:4318"}, "", telemetry.EnvEndpoint, "http or https URL"},
		{map[string]string{telemetry.EnvTracesEndpoint: "ftp://127.0.0.1/x"}, "", telemetry.EnvTracesEndpoint, "http or https URL"},
		{map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:4318/?a=b"}, "", telemetry.EnvEndpoint, "no user, query or fragment"},
		{map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:99999"}, "", telemetry.EnvEndpoint, "port"},
		{map[string]string{telemetry.EnvEndpoint: "http://"}, "", telemetry.EnvEndpoint, "with a host"},
	} {
		got, err := telemetry.Endpoint(envOf(tc.vars))
		var ee *telemetry.EnvError
		switch {
		case tc.errVar == "" && (err != nil || got != tc.want):
			t.Errorf("%v: %q, %v; want %q", tc.vars, got, err, tc.want)
		case tc.errVar != "" && (!errors.As(err, &ee) || ee.Var != tc.errVar || !strings.Contains(err.Error(), tc.errDetail) || ee.Fix == ""):
			t.Errorf("%v: %q, %v; want an error naming %s and %q with a fix", tc.vars, got, err, tc.errVar, tc.errDetail)
		}
	}
	if _, err := telemetry.Start(context.Background(), telemetry.Options{Getenv: envOf(map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:4318",
		telemetry.EnvMaxQueueSize: "-3"})}); err == nil || !strings.Contains(err.Error(), telemetry.EnvMaxQueueSize) {
		t.Errorf("a negative queue size: %v, want an error naming %s", err, telemetry.EnvMaxQueueSize)
	}
}

// TestCheckTraceUI: a trace UI template is an http or https URL with the
// {trace_id} placeholder.
func TestCheckTraceUI(t *testing.T) {
	for _, ok := range []string{"http://localhost:16686/trace/{trace_id}", "https://grafana.example/explore?traceId={trace_id}"} {
		if err := telemetry.CheckTraceUI(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://localhost:16686/trace/", "localhost:16686/{trace_id}", "javascript:alert(1)//{trace_id}", "file:///{trace_id}"} {
		if err := telemetry.CheckTraceUI(bad); err == nil || !strings.Contains(err.Error(), "16686/trace/{trace_id}") {
			t.Errorf("%s: %v, want a refusal with an example", bad, err)
		}
	}
	if got := telemetry.TraceURL("http://localhost:16686/trace/{trace_id}", "0af7651916cd43dd8448eb211c80319c"); got != "http://localhost:16686/trace/0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("TraceURL: %s", got)
	}
}

// TestOffCostsNothing: without an endpoint the provider is off, its
// spans are OpenTelemetry's no-op ones, and nothing is injected.
func TestOffCostsNothing(t *testing.T) {
	tp, err := telemetry.Start(context.Background(), telemetry.Options{Getenv: envOf(nil)})
	if err != nil || tp.Enabled() {
		t.Fatalf("%v %v", err, tp.Enabled())
	}
	ctx, span := tp.Tracer("t").Start(context.Background(), "x")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("an off provider's span records")
	}
	h := http.Header{}
	telemetry.Inject(ctx, h)
	if len(h) != 0 || telemetry.TraceID(ctx) != "" {
		t.Errorf("an off provider's context injects %v", h)
	}
	// One allocation at most: the context that carries the no-op span.
	tr := tp.Tracer("t")
	if allocs := testing.AllocsPerRun(100, func() { _, s := tr.Start(context.Background(), "x"); s.End() }); allocs > 1 {
		t.Errorf("an off span allocates %v times", allocs)
	}
}

// TestPropagation: a span's context travels as a W3C traceparent, and
// the spans are exported over OTLP/HTTP with the service's name.
func TestPropagation(t *testing.T) {
	sink := telemetrytest.NewSink(t)
	tp, err := telemetry.Start(context.Background(), telemetry.Options{Service: "svc-a", Getenv: envOf(map[string]string{
		telemetry.EnvTracesEndpoint: sink.URL, telemetry.EnvServiceName: "svc-b"})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("t").Start(context.Background(), "root")
	h := http.Header{}
	telemetry.Inject(ctx, h)
	if !strings.HasPrefix(h.Get("Traceparent"), "00-"+root.SpanContext().TraceID().String()+"-") {
		t.Errorf("traceparent %q", h.Get("Traceparent"))
	}
	remote := telemetry.Extract(context.Background(), h)
	if telemetry.TraceID(remote) != root.SpanContext().TraceID().String() {
		t.Errorf("extracted trace %q", telemetry.TraceID(remote))
	}
	root.End()
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := sink.Spans()
	if len(spans) != 1 || spans[0].Name != "root" || spans[0].Service != "svc-b" || tp.Exported() != 1 {
		t.Errorf("received %+v (exported %d), want the root span of svc-b (OTEL_SERVICE_NAME wins)", spans, tp.Exported())
	}
}

// TestSampler: OTEL_TRACES_SAMPLER and its argument pick the sampler; a
// value the SDK would silently replace by its default is an *EnvError
// naming the variable, and Start refuses it.
func TestSampler(t *testing.T) {
	for _, tc := range []struct {
		sampler, arg string
		want         string // the sampler's Description
		errVar       string
	}{
		{"", "", "ParentBased{root:AlwaysOnSampler", ""},
		{"always_on", "", "AlwaysOnSampler", ""},
		{"always_off", "", "AlwaysOffSampler", ""},
		{"parentbased_always_off", "", "ParentBased{root:AlwaysOffSampler", ""},
		{"traceidratio", "0.25", "TraceIDRatioBased{0.25}", ""},
		{"parentbased_traceidratio", "", "ParentBased{root:TraceIDRatioBased{1}", ""},
		{"traceidratio", "1.5", "", telemetry.EnvSamplerArg},
		{"parentbased_traceidratio", "a quarter", "", telemetry.EnvSamplerArg},
		{"jaeger_remote", "", "", telemetry.EnvSampler},
		{"Always_On", "", "", telemetry.EnvSampler},
	} {
		vars := map[string]string{telemetry.EnvSampler: tc.sampler, telemetry.EnvSamplerArg: tc.arg}
		s, err := telemetry.Sampler(envOf(vars))
		var ee *telemetry.EnvError
		switch {
		case tc.errVar == "" && (err != nil || !strings.HasPrefix(s.Description(), tc.want)):
			t.Errorf("%q %q: %v, %v; want %s", tc.sampler, tc.arg, s, err, tc.want)
		case tc.errVar != "" && (!errors.As(err, &ee) || ee.Var != tc.errVar || ee.Fix == ""):
			t.Errorf("%q %q: %v; want an error naming %s with a fix", tc.sampler, tc.arg, err, tc.errVar)
		}
	}
	vars := map[string]string{telemetry.EnvEndpoint: "http://127.0.0.1:4318", telemetry.EnvSampler: "xray"}
	if _, err := telemetry.Start(context.Background(), telemetry.Options{Getenv: envOf(vars)}); err == nil ||
		!strings.Contains(err.Error(), telemetry.EnvSampler) {
		t.Errorf("Start with sampler xray: %v, want an error naming %s", err, telemetry.EnvSampler)
	}
}
