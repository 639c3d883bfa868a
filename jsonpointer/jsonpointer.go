// Package jsonpointer holds the RFC 6901 JSON Pointer helpers that the
// catalog's and the resolver's reports share: building a pointer from a
// validator's instance location, escaping member names, looking a pointer
// up in a decoded document, and rendering it for a human message.
package jsonpointer

import (
	"strconv"
	"strings"
)

// Escape escapes one reference token (RFC 6901 §3): "~" is "~0", "/" is "~1".
func Escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// Unescape reverses Escape (RFC 6901 §4: "~1" first, then "~0").
func Unescape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}

// FromTokens builds a pointer from unescaped reference tokens, such as a
// schema validator's instance location.
func FromTokens(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(Escape(t))
	}
	return b.String()
}

// Lookup returns the value at ptr in a document decoded into map[string]any
// and []any, and whether it exists.
func Lookup(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = Unescape(tok)
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Readable renders a pointer as a member path for messages:
// "/transaction/minimum" is "transaction.minimum", "/icons/0/src" is
// "icons[0].src". Characters that would not print are escaped as in a Go
// string, so a hostile member name cannot forge a message. The empty
// pointer (the whole document) renders as "".
func Readable(ptr string) string {
	if ptr == "" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = Unescape(tok)
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		q := strconv.Quote(tok)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
