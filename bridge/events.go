package bridge

import (
	"encoding/json"

	"github.com/miniapp-host/miniapp-host/redact"
)

// Event is one thing that happened in the host, for the automation channel
// (docs/automation.md, "Events"). Kind is the stable name that test drivers
// match on; the value itself is marshalled as the event's data. It is an
// alias of the plain interface, so that a package that publishes events
// (netlog) declares the same type without importing the bridge.
type Event = interface {
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

// ResolveStageEvent reports one stage of resolving a Miniapp (docs/resolve.md):
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
	// Reasons are every reason of a failed stage, first one included (a
	// schema stage can fail at several JSON pointers at once); Code,
	// Pointer and Hint repeat the first for older clients.
	Reasons []StageReason `json:"reasons,omitempty"`
	// Launch names the launch that resolved the Miniapp, when the
	// publisher numbers its launches (the playground does: "launch-3"),
	// so that a timeline can group the stages and what followed them.
	Launch string `json:"launch,omitempty"`
}

// StageReason is one reason of a failed resolution stage, as in the
// resolver's report (docs/resolve.md): a stable code, the JSON pointer of
// the offending member, a message and a hint saying how to fix it.
type StageReason struct {
	Code    string `json:"code"`
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message,omitempty"`
	Hint    string `json:"hint,omitempty"`
}

// NavigationEvent reports a navigation decided by the native policy.
//
// URL goes on the channel through redact.URL (MarshalJSON does it), so the
// host may put the navigation's URL here as it is: an OAuth redirect's code
// or tokens are replaced by their fingerprints whoever builds the event.
type NavigationEvent struct {
	URL      string `json:"url"`
	Decision string `json:"decision"` // NavigationAllowed, NavigationBlocked or NavigationConsent
	Rule     string `json:"rule"`     // the name of the rule that decided
	// Flow is set on a navigation caught for consent (see ConsentShownEvent).
	Flow string `json:"flow,omitempty"`
}

// MarshalJSON writes the event with its URL redacted (redact.URL).
func (e NavigationEvent) MarshalJSON() ([]byte, error) {
	type plain NavigationEvent // without this method
	e.URL = redact.URL(e.URL)
	return json.Marshal(plain(e))
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
	// Entries are the screen's entries, each of which the subject may
	// decline unless it is fixed (docs/native-consent.md): what
	// consent.approve's declined_scopes, declined_details and
	// lowered_maximums name.
	Entries []ConsentEntry `json:"entries,omitempty"`
	// Pushed is true when the caught request named a pushed authorization
	// request (request_uri, RFC 9126 §4): the members above are then the
	// pushed request's, as the service read it.
	Pushed bool `json:"pushed,omitempty"`
	// GrantManagementAction and GrantID are the request's Grant
	// Management parameters (FAPI Grant Management §5.2): "create" a new
	// grant, or "merge" into or "replace" the grant GrantID; empty when
	// the request has none (a new grant).
	GrantManagementAction string `json:"grant_management_action,omitempty"`
	GrantID               string `json:"grant_id,omitempty"`
	// Flow is the id of the consent flow the event belongs to in the
	// host's network log (GET /api/flows in the playground, docs/playground.md):
	// "" when the host keeps no network log or the event is in no flow.
	Flow string `json:"flow,omitempty"`
}

// ConsentEntry is one entry of a consent screen: a scope by Name, or an
// authorization_details object by Index (Name is then its type).
type ConsentEntry struct {
	Kind  string `json:"kind"` // "scope" or "detail"
	Name  string `json:"name"`
	Index *int   `json:"index,omitempty"`
	// Fixed entries cannot be declined (openid in an OpenID Connect
	// request).
	Fixed bool `json:"fixed,omitempty"`
	// Minimum and Maximum are an automatic charge's requested
	// transaction limits: a maximum from Minimum to Maximum may be given.
	Minimum string `json:"minimum,omitempty"`
	Maximum string `json:"maximum,omitempty"`
	// Requires are the entries granted only together with this one
	// ("scope NAME", "detail N"), by a catalog rule between entries.
	Requires []string `json:"requires,omitempty"`
}

// ConsentDecidedEvent reports the subject's decision.
type ConsentDecidedEvent struct {
	Decision string `json:"decision"` // ConsentApproved or ConsentDenied
	Account  string `json:"account,omitempty"`
	// DeclinedScopes, DeclinedDetails and LoweredMaximums are the
	// per-entry decisions of an approval: what it does not grant, and the
	// automatic charges allowed less than they asked.
	DeclinedScopes  []string         `json:"declined_scopes,omitempty"`
	DeclinedDetails []int            `json:"declined_details,omitempty"`
	LoweredMaximums []LoweredMaximum `json:"lowered_maximums,omitempty"`
	Flow            string           `json:"flow,omitempty"` // see ConsentShownEvent
}

// ConsentRefusedEvent reports a consent.approve or consent.deny (on the
// automation channel, or a WebDriver extension command) that the host
// refused: no consent screen is shown, a check failed, the per-entry
// choices break a rule, the account is not offered. Code and Message are
// the command's error (docs/automation.md, "Errors").
type ConsentRefusedEvent struct {
	Action  string `json:"action"` // "approve" or "deny"
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Account and the per-entry choices are what the command asked for.
	Account         string           `json:"account,omitempty"`
	DeclinedScopes  []string         `json:"declined_scopes,omitempty"`
	DeclinedDetails []int            `json:"declined_details,omitempty"`
	LoweredMaximums []LoweredMaximum `json:"lowered_maximums,omitempty"`
	Flow            string           `json:"flow,omitempty"` // the flow on screen, if any (see ConsentShownEvent)
}

// CodeIssuedEvent reports an authorization code. The code itself never
// travels on the channel: Fingerprint (redact.Fingerprint) lets a test
// correlate it.
type CodeIssuedEvent struct {
	ClientID    string `json:"client_id"`
	RedirectURI string `json:"redirect_uri"`
	Fingerprint string `json:"fingerprint"`
	Flow        string `json:"flow,omitempty"` // see ConsentShownEvent
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
	// GrantID is the grant the token belongs to (FAPI Grant Management
	// §5.4, docs/authserver.md "Grant management"), when the server said.
	GrantID string `json:"grant_id,omitempty"`
	Flow    string `json:"flow,omitempty"` // see ConsentShownEvent
}

// CookiesSyncedEvent reports the cookies copied from a callback response
// into the view, by name only.
type CookiesSyncedEvent struct {
	Origin string   `json:"origin"`
	Names  []string `json:"names"`
	Flow   string   `json:"flow,omitempty"` // see ConsentShownEvent
}

// BridgeCallEvent reports a call of the Miniapp's bridge script (a message
// with the view's key, from the main frame) and the gate's decision.
type BridgeCallEvent struct {
	// Method is the name of an API method (MethodReady, ...), or "" when
	// the message named none: the string a page sent is never repeated.
	Method   string `json:"method"`
	Decision string `json:"decision"` // DecisionAllowed, DecisionRefused or DecisionWithheld
	Code     Code   `json:"code,omitempty"`
}

// BridgeRefusedEvent reports, in aggregate, the messages a Dispatcher
// refused without attributing them to the Miniapp's bridge script: not a
// JSON object, from a subframe, without the view's key, or with it from a
// document not on the Miniapp's origin. Such a sender is answered nothing
// and is told nothing on the channel either: one event per view per
// RefusedInterval at most, with counts only, so that a frame posting in a
// loop cannot fill the automation clients' buffers.
type BridgeRefusedEvent struct {
	// Count is the number of messages refused since the previous
	// BridgeRefusedEvent of the view.
	Count int `json:"count"`
	// Reasons counts them by code: CodeSubframe (no key, a wrong key, or
	// a subframe), CodeInvalidMessage or CodeTooLarge (not a JSON object),
	// CodeWrongOrigin (the key from a document of another origin).
	Reasons map[Code]int `json:"reasons"`
}

// Kind names of the events.
func (ResolveStageEvent) Kind() string   { return "resolve.stage" }
func (NavigationEvent) Kind() string     { return "navigation" }
func (ConsentShownEvent) Kind() string   { return "consent.shown" }
func (ConsentDecidedEvent) Kind() string { return "consent.decided" }
func (ConsentRefusedEvent) Kind() string { return "consent.refused" }
func (CodeIssuedEvent) Kind() string     { return "code.issued" }
func (TokenIssuedEvent) Kind() string    { return "token.issued" }
func (CookiesSyncedEvent) Kind() string  { return "cookies.synced" }
func (BridgeCallEvent) Kind() string     { return "bridge.call" }
func (BridgeRefusedEvent) Kind() string  { return "bridge.refused" }

// UIStalledEvent reports that the host's UI loop has not run a dispatched
// function for Seconds: clicks, keys and commands wait meanwhile. A
// UIRecoveredEvent follows if it runs again.
type UIStalledEvent struct {
	Seconds float64 `json:"seconds"`
}

// Kind implements Event.
func (UIStalledEvent) Kind() string { return "ui.stalled" }

// UIRecoveredEvent reports that the UI loop runs again after a stall of
// Seconds.
type UIRecoveredEvent struct {
	Seconds float64 `json:"seconds"`
}

// Kind implements Event.
func (UIRecoveredEvent) Kind() string { return "ui.recovered" }

// ConsoleEvent reports what the Miniapp's page wrote to its console, threw
// without catching, or rejected without handling, in any of its frames
// (docs/automation.md, "Events"; docs/host.md, "Console capture"). The
// host caps its length and rate; a summary of the messages it dropped is
// an event of Type "dropped" with Dropped set.
//
// Source and Frame go on the channel through redact.URL (MarshalJSON does
// it): a page at its redirect_uri has the code in its URL. Message is the
// page's own text and is not redacted.
type ConsoleEvent struct {
	// Type is "console" (a console.* call), "error" (an uncaught
	// exception), "rejection" (an unhandled promise rejection) or
	// "dropped" (the host's summary of messages it did not pass on).
	Type string `json:"type"`
	// Level is log, info, warn, error or debug.
	Level   string `json:"level"`
	Message string `json:"message"`
	// Source is the url:line:col of the call, the throw or the rejected
	// error's creation; "" when unknown.
	Source    string `json:"source,omitempty"`
	Frame     string `json:"frame,omitempty"` // the URL of the frame
	MainFrame bool   `json:"main_frame"`
	Dropped   int    `json:"dropped,omitempty"`
}

// Kind implements Event.
func (ConsoleEvent) Kind() string { return "console" }

// MarshalJSON writes the event with Source and Frame redacted (redact.URL,
// redact.Source).
func (e ConsoleEvent) MarshalJSON() ([]byte, error) {
	type plain ConsoleEvent // without this method
	e.Source, e.Frame = redact.Source(e.Source), redact.URL(e.Frame)
	return json.Marshal(plain(e))
}

// DeviceChangedEvent reports the device the Miniapp is shown as
// (docs/playground.md, "Devices"): set at a launch or changed in place,
// and whether the page loaded again for it (a new user agent).
type DeviceChangedEvent struct {
	Device      string  `json:"device"`
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	Orientation string  `json:"orientation,omitempty"`
	Theme       string  `json:"theme"`
	Locale      string  `json:"locale,omitempty"`
	Zoom        float64 `json:"zoom"`
	Reloaded    bool    `json:"reloaded"`
}

// Kind implements Event.
func (DeviceChangedEvent) Kind() string { return "device.changed" }
