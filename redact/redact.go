// Package redact is the one rule that keeps secrets out of what the host
// shows and records: the automation channel's events (package bridge), the
// network log (package netlog), and the lines a command prints (docs/host.md,
// "Network log"; docs/automation.md, "Events").
//
// The rule is structural, not a matter of how a value looks: the value of
// every parameter or member whose name is a secret's (one rule table,
// rules.go: codes, tokens, state, code_verifier, client_secret, passwords,
// API keys, private keys, assertions, DPoP; a JWK's private members in a
// JWK) and the password of every URL's userinfo are replaced, in any text
// that may hold a URL, in whatever spelling (URL), and in JSON quoted in
// text (Text).
// A secret the server issued from its random source (a code, a token)
// becomes its Fingerprint, so that a test that holds the secret can still
// match it and a reader can tell two apart; any other (ChosenSecretParam)
// is Withheld, since a fingerprint of a value someone chose could be
// reversed by trying candidates. Text may quote URLs anywhere (Text,
// Writer); a console message's source keeps its line and column (Source).
//
// It imports nothing of the project, so that every package that shows or
// records may use it.
package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
)

// Fingerprint is how codes and tokens appear on the automation channel and
// in the network log: the first 16 hex digits of their SHA-256. A test that holds the secret
// (say, the page's access token) can match it; a listener cannot use it.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}

// Withheld stands for a secret the server did not issue (a client secret,
// a password, a client's assertion or DPoP proof, the state and PKCE
// verifier a client made up): an unsalted fingerprint of a value someone
// chose could be reversed by trying candidates, so such a value is
// replaced whole, and only values the server issued from its random source
// (codes and tokens) get a Fingerprint.
const Withheld = "withheld"

// Param is what stands for the value of the secret parameter name:
// Withheld, or the Fingerprint of a code or token (value as decoded).
func Param(name, value string) string {
	if ChosenSecretParam(name) {
		return Withheld
	}
	return Fingerprint(value)
}

// URL returns raw with the value of every secret parameter
// (SecretParam: code, state, access_token, id_token, refresh_token, token,
// code_verifier, client_secret, password, client_assertion, ...) replaced:
// a code's or token's by its Fingerprint (of the percent-decoded value), any
// other by Withheld; so that a URL can go on the automation channel, or in
// the network log, without what an OAuth redirect carries. Everything else
// is kept byte for byte, and a test that holds a code can still match it.
//
// raw is not parsed as a URL, so it escapes redaction by no spelling: a
// scheme in any case, spaces around it, a relative URL, a URL inside a
// header (Refresh: 0; url=..., Link: <...>) or an error message, a form
// body or a bare "code=..." are all redacted alike. Names are matched after
// percent-decoding and without regard to case (a server may read %63ode as
// code). Parameters start at the beginning of raw and after &, ; or ?, as a
// lenient server or a single-page app's fragment route (#/cb?code=...)
// might read them; a redacted value runs to the next &, ; or #, since a ?
// in it is data. The password of a userinfo (scheme://user:password@host,
// RFC 3986 section 3.2.1) is Withheld, the user kept. A URL
// percent-encoded inside raw (a redirect_uri
// parameter holding one) is redacted too: when its decoded form hides a
// secret parameter, the decoded form is returned, redacted. Redacting a
// parameter that merely looks like one of these costs nothing.
func URL(raw string) string {
	out, n := redactURLOnce(raw)
	// A secret inside a percent-encoded URL (…?redirect=https%3A…%3Fcode%3D…):
	// decode, at most three times over, while that reveals more secret
	// parameters than the text had.
	cur := raw
	for range 3 {
		if !strings.Contains(cur, "%") {
			break
		}
		cur = lenientUnescape(cur)
		if red, m := redactURLOnce(cur); m > n {
			out, n = red, m
		}
	}
	return out
}

// redactURLOnce is one pass of URL over s: its secret parameters, then
// its userinfo passwords; n counts what it redacted.
func redactURLOnce(s string) (string, int) {
	out, n := redactParams(s)
	out, m := userinfo(out)
	return out, n + m
}

// redactParams is the parameters' part of a pass of URL over s; n counts
// the secret parameters it redacted.
func redactParams(s string) (_ string, n int) {
	if !strings.Contains(s, "=") {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	rest := s
	for first := true; rest != ""; first = false {
		if !first {
			// rest starts at a separator: copy it.
			b.WriteByte(rest[0])
			rest = rest[1:]
		}
		end := paramEnd(rest, "?#&;")
		name, _, hasValue := strings.Cut(rest[:end], "=")
		if !hasValue || !SecretParam(name) {
			b.WriteString(rest[:end])
			rest = rest[end:]
			continue
		}
		end = paramEnd(rest, "#&;")
		value := rest[len(name)+1 : end]
		b.WriteString(name)
		b.WriteByte('=')
		if value != "" {
			if v, err := url.QueryUnescape(value); err == nil {
				value = v
			}
			b.WriteString(Param(name, value))
			n++
		}
		rest = rest[end:]
	}
	return b.String(), n
}

// lenientUnescape decodes every valid %XX of s and keeps any other "%".
func lenientUnescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// paramEnd is the index in s of the first of seps, or len(s).
func paramEnd(s, seps string) int {
	if i := strings.IndexAny(s, seps); i >= 0 {
		return i
	}
	return len(s)
}

// Source is URL of a url:line:col source location (a console
// message's) that keeps its line and column: without the split, a code in
// the URL's last parameter would take them into its fingerprint.
func Source(s string) string {
	rest, pos := s, ""
	for range 2 {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 || i == len(rest)-1 || strings.Trim(rest[i+1:], "0123456789") != "" {
			return URL(s)
		}
		rest, pos = rest[:i], rest[i:]+pos
	}
	return URL(rest) + pos
}
