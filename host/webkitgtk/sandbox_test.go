//go:build linux && cgo

package webkitgtk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/playground"
)

// webProcesses are the WebKitWebProcess processes below this process
// (sandboxed, each is a child of the bwrap that started it; else a child
// of ours). The kernel keeps 15 bytes of a command's name.
func webProcesses() []int {
	var web []int
	for _, p := range descendants(os.Getpid()) {
		if p.name == "WebKitWebProces" {
			web = append(web, p.pid)
		}
	}
	return web
}

func nsLink(t *testing.T, pid int, ns string) string {
	t.Helper()
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestWebProcessSandbox mounts a Miniapp, opens its Web Inspector, and
// looks at every web process of the test process (the Miniapp's, the
// host's views', the inspector's) as the kernel shows it. With the sandbox on (decideSandbox: bubblewrap
// works here) the page still loads, and its web process is in mount, pid,
// network and IPC namespaces of its own: a file the host can read (in the
// test's temporary folder) is not in its file system, no process of the
// host is in its /proc (so no host environment to read there), and
// the host's file system is read-only where it is shown at all. With the
// sandbox off (MINIAPP_HOST_WEBKIT_SANDBOX=off) the web process shares the
// host's namespaces and reads the file: what docs/security.md §4 says of
// each.
func TestWebProcessSandbox(t *testing.T) {
	e := testEnv(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>sandbox</title><p>sandbox`)
	}))
	defer page.Close()
	secret := filepath.Join(t.TempDir(), "host-only")
	if err := os.WriteFile(secret, []byte("the host's"), 0o600); err != nil {
		t.Fatal(err)
	}
	app := host.Miniapp{Name: "sandbox", LoadURL: mustURL(t, page.URL+"/"), Consent: e.Consent,
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{page.URL}}}
	rec := mount(t, app)
	pollJS(t, `document.title`, "sandbox")
	// The Web Inspector's web process is on a web context of WebKit's own
	// (applySandbox): open it, so that its process is among those looked at.
	before := len(webProcesses())
	t.Cleanup(func() { onUI(func() { testEng.closeInspector(false) }) })
	var ctl bridge.DevToolsController = playground.NewWindow(testWin, "test")
	if err := ctl.ShowDevTools(t.Context(), bridge.ViewCommand{}); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, "the inspector shown", kind(host.EventDevTools))
	pollFor(t, "the inspector's page and web process", func() bool {
		var open bool
		onUI(func() { open = testEng.inspectorOpen() })
		return open && len(webProcesses()) > before
	})

	web := webProcesses()
	if len(web) == 0 {
		t.Fatal("no WebKitWebProcess descends from the test process")
	}
	self := os.Getpid()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range web {
		root := fmt.Sprintf("/proc/%d/root", pid)
		_, statErr := os.Stat(root + secret)
		if !testEng.sandbox {
			for _, ns := range []string{"mnt", "pid"} {
				if a, b := nsLink(t, pid, ns), nsLink(t, self, ns); a != b {
					t.Errorf("sandbox off: web process %d is in %s, the host in %s", pid, a, b)
				}
			}
			if statErr != nil {
				t.Errorf("sandbox off: web process %d does not see %s: %v", pid, secret, statErr)
			}
			continue
		}
		for _, ns := range []string{"mnt", "pid", "net"} {
			if a, b := nsLink(t, pid, ns), nsLink(t, self, ns); a == b {
				t.Errorf("web process %d shares the host's %s namespace %s", pid, ns, a)
			}
		}
		if !errors.Is(statErr, fs.ErrNotExist) {
			t.Errorf("web process %d sees %s (a file of the host's temporary folder): %v", pid, secret, statErr)
		}
		// Its /proc is its pid namespace's: no process runs the test
		// binary there, so no host environment is there to read.
		procs, err := os.ReadDir(root + "/proc")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range procs {
			if _, err := strconv.Atoi(p.Name()); err != nil {
				continue
			}
			n++
			if l, err := os.Readlink(root + "/proc/" + p.Name() + "/exe"); err == nil && l == exe {
				t.Errorf("web process %d's /proc shows the host (%s)", pid, p.Name())
			}
		}
		if n == 0 || n > 8 {
			t.Errorf("web process %d's /proc lists %d processes; want its own few", pid, n)
		}
		if os.Getenv("SBX_DEBUG") != "" {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			mi, _ := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			t.Logf("ENV %q\nMOUNTS\n%s\nSTATUS\n%s", env, mi, st)
		}
		t.Logf("web process %d: %d processes in its /proc", pid, n)
	}
}

// TestSandboxSwitch: MINIAPP_HOST_WEBKIT_SANDBOX off turns the sandbox
// off and says why; WebKit's own switch set does too; a value other than
// on, off or auto is refused naming the variable and its values.
func TestSandboxSwitch(t *testing.T) {
	t.Setenv(SandboxEnv, "off")
	if d, err := decideSandbox(); err != nil || d.on || !strings.Contains(d.why, SandboxEnv+"=off") {
		t.Errorf("off: %+v, %v", d, err)
	}
	t.Setenv(SandboxEnv, "yes")
	if _, err := decideSandbox(); err == nil || !strings.Contains(err.Error(), SandboxEnv) || !strings.Contains(err.Error(), "on, off or auto") {
		t.Errorf("yes: %v; want a refusal naming %s and its values", err, SandboxEnv)
	}
	t.Setenv(SandboxEnv, "")
	t.Setenv(webkitNoSandboxEnv, "1")
	if d, err := decideSandbox(); err != nil || d.on || !strings.Contains(d.why, webkitNoSandboxEnv) {
		t.Errorf("%s set: %+v, %v", webkitNoSandboxEnv, d, err)
	}
	t.Setenv(SandboxEnv, "on")
	if _, err := decideSandbox(); err == nil || !strings.Contains(err.Error(), webkitNoSandboxEnv) {
		t.Errorf("on with %s set: %v; want a refusal naming it", webkitNoSandboxEnv, err)
	}
}

// TestSandboxOffWhereBwrapCannotRun runs TestWebProcessSandbox again in a
// copy of this test binary to which bubblewrap can make no namespaces
// (itself in a bwrap user namespace that allows no more): WebKitGTK would
// end the whole process at its first web process there, so the engine
// must find that out first. The copy says once on stderr that the sandbox
// is off and why (bwrap's own message), its pages load, and its web
// process is in the host's namespaces.
func TestSandboxOffWhereBwrapCannotRun(t *testing.T) {
	if !testEng.sandbox {
		t.Fatalf("the sandbox is off in this test process, so %s cannot make the jail the child runs in: "+
			"install bubblewrap (scripts/deps.sh does) on a kernel that allows user namespaces, and leave %s unset", bwrapPath, SandboxEnv)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrapPath, "--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns",
		"--dev-bind", "/", "/", "--", exe, "-test.count=1", "-test.run", "^TestWebProcessSandbox$", "-test.v")
	cmd.Env = append(os.Environ(), SandboxEnv+"=auto")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the child failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	const off = "miniapp-host: WebKit's web processes run without their sandbox: " + bwrapPath + " cannot make the sandbox's namespaces here: bwrap: "
	if n := strings.Count(stderr.String(), off); n != 1 {
		t.Errorf("the child said %d times that the sandbox is off (want once, naming bwrap's error):\n%s", n, stderr.String())
	}
	if !strings.Contains(stdout.String(), "--- PASS: TestWebProcessSandbox") {
		t.Errorf("TestWebProcessSandbox did not pass in the child:\n%s", stdout.String())
	}
}
