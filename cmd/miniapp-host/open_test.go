package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/host"
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
		// The example names a demo by the port the playground serves it
		// on (docs/playground.md): demo-public on 8701.
		{"no origin", []string{"open", "--id", "x"}, "--origin and --id are required, e.g. --origin http://127.0.0.1:8701 --id demo-public"},
		{"no id", []string{"open", "--origin", "http://127.0.0.1:8701"}, "--origin and --id are required"},
		{"extra argument", []string{"open", "--origin", "http://127.0.0.1:8701", "--id", "x", "more"}, `unexpected argument "more"`},
		{"unknown flag", []string{"open", "--nope"}, "flag provided but not defined"},
		{"descriptor not a number", []string{"open", "--secret-fd", "three"}, `"three" is not a file descriptor number`},
		{"negative descriptor", []string{"open", "--automation-fd", "-1"}, `"-1" is not a file descriptor number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, c.want)
			}
		})
	}
	// The playground serves the demos on the ports its example names.
	if nextPort(defaultLauncherAddr, 1) != demoapps.PublicAddr || nextPort(defaultLauncherAddr, 2) != demoapps.ConfidentialAddr {
		t.Errorf("the playground serves the demos on %s and %s; demoapps names %s and %s", nextPort(defaultLauncherAddr, 1),
			nextPort(defaultLauncherAddr, 2), demoapps.PublicAddr, demoapps.ConfidentialAddr)
	}
	if !webkitgtk.Available {
		code, _, stderr := runCLI(t, "", "open", "--origin", "http://127.0.0.1:8701", "--id", "x")
		if code != exitUsage || !strings.Contains(stderr, "this build has no webview") {
			t.Errorf("no-webview build: exit %d, stderr %q", code, stderr)
		}
		return
	}
	// --webdriver outside WebKitWebDriver would open a window no session
	// ever drives: refused, naming what starts it (docs/webdriver.md).
	t.Setenv("WEBKIT_INSPECTOR_SERVER", "")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"webdriver without a driver", []string{"--webdriver"}, "WEBKIT_INSPECTOR_SERVER is not set"},
		{"automation file without the channel", []string{"--automation-file", "f.json"}, "--automation-file needs --automation (or --webdriver)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"open", "--origin", "http://127.0.0.1:8701", "--id", "x"}, c.args...)
			code, _, stderr := runCLI(t, "", args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, c.want)
			}
		})
	}
}

// noDisplayChildEnv makes the test binary run the command line it holds
// (arguments separated by newlines) and exit with its code.
const noDisplayChildEnv = "MINIAPP_HOST_TEST_COMMAND"

// TestNoDisplay: without a display, `open` and `playground` say so, name
// xvfb-run and --no-window, and exit 2 before any window exists (they used
// to crash in the engine). Each runs in a process of its own whose
// environment has no DISPLAY or WAYLAND_DISPLAY.
func TestNoDisplay(t *testing.T) {
	if !webkitgtk.Available {
		t.Log("this build has no engine: TestOpenUsage covers its message")
		return
	}
	for _, args := range [][]string{
		{"open", "--origin", "http://127.0.0.1:1", "--id", "x", "--ephemeral"},
		{"playground", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestNoDisplayChild$")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "DISPLAY=") && !strings.HasPrefix(kv, "WAYLAND_DISPLAY=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, noDisplayChildEnv+"="+strings.Join(args, "\n"), "XDG_DATA_HOME="+t.TempDir())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
				t.Fatalf("%s without a display: %v, want exit %d; stderr:\n%s", args[0], err, exitUsage, stderr.String())
			}
			for _, want := range []string{"no display", "xvfb-run", "--no-window"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("%s's message lacks %q:\n%s", args[0], want, stderr.String())
				}
			}
		})
	}
}

// TestNoDisplayChild is the child of TestNoDisplay; in a normal run it has
// nothing to do.
func TestNoDisplayChild(t *testing.T) {
	raw := os.Getenv(noDisplayChildEnv)
	if raw == "" {
		return
	}
	var stdout strings.Builder
	code := run(context.Background(), env{args: strings.Split(raw, "\n"), stdout: &stdout, stderr: os.Stderr})
	os.Exit(code)
}

// TestVerboseConsole is what `open -v` and `playground -v` print of a
// Miniapp's console: one line per message with its level, text, the
// caller's location and, for a subframe, the frame, a stack indented
// below; nothing without -v.
func TestVerboseConsole(t *testing.T) {
	events := []host.Event{
		{Kind: host.EventConsole, Console: &host.ConsoleMessage{Type: host.ConsoleCall, Level: host.ConsoleError, Message: "main says 42",
			Source: "http://127.0.0.1:8701/app.js:2:16", Frame: "http://127.0.0.1:8701/", MainFrame: true}},
		{Kind: host.EventConsole, Console: &host.ConsoleMessage{Type: host.ConsoleCall, Level: host.ConsoleLog, Message: "frame says",
			Source: "http://127.0.0.1:8702/frame:2:9", Frame: "http://127.0.0.1:8702/frame"}},
		{Kind: host.EventConsole, Console: &host.ConsoleMessage{Type: host.ConsoleUncaught, Level: host.ConsoleError,
			Message: "TypeError: thrown\nglobal code@http://127.0.0.1:8701/app.js:7:40", Source: "http://127.0.0.1:8701/app.js:7:40", MainFrame: true}},
		{Kind: host.EventConsole, Console: &host.ConsoleMessage{Type: host.ConsoleDropped, Level: host.ConsoleWarn, MainFrame: true,
			Message: "4900 console messages dropped (4900 over the limit of 100 a second)", Dropped: 4900}},
	}
	want := `event console error: main says 42 (http://127.0.0.1:8701/app.js:2:16)
event console log: frame says (http://127.0.0.1:8702/frame:2:9) [frame http://127.0.0.1:8702/frame]
event console error uncaught: TypeError: thrown (http://127.0.0.1:8701/app.js:7:40)
    global code@http://127.0.0.1:8701/app.js:7:40
event console warn: 4900 console messages dropped (4900 over the limit of 100 a second)
`
	for _, verbose := range []bool{true, false} {
		var stderr strings.Builder
		show := windowEvents(env{stderr: &stderr}, verbose)
		for _, ev := range events {
			show(ev)
		}
		switch {
		case verbose && stderr.String() != want:
			t.Errorf("-v printed\n%s\nwant\n%s", stderr.String(), want)
		case !verbose && stderr.String() != "":
			t.Errorf("without -v printed %q", stderr.String())
		}
	}
}
