package playground

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/devapp"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// devRun runs p.Dev on app until the test ends and returns its events.
func devRun(t *testing.T, p *Playground, app *devapp.App) <-chan DevEvent {
	t.Helper()
	events := make(chan DevEvent, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Dev(ctx, app, func(ev DevEvent) { events <- ev })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return events
}

// nextDev returns the next event of kind, failing on a failed step.
func nextDev(t *testing.T, events <-chan DevEvent, kind string) DevEvent {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case ev := <-events:
			if ev.Kind == DevFailed && kind != DevFailed {
				t.Fatalf("waiting for %s: %v", kind, ev.Err)
			}
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event", kind)
		}
	}
}

// TestDevOfServer: `dev URL`, a confidential Miniapp served by a server
// the developer runs (here, a folder behind httptest), is registered as a
// confidential client with a secret given once and kept while the manifest
// changes; a client id of another project is refused with the project
// named; the registration is what the dashboard tells every host.
func TestDevOfServer(t *testing.T) {
	p := start(t, Config{})
	dir := t.TempDir()
	manifest := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "miniapp.webmanifest"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest(`{"id":"shop","name":"Shop","start_url":"/","oauth":{"client_id":"shop-web","auth_url":"/login"}}`)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	srv := httptest.NewServer(devapp.Files(root))
	t.Cleanup(srv.Close)
	app, err := devapp.Start(devapp.Config{URL: srv.URL + "/any/page"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	if app.Changes() != nil || app.Origin().String() != srv.URL {
		t.Fatalf("a dev server's origin %s (want %s), changes %v", app.Origin(), srv.URL, app.Changes())
	}
	events := devRun(t, p, app)
	reg := nextDev(t, events, DevRegistered)
	if reg.Client.Type != "confidential" || reg.Client.ClientSecret == "" || reg.Client.ClientID != "shop-web" {
		t.Fatalf("registered %+v, want the confidential shop-web with a new secret", reg.Client)
	}
	if l := nextDev(t, events, DevLaunched); l.Launch.Report.Outcome != resolver.OutcomeAccepted || l.Launch.Report.Miniapp.AuthURL != srv.URL+"/login" {
		t.Fatalf("launch: %s %+v", l.Launch.Report.Outcome, l.Launch.Report.Reasons)
	}
	var cfg resolver.ClientConfig
	getJSONInto(t, p.Services().Dashboard+"/api/oauth/clients/shop-web", &cfg)
	if cfg.ClientType != "confidential" || len(cfg.AllowedOrigins) != 1 || cfg.AllowedOrigins[0] != srv.URL ||
		len(cfg.RedirectURIs) != 2 || cfg.RedirectURIs[0] != srv.URL+"/" || cfg.RedirectURIs[1] != srv.URL+"/callback" {
		t.Errorf("the dashboard's client configuration %+v", cfg)
	}

	// Registering again (the manifest changed) keeps the secret the
	// backend was given.
	again, err := p.RegisterDevMiniapp(context.Background(), app, mustManifest(t, app))
	if err != nil || again.ClientSecret != "" || again.Type != "confidential" {
		t.Errorf("registered again: %+v (%v), want the same confidential client, no new secret", again, err)
	}

	// A client of the demos cannot be taken over.
	manifest(`{"id":"shop","name":"Shop","start_url":"/","oauth":{"client_id":"demo-public"}}`)
	_, err = p.RegisterDevMiniapp(context.Background(), app, mustManifest(t, app))
	var taken *authserver.ClientTakenError
	if !errors.As(err, &taken) || taken.ProjectID != "prj_demo" {
		t.Errorf("registering demo-public: %v, want it refused as prj_demo's", err)
	}
}

func mustManifest(t *testing.T, app *devapp.App) devapp.Manifest {
	t.Helper()
	m, err := app.ReadManifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func getJSONInto(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}
