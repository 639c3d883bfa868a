//go:build linux && cgo

package webkitgtk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host/hosttest"

	"github.com/miniapp-host/miniapp-host/host"

	"github.com/miniapp-host/miniapp-host/resolver"
)

// openChildEnv makes the test binary run Open, as `miniapp-host open -v`
// does, with the OpenConfig JSON it holds: a process of its own with its
// own window, without building the command (which, with the reference
// server linked in, takes long on a busy machine).
const openChildEnv = "MINIAPP_HOST_OPEN_CONFIG"

// childConfig is the part of OpenConfig a child process gets.
type childConfig struct {
	Origin, ID, Dashboard, Service, Subject, HostClientID, HostSecret string
	Ephemeral                                                         bool
	// DevTools is --devtools; the child then prints, once the Miniapp's
	// first page has loaded, what WebKit's settings say of developer
	// extras in each view: "devtools miniapp=<bool> host=<bool>".
	DevTools bool
	// DataRoot is OpenConfig.DataRoot: with Ephemeral false, each
	// Miniapp's data folder is made under it.
	DataRoot string
	// Automation starts the automation channel and writes its URL and
	// token to the descriptor 3 (OpenConfig.AutomationOut).
	Automation bool
}

func runOpenChild(raw string) int {
	var c childConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg := host.OpenConfig{Origin: c.Origin, ID: c.ID, Dashboard: c.Dashboard, Service: c.Service, Subject: c.Subject,
		HostClientID: c.HostClientID, HostSecret: c.HostSecret, Ephemeral: c.Ephemeral, DevTools: c.DevTools, DataRoot: c.DataRoot}
	if c.Automation {
		cfg.Automation, cfg.AutomationOut = true, os.NewFile(3, "automation")
	}
	cfg.Log = os.Stderr
	var eng *engine
	newEngine := func(cfg host.EngineConfig, ev host.EngineEvents) (host.Engine, error) {
		e, err := New(cfg, ev)
		if err == nil {
			eng = e.(*engine)
		}
		return e, err
	}
	reported := false
	cfg.OnEvent = func(ev host.Event) {
		// The line `miniapp-host open -v` prints (host.Event.String).
		fmt.Fprintf(os.Stderr, "event %s\n", ev)
		if c.DevTools && !reported && ev.Kind == host.EventLoadFinished {
			// On the UI thread: load events come from the engine's
			// callbacks.
			reported = true
			fmt.Fprintf(os.Stderr, "devtools miniapp=%t host=%t\n", eng.developerExtras(host.ViewMiniapp), eng.developerExtras(host.ViewHost))
		}
	}
	cfg.OnResolved = func(app *resolver.Miniapp, err error) {
		var rej *resolver.Rejection
		switch {
		case err == nil:
			fmt.Printf("accepted: %s\n", app.Manifest.Name)
		case errors.As(err, &rej):
			fmt.Printf("rejected at stage %s\n", rej.Stage)
		default:
			fmt.Printf("error: %v\n", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := host.Open(ctx, newEngine, cfg); err != nil && !errors.Is(err, context.Canceled) {
		return 1
	}
	return 0
}

// openChild starts the test binary as an `open` process.
func openChild(tb testing.TB, cfg childConfig) *exec.Cmd {
	tb.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), openChildEnv+"="+string(raw), "WEBKIT_DISABLE_COMPOSITING_MODE=1")
	return cmd
}

// TestOpenCommand runs Open (what `miniapp-host open -v` runs) as its own
// process against the reference server: an accepted Miniapp loads its start_url; a rejected one
// is printed, shown in the window, and never loaded.
func TestOpenCommand(t *testing.T) {
	srv, app := hosttest.StartServer(t)
	u := srv.URLs()
	cases := []struct {
		name, id string
		until    string // the event line that ends the run
		stdout   string // printed by the resolver step
		never    string // an event line that must not appear
	}{
		{"accepted", "demo-public", "event load-finished " + app.Origin + "/", "accepted: Demo public Miniapp", ""},
		{"rejected", "not-this-id", "event host-shown rejection", "rejected at stage", "event navigation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// No Service: as `open` without --service, the host asks the
			// dashboard which authorization server to watch.
			cmd := openChild(t, childConfig{Origin: app.Origin, ID: c.id, Dashboard: u.Dashboard,
				Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret, Ephemeral: true})
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Signal(syscall.SIGTERM)
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var seen []string
			deadline := time.After(20 * time.Second)
		wait:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("open exited before %q:\n%s", c.until, strings.Join(seen, "\n"))
					}
					seen = append(seen, l)
					if strings.HasPrefix(l, c.until) {
						break wait
					}
				case <-deadline:
					t.Fatalf("timed out waiting for %q:\n%s", c.until, strings.Join(seen, "\n"))
				}
			}
			if c.never != "" {
				for _, l := range seen {
					if strings.HasPrefix(l, c.never) {
						t.Errorf("a rejected Miniapp was navigated to: %s", l)
					}
				}
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			if !strings.Contains(stdout.String(), c.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), c.stdout)
			}
		})
	}
}

// TestDevToolsFlag runs Open with DevTools (what `miniapp-host open
// --devtools` passes) in a process of its own: WebKit's settings of the
// Miniapp's view have developer extras on, those of the consent view off.
// Without the flag every view has them off (TestInspector, in this
// process's window).
func TestDevToolsFlag(t *testing.T) {
	srv, app := hosttest.StartServer(t)
	u := srv.URLs()
	cmd := openChild(t, childConfig{Origin: app.Origin, ID: "demo-public", Dashboard: u.Dashboard, Service: u.Issuer,
		Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret, Ephemeral: true, DevTools: true})
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(syscall.SIGTERM)
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		l := sc.Text()
		seen = append(seen, l)
		if got, ok := strings.CutPrefix(l, "devtools "); ok {
			if got != "miniapp=true host=false" {
				t.Errorf("with --devtools: %s; want miniapp=true host=false", got)
			}
			return
		}
	}
	t.Fatalf("open exited without reporting its settings:\n%s", strings.Join(seen, "\n"))
}
