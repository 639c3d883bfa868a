package oauth

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/origin"
)

// CORS for browser-based public clients (docs/authserver.md, "CORS"): a
// Miniapp that redeems its code itself calls the token endpoint with fetch
// from its own origin, and later revocation and userinfo. Those three
// endpoints, and no other, answer cross-origin requests, and only for the
// origins in the allowed_origins of the client the request is for.
//
// A preflight (OPTIONS) carries no client: it names no client_id (that is in
// the body, which a preflight does not have) and no token. So the preflight
// is answered for any well-formed origin, without credentials, and the
// decision is made on the actual request, once its client is known: the
// client that authenticated (token, revocation) or the token's client
// (userinfo). A request whose Origin is not one of that client's
// allowed_origins is refused before anything is done (a code is not spent,
// a token not revoked, no claim read) and its answer carries no
// Access-Control-Allow-Origin, so the page cannot even read the refusal.
//
// Answering the preflight only for origins that some client registered would
// not be safer here: any project registers a credential with any
// allowed_origins at once (docs/dashboard.md), so that list admits whoever
// wants in, and the actual request of a simple form POST is sent without
// any preflight anyway. What protects the client is the check of the actual
// request, by the client it names.

// corsMaxAge is how long a browser may keep a preflight's answer (seconds).
const corsMaxAge = "600"

var (
	headerVaryOrigin = []string{"Origin"}
	// DPoP: a browser-based client's proof (RFC 9449 §4.1); DPoP-Nonce
	// the nonce its next proof must carry (§8, §9).
	headerCORSHeaders = []string{"Authorization, Content-Type, DPoP"}
	headerCORSExpose  = []string{"WWW-Authenticate, DPoP-Nonce"}
)

// handlePreflight answers the CORS preflight of an endpoint whose methods
// are allowed (Fetch standard, "CORS-preflight fetch"): any well-formed
// origin is echoed, with the methods, the three request headers a client
// sends (Authorization for HTTP Basic or a Bearer token, Content-Type for
// the form, DPoP for a proof of RFC 9449 §4.1) and no Access-Control-Allow-Credentials. An OPTIONS request that
// is no preflight (no Access-Control-Request-Method), or whose Origin is
// absent, repeated, "null" or not an origin, gets 204 without any
// Access-Control-* header.
func handlePreflight(methods string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Vary"] = headerVaryOrigin
		raw := r.Header.Values("Origin")
		if len(raw) == 1 && r.Header.Get("Access-Control-Request-Method") != "" {
			if _, err := origin.Parse(raw[0]); err == nil {
				h["Access-Control-Allow-Origin"] = []string{raw[0]}
				h.Set("Access-Control-Allow-Methods", methods)
				h["Access-Control-Allow-Headers"] = headerCORSHeaders
				h.Set("Access-Control-Max-Age", corsMaxAge)
			}
		}
		h.Set("Allow", methods+", OPTIONS")
		w.WriteHeader(http.StatusNoContent)
	}
}

// varyOrigin marks an answer of a CORS endpoint as depending on Origin
// (Fetch standard, "CORS protocol and HTTP caches"), whether or not it
// carries Access-Control-Allow-Origin.
func varyOrigin(w http.ResponseWriter) { w.Header()["Vary"] = headerVaryOrigin }

// allowOrigin is the CORS check of an actual request to the token,
// revocation or userinfo endpoint, once its client c is known. A request
// without Origin (a program, not a page of another origin) passes as it
// is. With one, the origin must be in c's allowed_origins, compared as
// whole origins by the one origin policy (origin.InList): then the answer
// may be read by that origin's page, and says so with exactly that origin.
// Otherwise the request is refused with invalid_request naming the origin
// and the client, and the answer has no Access-Control-Allow-Origin.
func allowOrigin(w http.ResponseWriter, r *http.Request, c *store.Client) error {
	raw := r.Header.Values("Origin")
	if len(raw) == 0 {
		return nil
	}
	o, err := origin.Parse(raw[0])
	if len(raw) != 1 || err != nil || !origin.InList(o, c.AllowedOrigins) {
		return oauthErr(codeInvalidRequest, fmt.Sprintf("origin %s is not in the allowed_origins of client %s; "+
			"add it with miniapp-host credential update (docs/dashboard.md)", raw[0], c.ID)).
			compared("Origin", strings.Join(raw, ", "), strings.Join(c.AllowedOrigins, " "))
	}
	h := w.Header()
	h["Access-Control-Allow-Origin"] = []string{raw[0]}
	h["Access-Control-Expose-Headers"] = headerCORSExpose
	return nil
}
