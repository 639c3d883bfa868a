package resolver

// ReportVersion is the version of the Report document; it changes only when
// a member is removed or changes meaning (docs/resolve.md).
const ReportVersion = 1

// Outcomes of a resolve and of a stage.
const (
	OutcomeAccepted  = "accepted"  // resolve: the Miniapp may be opened
	OutcomeRejected  = "rejected"  // resolve: it must not be opened
	OutcomeUndecided = "undecided" // resolve or stage: no answer could be had
	OutcomeOK        = "ok"        // stage passed
	OutcomeFailed    = "failed"    // stage refused the Miniapp
	OutcomeSkipped   = "skipped"   // stage did not run (an earlier stage ended the resolve, or offline)
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
	Reasons     []Reason      `json:"reasons,omitempty"`
	Miniapp     *Summary      `json:"miniapp,omitempty"`
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

// reject ends the report with reasons, all of the stage of the first.
func (r *Report) reject(reasons []Reason) *Rejection {
	sr := r.stage(reasons[0].Stage)
	sr.Outcome = OutcomeFailed
	sr.Reasons = reasons
	r.Outcome = OutcomeRejected
	r.Reasons = reasons
	return &Rejection{Reason: reasons[0], Reasons: reasons, Report: r}
}

// undecided ends the report without an answer.
func (r *Report) undecided(se *stageError) *Undecided {
	sr := r.stage(se.reason.Stage)
	sr.Outcome = OutcomeUndecided
	if se.status != 0 {
		sr.Status = se.status
	}
	sr.Reasons = []Reason{se.reason}
	r.Outcome = OutcomeUndecided
	r.Reasons = []Reason{se.reason}
	return &Undecided{Stage: se.reason.Stage, Code: se.reason.Code, Message: se.reason.Message, Err: se.err, Report: r}
}
