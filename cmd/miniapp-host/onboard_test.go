package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// cli runs a command in-process and returns its exit code and output.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(context.Background(), env{args: args, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errs})
	return code, out.String(), errs.String()
}

// TestDashboardCommands drives onboarding and review through the CLI
// against an in-process server: a project with a credential declares a
// Resource Server, which only the operator credential approves.
func TestDashboardCommands(t *testing.T) {
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "a.db"), OperatorKey: "op-key-for-tests"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := srv.URLs().Dashboard
	var prj struct{ ID, Key string }
	code, out, errs := cli(t, "", "project", "create", "--dashboard", d, "Payslips Inc.")
	if code != exitOK || json.Unmarshal([]byte(out), &prj) != nil || prj.Key == "" {
		t.Fatalf("project create: %d %s %s", code, out, errs)
	}
	code, out, errs = cli(t, "", "credential", "add", "--dashboard", d, "--key", prj.Key, "--project", prj.ID,
		"--type", "confidential", "--redirect-uri", "https://payslips.example/cb", "--origin", "https://payslips.example")
	if code != exitOK || !strings.Contains(out, `"client_secret"`) {
		t.Fatalf("credential add: %d %s %s", code, out, errs)
	}
	t.Setenv(keyEnv, prj.Key) // the key from the environment
	if code, out, errs = cli(t, "", "credential", "list", "--dashboard", d, "--project", prj.ID); code != exitOK || strings.Contains(out, "client_secret") {
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
	code, out, errs = cli(t, "", "rs", "declare", "--dashboard", d, "--project", prj.ID, file)
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
		{"reject needs a reason", []string{"review", "reject", sub.ID, "--dashboard", d, "--key", "op-key-for-tests"}, exitRejected, "/reason"},
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
	code, out, errs = cli(t, "", "review", "approve", sub.ID, "--reason", "reviewed", "--dashboard", d, "--key", "op-key-for-tests")
	if code != exitOK || json.Unmarshal([]byte(out), &sub) != nil || !strings.HasPrefix(sub.AssignedID, "rs_") {
		t.Fatalf("review approve: %d %s %s", code, out, errs)
	}
	if code, out, _ = cli(t, "", "rs", "list", "--dashboard", d); code != exitOK || !strings.Contains(out, sub.AssignedID) {
		t.Fatalf("rs list: %d %s", code, out)
	}
}
