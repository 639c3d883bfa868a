package resolver

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// JUnit XML as Jenkins, GitLab and GitHub's test reporters read it: one
// test suite, one test case per Miniapp; a rejection is a <failure> whose
// text has every reason, an undecided or unreadable one an <error>, an
// accepted or passed one has its outcome in <system-out>
// (docs/resolve.md, "Many Miniapps at once").

// JUnitSuites is the root element of a JUnit report.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is the test suite of a batch.
type JUnitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []JUnitCase `xml:"testcase"`
}

// JUnitCase is one Miniapp of a batch.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitProblem `xml:"failure,omitempty"`
	Error     *JUnitProblem `xml:"error,omitempty"`
	Output    string        `xml:"system-out,omitempty"`
}

// JUnitProblem is a test case's failure or error.
type JUnitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit is the batch's JUnit report, stamped with now.
func (b *Batch) JUnit(now time.Time) JUnitSuites {
	suite := JUnitSuite{Name: "miniapp-host resolve", Tests: len(b.Miniapps), Timestamp: now.UTC().Format(time.RFC3339)}
	var total time.Duration
	for _, it := range b.Miniapps {
		total += it.Took
		c := it.junitCase()
		switch {
		case c.Failure != nil:
			suite.Failures++
		case c.Error != nil:
			suite.Errors++
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Time = fmt.Sprintf("%.3f", total.Seconds())
	return JUnitSuites{Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Suites: []JUnitSuite{suite}}
}

// junitCase is the test case of one Miniapp.
func (it BatchItem) junitCase() JUnitCase {
	c := JUnitCase{Name: it.Name, Classname: "miniapp-host.resolve", Time: fmt.Sprintf("%.3f", it.Took.Seconds())}
	switch it.Outcome() {
	case OutcomeUnreadable:
		c.Error = &JUnitProblem{Message: "unreadable: " + it.Error, Type: OutcomeUnreadable, Text: it.Error}
	case OutcomeRejected:
		c.Failure = &JUnitProblem{Message: it.Report.summary(), Type: OutcomeRejected, Text: it.Report.reasonsText()}
	case OutcomeUndecided:
		c.Error = &JUnitProblem{Message: it.Report.summary(), Type: OutcomeUndecided, Text: it.Report.reasonsText()}
	default:
		c.Output = it.Report.Outcome
	}
	return c
}

// WriteJUnit writes the batch's JUnit report, stamped with now, as an XML
// document.
func (b *Batch) WriteJUnit(w io.Writer, now time.Time) error {
	out, err := xml.MarshalIndent(b.JUnit(now), "", "  ")
	if err != nil {
		return fmt.Errorf("resolver: JUnit report: %w", err)
	}
	_, err = w.Write(append([]byte(xml.Header), append(out, '\n')...))
	return err
}

// summary is a report's one-line outcome: "rejected: 2 reason(s):
// schema/code, client/code".
func (r *Report) summary() string {
	var codes []string
	for _, reason := range r.Reasons {
		codes = append(codes, string(reason.Stage)+"/"+reason.Code)
	}
	return fmt.Sprintf("%s: %d reason(s): %s", r.Outcome, len(r.Reasons), strings.Join(codes, ", "))
}

// reasonsText is every reason of the report as Reason.WriteText writes it.
func (r *Report) reasonsText() string {
	var text strings.Builder
	for _, reason := range r.Reasons {
		reason.WriteText(&text)
	}
	return text.String()
}
