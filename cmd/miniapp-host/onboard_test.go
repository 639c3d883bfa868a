package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// cli runs a command in-process and returns its exit code and output.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(context.Background(), env{args: args, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errs, getenv: os.Getenv})
	return code, out.String(), errs.String()
}

// TestDashboardCommands drives onboarding and review through the CLI
// against an in-process server: a project with a credential declares a
// Resource Server, which only the operator credential approves.
func TestDashboardCommands(t *testing.T) {
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "a.db"), OperatorKey: "op-key-for-the-cli-tests"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := srv.URLs().Dashboard
	var prj struct{ ID, Key string }
	code, out, errs := cli(t, "", "project", "create", "--dashboard", d, "Payslips Inc.", "--json")
	if code != exitOK || json.Unmarshal([]byte(out), &prj) != nil || prj.Key == "" {
		t.Fatalf("project create: %d %s %s", code, out, errs)
	}
	code, out, errs = cli(t, "", "credential", "add", "--dashboard", d, "--key", prj.Key, "--project", prj.ID,
		"--type", "confidential", "--redirect-uri", "https://payslips.example/cb", "--origin", "https://payslips.example", "--json")
	if code != exitOK || !strings.Contains(out, `"client_secret"`) {
		t.Fatalf("credential add: %d %s %s", code, out, errs)
	}
	t.Setenv(keyEnv, prj.Key) // the key from the environment
	if code, out, errs = cli(t, "", "credential", "list", "--dashboard", d, "--project", prj.ID); code != exitOK || strings.Contains(out, `"client_secret"`) {
		t.Fatalf("credential list: %d %s %s", code, out, errs)
	}
	decl := `{"resource":"https://payslips.example/api","scopes":[{"name":"payslips:read","meaning":"Read payslips"}],"types":[]}`
	file := filepath.Join(t.TempDir(), "rs.json")
	if err := os.WriteFile(file, []byte(decl), 0o600); err != nil {
		t.Fatal(err)
	}
	var sub struct {
		ID, Status string
		AssignedID string `json:"assigned_id"`
	}
	code, out, errs = cli(t, "", "rs", "declare", "--dashboard", d, "--project", prj.ID, file, "--json")
	if code != exitOK || json.Unmarshal([]byte(out), &sub) != nil || sub.Status != "pending" {
		t.Fatalf("rs declare: %d %s %s", code, out, errs)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a project key cannot approve", []string{"review", "approve", sub.ID, "--dashboard", d}, exitRejected, "operator_only"},
		{"reject needs a reason", []string{"review", "reject", sub.ID, "--dashboard", d, "--key", "op-key-for-the-cli-tests"}, exitRejected, "/reason"},
		{"an unknown action", []string{"review", "promote", sub.ID}, exitUsage, "unknown action"},
		{"a missing argument", []string{"review", "approve", "--dashboard", d}, exitUsage, "want 1 argument"},
		{"the dashboard is down", []string{"rs", "list", "--dashboard", "http://127.0.0.1:1"}, exitUndecided, "dashboard:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, errs := cli(t, "", tc.args...); code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("want exit %d with %q, got %d: %s", tc.code, tc.want, code, errs)
			}
		})
	}
	code, out, errs = cli(t, "", "review", "approve", sub.ID, "--reason", "reviewed", "--dashboard", d, "--key", "op-key-for-the-cli-tests", "--json")
	if code != exitOK || json.Unmarshal([]byte(out), &sub) != nil || !strings.HasPrefix(sub.AssignedID, "rs_") {
		t.Fatalf("review approve: %d %s %s", code, out, errs)
	}
	if code, out, _ = cli(t, "", "rs", "list", "--dashboard", d); code != exitOK || !strings.Contains(out, sub.AssignedID) {
		t.Fatalf("rs list: %d %s", code, out)
	}

	// The keys come from the command's own environment (what main
	// passes), not from the process's: review reads the operator key's
	// variable, the other groups MINIAPP_HOST_KEY.
	t.Setenv(keyEnv, "")
	vars := map[string]string{operatorKeyEnv: "op-key-for-the-cli-tests", keyEnv: prj.Key}
	for _, args := range [][]string{{"review", "list", "--dashboard", d}, {"credential", "list", "--dashboard", d, "--project", prj.ID}} {
		var out, errs bytes.Buffer
		code := run(context.Background(), env{args: args, stdin: strings.NewReader(""), stdout: &out, stderr: &errs,
			getenv: func(k string) string { return vars[k] }})
		if code != exitOK {
			t.Errorf("%v with the keys in its environment: %d %s", args, code, errs.String())
		}
	}
}

// TestDashboardTranscript runs a whole onboarding through the CLI against a
// real reference server on loopback and compares every command's exit code,
// standard output and standard error with testdata/dashboard/onboarding.txt.
// What varies between runs (ids, keys, secrets, the port, timestamps) is
// replaced by numbered placeholders; a timestamp only matches in the one
// format of the dashboard, RFC 3339 in whole seconds, UTC.
func TestDashboardTranscript(t *testing.T) {
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "a.db"), OperatorKey: "op-key-for-the-cli-tests"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := srv.URLs().Dashboard
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badDecl := write("bad-rs.json", `{"resource":"https://payslips.example/api","scopes":[{"name":"Payslips","meaning":""}],"types":[]}`)
	decl := write("rs.json", `{"resource":"https://payslips.example/api","scopes":[{"name":"payslips:read","meaning":"Read payslips"}],"types":[]}`)

	n := newNormaliser(d, dir)
	var transcript strings.Builder
	var prj struct{ ID, Key string }
	var lastOut string
	step := func(stdin string, wantCode int, args ...string) {
		t.Helper()
		code, out, errs := cli(t, stdin, args...)
		if code != wantCode {
			t.Errorf("%q: exit %d, want %d\nstdout %s\nstderr %s", args, code, wantCode, out, errs)
		}
		lastOut = out
		shown := make([]string, 0, len(args))
		for _, a := range args {
			if strings.ContainsAny(a, " \"") {
				a = strconv.Quote(a)
			}
			shown = append(shown, a)
		}
		fmt.Fprintf(&transcript, "$ miniapp-host %s\nexit %d\n", n.replace(strings.Join(shown, " ")), code)
		if out != "" {
			fmt.Fprintf(&transcript, "--- stdout\n%s", n.replace(out))
		}
		if errs != "" {
			fmt.Fprintf(&transcript, "--- stderr\n%s", n.replace(errs))
		}
		transcript.WriteString("\n")
	}
	step("", exitOK, "project", "create", "Payslips Inc.", "--dashboard", d, "--json")
	if err := json.Unmarshal([]byte(lastOut), &prj); err != nil || prj.Key == "" {
		t.Fatalf("project create --json: %v %q", err, lastOut)
	}
	step("", exitOK, "project", "create", "Second Inc.", "--dashboard", d)
	// Not authenticated, then a wrong key: both say how to authenticate.
	t.Setenv(keyEnv, "")
	step("", exitRejected, "project", "show", "--project", prj.ID, "--dashboard", d)
	step("", exitRejected, "project", "show", "--project", prj.ID, "--dashboard", d, "--key", "mhk_wrong")
	t.Setenv(keyEnv, prj.Key)
	// A new project: its lists are empty, never null.
	step("", exitOK, "project", "show", "--project", prj.ID, "--dashboard", d)
	step("", exitRejected, "credential", "add", "--project", prj.ID, "--type", "confidential", "--redirect-uri", "http://payslips.example/cb", "--dashboard", d)
	step("", exitOK, "credential", "add", "--project", prj.ID, "--type", "confidential", "--redirect-uri", "https://payslips.example/cb", "--origin", "https://payslips.example", "--dashboard", d)
	step("", exitOK, "credential", "add", "--project", prj.ID, "--type", "public", "--name", "Payslips app", "--origin", "https://app.payslips.example", "--dashboard", d, "--json")
	var public struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(lastOut), &public); err != nil {
		t.Fatal(err)
	}
	step("", exitOK, "credential", "list", "--project", prj.ID, "--dashboard", d)
	// An update is checked as an addition is, and names the field it refuses.
	step("", exitUsage, "credential", "update", public.ClientID, "--project", prj.ID, "--dashboard", d)
	step("", exitUsage, "credential", "update", public.ClientID, "--project", prj.ID, "--origin", "https://app.payslips.example", "--clear-origins", "--dashboard", d)
	step("", exitRejected, "credential", "update", public.ClientID, "--project", prj.ID, "--origin", "https://app.payslips.example/app", "--dashboard", d)
	step("", exitOK, "credential", "update", public.ClientID, "--project", prj.ID, "--redirect-uri", "http://127.0.0.1:5000/cb",
		"--origin", "https://app.payslips.example", "--origin", "http://127.0.0.1:5000", "--dashboard", d)
	step("", exitOK, "credential", "update", public.ClientID, "--project", prj.ID, "--clear-redirect-uris", "--dashboard", d, "--json")
	// The grant management setting (docs/authserver.md, "Grant management").
	step("", exitUsage, "credential", "update", public.ClientID, "--project", prj.ID, "--grant-management-action-required=yes", "--dashboard", d)
	step("", exitOK, "credential", "update", public.ClientID, "--project", prj.ID, "--grant-management-action-required", "--dashboard", d)
	step("", exitOK, "credential", "update", public.ClientID, "--project", prj.ID, "--grant-management-action-required=false", "--dashboard", d)
	step("", exitRejected, "credential", "rotate", public.ClientID, "--project", prj.ID, "--dashboard", d)
	// A refused declaration and a refused manifest list every violation;
	// with --json the server's answer is printed as it came.
	step("", exitRejected, "rs", "declare", badDecl, "--project", prj.ID, "--dashboard", d)
	manifest := `{"id":"com.payslips.app","name":"","start_url":"https://evil.example/","oauth":{"client_id":"` + public.ClientID + `"}}`
	step(manifest, exitRejected, "miniapp", "submit", "-", "--project", prj.ID, "--origin", "https://app.payslips.example", "--dashboard", d)
	step(manifest, exitRejected, "miniapp", "submit", "-", "--project", prj.ID, "--origin", "https://app.payslips.example", "--dashboard", d, "--json")
	step("", exitOK, "rs", "declare", decl, "--project", prj.ID, "--dashboard", d)
	step("", exitOK, "policy", "request", "--project", prj.ID, "--scope", "openid", "--dashboard", d)
	step("", exitRejected, "review", "list", "--dashboard", d)
	step("", exitOK, "review", "list", "--kind", "resource_server", "--dashboard", d, "--key", "op-key-for-the-cli-tests")
	step("", exitOK, "review", "list", "--kind", "resource_server", "--dashboard", d, "--key", "op-key-for-the-cli-tests", "--json")
	var subs struct {
		Submissions []struct{ ID string } `json:"submissions"`
	}
	if err := json.Unmarshal([]byte(lastOut), &subs); err != nil || len(subs.Submissions) != 1 {
		t.Fatalf("review list --json: %v %q", err, lastOut)
	}
	step("", exitOK, "review", "approve", subs.Submissions[0].ID, "--reason", "reviewed", "--dashboard", d, "--key", "op-key-for-the-cli-tests")
	step("", exitRejected, "review", "approve", subs.Submissions[0].ID, "--dashboard", d, "--key", "op-key-for-the-cli-tests")
	step("", exitOK, "rs", "list", "--dashboard", d)
	step("", exitOK, "credential", "remove", public.ClientID, "--project", prj.ID, "--dashboard", d)
	step("", exitOK, "project", "show", "--project", prj.ID, "--dashboard", d)
	step("", exitUndecided, "rs", "list", "--dashboard", "http://127.0.0.1:1")
	golden(t, "dashboard/onboarding.txt", transcript.String())
}

// normaliser replaces what varies between runs with placeholders: ids,
// keys and secrets numbered, the same value with the same placeholder
// throughout a transcript; the dashboard's address and the test's folder by
// name; timestamps by {time}, which matches only the dashboard's one format
// (RFC 3339 in whole seconds, UTC), and is not numbered, since two
// timestamps may or may not fall in the same second.
type normaliser struct {
	names *strings.Replacer
	seen  map[string]string
	count map[string]int
}

func newNormaliser(dashboard, dir string) *normaliser {
	return &normaliser{names: strings.NewReplacer(dashboard, "{dashboard}", dir, "{dir}"), seen: map[string]string{}, count: map[string]int{}}
}

var (
	idsAndKeys = regexp.MustCompile(`\b(prj|sub|cli|rs|mhk)_[A-Za-z0-9_-]+`)
	secrets    = regexp.MustCompile(`(shown only this once: |"client_secret":")[A-Za-z0-9_-]{43}`)
	timestamps = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
)

func (n *normaliser) placeholder(kind, v string) string {
	p, ok := n.seen[v]
	if !ok {
		n.count[kind]++
		p = fmt.Sprintf("{%s%d}", kind, n.count[kind])
		n.seen[v] = p
	}
	return p
}

func (n *normaliser) replace(s string) string {
	s = n.names.Replace(s)
	s = idsAndKeys.ReplaceAllStringFunc(s, func(v string) string {
		kind := v[:strings.IndexByte(v, '_')]
		if kind == "mhk" {
			kind = "key"
		}
		return n.placeholder(kind, v)
	})
	s = secrets.ReplaceAllStringFunc(s, func(v string) string {
		i := len(v) - 43
		return v[:i] + n.placeholder("secret", v[i:])
	})
	return timestamps.ReplaceAllString(s, "{time}")
}
