package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// TestOpenOrchestration is what `miniapp-host open` does, on the fake
// engine: discovery, resolution and the content filter, then an accepted
// Miniapp loads its start_url, and a rejected one is shown why and loads
// nothing.
func TestOpenOrchestration(t *testing.T) {
	srv, app := hosttest.StartServer(t)
	u := srv.URLs()
	for _, c := range []struct {
		name, id string
		rejected bool
	}{{"accepted", "demo-public", false}, {"rejected", "not-this-id", true}} {
		t.Run(c.name, func(t *testing.T) {
			var eng *hosttest.Engine
			rec := hosttest.NewRecorder()
			resolved := make(chan error, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- host.Open(ctx, hosttest.Factory(&eng), host.OpenConfig{Origin: app.Origin, ID: c.id, Dashboard: u.Dashboard,
					Service: u.Issuer, Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret,
					Ephemeral: true, OnEvent: rec.Add, OnResolved: func(_ *resolver.Miniapp, err error) { resolved <- err }})
			}()
			err := <-resolved
			if c.rejected {
				var rej *resolver.Rejection
				if !errors.As(err, &rej) {
					t.Fatalf("resolution: %v, want a rejection", err)
				}
				rec.Wait(t, "the event", shown("rejection"))
			} else {
				if err != nil {
					t.Fatalf("resolution: %v", err)
				}
				rec.Wait(t, "the event", func(e host.Event) bool {
					return e.Kind == host.EventLoadFinished && strings.HasPrefix(e.URL, app.Origin)
				})
				if !strings.Contains(eng.Filter(), "authorize") {
					t.Errorf("no content filter for the authorization endpoint: %s", eng.Filter())
				}
			}
			cancel()
			err = <-done
			if loads := eng.Loads(host.ViewMiniapp); c.rejected && len(loads) > 0 {
				t.Errorf("a rejected Miniapp loaded %v", loads)
			}
			var rej *resolver.Rejection
			if c.rejected != errors.As(err, &rej) {
				t.Errorf("Open returned %v", err)
			}
		})
	}
}
