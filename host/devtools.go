package host

import (
	"context"

	"github.com/miniapp-host/miniapp-host/bridge"
)

var (
	_ bridge.DevToolsController = (*controller)(nil)
	_ bridge.ConsentReporter    = (*controller)(nil)
)

// ConsentOnScreen implements bridge.ConsentReporter: the consent.shown
// event of the screen on screen, for a client that connects after it was
// published.
func (c *controller) ConsentOnScreen() (bridge.ConsentShownEvent, bool) { return c.w.ConsentOnScreen() }

// ConsentOnScreen returns the consent.shown event of the consent screen on
// screen, if one is: painted and not yet decided.
func (w *Window) ConsentOnScreen() (bridge.ConsentShownEvent, bool) { return w.flows.onScreen() }

// ShowDevTools implements bridge.DevToolsController: the automation
// channel's devtools.show.
func (c *controller) ShowDevTools(ctx context.Context, cmd bridge.ViewCommand) error {
	if err := checkView(cmd.View); err != nil {
		return err
	}
	return c.w.ShowInspector(ctx)
}
