package playground

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/devclient"
)

// TestServiceControlsOverAutomation: a test driver on the playground's
// automation channel moves the embedded server's clock, and a refusal of
// the service reaches it as service_refused naming the field.
func TestServiceControlsOverAutomation(t *testing.T) {
	p := start(t, Config{})
	ctx := t.Context()
	c, err := client.Dial(ctx, p.AutomationURL(), p.AutomationToken())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.AdvanceClock(ctx, 61*time.Second); err != nil {
		t.Fatalf("clock.advance: %v", err)
	}
	if got := p.world.srv.Clock().Offset(); got != 61*time.Second {
		t.Fatalf("the embedded server's clock is %s off, want 1m1s", got)
	}
	var state struct {
		Offset string `json:"offset"`
	}
	if err := c.Service(ctx, devclient.ClockShow, nil, &state); err != nil || state.Offset != "1m1s" {
		t.Fatalf("clock.show: %+v %v", state, err)
	}
	err = c.Service(ctx, devclient.ClockAdvance, map[string]string{"duration": "a while"}, nil)
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Code != bridge.CodeServiceRefused || !strings.Contains(ae.Message, "at /advance") {
		t.Fatalf("a duration that is none: want service_refused at /advance, got %v", err)
	}
	err = c.Service(ctx, devclient.ClockAdvance, map[string]any{"seconds": 5}, nil)
	if !errors.As(err, &ae) || ae.Code != bridge.CodeInvalidParams || !strings.Contains(ae.Message, "seconds") {
		t.Fatalf("a param the control does not take: want invalid_params naming it, got %v", err)
	}
	if err := c.ResetClock(ctx); err != nil || p.world.srv.Clock().Offset() != 0 {
		t.Fatalf("clock.reset: %v, offset %s", err, p.world.srv.Clock().Offset())
	}
}
