package oauth

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// tracerScope is the instrumentation scope of the server's spans.
const tracerScope = "github.com/miniapp-host/miniapp-host/authserver/oauth"

// noTracer is the tracer of a server without traces (Config.Tracer nil).
var noTracer = noop.NewTracerProvider().Tracer(tracerScope)

// Span names and attributes of the consent model and the three checks
// (docs/deploy.md, "Traces"). Attributes are bounded and hold no secret:
// a check's name and outcome, a decision's action.
const (
	spanCheckProject  = "check.project_approval"
	spanCheckConsent  = "check.consent"
	spanCheckResource = "check.resource"
	spanConsentBuild  = "consent.build"
	spanConsentDecide = "consent.decide"
	spanJWKSFetch     = "jwks_uri.fetch"
)

// tagClient names, on the request's span, the client that authenticated
// (miniapp.client_id): an id the server registered, never one an
// unauthenticated request chose, so the attribute's values are bounded by
// the clients there are. Without traces the span is a no-op one.
func tagClient(ctx context.Context, c *store.Client) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("miniapp.client_id", c.ID))
}

// verdictSpan ends a check's span with what each of its verdicts said.
func verdictSpan(span trace.Span, vds ...verdict) {
	for _, vd := range vds {
		span.SetAttributes(attribute.String("miniapp.check."+vd.Name, vd.Outcome))
	}
	span.End()
}

// startSpan starts a span of the server's tracer under ctx's span.
func (c *Config) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	tr := c.Tracer
	if tr == nil {
		tr = noTracer
	}
	return tr.Start(ctx, name, trace.WithAttributes(attrs...))
}
