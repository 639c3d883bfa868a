package resolver

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable is s as the text reports show a value they did not write (a
// manifest's name, a URL, a message quoting the manifest): every character
// that is not printable (a C0 or C1 control such as ESC, which starts a
// terminal's escape sequences, a line break that would forge a line of the
// report, a bidirectional override, invalid UTF-8) is written as its Go
// escape (\x1b, \n, \u202e), so that it reaches the terminal as text,
// never as what it would do (docs/security.md).
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (r != ' ' && !unicode.IsPrint(r)) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		if r == utf8.RuneError && n <= 1 || r != ' ' && !unicode.IsPrint(r) {
			q := strconv.QuoteToASCII(s[i : i+n])
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteString(s[i : i+n])
	}
	return b.String()
}

// printf is fmt.Fprintf with every string argument made printable.
func printf(w io.Writer, format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = printable(v)
		case fmt.Stringer:
			args[i] = printable(v.String())
		}
	}
	fmt.Fprintf(w, format, args...)
}

// WriteText writes the report for people, as `miniapp-host resolve` and
// `miniapp-host dev` print it (docs/resolve.md): the outcome, every reason
// with its stage, code, JSON pointer, message and hint, and the stages that
// did not run with why.
func (r *Report) WriteText(w io.Writer) {
	switch r.Outcome {
	case OutcomeAccepted:
		r.writeAccepted(w)
	case OutcomePassed:
		printf(w, "passed: the manifest of %s passes every check that ran; the client was not checked (add --client FILE)\n", r.ID)
	case OutcomeRejected:
		r.writeRejected(w)
	case OutcomeUndecided:
		first := r.Reasons[0]
		printf(w, "could not decide at stage %s (%s): %s\n", first.Stage, first.Code, first.Message)
		printf(w, "  nothing was rejected; try again when the server answers\n")
	}
	r.writeNotChecked(w)
	for _, st := range r.Stages {
		for _, n := range st.Notes {
			if st.Outcome != OutcomeSkipped && (strings.Contains(n, "matches nothing") || strings.Contains(n, "not checked")) {
				printf(w, "  note (%s): %s\n", st.Stage, n)
			}
		}
	}
}

// writeAccepted writes the accepted Miniapp, one row per fact.
func (r *Report) writeAccepted(w io.Writer) {
	s := r.Miniapp
	printf(w, "accepted: %s (%s)\n", s.Name, r.ID)
	row := func(k, v string) { printf(w, "  %-16s %s\n", k, v) }
	row("origin", s.Origin)
	row("manifest", s.ManifestURL)
	row("start URL", s.StartURL)
	if s.AuthURL != "" {
		row("auth URL", s.AuthURL)
	}
	row("loads", s.LoadURL)
	row("client", fmt.Sprintf("%s (%s)", s.ClientID, s.ClientType))
	row("allowed origins", strings.Join(s.AllowedOrigins, " "))
}

// writeRejected writes the stages that failed and every reason.
func (r *Report) writeRejected(w io.Writer) {
	var failed []string
	for _, st := range r.Stages {
		if st.Outcome == OutcomeFailed {
			failed = append(failed, string(st.Stage))
		}
	}
	printf(w, "rejected: %d reason(s), in stage(s) %s\n", len(r.Reasons), strings.Join(failed, ", "))
	for _, reason := range r.Reasons {
		reason.WriteText(w)
	}
}

// writeNotChecked writes the checks that could not decide (when the
// report as a whole did) and the stages not run, grouped by why: "not
// checked: parse, schema: ...".
func (r *Report) writeNotChecked(w io.Writer) {
	var whys []string
	notRun := map[string][]string{}
	for _, st := range r.Stages {
		if st.Outcome != OutcomeSkipped || r.Offline && st.Stage == StageDownload {
			continue
		}
		why := strings.Join(st.Notes, "; ")
		if _, seen := notRun[why]; !seen {
			whys = append(whys, why)
		}
		notRun[why] = append(notRun[why], string(st.Stage))
	}
	for _, st := range r.Stages {
		if st.Outcome == OutcomeUndecided && r.Outcome != OutcomeUndecided {
			for _, reason := range st.Reasons {
				printf(w, "  could not check %s (%s): %s\n", st.Stage, reason.Code, reason.Message)
			}
		}
	}
	for _, why := range whys {
		printf(w, "  not checked: %s: %s\n", strings.Join(notRun[why], ", "), why)
	}
}

// WriteText writes one reason as an indented block: stage/code at the
// pointer, the message, and the hint.
func (r Reason) WriteText(w io.Writer) {
	where := ""
	if r.Pointer != "" {
		where = " at " + r.Pointer
	}
	printf(w, "  - %s/%s%s\n", r.Stage, r.Code, where)
	printf(w, "    %s\n", r.Message)
	if r.Hint != "" {
		printf(w, "    hint: %s\n", r.Hint)
	}
}
