//go:build linux && cgo

package webkitgtk

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// SandboxEnv chooses whether the engine runs WebKit's web processes in
// WebKitGTK's bubblewrap sandbox (docs/webkitgtk.md, "The web process
// sandbox"; docs/security.md §4):
//
//	unset or "auto"  on where bubblewrap works here, else off, said once on stderr
//	"on"             on; the window is not made where bubblewrap does not work
//	"off"            off, said once on stderr
const SandboxEnv = "MINIAPP_HOST_WEBKIT_SANDBOX"

// WebKitGTK runs these two by their absolute paths (fixed when it is
// built: Debian's bubblewrap and xdg-dbus-proxy packages put them
// there), not through PATH.
const (
	bwrapPath     = "/usr/bin/bwrap"
	dbusProxyPath = "/usr/bin/xdg-dbus-proxy"
)

// webkitNoSandboxEnv is WebKitGTK's own switch: set, it runs every web
// process unsandboxed whatever the context asks.
const webkitNoSandboxEnv = "WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS"

// webkitForceSandboxEnv is WebKitGTK's switch that sandboxes every web
// process of the process, the Web Inspector's included: that one is on a
// web context of WebKit's own, which webkit_web_context_set_sandbox_enabled
// never reaches (measured: without it the inspector's web process runs in
// the host's namespaces).
const webkitForceSandboxEnv = "WEBKIT_FORCE_SANDBOX"

// applySandbox makes WebKit's process-wide switch follow d, before any web
// process starts: set with the sandbox on, so that the inspector's web
// process is sandboxed too; unset with it off, so that a bwrap that cannot
// run is never started.
func applySandbox(d sandboxDecision) error {
	if d.on {
		return os.Setenv(webkitForceSandboxEnv, "1")
	}
	return os.Unsetenv(webkitForceSandboxEnv)
}

// sandboxDecision is whether the web processes are sandboxed, and why not.
type sandboxDecision struct {
	on  bool
	why string // when off: the reason, for stderr
}

// decideSandbox reads SandboxEnv and probes bubblewrap. Where a sandboxed
// context's bwrap cannot run, WebKitGTK ends the whole process at its
// first web process (measured: a g_error, "readPIDFromPeer: Unexpected
// short read from PID socket"), so the sandbox is asked for only where a
// bwrap with the namespaces WebKit asks for has just run.
func decideSandbox() (sandboxDecision, error) {
	mode := os.Getenv(SandboxEnv)
	switch mode {
	case "", "auto", "on":
	case "off":
		return sandboxDecision{why: SandboxEnv + "=off"}, nil
	default:
		return sandboxDecision{}, fmt.Errorf("webkitgtk: %s=%q: use on, off or auto (docs/webkitgtk.md, \"The web process sandbox\")", SandboxEnv, mode)
	}
	why := ""
	if os.Getenv(webkitNoSandboxEnv) != "" {
		why = webkitNoSandboxEnv + " is set"
	} else {
		why = probeBubblewrap()
	}
	if why == "" {
		return sandboxDecision{on: true}, nil
	}
	if mode == "on" {
		return sandboxDecision{}, fmt.Errorf("webkitgtk: %s=on but the web process sandbox cannot run here: %s", SandboxEnv, why)
	}
	return sandboxDecision{why: why}, nil
}

// probeBubblewrap runs bwrap with the namespaces WebKitGTK asks for its
// web processes (pid, network, IPC, UTS; a user namespace too when not
// root) and returns why it cannot, or "" when it can.
func probeBubblewrap() string {
	for _, p := range []struct{ path, pkg string }{{bwrapPath, "bubblewrap"}, {dbusProxyPath, "xdg-dbus-proxy"}} {
		if _, err := os.Stat(p.path); err != nil {
			return fmt.Sprintf("%s is missing (Debian package %s; scripts/deps.sh installs it)", p.path, p.pkg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrapPath, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
		"--", bwrapPath, "--version")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Sprintf("%s cannot make the sandbox's namespaces here: %s", bwrapPath, msg)
	}
	return ""
}
