package main

import (
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/host/webkitgtk"
)

// TestOpenUsage covers what `open` decides before any window: its flags,
// and the build without a webview. The window itself is tested in package
// host (TestOpenCommand runs the same host.Open in a process of its own).
func TestOpenUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no origin", []string{"open", "--id", "x"}, "--origin and --id are required"},
		{"no id", []string{"open", "--origin", "http://127.0.0.1:8701"}, "--origin and --id are required"},
		{"extra argument", []string{"open", "--origin", "http://127.0.0.1:8701", "--id", "x", "more"}, `unexpected argument "more"`},
		{"unknown flag", []string{"open", "--nope"}, "flag provided but not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, c.want)
			}
		})
	}
	if !webkitgtk.Available {
		code, _, stderr := runCLI(t, "", "open", "--origin", "http://127.0.0.1:8701", "--id", "x")
		if code != exitUsage || !strings.Contains(stderr, "this build has no webview") {
			t.Errorf("no-webview build: exit %d, stderr %q", code, stderr)
		}
	}
}
