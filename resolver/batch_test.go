package resolver

import (
	"bytes"
	"context"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBatchJUnit: the JUnit report of a batch as CI reads it. One case per
// Miniapp in the batch's order: a rejection a failure with every
// stage/code in its message, a Miniapp whose server is down an error of
// type undecided (nothing was rejected), one whose input could not be read
// an error of type unreadable that says what to write, an accepted or
// passed one its outcome as output; the suite stamped with the time given,
// in UTC, and the batch's outcome the worst.
func TestBatchJUnit(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	ctx := context.Background()
	r := newResolver(t, Config{Dashboard: down.URL})
	b := r.ResolveList(ctx, []ListEntry{{ID: "com.example.notes", Origin: down.URL}})
	if got := b.Outcome(); got != OutcomeUndecided {
		t.Fatalf("a batch with a server down: outcome %q, want %q", got, OutcomeUndecided)
	}
	dir := filepath.Join("..", "testdata", "resolve", "batch")
	names, err := ManifestFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	offline := r.CheckDir(ctx, dir, names)
	if got := offline.Outcome(); got != OutcomeUndecided {
		t.Fatalf("a folder with an unreadable Miniapp: outcome %q, want %q", got, OutcomeUndecided)
	}
	b.Miniapps = append(b.Miniapps, offline.Miniapps...)

	var buf bytes.Buffer
	now := time.Date(2026, 11, 24, 22, 47, 49, 0, time.FixedZone("CET", 3600))
	if err := b.WriteJUnit(&buf, now); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte(xml.Header)) {
		t.Fatalf("the report does not start with the XML declaration: %.60q", buf.String())
	}
	var doc JUnitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("the JUnit report is not XML: %v", err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Timestamp != "2026-11-24T21:47:49Z" {
		t.Errorf("timestamp %q, want the time given in UTC", s.Timestamp)
	}
	if doc.Tests != 5 || doc.Failures != 1 || doc.Errors != 2 || s.Tests != 5 || s.Failures != 1 || s.Errors != 2 {
		t.Errorf("tests %d/%d, failures %d/%d, errors %d/%d; want 5, 1 and 2", doc.Tests, s.Tests, doc.Failures, s.Failures, doc.Errors, s.Errors)
	}
	want := []struct{ name, kind, typ, has string }{
		{"com.example.notes @ " + down.URL, "error", OutcomeUndecided, "undecided: 1 reason(s): download/"},
		{"bad.webmanifest", "failure", OutcomeRejected, "rejected: 7 reason(s): schema/schema-enum, schema/schema-pattern"},
		{"notes.webmanifest", "output", "", OutcomeAccepted},
		{"orphan.webmanifest", "error", OutcomeUnreadable, "unreadable: orphan.client.json needs the URL"},
		{"public.webmanifest", "output", "", OutcomePassed},
	}
	if len(s.Cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(s.Cases), len(want))
	}
	for i, w := range want {
		c := s.Cases[i]
		if c.Name != w.name || c.Classname != "miniapp-host.resolve" {
			t.Errorf("case %d: %q (%s), want %q", i, c.Name, c.Classname, w.name)
			continue
		}
		var p *JUnitProblem
		switch w.kind {
		case "error":
			p = c.Error
		case "failure":
			p = c.Failure
		default:
			if c.Output != w.has || c.Error != nil || c.Failure != nil {
				t.Errorf("%s: %+v, want a passing case with output %q", c.Name, c, w.has)
			}
			continue
		}
		if p == nil || p.Type != w.typ || !strings.HasPrefix(p.Message, w.has) || p.Text == "" {
			t.Errorf("%s: %+v, want a %s of type %s whose message starts %q, with a text", c.Name, p, w.kind, w.typ, w.has)
		}
	}
	if f := s.Cases[1].Failure; f != nil && strings.Count(f.Text, "    hint: ") != 7 {
		t.Errorf("the rejection's text has %d hints, want every reason's (7):\n%s", strings.Count(f.Text, "    hint: "), f.Text)
	}
}

// FuzzBatchList: any list either parses into "id origin" pairs of two
// non-empty fields without spaces, or is refused with the line to fix;
// never a panic.
func FuzzBatchList(f *testing.F) {
	f.Add([]byte("# comment\n\ncom.example.notes https://notes.example\n"))
	f.Add([]byte("a b c\n"))
	f.Add([]byte("\xff\xfe x\r\ny z"))
	f.Add([]byte(strings.Repeat("x", 70_000) + " y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := ParseList("list.txt", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "list.txt") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(list) == 0 {
			t.Fatal("an empty list parsed")
		}
		for _, l := range list {
			if l.ID == "" || l.Origin == "" || strings.ContainsAny(l.ID+l.Origin, " \t\n") {
				t.Fatalf("pair %q", l)
			}
		}
	})
}
