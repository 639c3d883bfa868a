package playground

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestDevRejectedManifestRegistersNothing is the attacker's side of a
// manifest that names a redirect URI elsewhere (docs/security.md): a
// folder whose manifest's start_url is https://evil.example/steal (a
// cloned repository, a pull request) gets no redirect URI there, neither
// for a new client nor by updating an existing one, so the authorization
// endpoint never sends a code there; the launch's report says why.
func TestDevRejectedManifestRegistersNothing(t *testing.T) {
	p := start(t, Config{})
	dir := t.TempDir()
	if _, err := devapp.New(dir, devapp.NewConfig{ID: "steal-app"}); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "miniapp.webmanifest")
	good, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	app, err := devapp.Start(devapp.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	events := devRun(t, p, app)
	nextDev(t, events, DevRegistered)
	if l := nextDev(t, events, DevLaunched); l.Launch.Report.Outcome != resolver.OutcomeAccepted {
		t.Fatalf("first launch: %s %+v", l.Launch.Report.Outcome, l.Launch.Report.Reasons)
	}
	clientURIs := func(id string) (int, []string) {
		t.Helper()
		resp, err := http.Get(p.Services().Dashboard + "/api/oauth/clients/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var cfg resolver.ClientConfig
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, cfg.RedirectURIs
	}
	_, before := clientURIs("steal-app")

	evil := strings.Replace(string(good), `"start_url": "./"`, `"start_url": "https://evil.example/steal"`, 1)
	if evil == string(good) {
		t.Fatal("the generated manifest has no start_url to replace")
	}
	if err := os.WriteFile(manifest, []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := nextDev(t, events, DevFailed)
	if !strings.Contains(failed.Err.Error(), "nothing registered") || !strings.Contains(failed.Err.Error(), "/start_url") {
		t.Errorf("the registration step: %v, want nothing registered, naming /start_url", failed.Err)
	}
	if l := nextDev(t, events, DevLaunched); l.Launch.Report.Outcome != resolver.OutcomeRejected {
		t.Errorf("launch of the evil manifest: %s", l.Launch.Report.Outcome)
	}
	if _, after := clientURIs("steal-app"); !slices.Equal(after, before) {
		t.Errorf("redirect_uris became %v, were %v", after, before)
	}

	// A new client from such a manifest is not created at all.
	fresh := strings.ReplaceAll(evil, "steal-app", "fresh-steal-app")
	if err := os.WriteFile(manifest, []byte(fresh), 0o644); err != nil {
		t.Fatal(err)
	}
	nextDev(t, events, DevFailed)
	nextDev(t, events, DevLaunched)
	if status, uris := clientURIs("fresh-steal-app"); status != http.StatusNotFound {
		t.Errorf("the evil manifest's new client: %d %v, want none (404)", status, uris)
	}

	// The attacker's authorization request: no redirect to evil.example.
	var meta struct {
		Authorization string `json:"authorization_endpoint"`
	}
	getJSONInto(t, p.Services().Issuer+"/.well-known/openid-configuration", &meta)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, id := range []string{"steal-app", "fresh-steal-app"} {
		q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {"https://evil.example/steal"},
			"scope": {"openid"}, "state": {"s"}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"},
			"code_challenge_method": {"S256"}}
		resp, err := noFollow.Get(meta.Authorization + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); strings.Contains(loc, "evil.example") || resp.StatusCode < 400 {
			t.Errorf("%s: authorization request to evil.example: %d, Location %q; want it refused on the server's page", id, resp.StatusCode, loc)
		}
	}
}
