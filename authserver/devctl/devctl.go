// Package devctl is the development server's controls for QA's negative
// paths (docs/dashboard.md, "Development controls"): the server's clock,
// faults injected at its endpoints, consent fixtures and test identities,
// and the dry run of a request through the three checks (docs/service.md
// §1). It serves them as the dashboard's /api/dev/ routes, which the
// dashboard opens only to the operator credential and only on a server
// whose issuer is on loopback: a deployed server has none of them.
//
// Every effect is real: the clock is the one the endpoints read, a fault
// is answered by the endpoint itself in its own error shape, a fixture is
// written through the same store the flows use.
package devctl

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
)

// Config is what the controls act on.
type Config struct {
	// Clock is the development server's clock, the one every endpoint
	// reads. Required.
	Clock *Clock
	// Logger receives internal errors, never shown to callers; nil
	// discards them.
	Logger *slog.Logger
	// Events records the grants a fixture reset revokes (docs/deploy.md,
	// "Audit events"); nil records none.
	Events *audit.Recorder

	// Faults are the faults the endpoints inject (faults.go): the same
	// set must be the server's oauth.Config.Faults and the providers'
	// Config.Faults (Faults.Provider); nil starts an empty one, which no
	// endpoint reads.
	Faults *Faults
	// Fixtures (fixtures.go): the store fixture files are written to, and
	// the OAuth server whose catalog checks them and which completes
	// their grants and tokens. Without both the fixture routes answer 404.
	Fixtures  FixtureStore
	Authority Authority
	// Explain is the dry run of an authorization request (explain.go):
	// the report, or an *Error naming the member it cannot read. Nil
	// answers POST /api/dev/explain 404.
	Explain func(ctx context.Context, req ExplainRequest) (any, error)
}

// Controls serves the /api/dev/ routes.
type Controls struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
}

// New returns the controls over cfg.
func New(cfg Config) (*Controls, error) {
	if cfg.Clock == nil {
		return nil, errors.New("devctl: Config.Clock is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Faults == nil {
		cfg.Faults = NewFaults()
	}
	c := &Controls{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	c.routes()
	return c, nil
}

// Handler serves the /api/dev/ routes. The dashboard mounts it behind its
// gate against cross-site requests and its operator check.
func (c *Controls) Handler() http.Handler { return c.mux }

func (c *Controls) routes() {
	// GET /api/dev/clock: the clock's state; POST: advance, set or reset it.
	c.mux.HandleFunc("GET /api/dev/clock", c.handleClockShow)
	c.mux.HandleFunc("POST /api/dev/clock", c.handleClockChange)
	c.faultRoutes()
	c.fixtureRoutes()
	c.explainRoutes()
	c.mux.HandleFunc("/api/dev/", func(w http.ResponseWriter, r *http.Request) {
		c.writeError(w, r, &Error{Code: CodeNotFound, Field: "path",
			Message: r.Method + " " + r.URL.Path + " is no development control; the routes are listed in docs/dashboard.md, \"Development controls\""})
	})
}

// Error is a refusal of a development control, in the dashboard API's
// error shape: a stable code, the field it is about (a JSON pointer into
// the body, or a query or path parameter name) and what to do.
type Error struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message,omitempty"`
}

func (e *Error) Error() string { return "devctl: " + e.Code + ": " + e.Message }

// Error codes of the development controls, beside the dashboard's own.
const (
	CodeInvalidBody  = "invalid_body"
	CodeInvalidField = "invalid_field"
	CodeMissingField = "missing_field"
	CodeNotFound     = "not_found"
	CodeTooLarge     = "content_too_large"
	CodeInternal     = "internal_error"
)

func statusOf(code string) int {
	switch code {
	case CodeNotFound:
		return http.StatusNotFound
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeInternal:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// writeError answers err; an error that is not an *Error is logged and
// answered as internal_error, its text never shown.
func (c *Controls) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		c.log.ErrorContext(r.Context(), "devctl: internal error", "path", r.URL.Path, "err", err)
		e = &Error{Code: CodeInternal}
	}
	st := statusOf(e.Code)
	writeJSON(w, st, struct {
		Code    string `json:"code"`
		Status  int    `json:"status"`
		Field   string `json:"field,omitempty"`
		Message string `json:"message,omitempty"`
	}{e.Code, st, e.Field, e.Message})
}

// writeJSON answers v as JSON. A value that cannot be encoded (a bug of
// this package, never the caller's input) is answered 500 internal_error,
// never an empty 200 that a test would take for an answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"internal_error","status":500}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// maxBody bounds a control's body; a fixture file is the largest.
const maxBody = 1 << 20

// decode reads one JSON object into v with the one strict reader: an
// unknown or twice-named member, or anything after the object, is refused
// with the member named.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if err := httplimit.ReadJSON(w, r, maxBody, v); err != nil {
		if httplimit.TooLarge(err) {
			return &Error{Code: CodeTooLarge, Message: "the body is over the limit of 1 MiB"}
		}
		field := ""
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field = "/" + strings.Trim(f, `"`)
		}
		return &Error{Code: CodeInvalidBody, Field: field, Message: "the body must be one JSON object of the documented form: " + err.Error()}
	}
	return nil
}
