package resolver

import (
	"fmt"
	"strings"
)

// Stage names one step of a resolve (package documentation).
type Stage string

// The stages, in the order they run.
const (
	StageOrigin   Stage = "origin"
	StageDownload Stage = "download"
	StageParse    Stage = "parse"
	StageSchema   Stage = "schema"
	StageIdentity Stage = "identity"
	StageClient   Stage = "client"
	StageOrigins  Stage = "origins"
)

// Stages lists every stage in the order they run.
func Stages() []Stage {
	return []Stage{StageOrigin, StageDownload, StageParse, StageSchema, StageIdentity, StageClient, StageOrigins}
}

// Codes of a Reason. They are stable and documented in docs/resolve.md; QA
// matches on them. Schema violations use "schema-" followed by the JSON
// Schema keyword that failed (schema-required, schema-additional-properties,
// schema-type, schema-min-length, schema-max-length, schema-enum,
// schema-pattern, schema-max-items, schema-not), in the schema stage for the
// manifest and in the client stage for the client configuration.
const (
	CodeOriginInvalid  = "origin-invalid"  // the origin argument is not a bare origin
	CodeOriginInsecure = "origin-insecure" // http on a host that is not loopback, without Insecure

	CodeHTTPStatus          = "http-status"           // a status other than 200 (and not 5xx)
	CodeContentType         = "content-type"          // not application/json or application/manifest+json
	CodeTooLarge            = "too-large"             // the body is larger than Config.MaxBytes
	CodeRedirectCrossOrigin = "redirect-cross-origin" // a redirect to another origin
	CodeRedirectLimit       = "redirect-limit"        // more than Config.MaxRedirects redirects (loops end here)
	CodeRedirectInvalid     = "redirect-invalid"      // a redirect without a usable Location

	CodeTimeout     = "timeout"      // Undecided: no complete answer within Config.Timeout
	CodeNetwork     = "network"      // Undecided: refused, reset or otherwise broken connection
	CodeServerError = "server-error" // Undecided: a 5xx status
	CodeCanceled    = "canceled"     // Undecided: the caller's context ended

	CodeJSONSyntax      = "json-syntax"           // the body is not JSON, has data after the value, or breaks a bound (long number, deep nesting)
	CodeJSONDuplicate   = "json-duplicate-member" // an object of the body names a member twice (pointer: the member)
	CodeIDMismatch      = "id-mismatch"           // the manifest id is not the requested id
	CodeNotRegistered   = "client-not-registered" // the dashboard answered 404 for oauth.client_id
	CodeAuthURLRequired = "auth-url-required"     // a confidential client without oauth.auth_url

	CodeStartURLInvalid     = "start-url-invalid"      // start_url does not resolve to a URL
	CodeStartURLCrossOrigin = "start-url-cross-origin" // start_url is not on the manifest's origin
	CodeStartURLNotAllowed  = "start-url-not-allowed"  // start_url's origin is not in allowed_origins
	CodeAuthURLInvalid      = "auth-url-invalid"
	CodeAuthURLCrossOrigin  = "auth-url-cross-origin"
	CodeAuthURLNotAllowed   = "auth-url-not-allowed"
)

// Reason is one thing wrong with a Miniapp: the stage that found it, a
// stable code, a JSON pointer (RFC 6901) into the manifest or client
// configuration when one applies, a message saying what is wrong and a hint
// saying how to fix it.
type Reason struct {
	Stage   Stage  `json:"stage"`
	Code    string `json:"code"`
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

func (r Reason) String() string {
	var b strings.Builder
	printf(&b, "%s/%s", r.Stage, r.Code)
	if r.Pointer != "" {
		printf(&b, " at %s", r.Pointer)
	}
	printf(&b, ": %s", r.Message)
	return b.String()
}

// Rejection is the error of a resolve whose answer is no: the Miniapp must
// not be opened (docs/service.md §4.3 step 4, docs/service.md §7). Reasons are those of every failed
// stage, in stage order: a resolve goes on past a failed stage to every later
// stage that still has its input, so that one run reports all it can. The
// embedded Reason is the first of Reasons, of the earliest failed stage.
type Rejection struct {
	Reason
	Reasons []Reason
	Report  *Report
}

func (e *Rejection) Error() string {
	if len(e.Reasons) > 1 {
		return fmt.Sprintf("resolver: rejected: %s (and %d more)", e.Reason, len(e.Reasons)-1)
	}
	return "resolver: rejected: " + e.Reason.String()
}

// Undecided is the error of a resolve that could not get an answer: a
// server error, a timeout, a refused or reset connection, or a canceled
// context. It is not a rejection: trying again later may succeed.
type Undecided struct {
	Stage   Stage
	Code    string
	Message string
	Err     error
	Report  *Report
}

func (e *Undecided) Error() string {
	return fmt.Sprintf("resolver: could not decide (%s/%s): %s", e.Stage, e.Code, e.Message)
}

func (e *Undecided) Unwrap() error { return e.Err }
