// Package origin is Miniapp Host's one origin policy (docs/architecture.md,
// "One origin policy"; docs/service.md §2.9 and §4.3). The resolver, the host's
// navigation policy, the bridge and the cookie sync all ask this package, and
// nothing else, whether two URLs share an origin or whether an origin is
// allowed. It also holds the address policy ([AddrRule], [HostRule]): which
// hosts and addresses a server may fetch a URL that someone else registered
// from (docs/fapi.md, "Keys at a jwks_uri"); and the loopback gate ([Gate])
// that the local servers (the launcher, the automation channel, the
// WebDriver front, dev's folder, a development dashboard) run before any
// route, with its rules on the Host, Origin and Content-Type headers
// (docs/security.md, "Other pages in the user's browser").
//
// The webview navigates what the WHATWG URL Standard makes of a string, and
// Go's net/url disagrees with it on many inputs (backslashes, numeric and
// percent-encoded hosts, IDN, dot segments, tabs and newlines; see
// docs/security.md, "URL tricks"). So URLs coming from outside are parsed once with
// [ParseURL] or [ResolveReference], which follow the WHATWG parser, and every
// check is then made on the canonical result, which is also the URL to
// navigate. Origins are compared as whole tuples with [Origin.Equal]: there
// are no wildcards, no suffix or prefix matches and no host-only comparisons.
//
// Decisions, in one place:
//   - Hosts are lower-cased, IDN is converted to punycode (UTS #46,
//     non-transitional, as browsers do), percent-encoded hosts are decoded,
//     an "xn--" label that decodes to nothing or to ASCII only is refused,
//     and ẞ maps to ß as in UTS #46 for Unicode 15.1 on (x/net/idna's
//     tables are Unicode 15.0 below go1.27),
//     numeric IPv4 forms (2130706433, 0x7f.1, 0177.0.0.1) become dotted
//     decimal and IPv6 is compressed. The default port is dropped.
//   - A trailing dot is kept: https://a.example. is another origin than
//     https://a.example, as it is in a browser.
//   - http, https, ws, wss and ftp URLs have tuple origins (WHATWG); a blob:
//     URL has the origin of the http(s) URL inside it; every other scheme
//     (javascript:, data:, file:, about:, intent:, ...) has an opaque origin,
//     which is equal to nothing, itself included.
//   - Schemes that the WHATWG standard does not call special (javascript:,
//     data:, intent:, ...) are percent-encoded but not otherwise normalised;
//     their origin is opaque, so nothing depends on their shape.
//   - Where Go's url.URL cannot carry the WHATWG serialisation byte for byte,
//     ParseURL chooses the equivalent Go can carry: "|" in a path,
//     "#^{|}\" in a fragment and "`{}" in a host are percent-encoded (a
//     browser decodes them back to the same host), and an empty fragment
//     ("#" with nothing after it) is dropped. A "%" that does
//     not start a valid percent-escape in the path, fragment or userinfo is
//     refused rather than guessed at. None of these changes an origin, and
//     [OfString], which computes the origin from the WHATWG parse without a
//     url.URL, gives the browser's origin for all of them
//     (https://app.example/#/sale/50% is https://app.example).
//   - One deviation does change an origin, on the fail-closed side: the
//     Bidi rule of RFC 5893 is applied to every label of a domain name with
//     a right-to-left label, as ICU does, so "1.ي" is refused where
//     web-platform-tests expect 1.xn--mhb (whatwg/url#543 is open).
package origin
