package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/playground"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// readJUnit decodes the JUnit report a batch wrote, as CI's test
// reporters read it.
func readJUnit(t *testing.T, path string) resolver.JUnitSuites {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc resolver.JUnitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the JUnit report is not XML: %v", err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d test suites, want 1", len(doc.Suites))
	}
	return doc
}

// TestResolveBatchOffline checks a folder of manifests: one test case each,
// a rejection's failure text with every reason, a manifest without its URL
// an error that says which file to write, the worst outcome as exit code.
func TestResolveBatchOffline(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "resolve", "batch")
	junit := filepath.Join(t.TempDir(), "report.xml")
	code, out, stderr := runCLI(t, "", "resolve", "--manifests", dir, "--junit", junit)
	if code != exitUndecided {
		t.Fatalf("exit %d, want %d (one manifest could not be checked); stderr %q", code, exitUndecided, stderr)
	}
	golden(t, "resolve/out/batch-offline.txt", out)
	doc := readJUnit(t, junit)
	s := doc.Suites[0]
	if doc.Tests != 4 || s.Tests != 4 || s.Failures != 1 || s.Errors != 1 || len(s.Cases) != 4 {
		t.Fatalf("tests %d/%d, failures %d, errors %d, cases %d; want 4 cases, 1 failure, 1 error", doc.Tests, s.Tests, s.Failures, s.Errors, len(s.Cases))
	}
	byName := map[string]resolver.JUnitCase{}
	for _, c := range s.Cases {
		byName[c.Name] = c
	}
	bad := byName["bad.webmanifest"]
	if bad.Failure == nil || strings.Count(bad.Failure.Text, "  - schema/") != 7 || !strings.HasPrefix(bad.Failure.Message, "rejected: 7 reason(s)") {
		t.Errorf("bad.webmanifest: %+v, want a failure with all 7 schema reasons", bad.Failure)
	}
	if o := byName["orphan.webmanifest"]; o.Error == nil || !strings.Contains(o.Error.Text, "write it to orphan.url") {
		t.Errorf("orphan.webmanifest: %+v, want an error naming orphan.url", o.Error)
	}
	for _, n := range []string{"notes.webmanifest", "public.webmanifest"} {
		if c := byName[n]; c.Failure != nil || c.Error != nil {
			t.Errorf("%s: %+v, want a passing case", n, c)
		}
	}
	code, out, _ = runCLI(t, "", "resolve", "--manifests", dir, "--json")
	var js struct {
		Miniapps []struct {
			Name   string
			Report *struct{ Outcome string }
			Error  string
		}
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != exitUndecided || len(js.Miniapps) != 4 {
		t.Fatalf("--json: exit %d, %v, %d Miniapps", code, err, len(js.Miniapps))
	}
	for _, m := range js.Miniapps {
		if (m.Report == nil) != (m.Name == "orphan.webmanifest") || (m.Report == nil && m.Error == "") {
			t.Errorf("--json: %+v", m)
		}
	}
}

// TestResolveBatchOnline resolves the playground's Miniapps from a list
// against its dashboard: the demos accepted, each broken one rejected with
// the stage and code it was built to fail with, in its failure's message.
func TestResolveBatchOnline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := playground.Start(ctx, playground.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	entries, err := p.Miniapps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var list strings.Builder
	list.WriteString("# the playground's Miniapps\n\n")
	want := map[string]string{} // name → stage/code of the expected rejection, "" for accepted
	for _, e := range entries {
		fmt.Fprintf(&list, "%s %s\n", e.ID, e.Origin)
		want[e.ID+" @ "+e.Origin] = ""
		if e.Expect != nil {
			want[e.ID+" @ "+e.Origin] = string(e.Expect.Stage) + "/" + e.Expect.Code
		}
	}
	dir := t.TempDir()
	listFile, junit := filepath.Join(dir, "miniapps.txt"), filepath.Join(dir, "report.xml")
	if err := os.WriteFile(listFile, []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "", "resolve", "--from", listFile, "--dashboard", p.Services().Dashboard, "--junit", junit)
	if code != exitRejected {
		t.Fatalf("exit %d, want %d; stdout %s; stderr %s", code, exitRejected, out, stderr)
	}
	s := readJUnit(t, junit).Suites[0]
	if s.Tests != len(entries) || s.Errors != 0 || len(s.Cases) != len(entries) {
		t.Fatalf("%d tests, %d errors, want %d and 0", s.Tests, s.Errors, len(entries))
	}
	failures := 0
	for _, c := range s.Cases {
		exp, ok := want[c.Name]
		switch {
		case !ok:
			t.Errorf("unexpected case %q", c.Name)
		case exp == "" && c.Failure != nil:
			t.Errorf("%s: failed %q, want accepted", c.Name, c.Failure.Message)
		case exp != "" && (c.Failure == nil || !strings.Contains(c.Failure.Message, exp)):
			t.Errorf("%s: %+v, want a failure naming %s", c.Name, c.Failure, exp)
		}
		if c.Failure != nil {
			failures++
		}
	}
	if s.Failures != failures || failures != len(playground.BrokenKinds()) {
		t.Errorf("failures %d (counted %d), want %d", s.Failures, failures, len(playground.BrokenKinds()))
	}
}

// TestResolveBatchUsage: a batch's inputs are its list; mixing them with
// the single-Miniapp flags, or a list line that is not "id origin", is a
// usage error that says what to fix.
func TestResolveBatchUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "list.txt")
	if err := os.WriteFile(bad, []byte("com.example.notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", bad, "--id", "x"}, "drop --id"},
		{[]string{"--from", bad, "--manifests", "."}, "use one or the other"},
		{[]string{"--id", "x", "--origin", "https://a.example", "--junit", "r.xml"}, "add --from FILE or --manifests DIR"},
		{[]string{"--from", bad}, `list.txt:1: "com.example.notes" is not "id origin"`},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"resolve"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestJUnitNotWrittenThroughLinks: a --junit report is never written
// through a symbolic link planted at its path: the command says which path
// is a link, and the file the link points to is untouched. What it writes
// is the owner's only (0600). (The window's size: package playground.)
func TestJUnitNotWrittenThroughLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	untouched := func(what string) {
		t.Helper()
		got, _ := os.ReadFile(victim)
		fi, _ := os.Stat(victim)
		if string(got) != "precious" || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: the link's target holds %q, mode %v; want it untouched", what, got, fi.Mode().Perm())
		}
	}
	junit := filepath.Join(dir, "report.xml")
	if err := os.Symlink(victim, junit); err != nil {
		t.Fatal(err)
	}
	manifests := filepath.Join("..", "..", "testdata", "resolve", "batch")
	code, _, stderr := runCLI(t, "", "resolve", "--manifests", manifests, "--junit", junit)
	if code != exitUsage || !strings.Contains(stderr, junit+" is a symbolic link") {
		t.Errorf("--junit through a link: exit %d, stderr %q; want %d naming the link", code, stderr, exitUsage)
	}
	untouched("--junit")

	plain := filepath.Join(dir, "plain.xml")
	if code, _, stderr := runCLI(t, "", "resolve", "--manifests", manifests, "--junit", plain); code == exitUsage {
		t.Fatalf("--junit to a plain path: %s", stderr)
	}
	if fi, err := os.Stat(plain); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the report: %v %v, want mode 0600", fi, err)
	}
}
