package dashboard

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Error is a dashboard API error: a stable code (docs/dashboard.md), the
// request field it is about (a JSON pointer into the body, or a query or
// path parameter name) and a message saying what to do. Handlers return
// fresh values; writeError is the one place that turns them into HTTP.
type Error struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message,omitempty"`
	// Violations are the findings of a declaration or manifest check.
	Violations any `json:"violations,omitempty"`
}

func (e *Error) Error() string { return "dashboard: " + e.Code + ": " + e.Message }

// Error codes of the dashboard API.
const (
	codeInvalidBody        = "invalid_body"
	codeContentTooLarge    = "content_too_large"
	codeMissingField       = "missing_field"
	codeInvalidField       = "invalid_field"
	codeUnknownScope       = "unknown_scope"
	codeUnknownType        = "unknown_type"
	codeInvalidDeclaration = "invalid_declaration"
	codeManifestRejected   = "manifest_rejected"
	codeNotConfidential    = "not_confidential"
	codeMissingKey         = "missing_key"
	codeInvalidKey         = "invalid_key"
	codeOperatorOnly       = "operator_only"
	codeDevelopmentOnly    = "development_only"
	codeClientNotFound     = "client_not_found"
	codeCredentialNotFound = "credential_not_found"
	codeSubmissionNotFound = "submission_not_found"
	codeIssuerUnknown      = "issuer_unknown"
	codeAlreadyDecided     = "already_decided"
	codeDeclarationClash   = "declaration_conflict"
	codeInternal           = "internal_error"
	// The gate against cross-site requests (gate.go).
	codeOriginNotAllowed     = "origin_not_allowed"
	codeUnsupportedMediaType = "unsupported_media_type"
	codeHostNotAllowed       = "host_not_allowed"
)

// statusOf is the one table from error codes to HTTP statuses.
func statusOf(code string) int {
	switch code {
	case codeMissingKey, codeInvalidKey:
		return http.StatusUnauthorized
	case codeOperatorOnly, codeOriginNotAllowed, codeDevelopmentOnly, codeHostNotAllowed:
		return http.StatusForbidden
	case codeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case codeClientNotFound, codeCredentialNotFound, codeSubmissionNotFound, codeIssuerUnknown:
		return http.StatusNotFound
	case codeAlreadyDecided, codeDeclarationClash:
		return http.StatusConflict
	case codeInternal:
		return http.StatusInternalServerError
	case codeContentTooLarge:
		return http.StatusRequestEntityTooLarge
	case codeTooManyFollowers:
		return http.StatusTooManyRequests
	case codeEventsUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// writeError writes {"code", "status", "field", "message"}; an error that
// is not an *Error is logged and answered as internal_error, never shown.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		s.log.ErrorContext(r.Context(), "dashboard: internal error", "path", r.URL.Path, "err", err)
		e = &Error{Code: codeInternal}
	}
	st := statusOf(e.Code)
	audit.Refused(r, audit.Refusal{Error: e.Code, Rule: e.Message, Field: e.Field}, r.PathValue("client_id"), "")
	if st == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "5")
	}
	if st == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dashboard"`)
	}
	writeJSON(w, st, struct {
		Code       string `json:"code"`
		Status     int    `json:"status"`
		Field      string `json:"field,omitempty"`
		Message    string `json:"message,omitempty"`
		Violations any    `json:"violations,omitempty"`
	}{e.Code, st, e.Field, e.Message, e.Violations})
}

func missing(field, msg string) *Error {
	return &Error{Code: codeMissingField, Field: field, Message: msg}
}

func invalid(field, msg string) *Error {
	return &Error{Code: codeInvalidField, Field: field, Message: msg}
}

// maxBody bounds a request body; a manifest or a declaration with its
// schemas is small.
const maxBody = 1 << 20

// decode reads one JSON object into v with the one strict reader
// (httplimit.ReadJSON): unknown members, a member named twice and anything
// after the object are refused, so that a misspelt field is an error rather
// than silently ignored; a body over maxBody is 413.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if err := httplimit.ReadJSON(w, r, maxBody, v); err != nil {
		if httplimit.TooLarge(err) {
			return tooLarge()
		}
		field := ""
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field = "/" + strings.Trim(f, `"`)
		}
		return &Error{Code: codeInvalidBody, Field: field, Message: "the body must be one JSON object of the documented form: " + err.Error()}
	}
	return nil
}

// tooLarge is the error for a body over maxBody (RFC 9110 §15.5.14).
func tooLarge() *Error {
	return &Error{Code: codeContentTooLarge, Message: fmt.Sprintf("the body is over the limit of %d bytes", maxBody)}
}

// bearerKey reads the key of an "Authorization: Bearer KEY" header.
func bearerKey(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
		return "", &Error{Code: codeMissingKey, Field: "Authorization", Message: "send Authorization: Bearer <key> (the project's key, or the operator credential for review)"}
	}
	return key, nil
}

// matches compares a key with a stored hash in constant time; an empty
// hash (a seeded project without a key) never matches.
func matches(key string, hash []byte) bool {
	return len(hash) > 0 && subtle.ConstantTimeCompare(store.Hash(key), hash) == 1
}

// project wraps a handler of a project's routes: the caller must present
// that project's key. An unknown project and a wrong key get the same 401,
// so that the answer does not reveal which projects exist.
func (s *Server) project(h func(http.ResponseWriter, *http.Request, store.Project)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, err := bearerKey(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		id := r.PathValue("project_id")
		hash, err := s.st.ProjectKeyHash(r.Context(), id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.writeError(w, r, err)
			return
		}
		if !matches(key, hash) {
			s.writeError(w, r, &Error{Code: codeInvalidKey, Field: "Authorization", Message: "the key is not the key of project " + id})
			return
		}
		audit.SetActor(r, audit.Project(id))
		p, err := s.st.Project(r.Context(), id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r, p)
	}
}

// operator wraps a review handler: the caller must present the operator
// credential. No project key opens these routes (docs/service.md §5.8: no self-service).
func (s *Server) operator(h http.HandlerFunc) http.HandlerFunc {
	return s.operatorFor("review needs the operator credential (printed by miniapp-host serve); a project cannot approve its own submissions", h)
}

// operatorFor wraps h like operator, refusing any other caller with msg.
func (s *Server) operatorFor(msg string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, err := bearerKey(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		hash, err := s.st.Setting(r.Context(), OperatorKeySetting)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.writeError(w, r, err)
			return
		}
		if !matches(key, hash) {
			s.writeError(w, r, &Error{Code: codeOperatorOnly, Field: "Authorization", Message: msg})
			return
		}
		audit.SetActor(r, audit.ActorOperator)
		h(w, r)
	}
}

// newID returns prefix and n random bytes, base64url-encoded.
func (s *Server) newID(prefix string, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.cfg.Rand, b); err != nil {
		return "", fmt.Errorf("dashboard: random: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}
