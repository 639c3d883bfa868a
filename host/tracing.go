package host

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/miniapp-host/miniapp-host/telemetry"
)

// tracerScope is the instrumentation scope of the host's spans.
const tracerScope = "github.com/miniapp-host/miniapp-host/host"

// The host's spans of a sign-in (docs/deploy.md, "Traces"): the root, a
// caught navigation or a bridge authorize; the native-consent calls,
// whose traceparent makes the service's spans children of theirs; and
// the completion with, for a confidential Miniapp, its callback and
// cookie sync. Attributes are bounded and hold no secret: no code, state
// or token.
const (
	spanCaught       = "navigation.caught"
	spanBridge       = "bridge.authorize"
	spanNativeBegin  = "native_consent.begin"
	spanNativeDecide = "native_consent.decide"
	spanComplete     = "completion"
	spanCallback     = "completion.callback"
	spanCookieSync   = "completion.cookie_sync"
	spanCodeExchange = "completion.code_exchange"
	attrFlow         = "miniapp.flow"
	attrOutcome      = "miniapp.outcome"
	attrClientID     = "miniapp.client_id"
)

// startSpan starts f's root span, before f's network log flow begins
// (claim names the trace in it, netlog.Launch.BeginTracedFlow).
func (w *Window) startSpan(f *flow) {
	root := f.root
	if root == "" {
		root = spanCaught
	}
	var attrs []attribute.KeyValue
	if f.app != nil && f.app.ClientID != "" {
		// The registered client the Miniapp signs in as, checked
		// against the caught request (start).
		attrs = append(attrs, attribute.String(attrClientID, f.app.ClientID))
	}
	_, f.span = w.tracer.Start(context.Background(), root, trace.WithAttributes(attrs...))
}

// context is a context of f's root span, for its calls.
func (f *flow) context() context.Context {
	if f.span == nil {
		return context.Background()
	}
	return trace.ContextWithSpan(context.Background(), f.span)
}

// endSpan ends f's root span with the flow's outcome (netlog's).
func (f *flow) endSpan(outcome string) {
	if f.span == nil {
		return
	}
	f.span.SetAttributes(attribute.String(attrOutcome, outcome))
	if outcome == "error" {
		f.span.SetStatus(codes.Error, "")
	}
	f.span.End()
}

// endSpan ends a span, an error status when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// tracedClient is c sending the traceparent of each request's context
// (the code exchange at the service's token endpoint).
func tracedClient(c *http.Client) *http.Client {
	out := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = injecting{base}
	return &out
}

// injecting adds the W3C traceparent of a request's context.
type injecting struct{ base http.RoundTripper }

func (t injecting) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper does not change its request
	telemetry.Inject(r.Context(), r.Header)
	return t.base.RoundTrip(r)
}
