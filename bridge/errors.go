package bridge

import (
	"errors"
	"fmt"
)

// Code is a stable error code of the page protocol and of the automation
// channel. Pages and test drivers match on it; docs/bridge.md and
// docs/automation.md list every code, so a code is never renamed.
type Code string

// Codes of the page protocol (docs/bridge.md, "Errors").
const (
	// CodeNotInHost is produced by the JavaScript alone, in a page that no
	// host injected the transport into (a plain browser tab).
	CodeNotInHost Code = "not_in_host"
	// CodeTooLarge: the message is larger than MaxMessageSize. The bridge
	// script refuses such a request itself; the dispatcher cannot read
	// one, so it only reports it (BridgeRefusedEvent) and answers nothing.
	CodeTooLarge Code = "too_large"
	// CodeInvalidMessage: not a JSON object, a duplicate or unknown field,
	// a field of the wrong type, a missing field.
	CodeInvalidMessage Code = "invalid_message"
	// CodeUnsupportedVersion: "v" is not ProtocolVersion.
	CodeUnsupportedVersion Code = "unsupported_version"
	// CodeUnknownMethod: "method" names no method of the API.
	CodeUnknownMethod Code = "unknown_method"
	// CodeInvalidParams: the params of a known method are wrong.
	CodeInvalidParams Code = "invalid_params"
	// CodeSubframe: the message did not come from the bridge script of the
	// view's main frame (the host said so, or the per-view key is wrong).
	// Such a sender is answered nothing; the code is a reason in
	// BridgeRefusedEvent.
	CodeSubframe Code = "subframe"
	// CodeWrongOrigin: the view's top-level document is not on the
	// Miniapp's origin. Answered nothing, like CodeSubframe.
	CodeWrongOrigin Code = "wrong_origin"
	// CodeNavigatedAway: the document that made the call is no longer the
	// one shown in the view.
	CodeNavigatedAway Code = "navigated_away"
	// CodeClosed: the dispatcher was closed (the Miniapp's view is gone).
	CodeClosed Code = "closed"
	// CodeBusy: too many calls are in flight.
	CodeBusy Code = "busy"
	// CodeInvalidURL: openExternal got a URL that is not an absolute
	// http or https URL without user name or password.
	CodeInvalidURL Code = "invalid_url"
	// CodeNoUserGesture: openExternal was called outside a user gesture.
	CodeNoUserGesture Code = "no_user_gesture"
	// CodeAccessDenied: the subject denied consent (returned by the host).
	CodeAccessDenied Code = "access_denied"
	// CodeCancelled: the call was cancelled (the view navigated or closed,
	// or the user dismissed the consent view).
	CodeCancelled Code = "cancelled"
	// CodeHostError: the host failed; the details are in the host's log,
	// never in the page. When an authorize ended because the
	// authorization server refused the request, the error carries the
	// server's OAuth error (Error.ServerError).
	CodeHostError Code = "host_error"
)

// Codes of the automation channel (docs/automation.md, "Errors"). The
// message codes above (too_large, invalid_message, invalid_params, busy)
// are used there too.
const (
	CodeUnknownCommand Code = "unknown_command"
	CodeCommandFailed  Code = "command_failed"
	CodeBadToken       Code = "bad_token"
	CodeBadOrigin      Code = "bad_origin"
	CodeBadHost        Code = "bad_host"
	CodeBadProtocol    Code = "bad_protocol"
	// CodeServiceRefused: the service refused a development control
	// (ServiceController); the message starts with its status, code and
	// field.
	CodeServiceRefused Code = "service_refused"
)

// Error is a failure with a stable code. Message is written for a
// developer and is sent on the wire as is; it never carries a secret.
//
// Package host returns an *Error from its [Host] and [Controller] methods to
// choose the code the page or the test driver sees (for instance
// CodeAccessDenied when the subject denies consent). Any other error is
// reported as CodeHostError (page) or CodeCommandFailed (automation).
type Error struct {
	Code    Code
	Message string
	// ServerError and ServerErrorDescription are the authorization
	// server's OAuth error code and error_description (RFC 6749
	// §4.1.2.1 and §5.2), set when authorize ended because the server
	// refused the request: the page gets them as server_error and
	// server_error_description (docs/bridge.md, "Errors").
	ServerError, ServerErrorDescription string
}

func (e *Error) Error() string { return fmt.Sprintf("bridge: %s: %s", e.Code, e.Message) }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asError returns err as an *Error when it is one (wrapped or not).
func asError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
