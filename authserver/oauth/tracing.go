package oauth

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
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
