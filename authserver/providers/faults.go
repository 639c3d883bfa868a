package providers

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// FaultHook injects a development fault (docs/dashboard.md, "Development
// controls", Faults) into a request whose grant was read: clientID is the
// access token's client, subject the grant's. It has applied what needs
// no error body (the header marking the answer injected, Retry-After, a
// delay, a dropped connection); done reports the request is over. in, when
// not nil, is the error the provider answers in its own shape
// (writeInjected); neither means the real answer follows.
type FaultHook func(w http.ResponseWriter, r *http.Request, clientID, subject string) (in *Injected, done bool)

// Injected is an error a fault makes a provider answer: Code, one of
// FaultKinds, or, with Code "", the code of Status (FaultStatusCode).
// Status, when not 0, replaces the code's own status. Nonce is the
// DPoP-Nonce of a use_dpop_nonce refusal.
type Injected struct {
	Code, Description, Nonce string
	Status                   int
}

// FaultKinds are the error codes the providers answer with
// (docs/service.md §5.7, RFC 6750 §3.1, RFC 9449 §7.1).
func FaultKinds() []string {
	return []string{"invalid_request", "missing_token", "invalid_token", "insufficient_authorization", "grant_unavailable",
		"invalid_dpop_proof", "use_dpop_nonce", "server_error", "temporarily_unavailable"}
}

// FaultStatusCode is the code a provider answers an HTTP status with:
// invalid_token for 401, insufficient_authorization for 403,
// grant_unavailable for 502, temporarily_unavailable for 503 and 429,
// server_error for another 5xx, invalid_request otherwise.
func FaultStatusCode(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_token"
	case status == http.StatusForbidden:
		return "insufficient_authorization"
	case status == http.StatusBadGateway:
		return "grant_unavailable"
	case status == http.StatusServiceUnavailable, status == http.StatusTooManyRequests:
		return "temporarily_unavailable"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request"
}

// writeInjected answers an injected error exactly as the provider answers
// the real one (ServeHTTP): the same challenges, the same body.
func writeInjected(w http.ResponseWriter, in *Injected) {
	code, desc := in.Code, in.Description
	if code == "" {
		code = FaultStatusCode(in.Status)
	}
	status := map[string]int{"missing_token": http.StatusUnauthorized, "invalid_token": http.StatusUnauthorized,
		"insufficient_authorization": http.StatusForbidden, "grant_unavailable": http.StatusBadGateway,
		"server_error": http.StatusInternalServerError, "temporarily_unavailable": http.StatusServiceUnavailable}[code]
	if status == 0 {
		status = http.StatusBadRequest
	}
	if in.Status != 0 {
		status = in.Status
	}
	switch code {
	case "invalid_dpop_proof", "use_dpop_nonce":
		dpopRefusal(w, code, desc, in.Nonce)
		return
	case "missing_token":
		w.Header().Set("WWW-Authenticate", `Bearer, DPoP algs="`+dpopAlgs+`"`)
	case "invalid_token":
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="`+strings.ReplaceAll(desc, `"`, `'`)+`"`)
	case "insufficient_authorization":
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
	}
	writeError(w, status, code, desc)
}

// tokenClient is the client_id claim of an access token the service has
// just vouched for (its grant was read), "" if it has none.
func tokenClient(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		ClientID string `json:"client_id"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return ""
	}
	return c.ClientID
}
