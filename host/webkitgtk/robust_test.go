//go:build linux && cgo

package webkitgtk

import (
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
)

// TestWebProcessEndDoesNotTakeHostDown ends the Miniapp's web process, once
// by killing it and once by hanging it until the host stops it; each time
// the host shows its "stopped" screen and Reload brings the Miniapp back.
func TestWebProcessEndDoesNotTakeHostDown(t *testing.T) {
	e := testEnv(t)
	app := triggerApp(t, map[string]string{
		"page": `<script>window.spin = function () { for (;;) {} };</script>`,
	}, e.Authorize)
	for _, c := range []struct {
		name  string
		end   func()
		wantD string
	}{
		{"killed", testWin.TerminateWebProcess, "stopped answering and was stopped"},
		{"hung", func() { testWin.Eval(`setTimeout(window.spin, 0)`) }, "stopped answering and was stopped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			load := mustURL(t, app.URL+"/page")
			rec := mount(t, host.Miniapp{Name: "robust", LoadURL: load, StartURL: load,
				Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{app.URL}}, Consent: e.Consent})
			c.end()
			ev := rec.Wait(t, "web process terminated", kind(host.EventWebProcessTerminated))
			if ev.Detail != c.wantD {
				t.Errorf("terminated: %q, want %q", ev.Detail, c.wantD)
			}
			shown := rec.Wait(t, "stopped screen", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "crashed" })
			press(t, "reload")
			rec.WaitAfter(t, shown, "reloaded page", func(e host.Event) bool { return e.Kind == host.EventLoadFinished && e.URL == load.String() })
			var ok bool
			evalJSON(t, `typeof window.spin === "function"`, &ok)
			if !ok {
				t.Error("the reloaded page does not run")
			}
		})
	}
}
