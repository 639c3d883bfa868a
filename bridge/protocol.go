package bridge

import (
	"encoding/json"
	"fmt"
)

// The page protocol (docs/bridge.md, "Protocol").
//
//	request  {"v":1,"id":7,"key":"…","method":"getContext","params":{…}}
//	reply    {"v":1,"id":7,"ok":true,"result":…}
//	         {"v":1,"id":7,"ok":false,"error":{"code":"wrong_origin","message":"…"}}
//	event    {"v":1,"event":"themechanged","data":{"theme":"dark"}}
//
// Requests travel through the one function the host binds (PostFunction);
// replies and events through the host evaluating
// window.__miniappHostReceive(<json>) in the main frame (receiveScript).
const (
	// ProtocolVersion is the "v" of every message. It changes only when
	// a message changes incompatibly; the script and the dispatcher are
	// shipped together, so the script's version always matches.
	ProtocolVersion = 1
	// APIVersion is the version of window.miniapp as page authors see
	// it (window.miniapp.version).
	APIVersion = "1.0.0"
	// MaxMessageSize caps a request. The largest legitimate request is an
	// authorize call with its authorization_details, a few kilobytes.
	MaxMessageSize = 64 << 10
	// PostFunction is the name under which the host binds its one
	// function (webview Bind). The bridge script captures it at injection
	// time and removes it from window.
	PostFunction = "__miniappHostPost"
	// ReceiveFunction is the function the bridge script defines (not
	// writable, not configurable) for the host to deliver replies and
	// events.
	ReceiveFunction = "__miniappHostReceive"
)

// Method names of the page API, as sent in "method".
const (
	MethodReady        = "ready"
	MethodClose        = "close"
	MethodGetContext   = "getContext"
	MethodAuthorize    = "authorize"
	MethodOpenExternal = "openExternal"
)

// request is a decoded page request. key is the per-view key the bridge
// script sent; it is checked by the dispatcher, not the decoder.
type request struct {
	// object is true once raw was read as a JSON object: key is then
	// whatever the "key" field held.
	object bool
	id     int64
	key    string
	method string
	params fields // nil when absent
}

// replyError is the "error" member of a reply.
type replyError struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// The authorization server's OAuth error (Error.ServerError).
	ServerError            string `json:"server_error,omitempty"`
	ServerErrorDescription string `json:"server_error_description,omitempty"`
}

// reply is a page reply as it goes on the wire.
type reply struct {
	V      int         `json:"v"`
	ID     int64       `json:"id"`
	OK     bool        `json:"ok"`
	Result any         `json:"result,omitempty"`
	Error  *replyError `json:"error,omitempty"`
}

// pageEvent is an event for the page as it goes on the wire.
type pageEvent struct {
	V     int    `json:"v"`
	Event string `json:"event"`
	Data  any    `json:"data"`
}

// decodeRequest reads one page request. It never panics. On failure it
// returns the request as far as it was read (key and id may be set, so that
// the dispatcher can decide whether the error reply may carry the id) and
// the error.
func decodeRequest(raw []byte) (request, *Error) {
	var r request
	if len(raw) > MaxMessageSize {
		return r, Errorf(CodeTooLarge, "message of %d bytes, the limit is %d", len(raw), MaxMessageSize)
	}
	f, err := splitObject(raw)
	if err != nil {
		return r, Errorf(CodeInvalidMessage, "%v", err)
	}
	r.object = true
	// The key and id first: they decide whether an error reply can name
	// the request (dispatcher.go, "Replies to what cannot be trusted").
	if key, _, err := f.str("key"); err == nil {
		r.key = key
	}
	id, present, err := f.integer("id")
	switch {
	case err != nil:
		return r, Errorf(CodeInvalidMessage, "%v", err)
	case !present:
		return r, Errorf(CodeInvalidMessage, "id is missing")
	case id < 1 || id > maxSafeInteger:
		return r, Errorf(CodeInvalidMessage, "id must be from 1 to %d", int64(maxSafeInteger))
	}
	r.id = id
	if err := f.only("v", "id", "key", "method", "params"); err != nil {
		return r, Errorf(CodeInvalidMessage, "%v", err)
	}
	v, present, err := f.integer("v")
	switch {
	case err != nil:
		return r, Errorf(CodeInvalidMessage, "%v", err)
	case !present:
		return r, Errorf(CodeInvalidMessage, "v is missing")
	case v != ProtocolVersion:
		return r, Errorf(CodeUnsupportedVersion, "protocol version %d, this host speaks %d", v, ProtocolVersion)
	}
	if _, present, err := f.str("key"); err != nil || !present {
		return r, Errorf(CodeInvalidMessage, "key must be a string")
	}
	method, present, err := f.str("method")
	switch {
	case err != nil:
		return r, Errorf(CodeInvalidMessage, "%v", err)
	case !present:
		return r, Errorf(CodeInvalidMessage, "method is missing")
	}
	r.method = method
	params, _, err := f.object("params")
	if err != nil {
		return r, Errorf(CodeInvalidMessage, "%v", err)
	}
	r.params = params
	return r, nil
}

// encodeReply renders a reply. Results are plain structs of this package,
// so marshalling cannot fail for them; if a host ever returned a value
// that cannot be marshalled, the page gets host_error instead of nothing.
func encodeReply(id int64, result any, e *Error) []byte {
	r := reply{V: ProtocolVersion, ID: id, OK: e == nil, Result: result}
	if e != nil {
		r.Result = nil
		r.Error = &replyError{Code: e.Code, Message: e.Message, ServerError: e.ServerError, ServerErrorDescription: e.ServerErrorDescription}
	}
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(reply{V: ProtocolVersion, ID: id, Error: &replyError{
			Code: CodeHostError, Message: "the host's result could not be encoded"}})
	}
	return b
}

// receiveScript is the JavaScript the host evaluates in the main frame to
// deliver msg, an encoded reply or event. msg comes from encoding/json,
// which escapes <, >, &, U+2028 and U+2029, so it is a safe JavaScript
// expression: nothing from the page is ever spliced into a script as text.
func receiveScript(msg []byte) string {
	return fmt.Sprintf("window.%s(%s)", ReceiveFunction, msg)
}
