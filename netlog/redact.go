package netlog

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/bridge"
)

// Redaction (docs/host.md, "Network log"). Nothing secret is stored: the
// log redacts as it records, so no export, event or copy as curl can leak
// what it never kept.
//
//   - URLs go through bridge.RedactURL, the automation channel's rule: the
//     value of code, state, access_token, id_token, refresh_token,
//     client_secret and code_verifier becomes its fingerprint.
//   - Header, cookie and body values that are secrets become
//     "redacted:<fingerprint>" (bridge.Fingerprint): a reader can tell two
//     values apart, or match a token they hold, and cannot use one.

// redacted is how a secret value appears in headers, cookies and bodies.
func redacted(secret string) string { return "redacted:" + bridge.Fingerprint(secret) }

// secretFields are the form and JSON members whose values are secrets or
// correlate with one: RFC 6749 sections 4.1.2, 4.1.3, 5.1 and 2.3.1, RFC
// 7636 section 4.5, RFC 7009 and RFC 7662 (token), RFC 7523 (assertions),
// OpenID Connect Core 3.1.3.3 (id_token).
var secretFields = map[string]bool{
	"code": true, "state": true, "access_token": true, "id_token": true, "refresh_token": true,
	"client_secret": true, "code_verifier": true, "password": true, "token": true,
	"assertion": true, "client_assertion": true,
}

func secretField(name string) bool { return secretFields[strings.ToLower(name)] }

// urlHeaders carry a URL that may hold an authorization response.
var urlHeaders = map[string]bool{"Location": true, "Referer": true, "Content-Location": true}

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
			switch {
			case cn == "Cookie" && !response:
				cs, line := redactCookieHeader(v)
				cookies = append(cookies, cs...)
				v = line
			case cn == "Set-Cookie" && response:
				c, line := redactSetCookie(v)
				cookies = append(cookies, c)
				v = line
			case cn == "Authorization" || cn == "Proxy-Authorization":
				v = redactCredentials(v)
			case secretHeader(cn):
				v = redacted(v)
			case urlHeaders[cn]:
				v = bridge.RedactURL(v)
			}
			if len(out) == maxHeaders {
				out = append(out, Header{Name: "X-Netlog-Truncated", Value: "more headers were not kept"})
				return out, cookies
			}
			out = append(out, Header{Name: cn, Value: capString(v, maxHeaderValue)})
		}
	}
	return out, cookies
}

// redactCredentials keeps the scheme of an Authorization value (RFC 9110
// section 11.4) and redacts its credentials.
func redactCredentials(v string) string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		return redacted(v)
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
	out := name + "=" + c.Value
	if attrs != "" {
		out += ";" + attrs
	}
	return c, out
}

// redactBody returns what the log keeps of a body: a JSON or form body
// with its secret members redacted (and URLs in JSON strings through
// bridge.RedactURL), at most maxBody bytes; any other body only by size
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
// the order and spelling of everything else.
func redactForm(form string) string {
	parts := strings.Split(form, "&")
	for i, p := range parts {
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		dn, err := url.QueryUnescape(name)
		if err != nil {
			dn = name
		}
		if !secretField(dn) {
			continue
		}
		dv, err := url.QueryUnescape(value)
		if err != nil {
			dv = value
		}
		parts[i] = name + "=" + url.QueryEscape(redacted(dv))
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

func redactValue(v any, depth int) any {
	if depth > 64 {
		return "redacted: nested too deep"
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && secretField(k) {
				x[k] = redacted(s)
				continue
			}
			if secretField(k) && e != nil {
				b, _ := json.Marshal(e)
				x[k] = redacted(string(b))
				continue
			}
			x[k] = redactValue(e, depth+1)
		}
	case []any:
		for i, e := range x {
			x[i] = redactValue(e, depth+1)
		}
	case string:
		if strings.HasPrefix(x, "http://") || strings.HasPrefix(x, "https://") {
			return bridge.RedactURL(x)
		}
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

// ParseHeaderLines reads headers written as "Name: value" lines, as an
// engine reports those of a request its view made (host/webkitgtk). A
// line without a colon, or with an empty name, is skipped.
func ParseHeaderLines(text string) http.Header {
	h := http.Header{}
	for line := range strings.SplitSeq(text, "\n") {
		name, value, ok := strings.Cut(strings.TrimSuffix(line, "\r"), ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			continue
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h
}
