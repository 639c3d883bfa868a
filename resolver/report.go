package resolver

// ReportVersion is the version of the Report document; it changes only when
// a member is removed or changes meaning (docs/resolve.md).
const ReportVersion = 1

// Outcomes of a resolve and of a stage.
const (
	OutcomeAccepted  = "accepted"  // resolve: the Miniapp may be opened
	OutcomeRejected  = "rejected"  // resolve: it must not be opened
	OutcomeUndecided = "undecided" // resolve or stage: no answer could be had
	OutcomePassed    = "passed"    // offline check without a client configuration: every stage that ran passed
	OutcomeOK        = "ok"        // stage passed
	OutcomeFailed    = "failed"    // stage refused the Miniapp
	OutcomeSkipped   = "skipped"   // stage did not run: it lacked its input (its notes say why)
)

// Report is the record of one resolve: every stage and its outcome. It is
// the document `miniapp-host resolve --json` prints (docs/resolve.md) and
// what the playground shows.
type Report struct {
	Version     int           `json:"version"`
	Outcome     string        `json:"outcome"`
	ID          string        `json:"id"`
	Origin      string        `json:"origin"` // as requested (online) or of --manifest-url (offline)
	Offline     bool          `json:"offline,omitempty"`
	ManifestURL string        `json:"manifest_url,omitempty"`
	Stages      []StageReport `json:"stages"`
	// Reasons are the reasons of every failed stage, in stage order; of
	// an undecided resolve, the reason of the undecided stage.
	Reasons []Reason `json:"reasons,omitempty"`
	Miniapp *Summary `json:"miniapp,omitempty"`
}

// StageReport is one stage of a Report.
type StageReport struct {
	Stage     Stage    `json:"stage"`
	Outcome   string   `json:"outcome"`
	URL       string   `json:"url,omitempty"`       // the URL downloaded (download, client)
	Status    int      `json:"status,omitempty"`    // its final HTTP status
	Cache     string   `json:"cache,omitempty"`     // "miss", "fresh" or "revalidated"
	Redirects int      `json:"redirects,omitempty"` // same-origin redirects followed
	Notes     []string `json:"notes,omitempty"`
	Reasons   []Reason `json:"reasons,omitempty"`
}

// Summary is what an accepted Report says about the Miniapp.
type Summary struct {
	Name           string   `json:"name"`
	Origin         string   `json:"origin"`
	ManifestURL    string   `json:"manifest_url"`
	StartURL       string   `json:"start_url"`
	AuthURL        string   `json:"auth_url,omitempty"`
	LoadURL        string   `json:"load_url"`
	ClientID       string   `json:"client_id"`
	ClientType     string   `json:"client_type"`
	AllowedOrigins []string `json:"allowed_origins"`
}

func newReport(id, origin string, offline bool) *Report {
	r := &Report{Version: ReportVersion, ID: id, Origin: origin, Offline: offline}
	for _, s := range Stages() {
		r.Stages = append(r.Stages, StageReport{Stage: s, Outcome: OutcomeSkipped})
	}
	return r
}

// stage returns the report of s, for filling in.
func (r *Report) stage(s Stage) *StageReport {
	for i := range r.Stages {
		if r.Stages[i].Stage == s {
			return &r.Stages[i]
		}
	}
	panic("resolver: unknown stage " + string(s))
}

// ok marks s passed.
func (r *Report) ok(s Stage, notes ...string) *StageReport {
	sr := r.stage(s)
	sr.Outcome = OutcomeOK
	sr.Notes = append(sr.Notes, notes...)
	return sr
}

// skip marks s skipped, saying why in its notes.
func (r *Report) skip(s Stage, why string) {
	sr := r.stage(s)
	sr.Outcome = OutcomeSkipped
	sr.Notes = append(sr.Notes, why)
}

// skipAfter notes why on every stage after s that was not run and says
// nothing yet.
func (r *Report) skipAfter(s Stage, why string) {
	after := false
	for i := range r.Stages {
		st := &r.Stages[i]
		if after && st.Outcome == OutcomeSkipped && len(st.Notes) == 0 {
			st.Notes = []string{why}
		}
		after = after || st.Stage == s
	}
}

// fail marks the stage of reasons (all of one stage) failed; the resolve
// goes on with the stages that still have their input.
func (r *Report) fail(reasons []Reason) {
	sr := r.stage(reasons[0].Stage)
	sr.Outcome = OutcomeFailed
	sr.Reasons = append(sr.Reasons, reasons...)
}

// failed reports whether a stage has failed.
func (r *Report) failed() bool {
	for _, s := range r.Stages {
		if s.Outcome == OutcomeFailed {
			return true
		}
	}
	return false
}

// rejection ends the report with the reasons of every failed stage, in
// stage order.
func (r *Report) rejection() *Rejection {
	r.Outcome = OutcomeRejected
	r.Reasons = nil
	for _, s := range r.Stages {
		if s.Outcome == OutcomeFailed {
			r.Reasons = append(r.Reasons, s.Reasons...)
		}
	}
	return &Rejection{Reason: r.Reasons[0], Reasons: r.Reasons, Report: r}
}

// reject fails the stage of reasons and ends the report: nothing after it
// has input.
func (r *Report) reject(reasons []Reason) *Rejection {
	r.fail(reasons)
	return r.rejection()
}

// undecided marks the stage of se undecided. When an earlier stage failed
// the resolve is still a rejection, so it returns that; else it ends the
// report without an answer.
func (r *Report) undecided(se *stageError) error {
	sr := r.stage(se.reason.Stage)
	sr.Outcome = OutcomeUndecided
	if se.status != 0 {
		sr.Status = se.status
	}
	sr.Reasons = []Reason{se.reason}
	if r.failed() {
		return r.rejection()
	}
	r.Outcome = OutcomeUndecided
	r.Reasons = []Reason{se.reason}
	return &Undecided{Stage: se.reason.Stage, Code: se.reason.Code, Message: se.reason.Message, Err: se.err, Report: r}
}
