package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// TestOpenWebDriverRejection: with WebDriver, whose session sees the
// Miniapp's view only, a rejection is also loaded there as the host's own
// document, with the stage and code, escaped; the Miniapp never loads.
func TestOpenWebDriverRejection(t *testing.T) {
	srv, app := hosttest.StartServer(t)
	u := srv.URLs()
	var eng *hosttest.Engine
	rec := hosttest.NewRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- host.Open(ctx, hosttest.Factory(&eng), host.OpenConfig{Origin: app.Origin, ID: "not-this-id", Dashboard: u.Dashboard,
			Service: u.Issuer, Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret,
			Ephemeral: true, WebDriver: true, OnEvent: rec.Add})
	}()
	rec.Wait(t, "the rejection in the Miniapp's view", func(e host.Event) bool {
		return e.Kind == host.EventLoadFinished && e.URL == "about:blank"
	})
	rec.Wait(t, "the rejection in the host's view", shown("rejection"))
	cancel()
	err := <-done
	var rej *resolver.Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("Open returned %v, want the rejection", err)
	}
	if !eng.Config().WebDriver {
		t.Error("the engine was not asked for WebDriver")
	}
	if loads := eng.Loads(host.ViewMiniapp); len(loads) != 1 || loads[0] != "about:blank" {
		t.Errorf("the Miniapp's view loaded %v, want only the rejection document", loads)
	}
	docs := eng.Documents(host.ViewMiniapp)
	if len(docs) != 1 {
		t.Fatalf("documents %d, want 1", len(docs))
	}
	want := string(rej.Stage) + "/" + rej.Reasons[0].Code
	for _, s := range []string{`data-screen="rejection"`, "This Miniapp was rejected", want, "default-src 'none'"} {
		if !strings.Contains(docs[0], s) {
			t.Errorf("the rejection document lacks %q:\n%s", s, docs[0])
		}
	}
}

// logBuffer is an OpenConfig.Log that Open's goroutines may write to
// while the test reads it.
type logBuffer struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// dashboardWithService is a dashboard in front of the reference server's:
// every route passes through but GET /api/service, answered with status
// and body.
func dashboardWithService(t *testing.T, dashboard string, status int, body string) string {
	t.Helper()
	target, err := url.Parse(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/service" {
			w.WriteHeader(status)
			w.Write([]byte(body))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOpenFindsItsService is `open` without --service: the host asks the
// dashboard which authorization server its clients are registered with,
// and its navigation policy and content filter watch that server's
// authorization endpoint, not a guessed port's. A given --service wins
// over what the dashboard says; a dashboard that names none is an error
// in the window and from Open that says to give --service.
func TestOpenFindsItsService(t *testing.T) {
	srv, app := hosttest.StartServer(t)
	u := srv.URLs()
	// open runs Open; engine is its engine, to call once the window has
	// reported an event (the engine is made before the loop that reports).
	open := func(t *testing.T, service, dashboard string) (engine func() *hosttest.Engine, rec *hosttest.Recorder, log *logBuffer, stop func() error) {
		var eng *hosttest.Engine
		rec = hosttest.NewRecorder()
		log = &logBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- host.Open(ctx, hosttest.Factory(&eng), host.OpenConfig{Origin: app.Origin, ID: "demo-public", Dashboard: dashboard,
				Service: service, Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret,
				Ephemeral: true, OnEvent: rec.Add, Log: log})
		}()
		t.Cleanup(cancel)
		return func() *hosttest.Engine { return eng }, rec, log, func() error { cancel(); return <-done }
	}
	// signIn navigates the mounted Miniapp to the authorization endpoint
	// of the service: the host must catch it as a consent.
	signIn := func(t *testing.T, engine func() *hosttest.Engine, rec *hosttest.Recorder) {
		loaded := rec.Wait(t, "the Miniapp's first page", func(e host.Event) bool {
			return e.Kind == host.EventLoadFinished && strings.HasPrefix(e.URL, app.Origin)
		})
		eng := engine()
		authz := u.Authorization + "?response_type=code&client_id=demo-public&scope=openid&state=s1&code_challenge=" +
			"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&redirect_uri=" + url.QueryEscape(app.RedirectURI())
		eng.Navigate(host.ViewMiniapp, host.Navigation{URL: authz, Method: "GET", Trigger: host.TriggerLink, UserGesture: true})
		nav := rec.WaitAfter(t, loaded, "the decision", kind(host.EventNavigation))
		if nav.Action != host.Consent || nav.Rule != host.RuleAuthorize {
			t.Errorf("the sign-in towards %s was decided %s by %q; want consent by %q", u.Authorization, nav.Action, nav.Rule, host.RuleAuthorize)
		}
	}

	t.Run("named by the dashboard", func(t *testing.T) {
		eng, rec, log, stop := open(t, "", u.Dashboard)
		signIn(t, eng, rec)
		if want := "open: authorization server " + u.Issuer + " (named by the dashboard " + u.Dashboard + ")"; !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say which server was found (%q):\n%s", want, log.String())
		}
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Open: %v", err)
		}
	})
	t.Run("--service wins", func(t *testing.T) {
		eng, rec, log, stop := open(t, u.Issuer, dashboardWithService(t, u.Dashboard, 200, `{"issuer":"http://127.0.0.1:9"}`))
		signIn(t, eng, rec)
		if want := "open: authorization server " + u.Issuer + " (given)"; !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Open: %v", err)
		}
	})
	t.Run("a dashboard that names none", func(t *testing.T) {
		_, rec, _, stop := open(t, "", dashboardWithService(t, u.Dashboard, 404, `{"code":"issuer_unknown","status":404}`))
		rec.Wait(t, "the error in the window", shown("rejection"))
		err := stop()
		if err == nil || !strings.Contains(err.Error(), "--service") || !strings.Contains(err.Error(), "issuer_unknown") {
			t.Errorf("Open: %v; want an error naming issuer_unknown and --service", err)
		}
	})
}

// TestOpenAutomationFileRefusesLink: an --automation-file that is a
// symbolic link is refused with an error that names it, and the file it
// points to (which the link's planter wanted overwritten with the token)
// is untouched; a plain path gets the channel's token, mode 0600.
func TestOpenAutomationFileRefusesLink(t *testing.T) {
	srv, app := hosttest.StartServer(t)
	u := srv.URLs()
	dir := t.TempDir()
	victim, link := filepath.Join(dir, "victim"), filepath.Join(dir, "automation.json")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	var eng *hosttest.Engine
	err := host.Open(t.Context(), hosttest.Factory(&eng), host.OpenConfig{Origin: app.Origin, ID: "demo-public", Dashboard: u.Dashboard,
		Service: u.Issuer, Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret,
		Ephemeral: true, Automation: true, AutomationFile: link})
	if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Open returned %v, want an error naming the link", err)
	}
	got, _ := os.ReadFile(victim)
	fi, _ := os.Stat(victim)
	if string(got) != "precious" || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the link's target holds %q, mode %v: want it untouched", got, fi.Mode().Perm())
	}

	// A plain path: the token lands there, for its owner only.
	plain := filepath.Join(dir, "plain.json")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	resolved := make(chan error, 1)
	go func() {
		done <- host.Open(ctx, hosttest.Factory(&eng), host.OpenConfig{Origin: app.Origin, ID: "demo-public", Dashboard: u.Dashboard,
			Service: u.Issuer, Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret,
			Ephemeral: true, Automation: true, AutomationFile: plain,
			OnResolved: func(_ *resolver.Miniapp, err error) { resolved <- err }})
	}()
	if err := <-resolved; err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Open: %v", err)
	}
	b, err := os.ReadFile(plain)
	fi, _ = os.Stat(plain)
	var info host.AutomationInfo
	if err != nil || json.Unmarshal(b, &info) != nil || info.Token == "" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the automation file holds %q (%v), mode %v; want the token, mode 0600", b, err, fi.Mode().Perm())
	}
}
