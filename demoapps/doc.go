// Package demoapps serves the demo Miniapps on loopback, for the
// playground and for the host's end-to-end tests:
//
//   - a confidential one ([StartConfidential]) whose Go backend starts the
//     authorization at its oauth.auth_url, keeps the PKCE verifier and the
//     state in its server session, exchanges the code with
//     golang.org/x/oauth2 on its callback and then sets an HttpOnly session
//     cookie (docs/architecture.md, way 1);
//   - a public one ([StartPublic]) that signs in through the host's bridge
//     (window.miniapp.authorize, way 2) or by navigating to the service
//     itself with PKCE made in the page (way 3);
//   - a confidential one on the FAPI 2.0 profile ([ServeFAPI],
//     docs/fapi.md): PAR, private_key_jwt, DPoP, PKCE and RAR.
//
// Each serves its manifest at /miniapp.webmanifest (docs/service.md §4.3).
package demoapps
