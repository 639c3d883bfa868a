package origin

import (
	"net/url"
	"strconv"
	"strings"
)

// defaultPorts are the special schemes of the WHATWG URL Standard with a
// network host, and their default ports. file is special too but has no port.
var defaultPorts = map[string]int{"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}

func isSpecial(scheme string) bool {
	_, ok := defaultPorts[scheme]
	return ok || scheme == "file"
}

// parsed is a URL as the WHATWG parser leaves it: every component already
// percent-encoded and canonical.
type parsed struct {
	scheme             string
	username, password string // percent-encoded; both empty when absent
	host               string // serialized host: domain, dotted IPv4 or [IPv6]; "" for file: without host
	port               int    // -1 when absent or default
	segments           []string
	opaquePath         string // for non-special schemes: everything up to '?' or '#'
	opaque             bool
	query              string
	hasQuery           bool
	fragment           string
	hasFragment        bool

	// Facts about the raw input that only Parse needs.
	rawSlashes  string // what came between "scheme:" and the authority
	rawPath     string // the path as written, before normalisation
	hadUserinfo bool
}

// prefix is scheme://userinfo@host:port, the part a path-absolute reference
// keeps from its base.
func (p *parsed) prefix() string {
	var b strings.Builder
	b.WriteString(p.scheme)
	b.WriteString("://")
	if p.username != "" || p.password != "" {
		b.WriteString(p.username)
		if p.password != "" {
			b.WriteByte(':')
			b.WriteString(p.password)
		}
		b.WriteByte('@')
	}
	b.WriteString(p.host)
	if p.port >= 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(p.port))
	}
	return b.String()
}

func (p *parsed) path() string {
	return "/" + strings.Join(p.segments, "/")
}

// ParseURL parses raw as an absolute URL the way a WHATWG browser does and
// returns the canonical URL the browser would navigate (see the package
// documentation for the few places where Go's url.URL forces an equivalent
// spelling). Leading and trailing C0 controls and spaces are trimmed and tabs
// and newlines anywhere are removed; backslashes separate path segments in
// special schemes; the host is percent-decoded, mapped with IDNA (UTS #46) to
// punycode, lower-cased, and numeric IPv4 forms are normalised; the default
// port is dropped; "." and ".." segments, including their %2e spellings, are
// removed. A relative reference is an error with code [CodeNotAbsolute]. A
// URL refused only because url.URL cannot carry it ([CodePercent]) still
// has an origin, which [OfString] gives.
func ParseURL(raw string) (*url.URL, error) {
	p, err := parse(raw)
	if err != nil {
		return nil, err
	}
	return p.toURL(raw)
}

// ResolveReference resolves ref against base as a browser resolves a link
// or a manifest member: protocol-relative references (//x, /\x, \\x) take
// base's scheme and a new host; a reference with base's own special scheme
// and no slashes ("https:x") is relative, as in WHATWG. base is first
// re-canonicalised, so it may come from anywhere. The result is canonical.
func ResolveReference(base *url.URL, ref string) (*url.URL, error) {
	if base == nil {
		return nil, errorf(CodeNotAbsolute, ref, "no base URL to resolve against")
	}
	b, err := parse(base.String())
	if err != nil {
		return nil, err
	}
	in := cleanInput(ref)
	if scheme, rest, ok := splitScheme(in); ok {
		if !(isSpecial(scheme) && scheme == b.scheme) {
			return ParseURL(in)
		}
		in = rest
	}
	var abs string
	switch {
	case b.opaque:
		if !strings.HasPrefix(in, "#") {
			return nil, errorf(CodeRelative, ref, "cannot resolve a relative reference against %s:, which has an opaque path", b.scheme)
		}
		abs = b.scheme + ":" + b.opaquePath + queryPart(b) + in
	case len(in) >= 2 && isSlash(in[0]) && isSlash(in[1]):
		abs = b.scheme + ":" + in
	case in != "" && isSlash(in[0]):
		abs = b.prefix() + in
	case in == "":
		abs = b.prefix() + b.path() + queryPart(b)
	case in[0] == '?':
		abs = b.prefix() + b.path() + in
	case in[0] == '#':
		abs = b.prefix() + b.path() + queryPart(b) + in
	default:
		dir := "/" + strings.Join(b.segments[:len(b.segments)-1], "/")
		if !strings.HasSuffix(dir, "/") {
			dir += "/"
		}
		abs = b.prefix() + dir + in
	}
	p, err := parse(abs)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Input = ref
		}
		return nil, err
	}
	return p.toURL(ref)
}

func queryPart(p *parsed) string {
	if p.hasQuery {
		return "?" + p.query
	}
	return ""
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

// cleanInput applies the WHATWG pre-processing: invalid UTF-8 becomes U+FFFD,
// leading and trailing C0 controls and spaces go, and so do all tabs and
// newlines (so "java\tscript:" is "javascript:").
func cleanInput(raw string) string {
	s := strings.ToValidUTF8(raw, "\uFFFD")
	s = strings.TrimFunc(s, func(r rune) bool { return r <= 0x20 })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	return s
}

// splitScheme returns the lower-cased scheme and the rest after ':' when s
// starts with a valid scheme.
func splitScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(s[:i]), s[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// parse is the WHATWG basic URL parser without a base.
func parse(raw string) (*parsed, error) {
	in := cleanInput(raw)
	scheme, rest, ok := splitScheme(in)
	if !ok {
		return nil, errorf(CodeNotAbsolute, raw, "not an absolute URL: no scheme")
	}
	p := &parsed{scheme: scheme, port: -1}
	if !isSpecial(scheme) {
		p.parseOpaque(rest)
		return p, nil
	}
	// Special authority (ignore) slashes state: any run of / and \.
	i := 0
	for i < len(rest) && isSlash(rest[i]) {
		i++
	}
	p.rawSlashes = rest[:i]
	rest = rest[i:]
	if scheme == "file" && len(p.rawSlashes) < 2 {
		// file:/x and file:x have an empty host.
		rest = p.rawSlashes + rest
	} else {
		if scheme == "file" {
			// file: takes exactly two slashes before its host; a third
			// starts the path (file:///etc/passwd).
			rest = p.rawSlashes[2:] + rest
		}
		end := strings.IndexAny(rest, "/\\?#")
		if end < 0 {
			end = len(rest)
		}
		if err := p.parseAuthority(raw, rest[:end]); err != nil {
			return nil, err
		}
		rest = rest[end:]
	}
	p.parsePathQueryFragment(rest)
	return p, nil
}

func (p *parsed) parseAuthority(raw, auth string) error {
	if p.scheme == "file" && strings.IndexByte(auth, '@') >= 0 {
		// WHATWG's file host state has no credentials: "@" is part of the
		// host, where it is forbidden. Taking it as userinfo instead made
		// "file://0@:" serialize to "file://0@/", which does not re-parse.
		return errorf(CodeHost, raw, "a file: URL has no user name or password")
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		p.hadUserinfo = true
		user, pass, _ := strings.Cut(auth[:at], ":")
		p.username = percentEncode(user, userinfoSet)
		p.password = percentEncode(pass, userinfoSet)
		auth = auth[at+1:]
		if auth == "" {
			return errorf(CodeHost, raw, "credentials without a host")
		}
	}
	host, port := splitHostPort(auth)
	if port != "" {
		if err := p.parsePort(raw, port); err != nil {
			return err
		}
	}
	if host == "" {
		if p.scheme != "file" {
			return errorf(CodeHost, raw, "empty host")
		}
		return nil
	}
	h, err := parseHost(raw, host)
	if err != nil {
		return err
	}
	if p.scheme == "file" && h == "localhost" {
		h = ""
	}
	p.host = h
	return nil
}

// splitHostPort splits an authority without userinfo at its first colon
// outside brackets (an IPv6 host is bracketed).
func splitHostPort(auth string) (host, port string) {
	inBrackets := false
	for i := 0; i < len(auth); i++ {
		switch auth[i] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				return auth[:i], auth[i+1:]
			}
		}
	}
	return auth, ""
}

// parsePort reads a non-empty port: digits up to 65535, none for file:,
// and the scheme's default port as none.
func (p *parsed) parsePort(raw, port string) error {
	n := 0
	for i := 0; i < len(port); i++ {
		c := port[i]
		if c < '0' || c > '9' {
			return errorf(CodePort, raw, "port %q is not a number", port)
		}
		n = n*10 + int(c-'0')
		if n > 65535 {
			return errorf(CodePort, raw, "port %q is above 65535", port)
		}
	}
	if p.scheme == "file" {
		return errorf(CodePort, raw, "a file: URL has no port")
	}
	if n != defaultPorts[p.scheme] {
		p.port = n
	}
	return nil
}

// parsePathQueryFragment handles a special URL's path, query and fragment.
func (p *parsed) parsePathQueryFragment(rest string) {
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		p.hasFragment, p.fragment = true, percentEncode(rest[i+1:], fragmentSet)
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		p.hasQuery, p.query = true, percentEncode(rest[i+1:], specialQuerySet)
		rest = rest[:i]
	}
	p.rawPath = rest
	if rest == "" {
		p.segments = []string{""}
		return
	}
	if isSlash(rest[0]) {
		rest = rest[1:]
	}
	tokens := splitSlashes(rest)
	segs := make([]string, 0, len(tokens))
	for i, tok := range tokens {
		last := i == len(tokens)-1
		switch {
		case isDoubleDot(tok):
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			if last {
				segs = append(segs, "")
			}
		case isSingleDot(tok):
			if last {
				segs = append(segs, "")
			}
		default:
			segs = append(segs, percentEncode(tok, pathSet))
		}
	}
	if len(segs) == 0 {
		segs = []string{""}
	}
	p.segments = segs
}

func splitSlashes(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if isSlash(s[i]) {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func isSingleDot(s string) bool { return s == "." || strings.EqualFold(s, "%2e") }

func isDoubleDot(s string) bool {
	switch strings.ToLower(s) {
	case "..", ".%2e", "%2e.", "%2e%2e":
		return true
	}
	return false
}

// parseOpaque handles schemes that are not special: the rest is kept,
// percent-encoded, and split only at '?' and '#'.
func (p *parsed) parseOpaque(rest string) {
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		p.hasFragment, p.fragment = true, percentEncode(rest[i+1:], fragmentSet)
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		p.hasQuery, p.query = true, percentEncode(rest[i+1:], querySet)
		rest = rest[:i]
	}
	p.opaque = true
	p.opaquePath = percentEncode(rest, c0ControlSet)
	if (p.hasQuery || p.hasFragment) && strings.HasSuffix(p.opaquePath, " ") {
		// WHATWG opaque path state: a space right before '?' or '#' is
		// written %20, so that the serialisation does not end in a space
		// that a re-parse would trim.
		p.opaquePath = p.opaquePath[:len(p.opaquePath)-1] + "%20"
	}
}

// toURL builds the url.URL whose String() is the canonical serialisation.
func (p *parsed) toURL(raw string) (*url.URL, error) {
	u := &url.URL{Scheme: p.scheme, RawQuery: p.query, ForceQuery: p.hasQuery && p.query == ""}
	if p.hasFragment && p.fragment != "" {
		f, err := url.PathUnescape(p.fragment)
		if err != nil {
			return nil, errorf(CodePercent, raw, "invalid percent-encoding in the fragment")
		}
		u.Fragment, u.RawFragment = f, p.fragment
	}
	if p.opaque {
		u.Opaque = p.opaquePath
		if u.Opaque == "" {
			u.OmitHost = true
		}
		return u, nil
	}
	if p.username != "" || p.password != "" {
		name, err1 := url.PathUnescape(p.username)
		pass, err2 := url.PathUnescape(p.password)
		if err1 != nil || err2 != nil {
			return nil, errorf(CodePercent, raw, "invalid percent-encoding in the user name or password")
		}
		if p.password != "" {
			u.User = url.UserPassword(name, pass)
		} else {
			u.User = url.User(name)
		}
	}
	u.Host = p.host
	if p.port >= 0 {
		u.Host += ":" + strconv.Itoa(p.port)
	}
	if u.Host == "" {
		u.OmitHost = p.scheme != "file"
	}
	rawPath := p.path()
	path, err := url.PathUnescape(rawPath)
	if err != nil {
		return nil, errorf(CodePercent, raw, "invalid percent-encoding in the path")
	}
	u.Path, u.RawPath = path, rawPath
	return u, nil
}

// Percent-encode sets of the WHATWG URL Standard, plus the few bytes Go's
// url.URL cannot carry unencoded (see the package documentation).
type encodeSet [256]bool

func newSet(base *encodeSet, extra string) *encodeSet {
	var s encodeSet
	if base != nil {
		s = *base
	} else {
		for c := 0; c < 256; c++ {
			s[c] = c < 0x20 || c > 0x7e
		}
	}
	for i := 0; i < len(extra); i++ {
		s[extra[i]] = true
	}
	return &s
}

var (
	c0ControlSet    = newSet(nil, "")
	fragmentSet     = newSet(c0ControlSet, " \"<>`"+"#^{|}\\")
	querySet        = newSet(c0ControlSet, " \"#<>")
	specialQuerySet = newSet(querySet, "'")
	pathSet         = newSet(querySet, "?^`{}"+"|")
	userinfoSet     = newSet(pathSet, "/:;=@[\\]^|")
)

func percentEncode(s string, set *encodeSet) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if set[s[i]] {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if set[c] {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}
