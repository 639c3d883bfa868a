package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/redact"
)

// Error is an OAuth protocol error: the error codes of RFC 6749 §4.1.2.1
// and §5.2, OpenID Connect Core §3.1.2.6, RFC 7009 §2.2.1, RFC 8707 §2 and RFC 9396 §5, and the codes of
// the grant endpoint (docs/authserver.md). Handlers return fresh values; one
// function per response form (redirect, JSON, error page, grant object)
// turns them into HTTP, and statusOf is the one table of HTTP statuses.
type Error struct {
	Code        string
	Description string
	// Violations are the catalog's findings when the catalog refused the
	// request; the native API returns them so a host can point at the field.
	Violations []catalog.Violation
	// challenge is set when a 401 must carry WWW-Authenticate (RFC 6749 §5.2
	// for client_secret_basic).
	challenge string
	// bearer asks for an RFC 6750 §3 challenge carrying the error code and
	// description (the userinfo endpoint).
	bearer bool
	// dpopChallenge is the WWW-Authenticate of a resource's DPoP refusal
	// (401), and nonce a DPoP-Nonce to send (dpop.go, writeDPoPHeaders).
	dpopChallenge, nonce string
	// status, when not 0, is the HTTP status of an injected fault
	// (faults.go) in place of statusOf's.
	status int
	// field, sent and expected say what was compared, for the audit
	// event (compared, events.go).
	field, sent, expected string
}

// statusCode is the HTTP status oe is answered with.
func (oe *Error) statusCode() int {
	if oe.status != 0 {
		return oe.status
	}
	return statusOf(oe.Code)
}

func (e *Error) Error() string { return "oauth: " + e.Code + ": " + e.Description }

// Error codes.
const (
	// RFC 6749 and extensions.
	codeInvalidRequest              = "invalid_request"
	codeInvalidClient               = "invalid_client"
	codeInvalidGrant                = "invalid_grant"
	codeUnauthorizedClient          = "unauthorized_client"
	codeUnsupportedGrantType        = "unsupported_grant_type"
	codeUnsupportedResponseType     = "unsupported_response_type"
	codeInvalidScope                = "invalid_scope"
	codeAccessDenied                = "access_denied"
	codeServerError                 = "server_error"
	codeTemporarilyUnavailable      = "temporarily_unavailable"
	codeInvalidTarget               = "invalid_target"
	codeInvalidAuthorizationDetails = "invalid_authorization_details"
	codeConsentRequired             = "consent_required"
	codeLoginRequired               = "login_required"
	codeRequestNotSupported         = "request_not_supported"
	codeRequestURINotSupported      = "request_uri_not_supported"
	codeInvalidToken                = "invalid_token"
	codeInsufficientScope           = "insufficient_scope"
	codeUnsupportedTokenType        = "unsupported_token_type"
	// RFC 9110 §15.5.14: a body over its limit (docs/authserver.md, Limits).
	codeContentTooLarge = "content_too_large"
	// Native-consent API.
	codeUnknownRequest = "unknown_request"
	// Grant endpoint (GET {base_url}/authorization), documented in docs/authserver.md.
	codeMissingToken             = "missing_token"
	codeMalformedToken           = "malformed_token"
	codeExpiredToken             = "expired_token"
	codeRevokedToken             = "revoked_token"
	codeMissingClientCredentials = "missing_client_credentials"
	codeInvalidClientCredentials = "invalid_client_credentials"
	codeClientNotAllowed         = "client_not_allowed"
	// Charge endpoint (POST {base_url}/automatic-charges), docs/authserver.md.
	codeInsufficientAuthorization = "insufficient_authorization"
	codeAmountOutsideLimits       = "amount_outside_limits"
	codeInvalidCharge             = "invalid_charge"
	// Remembered consent (GET/DELETE /native/consents).
	codeUnknownConsent = "unknown_consent"
)

// statusOf is the HTTP status of each error code: the one mapping from
// protocol errors to HTTP.
func statusOf(code string) int {
	switch code {
	case codeInvalidClient, codeInvalidToken, codeMissingToken, codeMalformedToken, codeExpiredToken,
		codeRevokedToken, codeMissingClientCredentials, codeInvalidClientCredentials:
		return http.StatusUnauthorized
	case codeClientNotAllowed, codeInsufficientScope, codeAccessDenied, consent.CodeProjectNotApproved,
		consent.CodeCompanyAccessDenied, consent.CodeAccountNotOwned, consent.CodeBeneficiaryNotAllowed,
		consent.CodeNoFittingAccount, codeAmountOutsideLimits, codeInsufficientAuthorization:
		return http.StatusForbidden
	case codeNotSignedIn:
		return http.StatusUnauthorized
	case codeCrossOrigin, codeBadCSRF:
		return http.StatusForbidden
	case codeUnknownRequest, codeUnknownConsent, codeUnknownGrant, codeUnknownEntry:
		return http.StatusNotFound
	case codeGrantsChanged:
		return http.StatusConflict
	case codeServerError:
		return http.StatusInternalServerError
	case codeTemporarilyUnavailable:
		return http.StatusServiceUnavailable
	case codeContentTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func oauthErr(code, desc string) *Error { return &Error{Code: code, Description: desc} }

// bodyErr is the error for a request body that could not be read: 413 when
// it is over maxBodyBytes, else invalid_request with what was expected.
func bodyErr(err error, expected string) *Error {
	if httplimit.TooLarge(err) {
		return oauthErr(codeContentTooLarge, fmt.Sprintf("the body is over the limit of %d bytes", maxBodyBytes))
	}
	return oauthErr(codeInvalidRequest, expected+": "+err.Error())
}

// Refusals say what was sent and what was expected (docs/authserver.md,
// "Refusals"): a value of the request is quoted with echo, a list of
// expected values with echoList. Neither ever quotes a secret: a value
// is redacted by the redact package's rule (the value of a secret
// parameter, a URL's secret parameters and password, a secret JSON
// member), and secrets themselves (client_secret, code_verifier, codes,
// tokens, assertions, proofs) are never passed to them.
const (
	// maxEcho bounds a quoted value, in bytes; a longer one is cut and
	// ends in "...".
	maxEcho = 200
	// maxEchoList bounds the values of a quoted list; the rest are
	// counted.
	maxEchoList = 8
)

// echo quotes v, a value the request sent or the server expects, for a
// refusal's description: redacted (redact.Text), without control
// characters, cut at maxEcho bytes on a character boundary, between
// apostrophes (a double quote is not allowed in an error_description,
// RFC 6749 §5.2). An empty value is named as such.
func echo(v string) string {
	if v == "" {
		return "'' (empty)"
	}
	v = redact.Text(v)
	var b strings.Builder
	for _, r := range v {
		if unicode.IsControl(r) || r == utf8.RuneError {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > maxEcho {
			b.WriteString("...")
			break
		}
		b.WriteRune(r)
	}
	return "'" + b.String() + "'"
}

// echoParam quotes the value of the parameter name: a secret parameter's
// (state, code_verifier, a code...) as redact.Param writes it, any other
// as echo does.
func echoParam(name, v string) string {
	if redact.SecretParam(name) {
		return redact.Param(name, v)
	}
	return echo(v)
}

// echoList quotes each of vs (at most maxEchoList, then how many more),
// comma-separated; "none" when vs is empty.
func echoList(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	var parts []string
	for i, v := range vs {
		if i == maxEchoList {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-i))
			break
		}
		parts = append(parts, echo(v))
	}
	return strings.Join(parts, ", ")
}

// catalogErr turns the catalog's refusal into the OAuth error it names.
func catalogErr(err error) *Error {
	var ce *catalog.Error
	if errors.As(err, &ce) {
		return &Error{Code: ce.Code, Description: ce.Description, Violations: ce.Violations}
	}
	return oauthErr(codeInvalidRequest, err.Error())
}

// asError returns err as a protocol error; anything else is a server_error
// whose detail is logged, never shown.
func (s *base) asError(r *http.Request, err error) *Error {
	var oe *Error
	if errors.As(err, &oe) {
		s.refused(r, oe)
		return oe
	}
	ctx, path := context.Background(), ""
	if r != nil {
		ctx, path = r.Context(), r.URL.Path
	}
	s.log.ErrorContext(ctx, "oauth: internal error", "path", path, "err", err)
	internal := oauthErr(codeServerError, "the server could not complete the request")
	s.refused(r, internal)
	return internal
}

// errorDescription makes desc a valid error_description. RFC 6749
// §4.1.2.1 and §5.2 (and RFC 6750 §3 for the WWW-Authenticate parameter)
// allow only %x20-21 / %x23-5B / %x5D-7E: printable ASCII without the
// double quote and the backslash. The messages are written for people,
// with section signs and quotes, and some echo the request (a scope, an
// org_id, a name with accents); each character outside the set becomes its
// nearest allowed spelling, so the message keeps its meaning: "§" becomes
// "section", a double quote an apostrophe, a backslash a slash, accented
// letters lose their accents, typographic punctuation becomes ASCII,
// control characters become spaces, and anything else "?". Every writer of
// an error (describe) applies it.
func errorDescription(desc string) string {
	ok := true
	for i := 0; i < len(desc); i++ {
		if !descriptionChar(desc[i]) {
			ok = false
			break
		}
	}
	if ok {
		return desc
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(desc) {
		switch {
		case r < utf8.RuneSelf && descriptionChar(byte(r)):
			b.WriteRune(r)
		case r == '"', r == '\u201c', r == '\u201d', r == '\u2018', r == '\u2019', r == '\u00ab', r == '\u00bb':
			b.WriteByte('\'')
		case r == '\\':
			b.WriteByte('/')
		case r == '\u00a7': // §
			b.WriteString("section ")
		case unicode.Is(unicode.Mn, r): // a combining accent, after NFD
		case r == '\u2013', r == '\u2014', r == '\u2212':
			b.WriteByte('-')
		case r == '\u2026':
			b.WriteString("...")
		case r == '\u2192':
			b.WriteString("->")
		case r == '\u2264':
			b.WriteString("<=")
		case r == '\u2265':
			b.WriteString(">=")
		case r == '\u00d7':
			b.WriteByte('x')
		case unicode.IsSpace(r) || unicode.IsControl(r):
			b.WriteByte(' ')
		default:
			b.WriteByte('?')
		}
	}
	// "§ 3.1" would now read "section  3.1", and a final "§" "section ".
	return strings.TrimRight(strings.ReplaceAll(b.String(), "section  ", "section "), " ")
}

// descriptionChar reports whether c may appear in an error_description
// (RFC 6749 §5.2: %x20-21 / %x23-5B / %x5D-7E).
func descriptionChar(c byte) bool {
	return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'
}

// describe is the error_description of oe as it is written: in a JSON body,
// a redirect, a WWW-Authenticate challenge or the grant endpoint's message.
func (oe *Error) describe() string { return errorDescription(oe.Description) }

// writeJSONError writes an RFC 6749 §5.2 error body (token, introspection,
// revocation, userinfo and native-consent endpoints).
func (s *base) writeJSONError(w http.ResponseWriter, r *http.Request, err error) {
	oe := s.asError(r, err)
	desc := oe.describe()
	st := oe.statusCode()
	switch {
	case writeDPoPHeaders(w, oe):
		st = http.StatusUnauthorized
	case oe.bearer:
		// RFC 6750 §3: the description is a quoted-string here, which the
		// charset of errorDescription keeps intact.
		w.Header().Set("WWW-Authenticate", `Bearer error="`+oe.Code+`", error_description="`+desc+`"`)
	case oe.challenge != "":
		w.Header().Set("WWW-Authenticate", oe.challenge)
	}
	body := struct {
		Error       string              `json:"error"`
		Description string              `json:"error_description,omitempty"`
		Violations  []catalog.Violation `json:"violations,omitempty"`
	}{oe.Code, desc, oe.Violations}
	writeJSON(w, st, body)
}

// writeGrantError writes the grant endpoint's error object, {"code", "status"}
// (docs/service.md §4.1 and §7).
func (s *base) writeGrantError(w http.ResponseWriter, r *http.Request, err error) {
	oe := s.asError(r, err)
	st := oe.statusCode()
	if writeDPoPHeaders(w, oe) {
		st = http.StatusUnauthorized
	} else if st == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+s.cfg.baseURL()+`"`)
	}
	writeJSON(w, st, struct {
		Code    string `json:"code"`
		Status  int    `json:"status"`
		Message string `json:"message,omitempty"`
	}{oe.Code, st, oe.describe()})
}

// errorRedirect is the authorization error response (RFC 6749 §4.1.2.1) sent
// to a redirect_uri that was verified first, with state and iss (RFC 9207 §2).
func (s *base) errorRedirect(redirectURI, state string, oe *Error) string {
	q := url.Values{}
	q.Set("error", oe.Code)
	if desc := oe.describe(); desc != "" {
		q.Set("error_description", desc)
	}
	if state != "" {
		q.Set("state", state)
	}
	q.Set("iss", s.cfg.Issuer)
	return appendQuery(redirectURI, q)
}

// appendQuery adds parameters to a registered redirect URI, keeping any
// query it already has (RFC 6749 §3.1.2).
func appendQuery(uri string, q url.Values) string {
	sep := "?"
	for i := 0; i < len(uri); i++ {
		if uri[i] == '?' {
			sep = "&"
			break
		}
	}
	return uri + sep + q.Encode()
}

// Header values of every JSON response, set without canonicalising the
// names or allocating on each response (net/http never appends to them;
// an append by a handler would copy, their capacity being their length).
var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
	headerNoCache = []string{"no-cache"}
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Cache-Control"] = headerNoStore
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"server_error"}`, http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	w.Write(b)
}
