package redact

import "strings"

// members returns s with the value of every JSON member quoted in it whose
// name is a secret's replaced: a SecretParam ("secret", "api_key",
// "password", "client_secret", "access_token"...), and a JWK's private
// members (d, p, q, dp, dq, qi, oth, k) when s names "kty". It reads JSON
// as text, not as a document, so that a truncated or embedded one (a
// console message, a log line, slog's quoted string with \" for each
// quote) is redacted as a whole one is: a member is a quoted name, white
// space, ":", white space and its value; a string value is replaced by
// its Fingerprint (a code, a token: of the value as written) or by
// Withheld, an object or array value whole by Withheld, another value
// (a number) by Withheld; null, true, false and "" are kept.
func members(s string) string {
	if !strings.Contains(s, ":") || !strings.Contains(s, `"`) {
		return s
	}
	jwk := strings.Contains(s, `"kty"`) || strings.Contains(s, `\"kty\"`)
	qs := newQuotes(s)
	var b strings.Builder
	copied, pos := 0, 0
	for {
		q := strings.IndexByte(s[pos:], '"')
		if q < 0 {
			break
		}
		q += pos
		esc := q > 0 && s[q-1] == '\\' // \"name\": JSON inside a quoted string
		closing := qs.closing(q+1, esc)
		if closing < 0 {
			pos = q + 1
			continue
		}
		nameEnd := closing
		if esc {
			nameEnd--
		}
		name := s[q+1 : max(nameEnd, q+1)]
		j := skipSpace(s, closing+1)
		if j >= len(s) || s[j] != ':' {
			// Not a name: the next quote may open one (the closing
			// one, or an escaped one inside a quoted string).
			pos = q + 1
			continue
		}
		j = skipSpace(s, j+1)
		if !SecretParam(name) && !(jwk && jwkPrivate[name]) {
			// What looked like a name may be a quoted string holding
			// JSON ("body {\"secret\": ...}" :): look inside it too.
			pos = q + 1
			continue
		}
		start, end, repl := secretValue(s, qs, j, esc, name)
		if end < 0 {
			pos = j
			continue
		}
		b.WriteString(s[copied:start])
		b.WriteString(repl)
		copied, pos = end, end
	}
	if copied == 0 {
		return s
	}
	b.WriteString(s[copied:])
	return b.String()
}

// secretValue is the value of the secret member name that starts at j in
// s: the span [start, end) to replace and what replaces it; end is -1 when
// there is nothing to replace.
func secretValue(s string, qs quotes, j int, esc bool, name string) (start, end int, repl string) {
	quote := `"`
	if esc {
		quote = `\"`
	}
	withheld := quote + Withheld + quote
	switch {
	case j >= len(s):
		return 0, -1, ""
	case strings.HasPrefix(s[j:], quote):
		open := j + len(quote)
		closing := qs.closing(open, esc)
		if closing < 0 {
			closing = len(s) // truncated: the rest is the value
		}
		vEnd := closing
		if esc && closing < len(s) {
			vEnd--
		}
		value := s[open:max(vEnd, open)]
		if value == "" || value == Withheld {
			return 0, -1, ""
		}
		r := Withheld
		if !ChosenSecretParam(name) && !jwkPrivate[name] {
			r = Fingerprint(value)
		}
		return open, max(vEnd, open), r
	case s[j] == '{' || s[j] == '[':
		return j, matchingBracket(s, qs, j, esc), withheld
	}
	e := j
	for e < len(s) && !strings.ContainsRune(",}]\\", rune(s[e])) && !wordSeparator(rune(s[e])) {
		e++
	}
	switch s[j:e] {
	case "", "null", "true", "false", Withheld:
		return 0, -1, ""
	}
	return j, e, withheld
}

// quotes are, for each index i of a text, the index of the first quote at
// or after i that closes a JSON string (one after an even run of
// backslashes), and of the first that closes a string of an escaped JSON
// (each quote written \": one after exactly one backslash); -1 when there
// is none. A string's text starts after a quote, so the backslashes before
// a closing quote are all inside it. Made once per text, so that reading
// every quote as a possible name stays linear in the text's length.
type quotes struct{ plain, esc []int }

func newQuotes(s string) quotes {
	q := quotes{plain: make([]int, len(s)+1), esc: make([]int, len(s)+1)}
	q.plain[len(s)], q.esc[len(s)] = -1, -1
	for k := len(s) - 1; k >= 0; k-- {
		q.plain[k], q.esc[k] = q.plain[k+1], q.esc[k+1]
		if s[k] != '"' {
			continue
		}
		run := 0
		for m := k - 1; m >= 0 && s[m] == '\\'; m-- {
			run++
		}
		if run%2 == 0 {
			q.plain[k] = k
		}
		if run == 1 {
			q.esc[k] = k
		}
	}
	return q
}

// closing is the index of the quote that closes a string whose text
// starts at i (esc: a string of an escaped JSON), or -1.
func (q quotes) closing(i int, esc bool) int {
	if i >= len(q.plain) {
		return -1
	}
	if esc {
		return q.esc[i]
	}
	return q.plain[i]
}

// matchingBracket is the index after the bracket that closes the object
// or array opening at j (strings skipped, but in an escaped JSON), or
// len(s) when it is cut off.
func matchingBracket(s string, qs quotes, j int, esc bool) int {
	depth := 0
	for k := j; k < len(s); k++ {
		switch s[k] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return k + 1
			}
		case '"':
			if esc {
				continue
			}
			if c := qs.closing(k+1, false); c >= 0 {
				k = c
			} else {
				return len(s)
			}
		}
	}
	return len(s)
}

// skipSpace is the index of the first byte at or after i that is not
// JSON's white space.
func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
		i++
	}
	return i
}
