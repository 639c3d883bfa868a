package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// devCLI runs a command in-process with the environment vars.
func devCLI(vars map[string]string, args ...string) (int, string, string) {
	var out, errs bytes.Buffer
	code := run(context.Background(), env{args: args, stdin: strings.NewReader(""), stdout: &out, stderr: &errs,
		getenv: func(k string) string { return vars[k] }})
	return code, out.String(), errs.String()
}

// TestFaultAndClockCommands drives fault add|list|clear and clock
// advance|set|reset|show against an in-process development server, with
// the operator key from $MINIAPP_HOST_OPERATOR_KEY: one line per fault,
// the answer as it came with --json.
func TestFaultAndClockCommands(t *testing.T) {
	const key = "op-key-for-the-fault-cli-tests"
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "a.db"), OperatorKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := srv.URLs().Dashboard
	vars := map[string]string{operatorKeyEnv: key}
	code, out, errs := devCLI(vars, "fault", "add", "--dashboard", d, "--endpoint", "token", "--client", "demo-public",
		"--subject", "sub_ana", "--error", "invalid_grant", "--description", "the code has expired", "--times", "2")
	line := regexp.MustCompile(`^added (flt_\S+)  endpoint=token  client=demo-public  subject=sub_ana  error=invalid_grant "the code has expired"  remaining=2 of 2\n$`)
	m := line.FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("fault add: %d %q %s", code, out, errs)
	}
	id := m[1]
	if code, out, errs = devCLI(vars, "fault", "add", "--dashboard", d, "--endpoint", "signing", "--client", "demo-public",
		"--status", "503", "--retry-after", "5"); code != exitOK || !strings.Contains(out, "status=503 retry-after=5  until cleared") {
		t.Fatalf("fault add --status: %d %q %s", code, out, errs)
	}
	if code, out, _ = devCLI(vars, "fault", "list", "--dashboard", d); code != exitOK || strings.Count(out, "\n") != 2 ||
		!strings.HasPrefix(out, id+"  endpoint=token") {
		t.Fatalf("fault list: one line per fault, oldest first: %d %q", code, out)
	}
	var l struct{ Faults []map[string]any }
	if code, out, _ = devCLI(vars, "fault", "list", "--dashboard", d, "--json"); code != exitOK || json.Unmarshal([]byte(out), &l) != nil ||
		len(l.Faults) != 2 || l.Faults[0]["id"] != id {
		t.Fatalf("fault list --json: %d %q", code, out)
	}
	if code, out, _ = devCLI(vars, "fault", "clear", id, "--dashboard", d); code != exitOK || out != "removed fault "+id+"\n" {
		t.Fatalf("fault clear ID: %d %q", code, out)
	}
	if code, out, errs = devCLI(vars, "fault", "clear", id, "--dashboard", d); code != exitRejected || !strings.Contains(errs, "(404 not_found) at id") {
		t.Fatalf("fault clear of a removed fault: %d %q %s", code, out, errs)
	}
	if code, out, _ = devCLI(vars, "fault", "clear", "--client", "demo-public", "--dashboard", d); code != exitOK || out != "removed 1 fault(s)\n" {
		t.Fatalf("fault clear --client: %d %q", code, out)
	}
	if code, out, _ = devCLI(vars, "fault", "list", "--dashboard", d); code != exitOK || out != "no faults\n" {
		t.Fatalf("fault list after clear: %d %q", code, out)
	}
	// The server's refusal names the field too (a code the endpoint does
	// not give is caught by the CLI first; --times 0 only by the server).
	if code, _, errs = devCLI(vars, "fault", "add", "--dashboard", d, "--endpoint", "token", "--client", "c", "--drop", "--times", "0"); code != exitRejected ||
		!strings.Contains(errs, "(400 invalid_field) at /times") {
		t.Fatalf("--times 0: want the server's refusal at /times, got %d %s", code, errs)
	}

	if code, out, errs = devCLI(vars, "clock", "advance", "61s", "--dashboard", d); code != exitOK || !strings.Contains(out, "(offset 1m1s from real time") {
		t.Fatalf("clock advance: %d %q %s", code, out, errs)
	}
	var st map[string]any
	if code, out, _ = devCLI(vars, "clock", "show", "--json", "--dashboard", d); code != exitOK || json.Unmarshal([]byte(out), &st) != nil || st["offset"] != "1m1s" {
		t.Fatalf("clock show --json: %d %q", code, out)
	}
	if code, out, _ = devCLI(vars, "clock", "set", "2030-01-01T00:00:00Z", "--dashboard", d); code != exitOK || !strings.HasPrefix(out, "clock 2030-01-01T00:00:0") {
		t.Fatalf("clock set: %d %q", code, out)
	}
	if code, out, _ = devCLI(vars, "clock", "reset", "--dashboard", d); code != exitOK || !strings.Contains(out, "(offset 0s from") {
		t.Fatalf("clock reset: %d %q", code, out)
	}
	if code, _, errs = devCLI(nil, "clock", "show", "--dashboard", d); code != exitRejected || !strings.Contains(errs, "--key KEY or the "+operatorKeyEnv) {
		t.Fatalf("no key: want the refusal and how to authenticate, got %d %s", code, errs)
	}

	pub, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "p.db"), OperatorKey: key, Issuer: "https://id.example"})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if code, _, errs = devCLI(vars, "fault", "list", "--dashboard", pub.URLs().Dashboard); code != exitRejected ||
		!strings.Contains(errs, "this server has no development controls: its issuer is not on loopback") {
		t.Fatalf("a public issuer: %d %s", code, errs)
	}
}

// TestFaultAndClockUsage: what the CLI can check it refuses before
// sending anything (the dashboard given is unreachable: a request sent
// would exit 3), naming the flag and the rule.
func TestFaultAndClockUsage(t *testing.T) {
	down := []string{"--dashboard", "http://127.0.0.1:1", "--key", "k"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fault", "add", "--client", "c", "--drop"}, "--endpoint is required"},
		{[]string{"fault", "add", "--endpoint", "tokn", "--client", "c", "--drop"}, `--endpoint "tokn" is no endpoint`},
		{[]string{"fault", "add", "--endpoint", "token", "--drop"}, "--client is required"},
		{[]string{"fault", "add", "--endpoint", "token", "--client", "c", "--error", "login_required"}, `--error "login_required" is not an error the token endpoint gives: use one of invalid_request`},
		{[]string{"fault", "add", "--endpoint", "token", "--client", "c", "--delay", "soon"}, `--delay "soon" is not a duration`},
		{[]string{"fault", "add", "--endpoint", "token", "--client", "c", "--drop", "--delay", "1s"}, "exactly one effect"},
		{[]string{"fault", "add", "--endpoint", "token", "--client", "c"}, "exactly one effect"},
		{[]string{"fault", "add", "--endpoint", "token", "--client", "c", "--drop", "--retry-after", "3"}, "--retry-after goes with --status"},
		{[]string{"fault", "clear", "abc"}, `"abc" is no fault id`},
		{[]string{"fault", "clear", "flt_a", "--client", "c"}, "not both"},
		{[]string{"fault", "remove"}, `unknown action "remove"`},
		{[]string{"clock", "advance", "ten minutes"}, `DURATION "ten minutes" is not a positive Go duration`},
		{[]string{"clock", "advance"}, "advance takes one argument"},
		{[]string{"clock", "set", "tomorrow"}, `TIME "tomorrow" is not an RFC 3339 time`},
		{[]string{"clock", "reset", "now"}, "reset takes no arguments"},
	} {
		code, out, errs := devCLI(nil, append(tc.args, down...)...)
		if code != exitUsage || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: want exit 2 and %q on stderr, got %d %q %q", tc.args, tc.want, code, out, errs)
		}
	}
}
