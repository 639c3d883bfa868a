package redact

import (
	"io"
	"strings"
)

// Redaction of what is printed rather than recorded: the `-v` lines of
// `miniapp-host open` and `playground` (docs/automation.md, "Events") use
// the network log's own rule, so that a URL never shows more on a terminal
// than in the log or on the automation channel.

// Text returns s with every secret in it redacted: for free text that may
// quote a URL or a JSON document (an error message, a log line, a console
// message). Three passes: the JSON members quoted in it whose name is a
// secret's (members: "secret", "api_key", a JWK's "d"...), the passwords
// of every URL's userinfo (also in JSON's escaped spelling, "\/\/"), then
// every word through URL. A word is whatever lies between white space,
// quotes, angle brackets, backticks and backslashes (which escape a quote
// in slog's and JSON's strings); URL keeps every word and every parameter
// that is not secret byte for byte, and redacts a bare "passwd=..." as a
// URL's. A word that only looks like a URL ("see?code=1") is redacted
// too, which costs nothing.
func Text(s string) string {
	if !strings.ContainsAny(s, "=@:%") {
		return s
	}
	s = members(s)
	s, _ = userinfo(s)
	var b strings.Builder
	b.Grow(len(s))
	for s != "" {
		end := strings.IndexFunc(s, wordSeparator)
		if end < 0 {
			end = len(s)
		}
		b.WriteString(URL(s[:end]))
		s = s[end:]
		// Copy the separators up to the next word.
		sep := strings.IndexFunc(s, func(r rune) bool { return !wordSeparator(r) })
		if sep < 0 {
			sep = len(s)
		}
		b.WriteString(s[:sep])
		s = s[sep:]
	}
	return b.String()
}

// wordSeparator reports whether r ends a word of Text: white space,
// a control character, the characters that quote a URL in text and in
// Go's, slog's and browsers' messages, and the backslash that escapes a
// quote.
func wordSeparator(r rune) bool {
	switch r {
	case '"', '\'', '`', '<', '>', '\\':
		return true
	}
	return r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0 || r == 0x2028 || r == 0x2029
}

// Writer returns a writer that passes the text of every Write through
// Text before w gets it: for a log whose lines may quote a
// URL. Each Write is redacted on its own, so a writer of whole lines
// (fmt.Fprintln, log/slog's handlers, one Write per line) is what it
// expects: a value split across two Writes would show its second part.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (r writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
