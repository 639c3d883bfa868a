package redact

import "strings"

// userinfo returns s with the password of every URL's userinfo in it
// (RFC 3986 section 3.2.1, scheme://user:password@host, deprecated but
// still sent: a database DSN, a proxy URL, a Miniapp's link) Withheld;
// n counts them. An authority starts after "//" (or JSON's escaped
// "\/\/") and runs to the next "/", "?", "#", backslash, quote, angle
// bracket or white space (RFC 3986 section 3.2); its userinfo is what lies
// before its last "@" (a lenient reader's, the WHATWG URL parser's), its
// password what follows the userinfo's first ":". The user name is kept.
func userinfo(s string) (_ string, n int) {
	if !strings.Contains(s, "@") {
		return s, 0
	}
	var b strings.Builder
	rest := s
	for {
		i, width := authorityStart(rest)
		if i < 0 {
			break
		}
		start := i + width
		b.WriteString(rest[:start])
		rest = rest[start:]
		end := strings.IndexFunc(rest, authorityEnd)
		if end < 0 {
			end = len(rest)
		}
		auth := rest[:end]
		at := strings.LastIndexByte(auth, '@')
		colon := strings.IndexByte(auth[:max(at, 0)], ':')
		if at < 0 || colon < 0 || auth[colon+1:at] == "" || auth[colon+1:at] == Withheld {
			b.WriteString(auth)
		} else {
			b.WriteString(auth[:colon+1])
			b.WriteString(Withheld)
			b.WriteString(auth[at:])
			n++
		}
		rest = rest[end:]
	}
	if n == 0 {
		return s, 0
	}
	b.WriteString(rest)
	return b.String(), n
}

// authorityStart is the index in s of the first "//" or "\/\/", and its
// width; -1 when there is none.
func authorityStart(s string) (int, int) {
	i, j := strings.Index(s, "//"), strings.Index(s, `\/\/`)
	switch {
	case j >= 0 && (i < 0 || j < i):
		return j, 4
	case i >= 0:
		return i, 2
	}
	return -1, 0
}

// authorityEnd reports whether r ends an authority.
func authorityEnd(r rune) bool {
	switch r {
	case '/', '?', '#', '\\', '"', '\'', '`', '<', '>':
		return true
	}
	return wordSeparator(r)
}
