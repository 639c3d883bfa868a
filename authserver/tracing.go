package authserver

import (
	"net/http"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// tracerScope is the instrumentation scope of the server's own spans.
const tracerScope = "github.com/miniapp-host/miniapp-host/authserver"

// traceRole gives each request of a role's handler a server span, child
// of the caller's W3C traceparent (https://www.w3.org/TR/trace-context/)
// when it sends one: named by the method and the route pattern the role's
// http.ServeMux matched (metrics.Route: the metrics' route label, never
// the raw path or query), with the role and the status code (docs/deploy.md,
// "Traces"). The probes of the fixed paths (/healthz, /readyz) make no
// span: a load balancer's checks would bury the sign-ins. Without a
// tracer it returns next.
func traceRole(tr trace.Tracer, role string, next http.Handler, fixed ...string) http.Handler {
	if tr == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(fixed, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		ctx := telemetry.Extract(r.Context(), r.Header)
		ctx, span := tr.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("miniapp.role", role), attribute.String("http.request.method", r.Method)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w}
		inner := r.WithContext(ctx)
		next.ServeHTTP(sw, inner)
		// The mux set the pattern on inner; an outer wrapper (metrics.Wrap)
		// reads it on r.
		r.Pattern = inner.Pattern
		route := metrics.Route(inner, fixed)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetName(r.Method + " " + route)
		span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}

// statusWriter keeps a response's status; Unwrap lets
// http.ResponseController reach the connection's writer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
