//go:build linux && cgo

package webkitgtk

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/devapp"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/playground"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// TestDevWindow is `miniapp-host new` then `miniapp-host dev` in the
// window, as a developer uses them: the generated Miniapp, served from its
// folder, is registered and opened; its Sign in button goes through the
// host's bridge and native consent and shows the bank account chosen; a
// saved file reloads the view with the sign-in kept; a broken manifest
// registers nothing and shows its staged report in the window, and the
// fixed one opens again.
func TestDevWindow(t *testing.T) {
	dir := t.TempDir()
	if _, err := devapp.New(dir, devapp.NewConfig{ID: "my-own-app"}); err != nil {
		t.Fatal(err)
	}
	app, err := devapp.Start(devapp.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	pw := playground.NewWindow(testWin, "test")
	bus := bridge.NewBus(nil)
	testBus.forwardTo(t, bus)
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	p, err := playground.Start(sctx, playground.Config{Opener: pw, Bus: bus})
	scancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("playground: close: %v", err)
		}
	})
	rec := record(t)
	events := make(chan playground.DevEvent, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Dev(ctx, app, func(ev playground.DevEvent) { events <- ev })
	}()
	t.Cleanup(func() { cancel(); <-done })
	next := func(what string) playground.DevEvent {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev := <-events:
				if ev.Kind == playground.DevFailed {
					t.Fatalf("waiting for %s: dev failed: %v", what, ev.Err)
				}
				if ev.Kind == what {
					return ev
				}
			case <-timeout:
				t.Fatalf("no %s event from dev", what)
			}
		}
	}
	appHost := strings.TrimPrefix(app.Origin().String(), "http://")
	loaded := func(e host.Event) bool { return e.Kind == host.EventLoadFinished && strings.Contains(e.URL, appHost) }

	ev := next(playground.DevLaunched)
	if ev.Launch.Report.Outcome != resolver.OutcomeAccepted || !ev.Launch.Window.Opened {
		t.Fatalf("first launch: %s, window %+v", ev.Launch.Report.Outcome, ev.Launch.Window)
	}
	rec.Wait(t, "the Miniapp's page loaded", loaded)
	pollJS(t, `document.body.dataset.state`, "signed-out")

	// Its own Sign in button: the bridge, then the host's consent screen.
	var clicked bool
	evalJSON(t, `(document.getElementById("signin").click(), true)`, &clicked)
	rec.Wait(t, "the consent screen", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	press(t, "approve")
	pollJS(t, `document.body.dataset.state`, "signed-in")
	var accounts string
	evalJSON(t, `document.querySelector("#detail dd").textContent`, &accounts)
	if accounts == "" || accounts == "none chosen" {
		t.Errorf("the page shows accounts %q, want the one chosen on the consent screen", accounts)
	}

	// A saved file reloads the view; the page's sign-in (its session
	// storage) is kept, the page's scripts start again.
	evalJSON(t, `(window.beforeReload = true)`, &clicked)
	appendFile(t, filepath.Join(dir, "style.css"), "\nh1 { letter-spacing: .01em; }\n")
	ev = next(playground.DevReloaded)
	if len(ev.Changed) != 1 || ev.Changed[0] != "style.css" {
		t.Errorf("reloaded for %q, want style.css", ev.Changed)
	}
	pollJS(t, `window.beforeReload ? "not reloaded" : document.body.dataset.state`, "signed-in")

	// A broken manifest: the staged report, in the window.
	manifest := filepath.Join(dir, "miniapp.webmanifest")
	good, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	rec = record(t)
	writeFile(t, manifest, strings.Replace(string(good), `"name": "My own app"`, `"name": 5`, 1))
	// A rejected manifest registers nothing (docs/security.md): that step
	// fails, and the launch says why.
	select {
	case ev = <-events:
		if ev.Kind != playground.DevFailed || !strings.Contains(ev.Err.Error(), "nothing registered") {
			t.Fatalf("broken manifest: %s %v, want its registration refused first", ev.Kind, ev.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event from dev for the broken manifest")
	}
	ev = next(playground.DevLaunched)
	if ev.Launch.Report.Outcome != resolver.OutcomeRejected || ev.Launch.Report.Reasons[0].Pointer != "/name" {
		t.Fatalf("broken manifest: %s %+v, want rejected at /name", ev.Launch.Report.Outcome, ev.Launch.Report.Reasons)
	}
	rec.Wait(t, "the rejection shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "rejection" })
	if got := hostString(t, `document.body.textContent`); !strings.Contains(got, "/name") {
		t.Errorf("the window's rejection does not name /name: %q", got)
	}

	// Fixed: opened again.
	rec = record(t)
	writeFile(t, manifest, string(good))
	ev = next(playground.DevLaunched)
	if ev.Launch.Report.Outcome != resolver.OutcomeAccepted || !ev.Launch.Window.Opened {
		t.Fatalf("fixed manifest: %s, window %+v", ev.Launch.Report.Outcome, ev.Launch.Window)
	}
	rec.Wait(t, "the Miniapp's page loaded again", loaded)
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
