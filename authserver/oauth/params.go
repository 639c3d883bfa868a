package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
)

// AuthorizeRequest is an authorization request's parameters (RFC 6749
// §4.1.1, RFC 7636 §4.3, RFC 8707 §2, RFC 9396 §2, OIDC Core §3.1.2.1, and
// org_id of docs/service.md §5.2), read but not yet checked against a client.
type AuthorizeRequest struct {
	ClientID            string
	RedirectURI         string
	ResponseType        string
	ResponseMode        string
	Scope               string
	State               string
	Nonce               string
	Prompt              string
	CodeChallenge       string
	CodeChallengeMethod string
	OrgID               string
	// Resource holds every resource parameter; RFC 8707 allows several.
	Resource []string
	// AuthorizationDetails is the parameter's JSON text, nil when absent.
	AuthorizationDetails json.RawMessage
	// Request and RequestURI are the request-object parameters (OpenID
	// Connect Core §6, RFC 9101 §5), which this server does not support;
	// they are read only to be refused rather than ignored.
	Request, RequestURI string
	// GrantManagementAction and GrantID are the parameters of FAPI Grant
	// Management §5.1 (grantmgmt.go).
	GrantManagementAction, GrantID string
	// Duplicated names a single-valued parameter sent more than once,
	// which RFC 6749 §3.1 forbids.
	Duplicated string
}

// singleParams are the parameters that must appear at most once.
var singleParams = []string{"client_id", "redirect_uri", "response_type", "response_mode", "scope", "state", "nonce",
	"prompt", "code_challenge", "code_challenge_method", "org_id", "authorization_details", "grant_management_action", "grant_id"}

// ParseAuthorize reads the parameters of an authorization request. It never
// fails: what is wrong is found by validateAuthorize, once the client and
// redirect_uri are known, so that the error can go to the right place.
func ParseAuthorize(q map[string][]string) *AuthorizeRequest {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	r := &AuthorizeRequest{
		ClientID: get("client_id"), RedirectURI: get("redirect_uri"), ResponseType: get("response_type"),
		ResponseMode: get("response_mode"), Scope: get("scope"), State: get("state"), Nonce: get("nonce"),
		Prompt: get("prompt"), CodeChallenge: get("code_challenge"), CodeChallengeMethod: get("code_challenge_method"),
		OrgID: get("org_id"), Resource: slices.Clone(q["resource"]),
		Request: get("request"), RequestURI: get("request_uri"),
		GrantManagementAction: get("grant_management_action"), GrantID: get("grant_id"),
	}
	if v, ok := q["authorization_details"]; ok && len(v) > 0 {
		r.AuthorizationDetails = json.RawMessage(v[0])
	}
	for _, k := range singleParams {
		if len(q[k]) > 1 {
			r.Duplicated = k
			break
		}
	}
	return r
}

// redirectAllowed is the redirect_uri check: exact string comparison with a
// registered URI (RFC 9700 §4.1.3, OAuth 2.1 §2.3.1). No normalisation at
// all: not case, not dot segments, not percent-encoding, not ports, so that
// no parser disagreement can turn an allowed URI into another place.
func redirectAllowed(registered []string, uri string) bool {
	if uri == "" || strings.ContainsRune(uri, '#') {
		return false
	}
	return slices.Contains(registered, uri)
}

// validChallenge reports whether s can be an S256 code_challenge: the
// base64url encoding, without padding, of a SHA-256 digest is 43 characters
// (RFC 7636 §4.2).
func validChallenge(s string) bool {
	if len(s) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// validVerifier applies RFC 7636 §4.1: 43 to 128 unreserved characters.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// verifyPKCE is the PKCE check of the token endpoint (RFC 7636 §4.6), S256
// only. A code without a stored challenge never verifies, so a verifier
// cannot stand in for a missing challenge (the PKCE downgrade of RFC 9700
// §4.8.2).
func verifyPKCE(challenge, verifier string) bool {
	if challenge == "" || !validVerifier(verifier) {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}
