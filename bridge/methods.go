package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

// Limits on authorize params. They are far above what a real request needs
// and only keep a hostile page from handing the host megabytes to check.
const (
	maxScopes       = 64
	maxScopeLen     = 2048
	maxDetails      = 32
	maxOrgIDLen     = 128
	maxExternalURL  = 8 << 10
	maxDetailsBytes = 32 << 10
)

// Theme is the host's colour theme as the page sees it.
type Theme string

// Themes.
const (
	ThemeLight Theme = "light"
	ThemeDark  Theme = "dark"
)

// ContextInfo is the result of getContext.
type ContextInfo struct {
	// ID is the Miniapp's manifest id.
	ID string `json:"id"`
	// Origin is the Miniapp's canonical origin. The dispatcher sets it
	// from its Config, so the page always sees the origin it was gated on.
	Origin string `json:"origin"`
	// Theme is the host's current theme.
	Theme Theme `json:"theme"`
	// HostVersion is the version of the miniapp-host program.
	HostVersion string `json:"host_version"`
	// BridgeVersion is APIVersion; the dispatcher sets it.
	BridgeVersion string `json:"bridge_version"`
	// Subject is the signed-in subject's identifier (the "sub" claim);
	// empty, and absent on the wire, when nobody is signed in.
	Subject string `json:"subject,omitempty"`
}

// AuthorizeRequest is what a page asked for with authorize, checked for
// shape. The catalog rules (which scopes exist, the schemas of the
// authorization_details types) are checked by the host through the
// authorization server, which owns them.
type AuthorizeRequest struct {
	// Scopes are the requested scope values, in the order given, without
	// duplicates. Each is an RFC 6749 section 3.3 scope-token.
	Scopes []string
	// AuthorizationDetails is the RFC 9396 authorization_details array,
	// compacted; each item is an object with a string "type". Nil when
	// the page sent none.
	AuthorizationDetails json.RawMessage
	// OrgID is the Company chosen for company-scoped details (docs/service.md §2.2
	// rule 3); empty when absent.
	OrgID string
}

// AuthorizeResult is what authorize resolves with: the token response the
// host obtained by exchanging the code (RFC 6749 section 5.1, RFC 9396
// section 7). The refresh token, if any, stays with the host.
type AuthorizeResult struct {
	AccessToken          string          `json:"access_token"`
	TokenType            string          `json:"token_type"`
	ExpiresIn            int64           `json:"expires_in,omitempty"`
	Scope                string          `json:"scope,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	IDToken              string          `json:"id_token,omitempty"`
}

// noParams refuses any params for methods that take none.
func noParams(p fields) *Error {
	if len(p) > 0 {
		if err := p.only(); err != nil {
			return Errorf(CodeInvalidParams, "%v", err)
		}
	}
	return nil
}

// parseAuthorize checks the params of authorize.
func parseAuthorize(p fields) (AuthorizeRequest, *Error) {
	var req AuthorizeRequest
	if err := p.only("scope", "authorization_details", "org_id"); err != nil {
		return req, Errorf(CodeInvalidParams, "%v", err)
	}
	scope, hasScope, err := p.str("scope")
	if err != nil {
		return req, Errorf(CodeInvalidParams, "%v", err)
	}
	if hasScope {
		if req.Scopes, err = parseScope(scope); err != nil {
			return req, Errorf(CodeInvalidParams, "%v", err)
		}
	}
	if raw, ok := p["authorization_details"]; ok {
		if req.AuthorizationDetails, err = parseDetails(raw); err != nil {
			return req, Errorf(CodeInvalidParams, "%v", err)
		}
	}
	if len(req.Scopes) == 0 && req.AuthorizationDetails == nil {
		return req, Errorf(CodeInvalidParams, "authorize needs a scope or authorization_details")
	}
	org, hasOrg, err := p.str("org_id")
	if err != nil {
		return req, Errorf(CodeInvalidParams, "%v", err)
	}
	if hasOrg {
		if org == "" || len(org) > maxOrgIDLen || !visibleASCII(org) {
			return req, Errorf(CodeInvalidParams, "org_id must be 1 to %d visible ASCII characters", maxOrgIDLen)
		}
		req.OrgID = org
	}
	return req, nil
}

// parseScope splits a scope parameter (RFC 6749 section 3.3): scope-tokens
// of NQCHAR separated by single spaces.
func parseScope(s string) ([]string, error) {
	if s == "" || len(s) > maxScopeLen {
		return nil, errorString("scope must be 1 to 2048 characters")
	}
	tokens := strings.Split(s, " ")
	if len(tokens) > maxScopes {
		return nil, errorString("scope has more than 64 values")
	}
	seen := make(map[string]bool, len(tokens))
	for _, t := range tokens {
		if t == "" {
			return nil, errorString("scope values are separated by single spaces")
		}
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
				return nil, errorString("scope value " + quote(t) + " has a character RFC 6749 does not allow")
			}
		}
		if seen[t] {
			return nil, errorString("scope value " + quote(t) + " is repeated")
		}
		seen[t] = true
	}
	return tokens, nil
}

// parseDetails checks that raw is a non-empty array of objects that each
// have a string "type", and returns it compacted.
func parseDetails(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) > maxDetailsBytes {
		return nil, errorString("authorization_details is larger than 32 KiB")
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errorString("authorization_details must be an array")
	}
	// Read whole, by the rules the authorization server reads it with
	// (package strictjson): no member named twice at any depth.
	v, err := strictjson.Decode(raw, strictjson.Limits{})
	if err != nil {
		var se *strictjson.SyntaxError
		if errors.As(err, &se) && se.Kind == strictjson.KindDuplicate {
			return nil, errorString("authorization_details" + jsonpointer.Readable(se.Pointer) + " is given twice in one object; keep one")
		}
		if errors.As(err, &se) {
			return nil, errorString("authorization_details" + jsonpointer.Readable(se.Pointer) + ": " + se.Msg)
		}
		return nil, errorString("authorization_details must be an array")
	}
	items, _ := v.([]any)
	if len(items) == 0 || len(items) > maxDetails {
		return nil, errorString("authorization_details must have 1 to 32 items")
	}
	for _, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, errorString("each authorization_details item must be an object")
		}
		if typ, _ := obj["type"].(string); typ == "" {
			return nil, errorString("each authorization_details item needs a string type")
		}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, errorString("authorization_details is not valid JSON")
	}
	return b.Bytes(), nil
}

// parseOpenExternal checks the params of openExternal and returns the
// canonical URL to open. The URL is parsed once, by the origin package as
// a browser would, and the canonical string is what the host opens, so the
// check and the action are about the same URL.
func parseOpenExternal(p fields) (string, *Error) {
	if err := p.only("url", "gesture"); err != nil {
		return "", Errorf(CodeInvalidParams, "%v", err)
	}
	raw, present, err := p.str("url")
	if err != nil || !present {
		return "", Errorf(CodeInvalidParams, "url must be a string")
	}
	gesture, present, err := p.boolean("gesture")
	if err != nil || !present {
		return "", Errorf(CodeInvalidParams, "gesture must be a boolean")
	}
	if len(raw) > maxExternalURL {
		return "", Errorf(CodeInvalidURL, "url is longer than %d bytes", maxExternalURL)
	}
	u, err := origin.ParseURL(raw)
	if err != nil {
		return "", Errorf(CodeInvalidURL, "url is not an absolute URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", Errorf(CodeInvalidURL, "only http and https URLs are opened, not %s:", quote(u.Scheme))
	}
	if u.User != nil {
		// https://good.example@evil.example/ reads as good.example to a
		// person; such URLs have no legitimate use in a link.
		return "", Errorf(CodeInvalidURL, "url must not carry a user name or password")
	}
	if !gesture {
		return "", Errorf(CodeNoUserGesture, "openExternal must be called from a user gesture (a click or a key press)")
	}
	return u.String(), nil
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// errorString is a plain error for parse helpers whose message becomes the
// message of an *Error.
type errorString string

func (e errorString) Error() string { return string(e) }
