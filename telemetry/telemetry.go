// Package telemetry is the OpenTelemetry tracing of the host and of the
// reference server (docs/deploy.md, "Traces"): a tracer provider that
// exports spans over OTLP/HTTP to the address of the standard variables
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, named
// by OTEL_SERVICE_NAME (or the caller's default) and sampled as the SDK's
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG say; and the W3C Trace
// Context propagation (https://www.w3.org/TR/trace-context/, the
// traceparent header) that makes one sign-in one trace across the host
// and the server.
//
// Without an endpoint tracing is off: Start returns a Provider whose
// tracers are OpenTelemetry's no-op ones, and a caller that checks
// Enabled skips its instrumentation altogether.
//
// No request waits on the exporter: ended spans enter a bounded queue
// without blocking; a span that finds the queue full, or whose export
// fails or times out (OTEL_BSP_EXPORT_TIMEOUT, 10 seconds by default), is
// dropped and counted (Dropped).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The standard variables Start reads (OpenTelemetry's "Environment
// Variable Specification" and "OTLP Exporter Configuration").
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvExportTimeout  = "OTEL_BSP_EXPORT_TIMEOUT"
	EnvScheduleDelay  = "OTEL_BSP_SCHEDULE_DELAY"
	EnvMaxQueueSize   = "OTEL_BSP_MAX_QUEUE_SIZE"
	EnvMaxBatchSize   = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
	EnvSampler        = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
)

// HostService is the service name of the host's spans.
const HostService = "miniapp-host"

// ServerService is the reference server's service name when
// OTEL_SERVICE_NAME is not set.
const ServerService = "miniapp-host-server"

// Defaults of the span queue (the OTEL_BSP_* variables override them).
const (
	DefaultExportTimeout = 10 * time.Second
	DefaultScheduleDelay = 5 * time.Second
	DefaultMaxQueueSize  = 2048
	DefaultMaxBatchSize  = 512
)

// ShutdownTimeout bounds the flush of the spans still queued at a clean
// exit (Provider.Shutdown with a context without deadline).
const ShutdownTimeout = 5 * time.Second

// Reasons a span is dropped (Dropped).
const (
	DropQueueFull    = "queue_full"    // the queue was full: the exporter is slower than the spans come
	DropExportFailed = "export_failed" // the export failed or timed out: the collector is unreachable or hangs
)

// EnvError is a variable Start refuses: its name, value, the rule it
// breaks and the fix.
type EnvError struct {
	Var, Value, Rule, Fix string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("%s %q: %s; %s", e.Var, e.Value, e.Rule, e.Fix)
}

// Options are what Start needs besides the environment.
type Options struct {
	// Service is the service name when OTEL_SERVICE_NAME is not set.
	Service string
	// FixedService ignores OTEL_SERVICE_NAME: the host's spans are always
	// HostService's, also when the reference server in the same process
	// (the playground) takes the variable's name.
	FixedService bool
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Sampler replaces the SDK's (OTEL_TRACES_SAMPLER, by default
	// parentbased_always_on); for tests.
	Sampler sdktrace.Sampler
}

// Endpoint is the OTLP/HTTP traces URL the variables give, "" when
// neither is set (tracing off). OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// used as it is; OTEL_EXPORTER_OTLP_ENDPOINT is a base URL to which
// /v1/traces is appended. Either must be an http or https URL with a
// host, without query or fragment; otherwise the error is an *EnvError.
func Endpoint(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	name, v := EnvTracesEndpoint, strings.TrimSpace(getenv(EnvTracesEndpoint))
	if v == "" {
		name, v = EnvEndpoint, strings.TrimSpace(getenv(EnvEndpoint))
	}
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", &EnvError{Var: name, Value: v, Rule: "not an http or https URL with a host and no user, query or fragment",
			Fix: "give the collector's OTLP/HTTP address such as http://127.0.0.1:4318, or unset it to turn tracing off"}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", &EnvError{Var: name, Value: v, Rule: "its port is not a number from 1 to 65535",
				Fix: "give the collector's OTLP/HTTP address such as http://127.0.0.1:4318, or unset it to turn tracing off"}
		}
	}
	if name == EnvEndpoint {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	} else if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}

// Sampler is the sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// name (OpenTelemetry's "Environment Variable Specification", General SDK
// Configuration): parentbased_always_on when unset. The variables are read
// here, through getenv, rather than by the SDK from the process's
// environment, so that a value the SDK would silently replace by its
// default is an *EnvError at start: a sampler this build does not have
// (jaeger_remote, xray), or a ratio that is not a number from 0 to 1.
func Sampler(getenv func(string) string) (sdktrace.Sampler, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	name := strings.TrimSpace(getenv(EnvSampler))
	arg := strings.TrimSpace(getenv(EnvSamplerArg))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, &EnvError{Var: EnvSamplerArg, Value: arg, Rule: "not a ratio from 0 to 1",
				Fix: "give the share of traces to sample, such as 0.25, or unset it for 1"}
		}
		return f, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		f, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(f), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(f)), nil
	}
	return nil, &EnvError{Var: EnvSampler, Value: name, Rule: "not a sampler this build has",
		Fix: "use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio, or unset it"}
}

// Provider is the tracer provider of a process's part (the host, the
// server). The zero value and a nil *Provider are off.
type Provider struct {
	tp       trace.TracerProvider
	sdk      *sdktrace.TracerProvider
	proc     *queue
	endpoint string
}

// Off is a Provider that records nothing.
func Off() *Provider { return &Provider{} }

// Start returns the provider the environment configures (Endpoint; the
// OTEL_BSP_* variables bound its queue and export time). Without an
// endpoint it is off, at no cost beyond OpenTelemetry's no-op tracer. A
// malformed variable is an *EnvError.
func Start(ctx context.Context, o Options) (*Provider, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	endpoint, err := Endpoint(getenv)
	if err != nil || endpoint == "" {
		return Off(), err
	}
	qc := queueConfig{timeout: DefaultExportTimeout, delay: DefaultScheduleDelay, size: DefaultMaxQueueSize, batch: DefaultMaxBatchSize}
	for _, v := range []struct {
		name string
		ms   *time.Duration
		n    *int
	}{{EnvExportTimeout, &qc.timeout, nil}, {EnvScheduleDelay, &qc.delay, nil}, {EnvMaxQueueSize, nil, &qc.size}, {EnvMaxBatchSize, nil, &qc.batch}} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > 1<<30 {
			return Off(), &EnvError{Var: v.name, Value: s, Rule: "not a whole number above 0", Fix: "give milliseconds for a time, a count for a size, or unset it"}
		}
		if v.ms != nil {
			*v.ms = time.Duration(n) * time.Millisecond
		} else {
			*v.n = n
		}
	}
	qc.batch = min(qc.batch, qc.size)
	sampler, err := Sampler(getenv)
	if err != nil {
		return Off(), err
	}
	if o.Sampler != nil {
		sampler = o.Sampler
	}
	service := o.Service
	if s := strings.TrimSpace(getenv(EnvServiceName)); s != "" && !o.FixedService {
		service = s
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint),
		// The queue bounds each export (its context); no retries behind
		// it, which would hold a batch past that bound.
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}), otlptracehttp.WithTimeout(qc.timeout))
	if err != nil {
		return Off(), fmt.Errorf("telemetry: the OTLP exporter for %s: %w", endpoint, err)
	}
	q := newQueue(exp, qc)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q), sdktrace.WithSampler(sampler),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	return &Provider{tp: tp, sdk: tp, proc: q, endpoint: endpoint}, nil
}

// Enabled reports whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// Endpoint is the traces URL spans are exported to; "" when off.
func (p *Provider) Endpoint() string {
	if p == nil {
		return ""
	}
	return p.endpoint
}

// TracerProvider is the provider's, OpenTelemetry's no-op one when off.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if !p.Enabled() {
		return noop.NewTracerProvider()
	}
	return p.tp
}

// Tracer is the provider's tracer of an instrumentation scope, the
// package path of the caller.
func (p *Provider) Tracer(scope string) trace.Tracer { return p.TracerProvider().Tracer(scope) }

// Dropped counts the spans dropped so far, by reason: DropQueueFull,
// DropExportFailed.
func (p *Provider) Dropped() (queueFull, exportFailed uint64) {
	if !p.Enabled() {
		return 0, 0
	}
	return p.proc.full.Load(), p.proc.failed.Load()
}

// Exported counts the spans the collector accepted.
func (p *Provider) Exported() uint64 {
	if !p.Enabled() {
		return 0
	}
	return p.proc.exported.Load()
}

// ForceFlush exports the spans queued, within ctx.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// Shutdown exports the spans still queued and stops the exporter, within
// ctx, or ShutdownTimeout when ctx has no deadline: a collector that
// hangs does not hold a clean exit longer. Spans not exported then are
// dropped and counted.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ShutdownTimeout)
		defer cancel()
	}
	return p.sdk.Shutdown(ctx)
}

// propagator is the W3C Trace Context propagation: the traceparent and
// tracestate headers.
var propagator = propagation.TraceContext{}

// Inject writes the span context of ctx into h as the W3C traceparent
// (and tracestate) header; nothing when ctx has no span.
func Inject(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context of h's traceparent,
// ctx itself when h has none or a malformed one.
func Extract(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// TraceID is the trace id of ctx's span in hexadecimal when it is sampled
// (exported, so a trace store may show it), else "".
func TraceID(ctx context.Context) string {
	return SampledTraceID(trace.SpanContextFromContext(ctx))
}

// SampledTraceID is sc's trace id when sc is sampled, else "".
func SampledTraceID(sc trace.SpanContext) string {
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// errQueueStopped is ForceFlush's answer after Shutdown.
var errQueueStopped = errors.New("telemetry: the span queue is shut down")
