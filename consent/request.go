package consent

import "encoding/json"

// Request is the authorization request a consent model was built for, as
// the service read it: the request member of the native-consent API's
// answer (docs/native-consent.md, "1. Submit a caught request"), which
// the reference server writes and the host reads. For a caught URL with a
// request_uri it is the pushed request the service took for it (RFC 9126
// §4): the URL itself holds only client_id and request_uri, so a host
// reads the redirect_uri, the permissions and the key binding here.
// Secrets the client chose (state, nonce, the PKCE challenge) are not
// repeated.
type Request struct {
	// Pushed is true when the parameters are those of a pushed
	// authorization request, named by RequestURI.
	Pushed               bool            `json:"pushed"`
	RequestURI           string          `json:"request_uri,omitempty"`
	ClientID             string          `json:"client_id"`
	RedirectURI          string          `json:"redirect_uri"`
	Scope                string          `json:"scope,omitempty"`
	Resource             []string        `json:"resource,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	OrgID                string          `json:"org_id,omitempty"`
	// DPoPJKT is the JWK thumbprint the code is bound to (RFC 9449 §10),
	// sent as dpop_jkt or by a DPoP proof at the PAR endpoint.
	DPoPJKT             string `json:"dpop_jkt,omitempty"`
	CodeChallengeMethod string `json:"code_challenge_method"`
	// GrantManagementAction and GrantID are the request's Grant
	// Management parameters (FAPI Grant Management §5.2): "create", or
	// "merge" or "replace" of the grant GrantID; empty without them.
	GrantManagementAction string `json:"grant_management_action,omitempty"`
	GrantID               string `json:"grant_id,omitempty"`
}
