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

// TestFixtureCommands drives fixture apply and reset against an
// in-process development server: the example file applies (the operator
// key from $MINIAPP_HOST_OPERATOR_KEY), a refused file is printed with
// its field and message, a reset says what it forgot, and a server on a
// public issuer is said to have no development controls.
func TestFixtureCommands(t *testing.T) {
	const op = "op-key-for-the-fixture-tests"
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "a.db"), OperatorKey: op})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := srv.URLs().Dashboard
	example := filepath.Join("..", "..", "examples", "fixtures", "qa.json")

	var out, errs bytes.Buffer
	code := run(context.Background(), env{args: []string{"fixture", "apply", example, "--dashboard", d}, stdin: strings.NewReader(""),
		stdout: &out, stderr: &errs, getenv: func(k string) string {
			if k == operatorKeyEnv {
				return op
			}
			return ""
		}})
	if code != exitOK || !strings.HasPrefix(out.String(), "applied "+example+": 2 subject(s), 1 company(ies), 3 membership(s), 4 account(s), 2 consent(s), 2 grant(s)") ||
		!strings.Contains(out.String(), "grant 0193a7c0-0000-7000-8000-00000000a002 (revoked): access token ") {
		t.Fatalf("fixture apply with the key from the environment: %d\n%s%s", code, out.String(), errs.String())
	}

	code, stdout, stderr := cli(t, `{"version": 1}`, "fixture", "apply", "-", "--dashboard", d, "--key", op, "--json")
	var sum map[string]any
	if code != exitOK || json.Unmarshal([]byte(stdout), &sum) != nil || sum["grants"] == nil {
		t.Fatalf("fixture apply - --json: %d %s %s", code, stdout, stderr)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version": 1, "subjects": [{"id": "sub_qa_x", "profile": {"name": "X"}, "colour": "red"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, "", "fixture", "apply", bad, "--dashboard", d, "--key", op)
	if code != exitRejected || !strings.Contains(stderr, `(400 invalid_body) at /subjects/0/colour: unknown field "colour"`) {
		t.Fatalf("a refused file: want exit 1 naming /subjects/0/colour, got %d: %s", code, stderr)
	}
	code, stdout, stderr = cli(t, "", "fixture", "reset", "--subject", "sub_qa_dana", "--dashboard", d, "--key", op)
	if code != exitOK || !strings.Contains(stdout, "forgot 1 remembered consent(s) and revoked 1 grant(s) of subject sub_qa_dana") {
		t.Fatalf("fixture reset --subject: %d %s %s", code, stdout, stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fixture", "reset", "--dashboard", d, "--key", op}, exitUsage, "--subject S, --client ID, or both"},
		{[]string{"fixture", "reset", "--client", "no-such-client", "--dashboard", d, "--key", op}, exitRejected, "at /client_id: client \"no-such-client\" is not registered"},
		{[]string{"fixture", "reset", "--subject", "sub_qa_dana", "--dashboard", d}, exitRejected, "the operator key"},
		{[]string{"fixture", "apply", "--dashboard", d, "--key", op}, exitUsage, "want 1 argument"},
		{[]string{"fixture", "undo"}, exitUsage, "unknown action"},
	} {
		if code, _, stderr := cli(t, "", tc.args...); code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: want exit %d with %q, got %d: %s", tc.args, tc.code, tc.want, code, stderr)
		}
	}

	pub, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "p.db"), OperatorKey: op, Issuer: "https://id.example"})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	code, _, stderr = cli(t, "", "fixture", "reset", "--subject", "sub_ana", "--dashboard", pub.URLs().Dashboard, "--key", op)
	if code != exitRejected || !strings.Contains(stderr, "this server has no development controls: its issuer is not on loopback") {
		t.Fatalf("a public issuer: want the development_only message, got %d: %s", code, stderr)
	}
}
