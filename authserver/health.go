package authserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
)

// Paths of the health and readiness checks, on every role's listener. They
// sit beside the routes of docs/service.md §4, never under them: the service's routes are
// below /.well-known/, /oauth/, /native/ and {base_url}, the dashboard's
// below /api/, the providers' below ProviderPath (docs/service.md §4; docs/authserver.md,
// "Health, readiness and shutdown").
const (
	HealthPath = "/healthz"
	ReadyPath  = "/readyz"
)

// DefaultReadyTimeout bounds the database query of a readiness check when
// Config.ReadyTimeout is zero.
const DefaultReadyTimeout = time.Second

// health answers the health and readiness checks of one process: every
// role's listener shares it, because they share the database and stop
// together.
type health struct {
	ping     func(context.Context) error
	timeout  time.Duration
	log      *slog.Logger
	draining atomic.Bool // set by Drain: readiness fails from then on
}

// wrap serves the two checks on next's listener and everything else with
// next. The paths are matched exactly and before next, so that no role's
// own routing (the dashboard's gate, the providers' bearer check) applies
// to a proxy's probe.
func (h *health) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case HealthPath, ReadyPath:
		default:
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			answer(w, r, http.StatusMethodNotAllowed, "use GET or HEAD")
			return
		}
		if r.URL.Path == HealthPath {
			// GET /healthz: the process is up and serving HTTP.
			answer(w, r, http.StatusOK, "ok")
			return
		}
		// GET /readyz: this instance should get new requests.
		if reason := h.notReady(r.Context()); reason != "" {
			answer(w, r, http.StatusServiceUnavailable, "not ready: "+reason)
			return
		}
		answer(w, r, http.StatusOK, "ready")
	})
}

// notReady returns why the instance should get no new requests, or "":
// it is shutting down, or its database did not answer a trivial query
// within the timeout. The database's own error is logged, not shown: the
// check is reachable by whoever reaches the listener.
func (h *health) notReady(ctx context.Context) string {
	if h.draining.Load() {
		return "shutting down"
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	err := h.ping(ctx)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return "the database did not answer within " + h.timeout.String()
	}
	if h.log != nil {
		h.log.Error("authserver: readiness: the database failed a trivial query", "err", err)
	}
	return "the database failed a trivial query (the server's log has the error)"
}

// answer writes a one-line plain-text answer that no cache keeps.
func answer(w http.ResponseWriter, r *http.Request, status int, line string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write([]byte(line + "\n"))
	}
}
