package resolver

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report for people, as `miniapp-host resolve` and
// `miniapp-host dev` print it (docs/resolve.md): the outcome, every reason
// with its stage, code, JSON pointer, message and hint, and the stages that
// did not run with why.
func (r *Report) WriteText(w io.Writer) {
	switch r.Outcome {
	case OutcomeAccepted:
		s := r.Miniapp
		fmt.Fprintf(w, "accepted: %s (%s)\n", s.Name, r.ID)
		row := func(k, v string) { fmt.Fprintf(w, "  %-16s %s\n", k, v) }
		row("origin", s.Origin)
		row("manifest", s.ManifestURL)
		row("start URL", s.StartURL)
		if s.AuthURL != "" {
			row("auth URL", s.AuthURL)
		}
		row("loads", s.LoadURL)
		row("client", fmt.Sprintf("%s (%s)", s.ClientID, s.ClientType))
		row("allowed origins", strings.Join(s.AllowedOrigins, " "))
	case OutcomePassed:
		fmt.Fprintf(w, "passed: the manifest of %s passes every check that ran; the client was not checked (add --client FILE)\n", r.ID)
	case OutcomeRejected:
		var failed []string
		for _, st := range r.Stages {
			if st.Outcome == OutcomeFailed {
				failed = append(failed, string(st.Stage))
			}
		}
		fmt.Fprintf(w, "rejected: %d reason(s), in stage(s) %s\n", len(r.Reasons), strings.Join(failed, ", "))
		for _, reason := range r.Reasons {
			reason.WriteText(w)
		}
	case OutcomeUndecided:
		first := r.Reasons[0]
		fmt.Fprintf(w, "could not decide at stage %s (%s): %s\n", first.Stage, first.Code, first.Message)
		fmt.Fprintln(w, "  nothing was rejected; try again when the server answers")
	}
	// Stages not run, grouped by why: "not checked: parse, schema: ...".
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
				fmt.Fprintf(w, "  could not check %s (%s): %s\n", st.Stage, reason.Code, reason.Message)
			}
		}
	}
	for _, why := range whys {
		fmt.Fprintf(w, "  not checked: %s: %s\n", strings.Join(notRun[why], ", "), why)
	}
	for _, st := range r.Stages {
		for _, n := range st.Notes {
			if st.Outcome != OutcomeSkipped && (strings.Contains(n, "matches nothing") || strings.Contains(n, "not checked")) {
				fmt.Fprintf(w, "  note (%s): %s\n", st.Stage, n)
			}
		}
	}
}

// WriteText writes one reason as an indented block: stage/code at the
// pointer, the message, and the hint.
func (r Reason) WriteText(w io.Writer) {
	where := ""
	if r.Pointer != "" {
		where = " at " + r.Pointer
	}
	fmt.Fprintf(w, "  - %s/%s%s\n", r.Stage, r.Code, where)
	fmt.Fprintf(w, "    %s\n", r.Message)
	if r.Hint != "" {
		fmt.Fprintf(w, "    hint: %s\n", r.Hint)
	}
}
