package host_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/redact"
)

// settle returns once the UI loop has run everything dispatched before it
// was called: the decisions' own dispatches (the notice) included.
func settle(t *testing.T, eng *hosttest.Engine) {
	t.Helper()
	for range 2 {
		done := make(chan struct{})
		eng.Dispatch(func() { close(done) })
		select {
		case <-done:
		case <-t.Context().Done():
			t.Fatal("the UI loop does not run")
		}
	}
}

// lastRender is the screen of the host view's latest render.
func lastRender(t *testing.T, eng *hosttest.Engine) map[string]any {
	t.Helper()
	evals := eng.Evals(host.ViewHost)
	for i := len(evals) - 1; i >= 0; i-- {
		if arg, ok := strings.CutPrefix(evals[i], "window.hostRender("); ok {
			var screen map[string]any
			// window.hostRender(SCREEN, SEQ)
			arg = strings.TrimSuffix(arg, ")")
			if i := strings.LastIndex(arg, ", "); i >= 0 {
				arg = arg[:i]
			}
			if err := json.Unmarshal([]byte(arg), &screen); err != nil {
				t.Fatal(err)
			}
			return screen
		}
	}
	t.Fatal("the host's view rendered nothing")
	return nil
}

// TestBlockedSignInIsShown: a Miniapp that sends its sign-in to an
// authorization server the host does not know (here another port, as
// when `open` watched the wrong service) is blocked by the rule
// other-authorization-server, and the host's view says so over the
// Miniapp: the URL, with its state redacted, the rule, and which server
// this host signs in with. A further blocked navigation joins the notice;
// Close hides it and the Miniapp is where it was.
func TestBlockedSignInIsShown(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	mountPublic(t, c, e)
	const state = "ST4TE-of-the-page"
	other := "http://127.0.0.1:9/oauth/authorize?response_type=code&client_id=demo-public&state=" + state
	if c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: other, Method: "GET", Trigger: host.TriggerLink, UserGesture: true}) {
		t.Fatal("the sign-in with another server loaded")
	}
	nav := c.rec.Wait(t, "the decision", func(ev host.Event) bool { return ev.Kind == host.EventNavigation && ev.URL == other })
	if nav.Action != host.Block || nav.Rule != host.RuleOtherServer {
		t.Errorf("decided %s by %q, want block by %q", nav.Action, nav.Rule, host.RuleOtherServer)
	}
	c.rec.Wait(t, "the notice", shown("blocked"))
	if !c.eng.HostShown() {
		t.Error("the notice is not shown over the Miniapp")
	}
	screen := lastRender(t, c.eng)
	text, _ := screen["text"].(string)
	title, _ := screen["title"].(string)
	for _, want := range []string{redact.URL(other), "Rule " + host.RuleOtherServer, host.DescribeRule(host.RuleOtherServer), e.Authorize} {
		if !strings.Contains(text, want) {
			t.Errorf("the notice lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(title, "another authorization server") {
		t.Errorf("the notice's title %q does not say what happened", title)
	}
	if strings.Contains(text, state) {
		t.Errorf("the notice shows the request's state:\n%s", text)
	}
	if ext := c.eng.Loads(host.ViewMiniapp); len(ext) != 1 {
		t.Errorf("the view loaded %v; want only the Miniapp's page", ext)
	}

	// A script's navigation elsewhere is blocked too and listed below.
	c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: "https://elsewhere.example/", Method: "GET", Trigger: host.TriggerOther})
	settle(t, c.eng)
	text, _ = lastRender(t, c.eng)["text"].(string)
	for _, want := range []string{redact.URL(other), "https://elsewhere.example/", "Rule " + host.RuleNotAllowed} {
		if !strings.Contains(text, want) {
			t.Errorf("the notice after a second block lacks %q:\n%s", want, text)
		}
	}

	c.eng.Post(host.ViewHost, `{"action":"dismiss"}`)
	settle(t, c.eng)
	if c.eng.HostShown() {
		t.Error("Close left the notice over the Miniapp")
	}
}

// TestNoticeNeverCoversConsent: a navigation blocked while a consent is
// on screen is named in the events, and the consent stays.
func TestNoticeNeverCoversConsent(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	mountPublic(t, c, e)
	c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: e.PublicAuthorizeURL(), Method: "GET", Trigger: host.TriggerLink, UserGesture: true})
	c.rec.Wait(t, "the consent", shown("consent"))
	c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: "https://elsewhere.example/", Method: "GET", Trigger: host.TriggerOther})
	nav := c.rec.Wait(t, "the decision", func(ev host.Event) bool {
		return ev.Kind == host.EventNavigation && ev.URL == "https://elsewhere.example/"
	})
	if nav.Action != host.Block || nav.Rule != host.RuleNotAllowed {
		t.Errorf("decided %s by %q, want block by %q", nav.Action, nav.Rule, host.RuleNotAllowed)
	}
	settle(t, c.eng)
	if got := lastRender(t, c.eng)["screen"]; got != "consent" {
		t.Errorf("the host's view shows %v over the consent", got)
	}
	if len(c.rec.All(shown("blocked"))) != 0 {
		t.Error("a notice was shown during the consent")
	}
}

// TestNavigationRuleWithoutMiniapp: before a Miniapp is mounted (while it
// resolves, or after a rejection) the view loads nothing, and the event
// says by which rule.
func TestNavigationRuleWithoutMiniapp(t *testing.T) {
	c := newCore(t, host.Options{})
	if c.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: "https://app.example/", Method: "GET", Trigger: host.TriggerOther}) {
		t.Fatal("the view loaded a page with no Miniapp mounted")
	}
	nav := c.rec.Wait(t, "the decision", kind(host.EventNavigation))
	if nav.Action != host.Block || nav.Rule != host.RuleNoMiniapp || host.DescribeRule(nav.Rule) == "" {
		t.Errorf("decided %s by %q, want block by %q", nav.Action, nav.Rule, host.RuleNoMiniapp)
	}
}
