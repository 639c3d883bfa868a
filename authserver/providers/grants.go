package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// Grant is the answer of GET {base_url}/authorization (docs/service.md §2.6, §4.1).
type Grant struct {
	Scopes                 []string          `json:"scopes"`
	AuthorizationDetails   []json.RawMessage `json:"authorizationDetails"`
	OrgID                  *string           `json:"orgId"`
	Subject                string            `json:"subject"`
	ConsumerInstallationID string            `json:"consumerInstallationId"`
}

// GrantSource returns the grant behind an access token.
type GrantSource interface {
	Grant(ctx context.Context, accessToken string) (*Grant, error)
}

// DPoPGrantSource is a GrantSource that also reads the grant behind a
// DPoP-bound access token (RFC 9449), forwarding the caller's proof: the
// service checks its key, ath, age and single use (docs/fapi.md,
// "Presenting a bound token").
type DPoPGrantSource interface {
	GrantDPoP(ctx context.Context, accessToken, proof string) (*Grant, error)
}

// GrantError is the service's refusal of GET {base_url}/authorization: the
// error object of docs/service.md §4.1 and §7.
type GrantError struct {
	Code    string `json:"code"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// Challenge is the service's WWW-Authenticate; a refusal about DPoP
	// has a DPoP challenge (RFC 9449 §7.1). Nonce is its DPoP-Nonce.
	Challenge, Nonce string `json:"-"`
}

// dpop reports whether the refusal is about DPoP: a bound token sent as
// Bearer, a proof missing or broken, a nonce wanted.
func (e *GrantError) dpop() bool {
	return strings.HasPrefix(e.Challenge, "DPoP ") || e.Code == "invalid_dpop_proof" || e.Code == "use_dpop_nonce"
}

func (e *GrantError) Error() string {
	return fmt.Sprintf("providers: grant endpoint refused: %s (status %d)", e.Code, e.Status)
}

// tokenProblem says what a refusal of the grant endpoint means for the
// Resource Server's own caller: a description for an RFC 6750 §3.1
// invalid_token answer when the refusal is about the caller's access token,
// or "" when it is the Resource Server's own problem (its credential, the
// service failing), which the caller cannot fix and which is not its
// token's fault.
func (e *GrantError) tokenProblem() string {
	switch e.Code {
	case "missing_token", "malformed_token", "invalid_token":
		return "the access token was not issued by the service"
	case "revoked_token":
		return "the access token was revoked"
	case "expired_token":
		return "the access token has expired"
	case "client_not_allowed":
		// The service refuses to show this Resource Server the grant of a
		// token whose audience does not name it: the token was issued for
		// another resource, and a token for another audience is an invalid
		// token here (RFC 9068 §4, RFC 8707 §2).
		return "the access token was not issued for this resource"
	}
	return ""
}

// GrantClient reads grants from the service with the Resource Server's own
// client credential, sent in X-Client-Id and X-Client-Secret beside the
// Bearer token, or for a credential with keys as a client assertion in
// X-Client-Assertion (docs/authserver.md, "GET {base_url}/authorization").
type GrantClient struct {
	// Endpoint is {base_url}/authorization.
	Endpoint     string
	ClientID     string
	ClientSecret string
	// Assertion, when set, signs a client assertion (RFC 7523 §3: iss
	// and sub the client's id, a jti used once, a short exp) for aud,
	// which is Endpoint; each request sends a fresh one in
	// X-Client-Assertion in place of ClientSecret. It is how a credential
	// that authenticates with private_key_jwt, and has no secret, reads
	// grants.
	Assertion func(aud string) (string, error)
	// HTTP is the client used; nil means a client with a 5 s timeout.
	HTTP *http.Client
}

// maxGrantBytes caps the grant document read from the service.
const maxGrantBytes = 1 << 20

// Grant implements GrantSource.
func (c *GrantClient) Grant(ctx context.Context, accessToken string) (*Grant, error) {
	return c.grant(ctx, "Bearer", accessToken, "")
}

// GrantDPoP implements DPoPGrantSource: the token goes as DPoP with the
// caller's proof, whose htu is the provider's URL.
func (c *GrantClient) GrantDPoP(ctx context.Context, accessToken, proof string) (*Grant, error) {
	return c.grant(ctx, "DPoP", accessToken, proof)
}

func (c *GrantClient) grant(ctx context.Context, scheme, accessToken, proof string) (*Grant, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Endpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("providers: %w", err)
	}
	req.Header.Set("Authorization", scheme+" "+accessToken)
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	req.Header.Set("X-Client-Id", c.ClientID)
	if c.Assertion != nil {
		a, err := c.Assertion(c.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("providers: client assertion: %w", err)
		}
		req.Header.Set("X-Client-Assertion", a)
	} else {
		req.Header.Set("X-Client-Secret", c.ClientSecret)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	a, err := jsonhttp.Do(hc, req, maxGrantBytes)
	if err != nil {
		return nil, fmt.Errorf("providers: grant endpoint: %w", err)
	}
	if a.Status != http.StatusOK {
		ge := &GrantError{Status: a.Status}
		if json.Unmarshal(a.Body, ge) != nil || ge.Code == "" {
			return nil, fmt.Errorf("providers: grant endpoint answered %s without an error object", a.StatusText)
		}
		ge.Challenge, ge.Nonce = a.Header.Get("WWW-Authenticate"), a.Header.Get("DPoP-Nonce")
		return nil, ge
	}
	var g Grant
	if err := a.Decode(&g); err != nil {
		return nil, fmt.Errorf("providers: grant endpoint answered an unreadable grant: %w", err)
	}
	return &g, nil
}

// allows reports whether the grant has an authorization_details entry of
// the given type whose actions include action.
func (g *Grant) allows(typ, action string) bool {
	for _, raw := range g.AuthorizationDetails {
		var d struct {
			Type    string   `json:"type"`
			Actions []string `json:"actions"`
		}
		if json.Unmarshal(raw, &d) != nil || d.Type != typ {
			continue
		}
		for _, a := range d.Actions {
			if a == action {
				return true
			}
		}
	}
	return false
}
