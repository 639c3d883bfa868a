package audit

import (
	"context"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
	"github.com/miniapp-host/miniapp-host/redact"
)

// note is what a request's handlers tell the Recorder's wrapper (Wrap):
// the refusal it was answered with, and who made it.
type note struct {
	refusal  *Refusal
	clientID string
	subject  string
	actor    string
	traceID  string
	// rec and promised: the request may end with an event, which Flush
	// waits for (Recorder.promise).
	rec      *Recorder
	promised bool
}

// promise tells n's Recorder that the request may end with an event, so
// that a Flush from a client that has the answer already waits for it:
// the event is recorded when the handler returns, and the answer may
// have reached the client before that.
func (n *note) promise() {
	if !n.promised {
		n.promised = true
		n.rec.promise()
	}
}

type noteKey struct{}

// Refused notes that req is answered with the refusal f, about the client
// and subject named (either may be ""), and counts it in the metrics'
// refusals (metrics.Refused): the wrapper of Wrap records one
// request.refused event when the request ends with a status of 300 or
// more (an error, or an error redirected to the client); a later note of
// the same request replaces an earlier one, as in the metrics.
func Refused(req *http.Request, f Refusal, clientID, subject string) {
	if req == nil {
		return
	}
	metrics.Refused(req, f.Error)
	if n, ok := req.Context().Value(noteKey{}).(*note); ok {
		n.promise()
		n.refusal, n.clientID, n.subject = &f, clientID, subject
	}
}

// SetActor notes who is making req (a dashboard credential's holder).
func SetActor(req *http.Request, actor string) {
	if n, ok := req.Context().Value(noteKey{}).(*note); ok {
		n.actor = actor
	}
}

// Wrap records the refusal noted by a request's handlers (Refused) when
// the request ends refused, and, with changes (the dashboard), one
// dashboard.changed event for each request that is not a read (GET, HEAD,
// OPTIONS) and ends with a status below 300: who (SetActor; "public"
// without a credential), the route and the path. On a nil *Recorder it
// returns next.
func (r *Recorder) Wrap(next http.Handler, changes bool) http.Handler {
	if r == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := &note{traceID: TraceID(req), rec: r}
		if changes && !safeMethod(req.Method) {
			n.promise()
		}
		defer func() {
			if n.promised {
				r.settle()
			}
		}()
		sw := &statusWriter{ResponseWriter: w}
		outer := req
		req = req.WithContext(context.WithValue(req.Context(), noteKey{}, n))
		next.ServeHTTP(sw, req)     // the mux sets req.Pattern on this req
		outer.Pattern = req.Pattern // for the wrappers outside (metrics.Metrics.Wrap)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		route := route(req)
		if n.refusal != nil && status >= 300 {
			actor := n.actor
			if actor == "" && n.clientID != "" {
				actor = Client(n.clientID)
			}
			r.Record(req.Context(), Event{Kind: RequestRefused, ClientID: n.clientID, Subject: n.subject, Actor: actor,
				Outcome: OutcomeRefused, Refusal: n.refusal, Detail: map[string]string{"route": route, "status": itoa(status)}})
			return
		}
		if changes && status < 300 && !safeMethod(req.Method) && route != "" {
			actor := n.actor
			if actor == "" {
				actor = ActorPublic
			}
			d := map[string]string{"method": req.Method, "route": route, "path": redact.URL(req.URL.Path), "status": itoa(status)}
			for _, p := range []string{"project_id", "client_id", "submission_id"} {
				if v := req.PathValue(p); v != "" {
					d[p] = v
				}
			}
			r.Record(req.Context(), Event{Kind: DashboardChanged, ClientID: req.PathValue("client_id"), Actor: actor, Outcome: OutcomeOK, Detail: d})
		}
	})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// route is the path of the pattern a ServeMux matched, "" for none.
func route(r *http.Request) string {
	p := r.Pattern
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = p[i+1:]
	}
	return p
}

func itoa(n int) string {
	const digits = "0123456789"
	if n >= 100 && n < 1000 {
		return string([]byte{digits[n/100], digits[n/10%10], digits[n%10]})
	}
	return "other"
}

// statusWriter keeps the status of a response. Unwrap lets
// http.ResponseController reach the connection's writer (a flush of an
// event stream, a write deadline).
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
