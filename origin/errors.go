package origin

import "fmt"

// Codes of [Error]. They are stable: the resolver shows them to developers
// and tests match on them.
const (
	CodeNotAbsolute = "not-absolute"     // no scheme: a relative reference where an absolute URL is needed
	CodeScheme      = "scheme"           // a scheme that is not allowed here (Parse accepts http and https only)
	CodeForm        = "form"             // a bare origin not written as scheme://host[:port]
	CodeWhitespace  = "whitespace"       // a bare origin containing whitespace or control characters
	CodeWildcard    = "wildcard"         // a "*" in a bare origin's host: allowed_origins has no wildcards
	CodeUserinfo    = "userinfo"         // user name or password in a bare origin
	CodePath        = "path"             // a path other than "/" in a bare origin
	CodeQuery       = "query"            // a query in a bare origin
	CodeFragment    = "fragment"         // a fragment in a bare origin
	CodeHost        = "host"             // a host the WHATWG host parser refuses (empty, forbidden code point, bad IDN)
	CodeIPv4        = "ipv4"             // a host that ends in a number but is not a valid IPv4 address
	CodeIPv6        = "ipv6"             // a bracketed host that is not a valid IPv6 address
	CodePort        = "port"             // a port that is not a number from 0 to 65535
	CodePercent     = "percent-encoding" // a "%" not followed by two hex digits where Go cannot carry it
	CodeRelative    = "relative"         // a relative reference against a base with an opaque path
)

// Error is the error of every function of this package that parses input.
// Code is one of the Code constants; Input is the string that was refused.
type Error struct {
	Code   string
	Input  string
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("origin: %q: %s (%s)", e.Input, e.Detail, e.Code)
}

func errorf(code, input, format string, args ...any) *Error {
	return &Error{Code: code, Input: input, Detail: fmt.Sprintf(format, args...)}
}
