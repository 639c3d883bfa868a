package netlog

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/redact"
)

// Redaction (docs/host.md, "Network log"). Nothing secret is stored: the
// log redacts as it records, so no export, event or copy as curl can leak
// what it never kept. The rule is structural, not a matter of how a value
// looks: every string the log keeps goes through it.
//
//   - Every text that may hold a URL, in whatever spelling (the request's
//     URL, every header value, every string of a JSON body at any depth,
//     every value of a form, an error), goes through redact.URL, the
//     automation channel's rule: the value of every secret parameter
//     (redact.SecretParam: code, state, tokens, code_verifier,
//     client_secret, password, assertions, DPoP) is replaced.
//   - Header, cookie and body values that are secrets the server issued
//     (codes, tokens, session cookies) become "redacted:<fingerprint>"
//     (redact.Fingerprint): a reader can tell two values apart, or match a
//     token they hold, and cannot use one.
//   - Every other secret (client_secret, password, state, code_verifier,
//     assertions, DPoP proofs, Basic credentials, headers named like a
//     secret, password or key) becomes "redacted:withheld": a fingerprint of
//     a value someone chose could be reversed by trying candidates. A DPoP
//     header's proof keeps its header's typ, alg and kid and its key's
//     JWK thumbprint (dpop.go), never the signed proof.

// redacted is how a secret value appears in headers, cookies and bodies.
func redacted(secret string) string { return "redacted:" + redact.Fingerprint(secret) }

// withheld is how a secret people choose appears (redact.Withheld): no
// fingerprint, which a guess could be checked against.
const withheld = "redacted:" + redact.Withheld

// secretField reports whether a form or JSON member holds a secret: the
// parameters of redact.SecretParam, one list for URLs, forms and JSON.
func secretField(name string) bool { return redact.SecretParam(name) }

// redactField is what the log keeps of the value of the secret member name.
func redactField(name, value string) string {
	if redact.ChosenSecretParam(name) {
		return withheld
	}
	return redacted(value)
}

// RedactHeader is what the log keeps of one header value: a credential
// withheld or fingerprinted, a cookie's value fingerprinted, and any URL
// in any other header through redact.URL. name is any spelling of the
// header's name.
func RedactHeader(name, value string, response bool) string {
	v, _ := redactHeader(http.CanonicalHeaderKey(name), value, response)
	return v
}

// chosenSecretHeader reports whether a header is named like a secret the
// server did not issue (X-Client-Secret, X-Api-Key, a password, a DPoP
// proof or a client assertion): withheld, not fingerprinted.
func chosenSecretHeader(canonical string) bool {
	n := strings.ToLower(canonical)
	if n == "dpop" {
		return true
	}
	for _, s := range []string{"secret", "password", "api-key", "apikey", "credential", "assertion"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// secretHeader reports whether a header's whole value is a secret: the
// credentials of RFC 9110 section 11, and any header named like one
// (X-Client-Secret, X-Api-Key, X-Auth-Token…).
func secretHeader(canonical string) bool {
	switch canonical {
	case "Authorization", "Proxy-Authorization":
		return true
	}
	n := strings.ToLower(canonical)
	for _, s := range []string{"secret", "token", "password", "api-key", "apikey", "session", "credential"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// redactHeaders returns h's headers in a stable order with secrets
// redacted, and the cookies of its Cookie (request) or Set-Cookie
// (response) headers. At most maxHeaders headers and maxHeaderValue bytes
// of each value are kept.
func redactHeaders(h http.Header, response bool) ([]Header, []Cookie) {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []Header
	var cookies []Cookie
	for _, n := range names {
		cn := http.CanonicalHeaderKey(n)
		for _, v := range h[n] {
			v, cs := redactHeader(cn, v, response)
			cookies = append(cookies, cs...)
			if len(out) == maxHeaders {
				out = append(out, Header{Name: "X-Netlog-Truncated", Value: "more headers were not kept"})
				return out, cookies
			}
			out = append(out, Header{Name: cn, Value: capString(v, maxHeaderValue)})
		}
	}
	return out, cookies
}

// redactHeader redacts one value of the header named canonical, and
// returns the cookies it holds (Cookie, Set-Cookie) with their values
// redacted. Any header but a credential goes through redact.URL, whatever
// its name: Location, Refresh (0; url=...), Link (<...>), Referer,
// Content-Location and any other may carry an authorization response.
func redactHeader(canonical, v string, response bool) (string, []Cookie) {
	switch {
	case canonical == "Cookie" && !response:
		cs, line := redactCookieHeader(v)
		return line, cs
	case canonical == "Set-Cookie" && response:
		c, line := redactSetCookie(v)
		return line, []Cookie{c}
	case canonical == "Authorization" || canonical == "Proxy-Authorization":
		return redactCredentials(v), nil
	case canonical == "Dpop" && !response:
		// A proof: its header and key thumbprint only (dpop.go).
		return dpopProofSummary(v), nil
	case chosenSecretHeader(canonical):
		return withheld, nil
	case secretHeader(canonical):
		return redacted(v), nil
	}
	return redact.URL(v), nil
}

// redactCredentials keeps the scheme of an Authorization value (RFC 9110
// section 11.4) and redacts its credentials.
func redactCredentials(v string) string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		return withheld
	}
	if strings.EqualFold(scheme, "Basic") {
		// A client id and secret (RFC 6749 section 2.3.1) or a password.
		return scheme + " " + withheld
	}
	return scheme + " " + redacted(strings.TrimSpace(cred))
}

// redactCookieHeader redacts every value of a Cookie header (RFC 6265
// section 5.4) and keeps the names.
func redactCookieHeader(line string) ([]Cookie, string) {
	var cookies []Cookie
	parts := strings.Split(line, ";")
	for i, p := range parts {
		name, value, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			parts[i] = " " + redacted(strings.TrimSpace(p))
			continue
		}
		cookies = append(cookies, Cookie{Name: name, Value: redacted(value)})
		parts[i] = " " + name + "=" + redacted(value)
	}
	return cookies, strings.TrimPrefix(strings.Join(parts, ";"), " ")
}

// redactSetCookie redacts the value of a Set-Cookie header (RFC 6265
// section 4.1) and keeps its name and attributes.
func redactSetCookie(line string) (Cookie, string) {
	pair, attrs, _ := strings.Cut(line, ";")
	name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
	if !ok {
		// Not a cookie a browser would store: keep nothing of it.
		return Cookie{Name: "", Value: redacted(line)}, redacted(line)
	}
	c := Cookie{Name: name, Value: redacted(value)}
	if hc, err := http.ParseSetCookie(line); err == nil {
		c.Path, c.Domain, c.HTTPOnly, c.Secure = hc.Path, hc.Domain, hc.HttpOnly, hc.Secure
		if !hc.Expires.IsZero() {
			exp := hc.Expires.UTC()
			c.Expires = &exp
		}
		if hc.MaxAge != 0 {
			ma := hc.MaxAge
			if ma < 0 {
				ma = 0
			}
			c.MaxAge = &ma
		}
		switch hc.SameSite {
		case http.SameSiteLaxMode:
			c.SameSite = "Lax"
		case http.SameSiteStrictMode:
			c.SameSite = "Strict"
		case http.SameSiteNoneMode:
			c.SameSite = "None"
		}
	}
	c.Path, c.Domain = redact.URL(c.Path), redact.URL(c.Domain)
	out := name + "=" + c.Value
	if attrs != "" {
		out += ";" + redact.URL(attrs)
	}
	return c, out
}

// redactBody returns what the log keeps of a body: a JSON or form body
// with its secret members redacted and every other string through
// redact.URL, at most maxBody bytes; any other body only by size
// and type, since the log cannot tell what in it is secret.
func redactBody(mimeType string, body []byte, size int64, truncated bool) *Body {
	if size == 0 && len(body) == 0 {
		return nil
	}
	b := &Body{MimeType: mimeType, Size: size}
	mt, _, _ := mime.ParseMediaType(mimeType)
	switch {
	case len(body) == 0:
		b.Comment = "the body was not seen by the log (an engine reports no bodies)"
	case truncated:
		b.Comment = "the body was longer than the log keeps; not kept"
	case mt == "application/x-www-form-urlencoded":
		b.Text = capString(redactForm(string(body)), maxBody)
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		text, ok := redactJSON(body)
		if !ok {
			b.Comment = "the body is not valid JSON; not kept"
			break
		}
		if len(text) > maxBody {
			b.Comment = "the body was longer than the log keeps; not kept"
			break
		}
		b.Text = text
	default:
		b.Comment = "only JSON and form bodies are kept (with secrets redacted)"
	}
	return b
}

// redactForm redacts the secret fields of a form body (or query), keeping
// the order and spelling of everything else; a value that holds a URL
// (redirect_uri) is redacted as one, decoded.
func redactForm(form string) string {
	parts := strings.Split(form, "&")
	for i, p := range parts {
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			parts[i] = redact.URL(p)
			continue
		}
		dn, err := url.QueryUnescape(name)
		if err != nil {
			dn = name
		}
		dv, err := url.QueryUnescape(value)
		if err != nil {
			dv = value
		}
		switch {
		case secretField(dn):
			parts[i] = name + "=" + url.QueryEscape(redactField(dn, dv))
		case redact.URL(dv) != dv:
			parts[i] = name + "=" + url.QueryEscape(redact.URL(dv))
		default:
			// A name may hold what a lenient reader takes for a
			// parameter (a;code=...): the pair as a whole, too.
			parts[i] = redact.URL(p)
		}
	}
	return strings.Join(parts, "&")
}

// redactJSON pretty-prints a JSON body with its secret members redacted.
func redactJSON(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return "", false
	}
	v = redactValue(v, 0)
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", false
	}
	return string(out), true
}

// redactValue redacts a decoded JSON value: a secret member whatever its
// value, every string at any depth through redact.URL (a string that
// is itself a JSON object or array is redacted as one), member names too.
func redactValue(v any, depth int) any {
	if depth > 64 {
		return "redacted: nested too deep"
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			rk := redact.URL(k)
			// redact.SecretMember: the rule table's names, and a
			// JWK's private members (its d) in an object with "kty".
			secret, chosen := redact.SecretMember(x, k), redact.ChosenSecretMember(x, k)
			switch s, isString := e.(string); {
			case chosen && e != nil:
				out[rk] = withheld
			case secret && isString:
				out[rk] = redacted(s)
			case secret && e != nil:
				b, _ := json.Marshal(e)
				out[rk] = redacted(string(b))
			default:
				out[rk] = redactValue(e, depth+1)
			}
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = redactValue(e, depth+1)
		}
	case string:
		if t := strings.TrimSpace(x); len(t) > 1 && (t[0] == '{' || t[0] == '[') {
			var inner any
			dec := json.NewDecoder(strings.NewReader(t))
			dec.UseNumber()
			if dec.Decode(&inner) == nil && !dec.More() {
				b, err := json.Marshal(redactValue(inner, depth+1))
				if err == nil {
					return string(b)
				}
				return "redacted: nested JSON"
			}
		}
		return redact.URL(x)
	}
	return v
}

// capString keeps at most n bytes of s, on a rune boundary.
func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
