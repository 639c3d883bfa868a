package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

// runCLI runs the command line in-process and returns its exit code, standard
// output and standard error.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), env{args: args, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb})
	return code, out.String(), errb.String()
}

// golden compares got with the file at path (relative to the repository's
// testdata folder), or rewrites the file with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	path = filepath.Join("..", "..", "testdata", path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./cmd/miniapp-host -update' to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestUsage(t *testing.T) {
	code, _, stderr := runCLI(t, "")
	if code != exitUsage || !strings.Contains(stderr, "usage: miniapp-host") {
		t.Errorf("no arguments: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "frobnicate")
	if code != exitUsage || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, stderr)
	}
}
