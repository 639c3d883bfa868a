package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
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
// URL goes on the channel through RedactURL (MarshalJSON does it), so the
// host may put the navigation's URL here as it is: an OAuth redirect's code
// or tokens are replaced by their fingerprints whoever builds the event.
type NavigationEvent struct {
	URL      string `json:"url"`
	Decision string `json:"decision"` // NavigationAllowed, NavigationBlocked or NavigationConsent
	Rule     string `json:"rule"`     // the name of the rule that decided
	// Flow is set on a navigation caught for consent (see ConsentShownEvent).
	Flow string `json:"flow,omitempty"`
}

// MarshalJSON writes the event with its URL redacted (RedactURL).
func (e NavigationEvent) MarshalJSON() ([]byte, error) {
	type plain NavigationEvent // without this method
	e.URL = RedactURL(e.URL)
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
	// Flow is the id of the consent flow the event belongs to in the
	// host's network log (GET /api/flows in the playground, docs/playground.md):
	// "" when the host keeps no network log or the event is in no flow.
	Flow string `json:"flow,omitempty"`
}

// ConsentDecidedEvent reports the subject's decision.
type ConsentDecidedEvent struct {
	Decision string `json:"decision"` // ConsentApproved or ConsentDenied
	Account  string `json:"account,omitempty"`
	Flow     string `json:"flow,omitempty"` // see ConsentShownEvent
}

// CodeIssuedEvent reports an authorization code. The code itself never
// travels on the channel: Fingerprint lets a test correlate it.
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
	Flow                 string          `json:"flow,omitempty"` // see ConsentShownEvent
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
func (CodeIssuedEvent) Kind() string     { return "code.issued" }
func (TokenIssuedEvent) Kind() string    { return "token.issued" }
func (CookiesSyncedEvent) Kind() string  { return "cookies.synced" }
func (BridgeCallEvent) Kind() string     { return "bridge.call" }
func (BridgeRefusedEvent) Kind() string  { return "bridge.refused" }

// Fingerprint is how codes and tokens appear on the automation channel:
// the first 16 hex digits of their SHA-256. A test that holds the secret
// (say, the page's access token) can match it; a listener cannot use it.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}

// Withheld stands for a secret the server did not issue (a client secret,
// a password, a client's assertion or DPoP proof, the state and PKCE
// verifier a client made up): an unsalted fingerprint of a value someone
// chose could be reversed by trying candidates, so such a value is
// replaced whole, and only values the server issued from its random source
// (codes and tokens) get a Fingerprint.
const Withheld = "withheld"

// Parameters and members whose values are secrets, or correlate with one,
// in OAuth 2.0 and OpenID Connect requests and responses: issued ones (RFC
// 6749 sections 4.1.2, 4.2.2, 5.1; RFC 7009 and RFC 7662 token; RFC 8628
// device_code; RFC 8693 subject_token and actor_token; OpenID Connect Core
// 3.2.2.5) get a Fingerprint; the others (RFC 6749 sections 2.3.1 and
// 4.1.1 state, RFC 7636 section 4.5, RFC 7523 assertions, RFC 9449 DPoP
// proofs, passwords) are Withheld.
var (
	issuedParams = map[string]bool{
		"code": true, "access_token": true, "id_token": true, "refresh_token": true, "token": true,
		"device_code": true, "subject_token": true, "actor_token": true,
	}
	withheldParams = map[string]bool{
		"state": true, "code_verifier": true, "client_secret": true, "password": true, "client_assertion": true,
		"assertion": true, "dpop": true,
	}
)

// paramName is how a parameter or member name is compared: percent-decoded,
// from its last ?, #, & or ; on (a lenient reader's parameter separators:
// a form field or a JSON member named "x?code" reads as code), trimmed,
// without a trailing "[]" (PHP's array syntax), in lower case.
func paramName(name string) string {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	if i := strings.LastIndexAny(name, "?#&;"); i >= 0 {
		name = name[i+1:]
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "[]"))
}

// ChosenSecretParam reports whether a parameter or member named name holds
// a secret the server did not issue, which gets Withheld, never a
// Fingerprint.
func ChosenSecretParam(name string) bool { return withheldParams[paramName(name)] }

// SecretParam reports whether a parameter or member named name holds a
// secret, or a value that correlates with one: a code or token (a
// Fingerprint stands for it) or a value ChosenSecretParam withholds.
func SecretParam(name string) bool {
	n := paramName(name)
	return issuedParams[n] || withheldParams[n]
}

// RedactParam is what stands for the value of the secret parameter name:
// Withheld, or the Fingerprint of a code or token (value as decoded).
func RedactParam(name, value string) string {
	if ChosenSecretParam(name) {
		return Withheld
	}
	return Fingerprint(value)
}

// RedactURL returns raw with the value of every secret parameter
// (SecretParam: code, state, access_token, id_token, refresh_token, token,
// code_verifier, client_secret, password, client_assertion, ...) replaced:
// a code's or token's by its Fingerprint (of the percent-decoded value), any
// other by Withheld; so that a URL can go on the automation channel, or in
// the network log, without what an OAuth redirect carries. Everything else
// is kept byte for byte, and a test that holds a code can still match it.
//
// raw is not parsed as a URL, so it escapes redaction by no spelling: a
// scheme in any case, spaces around it, a relative URL, a URL inside a
// header (Refresh: 0; url=..., Link: <...>) or an error message, a form
// body or a bare "code=..." are all redacted alike. Names are matched after
// percent-decoding and without regard to case (a server may read %63ode as
// code). Parameters start at the beginning of raw and after &, ; or ?, as a
// lenient server or a single-page app's fragment route (#/cb?code=...)
// might read them; a redacted value runs to the next &, ; or #, since a ?
// in it is data. A URL percent-encoded inside raw (a redirect_uri
// parameter holding one) is redacted too: when its decoded form hides a
// secret parameter, the decoded form is returned, redacted. Redacting a
// parameter that merely looks like one of these costs nothing.
func RedactURL(raw string) string {
	out, n := redactParams(raw)
	// A secret inside a percent-encoded URL (…?redirect=https%3A…%3Fcode%3D…):
	// decode, at most three times over, while that reveals more secret
	// parameters than the text had.
	cur := raw
	for range 3 {
		if !strings.Contains(cur, "%") {
			break
		}
		cur = lenientUnescape(cur)
		if red, m := redactParams(cur); m > n {
			out, n = red, m
		}
	}
	return out
}

// redactParams is one pass of RedactURL over s; n counts the secret
// parameters it redacted.
func redactParams(s string) (_ string, n int) {
	if !strings.Contains(s, "=") {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	rest := s
	for first := true; rest != ""; first = false {
		if !first {
			// rest starts at a separator: copy it.
			b.WriteByte(rest[0])
			rest = rest[1:]
		}
		end := paramEnd(rest, "?#&;")
		name, _, hasValue := strings.Cut(rest[:end], "=")
		if !hasValue || !SecretParam(name) {
			b.WriteString(rest[:end])
			rest = rest[end:]
			continue
		}
		end = paramEnd(rest, "#&;")
		value := rest[len(name)+1 : end]
		b.WriteString(name)
		b.WriteByte('=')
		if value != "" {
			if v, err := url.QueryUnescape(value); err == nil {
				value = v
			}
			b.WriteString(RedactParam(name, value))
			n++
		}
		rest = rest[end:]
	}
	return b.String(), n
}

// lenientUnescape decodes every valid %XX of s and keeps any other "%".
func lenientUnescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// paramEnd is the index in s of the first of seps, or len(s).
func paramEnd(s, seps string) int {
	if i := strings.IndexAny(s, seps); i >= 0 {
		return i
	}
	return len(s)
}

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
// Source and Frame go on the channel through RedactURL (MarshalJSON does
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

// MarshalJSON writes the event with Source and Frame redacted (RedactURL).
func (e ConsoleEvent) MarshalJSON() ([]byte, error) {
	type plain ConsoleEvent // without this method
	e.Source, e.Frame = RedactSource(e.Source), RedactURL(e.Frame)
	return json.Marshal(plain(e))
}

// RedactSource is RedactURL of a url:line:col source location (a console
// message's) that keeps its line and column: without the split, a code in
// the URL's last parameter would take them into its fingerprint.
func RedactSource(s string) string {
	rest, pos := s, ""
	for range 2 {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 || i == len(rest)-1 || strings.Trim(rest[i+1:], "0123456789") != "" {
			return RedactURL(s)
		}
		rest, pos = rest[:i], rest[i:]+pos
	}
	return RedactURL(rest) + pos
}
