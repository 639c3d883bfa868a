package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/privatefile"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// Batch checks for CI (docs/resolve.md, "Many Miniapps at once"):
// `resolve --from FILE` resolves every "id origin" line of FILE against the
// dashboard; `resolve --manifests DIR` checks every manifest of DIR offline.
// Each Miniapp is one test case of the --junit report; the exit code is the
// worst outcome: 3 if any could not be decided, else 1 if any was rejected,
// else 0.

// maxBatch bounds the Miniapps of one batch: a CI list, not a crawl.
const maxBatch = 10_000

// batchItem is one Miniapp of a batch and what came of it.
type batchItem struct {
	Name   string           `json:"name"` // "id @ origin", or the manifest's file name
	Report *resolver.Report `json:"report,omitempty"`
	Error  string           `json:"error,omitempty"` // input that could not be read
	took   time.Duration
}

// readBatchList reads the lines of --from: "id origin", blank lines and
// lines starting with # skipped.
func readBatchList(path string) ([][2]string, error) {
	data, err := readLimited(path, 4<<20)
	if err != nil {
		return nil, err
	}
	return parseBatchList(path, data)
}

// parseBatchList parses the lines of a --from list read from path.
func parseBatchList(path string, data []byte) ([][2]string, error) {
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: %q is not \"id origin\" (two fields, e.g. com.example.notes https://notes.example)", path, n, line)
		}
		if len(out) == maxBatch {
			return nil, fmt.Errorf("%s: more than %d Miniapps; split the list", path, maxBatch)
		}
		out = append(out, [2]string{f[0], f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w (a line is at most 64 KiB)", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s lists no Miniapp: write one \"id origin\" per line", path)
	}
	return out, nil
}

// batchManifests lists the manifests of --manifests: every *.webmanifest and
// *.json file of dir but the client files (*.client.json), by name. Beside
// NAME.webmanifest, NAME.client.json is its client configuration (the
// dashboard's answer) and NAME.url the URL it is served from; without a
// client file, the manifest alone is checked.
func batchManifests(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasSuffix(n, ".client.json") || !(strings.HasSuffix(n, ".webmanifest") || strings.HasSuffix(n, ".json")) {
			continue
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no manifest (*.webmanifest or *.json)", dir)
	}
	if len(out) > maxBatch {
		return nil, fmt.Errorf("%s holds more than %d manifests; split it", dir, maxBatch)
	}
	sort.Strings(out)
	return out, nil
}

// manifestID is the id a manifest declares, which an offline batch checks
// it against (the identity stage then checks the member's form only).
func manifestID(manifest []byte) string {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(manifest, &m) != nil {
		return ""
	}
	s, _ := m.ID.(string)
	return s
}

// runBatch resolves or checks every Miniapp of a batch, one after the
// other, and reports them.
func runBatch(ctx context.Context, e env, r *resolver.Resolver, from, dir, junitFile string, asJSON bool) int {
	var items []batchItem
	switch {
	case from != "":
		list, err := readBatchList(from)
		if err != nil {
			return usageError(e, "resolve", err.Error())
		}
		for _, l := range list {
			start := time.Now()
			app, err := r.Resolve(ctx, l[0], l[1])
			items = append(items, batchItem{Name: l[0] + " @ " + l[1], Report: reportOf(app, err), Error: errText(app, err), took: time.Since(start)})
		}
	default:
		names, err := batchManifests(dir)
		if err != nil {
			return usageError(e, "resolve", err.Error())
		}
		for _, n := range names {
			start := time.Now()
			it := batchItem{Name: n}
			manifest, err := readLimited(filepath.Join(dir, n), resolver.DefaultMaxBytes)
			if err != nil {
				it.Error = err.Error()
				items = append(items, it)
				continue
			}
			id := manifestID(manifest)
			clientPath := filepath.Join(dir, strings.TrimSuffix(strings.TrimSuffix(n, ".json"), ".webmanifest")+".client.json")
			client, cerr := readLimited(clientPath, resolver.DefaultMaxBytes)
			switch {
			case errors.Is(cerr, os.ErrNotExist):
				rep, err := r.CheckManifest(ctx, id, "", manifest)
				it.Report = rep
				if rep == nil && err != nil {
					it.Error = err.Error()
				}
			case cerr != nil:
				it.Error = cerr.Error()
			default:
				// With a client, the origin checks need the URL the
				// manifest is served from: NAME.url holds it.
				base := strings.TrimSuffix(clientPath, ".client.json")
				u, uerr := readLimited(base+".url", 8<<10)
				if uerr != nil {
					it.Error = fmt.Sprintf("%s needs the URL the manifest is served from, for the origin checks: write it to %s.url (e.g. https://app.example/miniapp.webmanifest): %v",
						filepath.Base(clientPath), filepath.Base(base), uerr)
					break
				}
				app, err := r.Check(ctx, id, strings.TrimSpace(string(u)), manifest, client)
				it.Report, it.Error = reportOf(app, err), errText(app, err)
			}
			it.took = time.Since(start)
			items = append(items, it)
		}
	}
	code := exitOK
	counts := map[string]int{}
	unreadable := 0
	for _, it := range items {
		switch {
		case it.Report == nil:
			unreadable++
			code = max(code, exitUndecided)
		case it.Report.Outcome == resolver.OutcomeUndecided:
			code = max(code, exitUndecided)
		case it.Report.Outcome == resolver.OutcomeRejected && code == exitOK:
			code = exitRejected
		}
		if it.Report != nil {
			counts[it.Report.Outcome]++
		}
	}
	if junitFile != "" {
		if err := writeJUnit(junitFile, items); err != nil {
			fmt.Fprintln(e.stderr, "miniapp-host: resolve:", err)
			return exitUsage
		}
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(struct {
			Miniapps []batchItem `json:"miniapps"`
		}{items}); err != nil {
			fmt.Fprintln(e.stderr, "miniapp-host:", err)
			return exitUsage
		}
		return code
	}
	for _, it := range items {
		fmt.Fprintf(e.stdout, "%-10s %s\n", outcomeWord(it), it.Name)
		if it.Report != nil {
			for _, r := range it.Report.Reasons {
				r.WriteText(e.stdout)
			}
		} else {
			fmt.Fprintf(e.stdout, "  %s\n", it.Error)
		}
	}
	fmt.Fprintf(e.stdout, "%d Miniapp(s): %d accepted, %d passed (manifest only), %d rejected, %d undecided, %d unreadable\n",
		len(items), counts[resolver.OutcomeAccepted], counts[resolver.OutcomePassed], counts[resolver.OutcomeRejected],
		counts[resolver.OutcomeUndecided], unreadable)
	return code
}

func outcomeWord(it batchItem) string {
	if it.Report == nil {
		return "unreadable"
	}
	return it.Report.Outcome
}

// reportOf is the report of Resolve or Check, whatever the outcome.
func reportOf(app *resolver.Miniapp, err error) *resolver.Report {
	var rej *resolver.Rejection
	var und *resolver.Undecided
	switch {
	case err == nil && app != nil:
		return app.Report
	case errors.As(err, &rej):
		return rej.Report
	case errors.As(err, &und):
		return und.Report
	}
	return nil
}

func errText(app *resolver.Miniapp, err error) string {
	if reportOf(app, err) != nil || err == nil {
		return ""
	}
	return err.Error()
}

// JUnit XML as Jenkins, GitLab and GitHub's test reporters read it: one
// test suite, one test case per Miniapp; a rejection is a <failure> whose
// text has every reason, an undecided or unreadable one an <error>.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Output    string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(path string, items []batchItem) error {
	suite := junitSuite{Name: "miniapp-host resolve", Tests: len(items), Timestamp: time.Now().UTC().Format(time.RFC3339)}
	var total time.Duration
	for _, it := range items {
		total += it.took
		c := junitCase{Name: it.Name, Classname: "miniapp-host.resolve", Time: fmt.Sprintf("%.3f", it.took.Seconds())}
		var text strings.Builder
		if it.Report != nil {
			for _, r := range it.Report.Reasons {
				r.WriteText(&text)
			}
		}
		switch {
		case it.Report == nil:
			c.Error = &junitProblem{Message: "unreadable: " + it.Error, Type: "unreadable", Text: it.Error}
			suite.Errors++
		case it.Report.Outcome == resolver.OutcomeRejected:
			c.Failure = &junitProblem{Message: summary(it.Report), Type: "rejected", Text: text.String()}
			suite.Failures++
		case it.Report.Outcome == resolver.OutcomeUndecided:
			c.Error = &junitProblem{Message: summary(it.Report), Type: "undecided", Text: text.String()}
			suite.Errors++
		default:
			c.Output = it.Report.Outcome
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Time = fmt.Sprintf("%.3f", total.Seconds())
	doc := junitSuites{Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Suites: []junitSuite{suite}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return privatefile.Write(path, append([]byte(xml.Header), append(out, '\n')...))
}

// summary is a report's one-line outcome: "rejected: schema/code, client/code".
func summary(rep *resolver.Report) string {
	var codes []string
	for _, r := range rep.Reasons {
		codes = append(codes, string(r.Stage)+"/"+r.Code)
	}
	return fmt.Sprintf("%s: %d reason(s): %s", rep.Outcome, len(rep.Reasons), strings.Join(codes, ", "))
}
