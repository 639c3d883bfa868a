package host_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
)

// TestRefusedConsentCommandIsAnEvent: a consent.approve or consent.deny
// the host refuses (here: no consent screen is shown, and a view that is
// not the window's) answers the command with its error and leaves a trace:
// a consent.refused event on the automation channel, naming the action,
// the code, the message and what the command asked for, and a
// consent-refused line in the event line (docs/automation.md, "Events").
func TestRefusedConsentCommandIsAnEvent(t *testing.T) {
	c := newCore(t, host.Options{})
	ctl := c.w.Controller(nil)
	err := ctl.ApproveConsent(t.Context(), bridge.ApproveCommand{Account: "acc-2", Choices: &bridge.ConsentChoices{DeclinedScopes: []string{"profile"}}})
	var be *bridge.Error
	if !errors.As(err, &be) || be.Code != host.CodeNoConsent {
		t.Fatalf("approve without a screen: %v, want no_consent", err)
	}
	if err := ctl.DenyConsent(t.Context(), bridge.ViewCommand{View: "other"}); !errors.As(err, &be) || be.Code != bridge.CodeInvalidParams {
		t.Fatalf("deny of another view: %v, want invalid_params", err)
	}
	var got []bridge.ConsentRefusedEvent
	for _, e := range c.bus.all() {
		if r, ok := e.(bridge.ConsentRefusedEvent); ok {
			got = append(got, r)
		}
	}
	if len(got) != 2 {
		t.Fatalf("consent.refused events %+v, want 2", got)
	}
	if a := got[0]; a.Action != "approve" || a.Code != host.CodeNoConsent || a.Message != "no consent screen is shown" || a.Account != "acc-2" ||
		len(a.DeclinedScopes) != 1 || a.DeclinedScopes[0] != "profile" {
		t.Errorf("approve's event %+v", a)
	}
	if d := got[1]; d.Action != "deny" || d.Code != bridge.CodeInvalidParams || !strings.Contains(d.Message, `"other"`) {
		t.Errorf("deny's event %+v", d)
	}
	line := c.rec.Wait(t, "the event line", kind(host.EventConsentRefused)).String()
	if line != "consent-refused approve: no_consent: no consent screen is shown" {
		t.Errorf("event line %q", line)
	}
}
