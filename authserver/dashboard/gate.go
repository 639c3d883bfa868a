package dashboard

import (
	"net/http"

	"github.com/miniapp-host/miniapp-host/origin"
)

// The dashboard of a development server listens on a loopback port of the
// developer's machine, so any web page the developer visits can send it
// requests: a form or a fetch with a "simple" content type (text/plain,
// form encodings) reaches it without a CORS preflight, and before this
// gate POST /api/projects, which needs no key, answered such a request
// 201. Every request therefore passes the one loopback gate
// (origin.Gate, docs/security.md, "Other pages in the user's browser")
// before any route runs:
//
//   - On a dashboard whose own origin is on loopback, the connection comes
//     from this machine and the Host header is a loopback name: a page on
//     a DNS name rebound to 127.0.0.1 sends its own. A dashboard deployed
//     under a name of its own (docs/deploy.md) skips this rule.
//   - The Origin header of a state-changing request, when present, is the
//     dashboard's own origin or a configured one, compared with the one
//     origin policy. Browsers send Origin with every cross-origin request
//     and every non-GET fetch or form (Fetch Standard, "append a request
//     Origin header"); the CLI and other programs send none, and a request
//     without it is no browser's cross-site request.
//   - A POST, and a state-changing request with a body, is
//     application/json. A page cannot send that cross-origin without a
//     CORS preflight (Fetch Standard, "CORS-safelisted request-header"),
//     which the dashboard never answers with an allowance.
//
// GET and HEAD change nothing and pass the Origin rule; the one route that
// browsers of other origins read, the public client configuration,
// answers with Access-Control-Allow-Origin: *.

// checkRequest is the dashboard's gate (above).
func (s *Server) checkRequest(r *http.Request) error {
	g := origin.Gate{JSON: true, AnyHost: s.own == nil || !s.own.IsLoopback()}
	if s.own != nil {
		g.Pages = append(g.Pages, *s.own)
	}
	for _, raw := range s.cfg.AllowedOrigins {
		if o, err := origin.Parse(raw); err == nil {
			g.Pages = append(g.Pages, o)
		}
	}
	ref := g.Check(r)
	switch {
	case ref == nil:
		return nil
	case ref.Rule == origin.RuleOrigin:
		return &Error{Code: codeOriginNotAllowed, Field: "Origin",
			Message: "requests that change state are accepted from the dashboard's own origin, configured origins, or programs that send no Origin"}
	case ref.Rule == origin.RuleContentType:
		return &Error{Code: codeUnsupportedMediaType, Field: "Content-Type",
			Message: "send Content-Type: application/json, with or without a body"}
	}
	return &Error{Code: codeHostNotAllowed, Field: "Host", Message: ref.Error()}
}
