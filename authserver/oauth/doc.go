// Package oauth is the reference authorization server's protocol side: the
// OpenID Connect discovery and RFC 8414 metadata, JWKS, the authorization
// endpoint with its browser sign-in and consent pages, the JSON
// native-consent API for hosts, the token endpoint, userinfo, RFC 7662
// introspection, RFC 7009 revocation, PAR (RFC 9126), FAPI Grant
// Management, the subject's Connected Miniapps page and the service's
// grant endpoint GET {base_url}/authorization (docs/service.md §4.1).
//
// # Handlers
//
// Each group of endpoints is a handler, a small type that owns its
// dependencies: the narrow storage interfaces it declares in its own file
// and the shared pieces it is given (the fosite manner: a handler names
// the storage it takes). docs/architecture.md, "A newcomer's map of the
// server", says which file and handler answer each route.
//
//   - browserHandler (authorize.go, pages.go): the authorization endpoint,
//     the sign-in and consent pages, with browserSessions (sessions.go).
//   - nativeHandler (native.go, consents.go): the native-consent API.
//   - tokenHandler (token.go, introspect.go): the token endpoint (code
//     exchange and refresh), introspection, revocation and userinfo.
//   - parHandler (par.go): pushed authorization requests.
//   - connectedHandler (connected.go): Connected Miniapps, the subject's
//     own view of its grants.
//   - grantMgmtHandler (grantmgmt.go): the grant management endpoint.
//   - resourceHandler (grant.go, charge.go): the grant endpoint and the
//     charges within a grant's limits.
//
// The pieces they share: authzRequests (authorize.go) checks a request
// (validateAuthorize) for every handler that has one; consentFlow
// (authorize.go, checks.go) keeps it pending, assesses it for a subject
// with the three checks of docs/service.md §1 and applies the decision;
// clientAuth (clientauth.go), dpopVerifier (dpop.go), securityCache
// (fapi.go), replayGuard (replay.go) and bearerTokens (grant.go); and
// base (server.go), what every handler reads and none owns, which holds no
// storage. The flow state (flowstate.go, pending.go) is given what it
// needs, never the Server.
//
// The Server is the façade: New checks the configuration, loads the keys
// and wires the handlers, each given the part of Config.Store it declares
// (Server.wire); Handler serves the routes; the exported methods are what
// other packages call (SetCatalog, InvalidateClient, Explain, the
// endpoint URLs, the development fixtures).
//
// Every security check sits in one function: exact redirect_uri match
// (redirectAllowed), PKCE (verifyPKCE), client authentication
// (clientAuth.authenticateClient), the catalog's reading of the request
// (authzRequests.validateAuthorize), and the three checks of
// docs/service.md §1 beside the catalog (checks.go: projectCheck,
// consentCheck, resourceChecks; transaction limits in handleCharge). The
// consent decision itself is package consent's: consent.Build makes the
// screen from the checks and the remembered consent, and consent.GrantOf
// is a decision's grant. The dry run of a request (explain.go,
// docs/dashboard.md "Explain") goes through the same functions and writes
// nothing.
//
// What the server keeps between requests, and what its storage must
// guarantee, is declared in storage.go (Storage); package store implements
// it.
package oauth
