package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
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

// TestHelp: help a user asks for goes to standard output with exit 0, so
// that `miniapp-host --help | less` works; the texts are golden.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		code, out, stderr := runCLI(t, "", args...)
		if code != exitOK || stderr != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 0 and nothing on stderr", args, code, stderr)
		}
		golden(t, "help/miniapp-host.txt", out)
	}
	cmds := commands()
	for name := range cmds {
		if name == "help" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			code, out, stderr := runCLI(t, "", name, "-h")
			if code != exitOK || stderr != "" || !strings.HasPrefix(out, "usage: miniapp-host "+name) {
				t.Fatalf("%s -h: exit %d, stdout %q, stderr %q", name, code, out, stderr)
			}
			golden(t, "help/"+name+".txt", out)
			// -1 stands for "not given" in flags of descriptors and counts;
			// a user reading the help cannot pass it.
			if strings.Contains(out, "(default -1)") {
				t.Errorf("%s -h shows a default of -1", name)
			}
			// help COMMAND and --help print the same.
			for _, args := range [][]string{{"help", name}, {name, "--help"}} {
				if code, again, _ := runCLI(t, "", args...); code != exitOK || again != out {
					t.Errorf("%v: exit %d, output differs from %s -h:\n%s", args, code, name, again)
				}
			}
		})
	}
	for _, args := range [][]string{{"project", "create", "-h"}, {"credential", "remove", "--help"}, {"catalog", "check", "-h"}, {"review", "approve", "x", "-h"}} {
		code, out, stderr := runCLI(t, "", args...)
		if code != exitOK || stderr != "" || !strings.HasPrefix(out, "usage: miniapp-host "+args[0]+" "+args[1]) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
}

// TestUsageErrors: a usage error goes to standard error with exit 2, says
// what is wrong, and leaves standard output empty.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: miniapp-host <command>"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"resolve", "--frob"}, "flag provided but not defined: -frob"},
		{[]string{"serve", "--addr"}, "flag needs an argument: -addr"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"project"}, "an action is required"},
		{[]string{"project", "delete"}, `unknown action "delete"`},
		{[]string{"credential", "remove", "--project", "p"}, "want 1 argument(s), got 0"},
		{[]string{"version", "extra"}, "takes no arguments"},
		{[]string{"catalog", "check", "a.json", "--frob"}, "flag provided but not defined: -frob"},
	} {
		code, out, stderr := runCLI(t, "", tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q on stderr", tc.args, code, out, stderr, tc.want)
		}
	}
}

// TestVersion: the version names the build; the text for each kind of build
// information is golden.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, stderr := runCLI(t, "", args...)
		if code != exitOK || stderr != "" || !strings.HasPrefix(out, "miniapp-host ") || !strings.Contains(out, "built with go") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	var b strings.Builder
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
	}{
		{"released module", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.4.0"}}},
		{"pseudo-version", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261124214749-18956ab1c2d3"}}},
		{"clean checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs", "git", "vcs.revision", "18956ab1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7", "vcs.time", "2026-11-24T21:47:49Z", "vcs.modified", "false")}},
		{"dirty checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "18956ab1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7", "vcs.time", "2026-11-24T21:47:49Z", "vcs.modified", "true")}},
		{"no VCS", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}},
	} {
		fmt.Fprintf(&b, "# %s\n%s", tc.name, versionText(tc.bi, true))
	}
	fmt.Fprintf(&b, "# no build information\n%s", versionText(nil, false))
	golden(t, "version.txt", b.String())
}
