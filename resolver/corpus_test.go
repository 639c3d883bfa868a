package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/origin"
)

// corpusCase is one file of testdata/resolver: a manifest, a client
// configuration, how the two servers behave, and the expected outcome.
// Strings may use {origin} and {port} (the Miniapp's test server) and
// {dashboard} (the dashboard's test server).
type corpusCase struct {
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	ID             string          `json:"id"`
	Origin         string          `json:"origin"`
	Manifest       json.RawMessage `json:"manifest"`
	ManifestRaw    *string         `json:"manifest_raw"`
	ManifestServer serverSpec      `json:"manifest_server"`
	Client         json.RawMessage `json:"client"`
	ClientRaw      *string         `json:"client_raw"`
	Dashboard      serverSpec      `json:"dashboard"`
	Expect         struct {
		Outcome       string            `json:"outcome"`
		Stage         string            `json:"stage"`
		Codes         []string          `json:"codes"`
		Pointers      []string          `json:"pointers"`
		Later         []string          `json:"later"`
		Stages        map[string]string `json:"stages"`
		LoadURL       string            `json:"load_url"`
		ManifestURL   string            `json:"manifest_url"`
		DashboardPath string            `json:"dashboard_path"`
	} `json:"expect"`
}

const (
	corpusMaxBytes = 8 << 10
	// corpusTimeout bounds the downloads of the cases that expect a
	// timeout (servers that hang or trickle forever); the others get
	// corpusPatience, which a loaded machine never reaches, so that their
	// outcome does not depend on the machine's speed.
	corpusTimeout  = 400 * time.Millisecond
	corpusPatience = time.Minute
	// corpusBound is how long a resolve of a timeout case may take in all:
	// far more than its downloads' bound, far less than forever, which is
	// what a missing bound would take.
	corpusBound = 2*corpusTimeout + 20*time.Second
)

// expectsTimeout reports whether a case is about a download that never
// completes.
func (c corpusCase) expectsTimeout() bool {
	return slices.Contains(c.Expect.Codes, CodeTimeout)
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "resolver", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c corpusCase
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Name == "" || c.Expect.Outcome == "" {
			t.Fatalf("%s: a case needs a name and an expected outcome", f)
		}
		out = append(out, c)
	}
	return out
}

// corpusEnv is a Miniapp server and a dashboard server for one case.
type corpusEnv struct {
	app, dash *testServer
	expand    func(string) string
}

func startCorpusEnv(t *testing.T, c corpusCase) *corpusEnv {
	t.Helper()
	env := &corpusEnv{}
	// Both servers must exist before bodies are expanded, so start them
	// with empty bodies and fill the bodies in afterwards.
	env.app = newTestServer(t, ManifestPath, c.ManifestServer, nil, corpusMaxBytes)
	env.dash = newTestServer(t, "/api/oauth/clients/", c.Dashboard, nil, corpusMaxBytes)
	appURL, dashURL := env.app.URL, env.dash.URL
	port := appURL[strings.LastIndexByte(appURL, ':')+1:]
	r := strings.NewReplacer("{origin}", appURL, "{port}", port, "{dashboard}", dashURL)
	env.expand = r.Replace
	env.app.spec.Location = env.expand(env.app.spec.Location)
	env.dash.spec.Location = env.expand(env.dash.spec.Location)
	if c.ManifestRaw != nil {
		env.app.body = []byte(env.expand(*c.ManifestRaw))
	} else {
		env.app.body = []byte(env.expand(string(c.Manifest)))
	}
	if c.ClientRaw != nil {
		env.dash.body = []byte(env.expand(*c.ClientRaw))
	} else {
		env.dash.body = []byte(env.expand(string(c.Client)))
	}
	return env
}

// TestCorpus runs every case of testdata/resolver against httptest
// servers and checks the outcome, the stage, every code and every pointer.
func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 60 {
		t.Fatalf("the corpus has %d cases; it must hold at least 60", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			env := startCorpusEnv(t, c)
			timeout := corpusPatience
			if c.expectsTimeout() {
				timeout = corpusTimeout
			}
			r, err := New(Config{Dashboard: env.dash.URL, Timeout: timeout, MaxBytes: corpusMaxBytes})
			if err != nil {
				t.Fatal(err)
			}
			id := c.ID
			if id == "" {
				id = "com.example.notes"
			}
			o := env.app.URL
			if c.Origin != "" {
				o = env.expand(c.Origin)
			}
			start := time.Now()
			app, err := r.Resolve(context.Background(), id, o)
			if elapsed := time.Since(start); c.expectsTimeout() && elapsed > corpusBound {
				t.Errorf("resolve took %s; each download is bounded by %s", elapsed, timeout)
			}
			checkOutcome(t, c, env, app, err)
		})
	}
}

func checkOutcome(t *testing.T, c corpusCase, env *corpusEnv, app *Miniapp, err error) {
	t.Helper()
	want := c.Expect
	var rep *Report
	var reasons []Reason
	var rej *Rejection
	var und *Undecided
	switch {
	case err == nil:
		rep = app.Report
	case errors.As(err, &rej):
		rep, reasons = rej.Report, rej.Reasons
	case errors.As(err, &und):
		rep, reasons = und.Report, und.Report.Reasons
	default:
		t.Fatalf("unexpected error type %T: %v", err, err)
	}
	if rep.Outcome != want.Outcome {
		t.Fatalf("outcome %s (%v), want %s", rep.Outcome, err, want.Outcome)
	}
	if want.Outcome == OutcomeAccepted {
		if want.LoadURL != "" {
			wantLoad, perr := origin.ParseURL(env.expand(want.LoadURL))
			if perr != nil {
				t.Fatal(perr)
			}
			if app.LoadURL.String() != wantLoad.String() {
				t.Errorf("load URL %s, want %s", app.LoadURL, wantLoad)
			}
			if !origin.Of(app.LoadURL).Equal(app.Origin) {
				t.Errorf("load URL %s is not on the Miniapp's origin %s", app.LoadURL, app.Origin)
			}
		}
		if want.ManifestURL != "" && app.ManifestURL.String() != env.expand(want.ManifestURL) {
			t.Errorf("manifest URL %s, want %s", app.ManifestURL, env.expand(want.ManifestURL))
		}
		if want.DashboardPath != "" {
			req := <-env.dash.requests
			if got := req.URL.EscapedPath(); got != want.DashboardPath {
				t.Errorf("dashboard path %s, want %s", got, want.DashboardPath)
			}
		}
		return
	}
	// The reasons of the failing stage come first; the stages after it that
	// still had their input add theirs, listed in later as "stage/code".
	var codes, pointers, later []string
	for _, r := range reasons {
		if r.Message == "" {
			t.Errorf("reason %v has no message", r)
		}
		if want.Outcome == OutcomeRejected && r.Hint == "" {
			t.Errorf("reason %v has no hint", r)
		}
		if string(r.Stage) != want.Stage {
			later = append(later, string(r.Stage)+"/"+r.Code)
			continue
		}
		if len(later) > 0 {
			t.Errorf("reason %v of stage %s comes after reasons of later stages", r, want.Stage)
		}
		codes = append(codes, r.Code)
		pointers = append(pointers, r.Pointer)
	}
	if strings.Join(later, " ") != strings.Join(want.Later, " ") {
		t.Errorf("reasons of later stages %q, want %q\n%v", later, want.Later, reasons)
	}
	for stage, outcome := range want.Stages {
		for _, s := range rep.Stages {
			if string(s.Stage) == stage && s.Outcome != outcome {
				t.Errorf("stage %s is %s, want %s (%v)", stage, s.Outcome, outcome, s.Notes)
			}
		}
	}
	for _, s := range rep.Stages {
		if s.Outcome == OutcomeSkipped && len(s.Notes) == 0 {
			t.Errorf("stage %s was skipped without a note saying why", s.Stage)
		}
	}
	if strings.Join(codes, " ") != strings.Join(want.Codes, " ") {
		t.Errorf("codes %q, want %q\n%v", codes, want.Codes, reasons)
	}
	if want.Pointers != nil && strings.Join(pointers, " ") != strings.Join(want.Pointers, " ") {
		t.Errorf("pointers %q, want %q", pointers, want.Pointers)
	}
	// The report names the failing stage, and the stages before it passed.
	for _, s := range rep.Stages {
		if string(s.Stage) == want.Stage {
			if s.Outcome == OutcomeOK || s.Outcome == OutcomeSkipped {
				t.Errorf("stage %s is %s in the report", s.Stage, s.Outcome)
			}
			break
		}
		if s.Outcome != OutcomeOK {
			t.Errorf("stage %s before %s is %s", s.Stage, want.Stage, s.Outcome)
		}
	}
}
