package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Event is one thing that happened in the host, for the automation channel
// (docs/automation.md, "Events"). Kind is the stable name that test drivers
// match on; the value itself is marshalled as the event's data.
type Event interface {
	Kind() string
}

// Decisions in BridgeCallEvent.
const (
	DecisionAllowed  = "allowed"  // the call passed the call-time gate and runs
	DecisionRefused  = "refused"  // the call was refused; Code says why
	DecisionWithheld = "withheld" // the call ran but its reply was not delivered; Code says why
)

// Decisions in NavigationEvent.
const (
	NavigationAllowed = "allowed"
	NavigationBlocked = "blocked"
	NavigationConsent = "consent" // caught and replaced by the native consent view
)

// Decisions in ConsentDecidedEvent.
const (
	ConsentApproved = "approved"
	ConsentDenied   = "denied"
)

// ResolveStageEvent reports one stage of resolving a Miniapp (issue 3):
// manifest download, schema, identity, client config, origin checks.
type ResolveStageEvent struct {
	Origin string `json:"origin"`
	ID     string `json:"id"`
	Stage  string `json:"stage"`
	// OK is false when the stage rejected the Miniapp; Code, Pointer
	// and Hint then say why, as in the rejection report.
	OK      bool   `json:"ok"`
	Code    string `json:"code,omitempty"`
	Pointer string `json:"pointer,omitempty"`
	Hint    string `json:"hint,omitempty"`
}

// NavigationEvent reports a navigation decided by the native policy.
type NavigationEvent struct {
	URL      string `json:"url"`
	Decision string `json:"decision"` // NavigationAllowed, NavigationBlocked or NavigationConsent
	Rule     string `json:"rule"`     // the name of the rule that decided
}

// ConsentShownEvent reports that the consent view is on screen, with the
// request as the catalog reads it.
type ConsentShownEvent struct {
	ClientID             string          `json:"client_id"`
	Scopes               []string        `json:"scopes,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	OrgID                string          `json:"org_id,omitempty"`
	// Accounts are the choices the screen offers, the values that
	// consent.approve takes as "account".
	Accounts []string `json:"accounts,omitempty"`
}

// ConsentDecidedEvent reports the subject's decision.
type ConsentDecidedEvent struct {
	Decision string `json:"decision"` // ConsentApproved or ConsentDenied
	Account  string `json:"account,omitempty"`
}

// CodeIssuedEvent reports an authorization code. The code itself never
// travels on the channel: Fingerprint lets a test correlate it.
type CodeIssuedEvent struct {
	ClientID    string `json:"client_id"`
	RedirectURI string `json:"redirect_uri"`
	Fingerprint string `json:"fingerprint"`
}

// TokenIssuedEvent reports a token response, without the tokens
// (Fingerprint of the access token only).
type TokenIssuedEvent struct {
	ClientID             string          `json:"client_id"`
	TokenType            string          `json:"token_type"`
	Scope                string          `json:"scope,omitempty"`
	ExpiresIn            int64           `json:"expires_in,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	Fingerprint          string          `json:"fingerprint"`
}

// CookiesSyncedEvent reports the cookies copied from a callback response
// into the view, by name only.
type CookiesSyncedEvent struct {
	Origin string   `json:"origin"`
	Names  []string `json:"names"`
}

// BridgeCallEvent reports a page call and the gate's decision.
type BridgeCallEvent struct {
	Method   string `json:"method"`
	Decision string `json:"decision"` // DecisionAllowed, DecisionRefused or DecisionWithheld
	Code     Code   `json:"code,omitempty"`
}

// Kind names of the events.
func (ResolveStageEvent) Kind() string   { return "resolve.stage" }
func (NavigationEvent) Kind() string     { return "navigation" }
func (ConsentShownEvent) Kind() string   { return "consent.shown" }
func (ConsentDecidedEvent) Kind() string { return "consent.decided" }
func (CodeIssuedEvent) Kind() string     { return "code.issued" }
func (TokenIssuedEvent) Kind() string    { return "token.issued" }
func (CookiesSyncedEvent) Kind() string  { return "cookies.synced" }
func (BridgeCallEvent) Kind() string     { return "bridge.call" }

// Fingerprint is how codes and tokens appear on the automation channel:
// the first 16 hex digits of their SHA-256. A test that holds the secret
// (say, the page's access token) can match it; a listener cannot use it.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}
