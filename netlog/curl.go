package netlog

import "strings"

// curl writes r as a curl command line for a POSIX shell, from what the
// log kept: redacted values stay redacted, so the line shows the request's
// shape and replays only once the reader puts their own secrets back. A
// body the log did not keep is left out.
func curl(r Request) string {
	args := []string{"curl"}
	if r.Method != "" && r.Method != "GET" {
		args = append(args, "-X", shellQuote(r.Method))
	}
	args = append(args, shellQuote(r.URL))
	for _, h := range r.Headers {
		args = append(args, "-H", shellQuote(h.Name+": "+h.Value))
	}
	if r.Body != nil && r.Body.Text != "" {
		args = append(args, "--data-raw", shellQuote(r.Body.Text))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell: in single quotes, where nothing
// is special but the single quote itself, written '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
