package dashboard

import (
	"mime"
	"net/http"

	"github.com/miniapp-host/miniapp-host/origin"
)

// The dashboard listens on a loopback port of the developer's machine, so
// any web page the developer visits can send it requests: a form or a
// fetch with a "simple" content type (text/plain, form encodings) reaches
// it without a CORS preflight, and before this gate POST /api/projects,
// which needs no key, answered such a request 201. Every state-changing
// request therefore passes two checks before any route runs:
//
//   - Its Origin header, when present, is the dashboard's own origin or a
//     configured one, compared with the one origin policy (package origin).
//     Browsers send Origin with every cross-origin request and every
//     non-GET fetch or form (Fetch Standard, "append a request Origin
//     header"); the CLI and other programs send none, and a request
//     without it is no browser's cross-site request.
//   - Its Content-Type is application/json. A page cannot send that
//     cross-origin without a CORS preflight (Fetch Standard, "CORS-safelisted
//     request-header"), which the dashboard never answers with an allowance.
//
// GET and HEAD change nothing and pass; the one route that browsers of
// other origins read, the public client configuration, answers with
// Access-Control-Allow-Origin: *.

// stateChanging reports whether a request's method may change state
// (RFC 9110 §9.2.1: every method but the safe ones).
func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

// checkRequest is the dashboard's gate against cross-site requests: the
// Origin and Content-Type checks above, for state-changing requests.
func (s *Server) checkRequest(r *http.Request) error {
	if !stateChanging(r.Method) {
		return nil
	}
	if vs := r.Header.Values("Origin"); len(vs) > 0 {
		if len(vs) > 1 || !s.originAllowed(vs[0]) {
			return &Error{Code: codeOriginNotAllowed, Field: "Origin",
				Message: "requests that change state are accepted from the dashboard's own origin, configured origins, or programs that send no Origin"}
		}
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return &Error{Code: codeUnsupportedMediaType, Field: "Content-Type",
			Message: "send Content-Type: application/json, with or without a body"}
	}
	return nil
}

// originAllowed reports whether raw, an Origin header, is the dashboard's
// own origin or one of the configured ones. "null" and anything that is
// not a bare http(s) origin are refused.
func (s *Server) originAllowed(raw string) bool {
	o, err := origin.Parse(raw)
	if err != nil {
		return false
	}
	if s.own != nil && s.own.Equal(o) {
		return true
	}
	return origin.InList(o, s.cfg.AllowedOrigins)
}
