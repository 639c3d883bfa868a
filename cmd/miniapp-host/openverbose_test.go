package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/redact"
)

// TestOpenVerboseRedacts runs what `miniapp-host open -v` wires (its
// flags, its log and its -v printer, openConfig) through a whole sign-in
// of the public demo, with the fake engine in place of WebKitGTK: the
// Miniapp navigates to the service, the consent is approved, the view is
// sent to the redirect_uri with the code and the state, and loads it.
// Neither the code nor the state appears anywhere on stderr, though the
// lines that carried them are there, with their fingerprints. Without
// --service, the host signs in with the server the dashboard names.
func TestOpenVerboseRedacts(t *testing.T) {
	srv, app := hosttest.StartServer(t)
	u := srv.URLs()
	t.Setenv("MINIAPP_HOST_SECRET", hosttest.HostSecret)
	// host.Open points the XDG directories at the Miniapp's data folder:
	// t.Setenv puts them back when the test ends.
	for _, k := range []string{"XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"} {
		t.Setenv(k, os.Getenv(k))
	}
	var stdout, stderr syncBuffer
	cfg, code, ok := openConfig(env{args: []string{"--origin", app.Origin, "--id", "demo-public", "--dashboard", u.Dashboard,
		"--ephemeral", "-v"}, stdout: &stdout, stderr: &stderr})
	if !ok {
		t.Fatalf("open's flags: exit %d: %s", code, stderr.String())
	}
	rec := hosttest.NewRecorder()
	printEvent := cfg.OnEvent
	cfg.OnEvent = func(ev host.Event) { printEvent(ev); rec.Add(ev) }
	var eng *hosttest.Engine
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- host.Open(ctx, hosttest.Factory(&eng), cfg) }()

	first := rec.Wait(t, "the Miniapp's page", func(ev host.Event) bool {
		return ev.Kind == host.EventLoadFinished && strings.HasPrefix(ev.URL, app.Origin)
	})
	// Way 3: the page navigates to the service with its own state and
	// PKCE, as the demo's "sign in by navigating" does.
	var b [16]byte
	rand.Read(b[:])
	state := "state-" + hex.EncodeToString(b[:])
	verifier := oauth2.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {"demo-public"}, "redirect_uri": {app.RedirectURI()}, "scope": {"openid"}, "resource": {u.BaseURL},
		"state": {state}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	eng.Navigate(host.ViewMiniapp, host.Navigation{URL: u.Authorization + "?" + q.Encode(), Method: "GET", Trigger: host.TriggerLink, UserGesture: true})
	rec.WaitAfter(t, first, "the consent", func(ev host.Event) bool { return ev.Kind == host.EventHostShown && ev.Detail == "consent" })
	eng.Post(host.ViewHost, `{"action":"approve"}`)
	completed := rec.Wait(t, "the completion", func(ev host.Event) bool { return ev.Kind == host.EventCompleted })
	rec.WaitAfter(t, completed, "the redirect_uri's page", func(ev host.Event) bool {
		return ev.Kind == host.EventLoadFinished && ev.URL == completed.URL
	})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Open: %v", err)
	}

	back, err := url.Parse(completed.URL)
	if err != nil {
		t.Fatal(err)
	}
	codeValue := back.Query().Get("code")
	if codeValue == "" || back.Query().Get("state") != state {
		t.Fatalf("the view was sent to %s; want the code and the state", completed.URL)
	}
	out := stderr.String()
	for _, want := range []string{
		"open: authorization server " + u.Issuer + " (named by the dashboard " + u.Dashboard + ")",
		"event navigation consent ",
		"(rule " + host.RuleAuthorize + ")",
		"event completed " + app.RedirectURI() + "?code=" + redact.Fingerprint(codeValue),
		"event load-finished " + app.RedirectURI() + "?code=" + redact.Fingerprint(codeValue),
		"state=withheld",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("open -v printed no %q:\n%s", want, out)
		}
	}
	for name, secret := range map[string]string{"code": codeValue, "state": state} {
		if strings.Contains(out, secret) || strings.Contains(stdout.String(), secret) {
			t.Errorf("open -v printed the %s %s:\n%s", name, secret, out)
		}
	}
}
