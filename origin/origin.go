package origin

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Origin is a WHATWG origin: either the tuple (scheme, host, port) or an
// opaque origin. Host is the canonical serialized host (lower-case punycode
// domain, dotted IPv4, or IPv6 in brackets). Port 0 means the scheme's
// default port, as does the default port written out; the port number 0
// itself, which a browser accepts in a URL, is written -1 so that
// http://f:0 and http://f stay different origins. The zero Origin, and any Origin whose Scheme is empty, is
// opaque. Build origins with [Parse] or [Of] so that they are canonical;
// [Origin.Equal] compares exactly.
type Origin struct {
	Scheme string
	Host   string
	Port   int
}

// Parse parses a bare origin, as written in the --origin flag and in a
// client's allowed_origins: "scheme://host[:port]", with an optional single
// "/" after it (that is how browsers and people write origins, and the URL
// is the same). Scheme must be http or https. The host is canonicalised as
// in [ParseURL]. Each refusal names its rule in the [Error] code: whitespace,
// form (backslashes, missing or extra slashes), userinfo, path, query,
// fragment, wildcard, scheme, host, ipv4, ipv6, port.
func Parse(raw string) (Origin, error) {
	for i := 0; i < len(raw); i++ {
		if raw[i] <= 0x20 || raw[i] == 0x7f {
			return Origin{}, errorf(CodeWhitespace, raw, "an origin contains no whitespace or control characters")
		}
	}
	p, err := parse(raw)
	if err != nil {
		return Origin{}, err
	}
	if p.scheme != "http" && p.scheme != "https" {
		return Origin{}, errorf(CodeScheme, raw, "an origin's scheme is http or https, not %q", p.scheme)
	}
	if p.rawSlashes != "//" {
		return Origin{}, errorf(CodeForm, raw, "write an origin as %s://host[:port]", p.scheme)
	}
	switch {
	case p.hadUserinfo:
		return Origin{}, errorf(CodeUserinfo, raw, "an origin has no user name or password")
	case p.rawPath != "" && p.rawPath != "/":
		return Origin{}, errorf(CodePath, raw, "an origin has no path, found %q", p.rawPath)
	case p.hasQuery:
		return Origin{}, errorf(CodeQuery, raw, "an origin has no query")
	case p.hasFragment:
		return Origin{}, errorf(CodeFragment, raw, "an origin has no fragment")
	case strings.Contains(p.host, "*"):
		// A browser takes "*" literally as part of a host name; in an
		// origin it is always a mistaken wildcard, so say so.
		return Origin{}, errorf(CodeWildcard, raw, "an origin has no wildcards; list each origin")
	}
	return p.origin(), nil
}

// MustParse is Parse for constants in tests and examples; it panics on error.
func MustParse(raw string) Origin {
	o, err := Parse(raw)
	if err != nil {
		panic(err)
	}
	return o
}

// Of returns the origin of u. u is first re-canonicalised with the WHATWG
// parser, so a URL that did not come from [ParseURL] still gets the origin a
// browser would give it; a URL that does not parse has an opaque origin.
// http, https, ws, wss and ftp URLs have tuple origins; a blob: URL has the
// origin of the URL inside it when that is http or https, else an opaque
// one; every other scheme (javascript:, data:, file:, about:, intent:, ...)
// has an opaque origin.
func Of(u *url.URL) Origin {
	if u == nil {
		return Origin{}
	}
	p, err := parse(u.String())
	if err != nil {
		return Origin{}
	}
	return p.urlOrigin()
}

// OfString returns the origin a browser gives the URL raw, or the error of
// the WHATWG parser when a browser would refuse raw too. It is computed from
// the parse itself, never through a url.URL: a URL that [ParseURL] refuses
// only because url.URL cannot carry it (a "%" that starts no escape in the
// fragment, path or user name, such as https://app.example/#/sale/50%)
// still has its origin, so a page at such a URL is not refused by every
// origin check. Use OfString for URLs the webview reports.
func OfString(raw string) (Origin, error) {
	p, err := parse(raw)
	if err != nil {
		return Origin{}, err
	}
	return p.urlOrigin(), nil
}

// urlOrigin is the WHATWG origin of the parsed URL, blob: included.
func (p *parsed) urlOrigin() Origin {
	if p.scheme == "blob" {
		// WHATWG parses the blob URL's path; the query cannot change the
		// origin, since "?" ends the host of a special URL.
		q, err := parse(p.opaquePath + queryPart(p))
		if err != nil || (q.scheme != "http" && q.scheme != "https") {
			return Origin{}
		}
		return q.origin()
	}
	return p.origin()
}

func (p *parsed) origin() Origin {
	if _, ok := defaultPorts[p.scheme]; !ok {
		return Origin{}
	}
	port := p.port
	switch port {
	case -1:
		port = 0
	case 0:
		port = -1
	}
	return Origin{Scheme: p.scheme, Host: p.host, Port: port}
}

// String is the ASCII serialization of the origin: "https://a.example",
// "http://127.0.0.1:8080", or "null" for an opaque origin.
func (o Origin) String() string {
	if o.IsOpaque() {
		return "null"
	}
	s := o.Scheme + "://" + o.Host
	switch p := o.port(); p {
	case 0:
	case -1:
		s += ":0"
	default:
		s += ":" + strconv.Itoa(p)
	}
	return s
}

// port is Port with the scheme's default port written as 0.
func (o Origin) port() int {
	if o.Port == defaultPorts[o.Scheme] {
		return 0
	}
	return o.Port
}

// Equal reports whether o and p are the same tuple origin: same scheme,
// same host, same port (a port equal to the scheme's default counts as 0).
// An opaque origin is equal to nothing, itself included.
func (o Origin) Equal(p Origin) bool {
	if o.IsOpaque() || p.IsOpaque() {
		return false
	}
	return o.Scheme == p.Scheme && o.Host == p.Host && o.port() == p.port()
}

// IsOpaque reports whether o is an opaque origin (serialized "null").
func (o Origin) IsOpaque() bool { return o.Scheme == "" }

// IsLoopback reports whether o's host is a loopback host: exactly
// "localhost" (not "localhost." and not sub-domains), an address in
// 127.0.0.0/8, or [::1].
func (o Origin) IsLoopback() bool {
	if o.IsOpaque() {
		return false
	}
	if o.Host == "localhost" {
		return true
	}
	h := strings.TrimSuffix(strings.TrimPrefix(o.Host, "["), "]")
	a, err := netip.ParseAddr(h)
	if err != nil || a.Zone() != "" {
		return false
	}
	if strings.HasPrefix(o.Host, "[") != a.Is6() {
		return false
	}
	return a.IsLoopback() && (a.Is4() || a == netip.IPv6Loopback())
}

// IsPotentiallyTrustworthy reports whether o may be loaded without the
// insecure option (resolver.Config.Insecure): https (or wss), or http (or ws) on a loopback
// host.
func (o Origin) IsPotentiallyTrustworthy() bool {
	switch o.Scheme {
	case "https", "wss":
		return true
	case "http", "ws":
		return o.IsLoopback()
	}
	return false
}

// InList reports whether o is in list, a client's allowed_origins (docs/service.md
// §2.10). Each entry must be a bare origin accepted by [Parse]; an entry that
// is not (a URL with a path, a wildcard, a host without scheme) never
// matches anything. Membership is exact [Origin.Equal]: no wildcards, no
// prefixes, no sub-domains. An opaque origin is in no list.
func InList(o Origin, list []string) bool {
	if o.IsOpaque() {
		return false
	}
	for _, entry := range list {
		if e, err := Parse(entry); err == nil && e.Equal(o) {
			return true
		}
	}
	return false
}

// SameOrigin reports whether a and b have the same tuple origin.
func SameOrigin(a, b *url.URL) bool { return Of(a).Equal(Of(b)) }

// wsCounterpart is the WebSocket scheme that shares a scheme's default port
// and server (RFC 6455 section 3), and the reverse.
var wsCounterpart = map[string]string{"http": "ws", "ws": "http", "https": "wss", "wss": "https"}

// SameServer reports whether a and b reach the same server although they
// may be different origins: the same port and either the same host or two
// spellings of it (a trailing dot, or two loopback hosts: localhost,
// 127.0.0.0/8, [::1]), with the same scheme or its WebSocket counterpart
// (http and ws, https and wss). It is for blocking requests towards a
// server whatever the page wrote, never for granting anything.
func SameServer(a, b Origin) bool {
	if a.IsOpaque() || b.IsOpaque() {
		return false
	}
	if a.Scheme != b.Scheme && wsCounterpart[a.Scheme] != b.Scheme {
		return false
	}
	if a.port() != b.port() {
		return false
	}
	if a.IsLoopback() && b.IsLoopback() {
		return true
	}
	return strings.TrimSuffix(a.Host, ".") == strings.TrimSuffix(b.Host, ".") ||
		a.IsLoopback() && strings.TrimSuffix(b.Host, ".") == "localhost" ||
		b.IsLoopback() && strings.TrimSuffix(a.Host, ".") == "localhost"
}

// CheckLoopbackAddr refuses a listen address (host:port) whose host is not
// a loopback address or "localhost": what the host and the playground
// serve (the launcher, the automation channel, a developer's folder) can
// open Miniapps or approve consent, and is for this machine only.
func CheckLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("origin: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("origin: address %q is not a loopback address", addr)
	}
	return nil
}
