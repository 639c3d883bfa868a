package playground

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/miniapp-host/miniapp-host/authserver/devctl"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/devclient"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// CodeNoWindow is the automation channel's code for a command that needs a
// window in a playground that has none.
const CodeNoWindow bridge.Code = "no_window"

// controller carries out the automation channel's commands: open is a
// launch (resolved, reported, handed to the Opener); the others go to the
// Opener when it implements bridge.Controller.
type controller struct{ p *Playground }

func (c *controller) window() (bridge.Controller, error) {
	if ctl, ok := c.p.cfg.Opener.(bridge.Controller); ok {
		return ctl, nil
	}
	return nil, bridge.Errorf(CodeNoWindow, "%s", ErrNoWindow.Error())
}

// Open implements bridge.Controller.
func (c *controller) Open(ctx context.Context, cmd bridge.OpenCommand) (bridge.OpenResult, error) {
	if cmd.Dashboard != "" {
		return bridge.OpenResult{}, bridge.Errorf(bridge.CodeInvalidParams,
			"the playground resolves against its own dashboard (%s); dashboard must be omitted", c.p.world.urls.Dashboard)
	}
	launch := func() (*LaunchResult, error) { return c.p.Launch(ctx, cmd.Origin, cmd.ID) }
	if cmd.Profile != "" {
		launch = func() (*LaunchResult, error) { return c.p.LaunchProfile(ctx, cmd.Profile) }
	}
	res, err := launch()
	if err != nil {
		return bridge.OpenResult{}, bridge.Errorf(bridge.CodeInvalidParams, "%s", err.Error())
	}
	switch {
	case res.Report.Outcome != resolver.OutcomeAccepted:
		r := res.Report.Reasons
		if len(r) == 0 {
			return bridge.OpenResult{}, bridge.Errorf(bridge.CodeCommandFailed, "resolver: %s", res.Report.Outcome)
		}
		return bridge.OpenResult{}, bridge.Errorf(bridge.CodeCommandFailed, "resolver: %s: %s", res.Report.Outcome, r[0].String())
	case !res.Window.Available:
		return bridge.OpenResult{}, bridge.Errorf(CodeNoWindow, "%s", ErrNoWindow.Error())
	case !res.Window.Opened:
		return bridge.OpenResult{}, bridge.Errorf(bridge.CodeCommandFailed, "%s", res.Window.Message)
	}
	return bridge.OpenResult{View: res.Window.View}, nil
}

// ApproveConsent implements bridge.Controller.
func (c *controller) ApproveConsent(ctx context.Context, cmd bridge.ApproveCommand) error {
	w, err := c.window()
	if err != nil {
		return err
	}
	return w.ApproveConsent(ctx, cmd)
}

// DenyConsent implements bridge.Controller.
func (c *controller) DenyConsent(ctx context.Context, cmd bridge.ViewCommand) error {
	w, err := c.window()
	if err != nil {
		return err
	}
	return w.DenyConsent(ctx, cmd)
}

// Navigate implements bridge.Controller.
func (c *controller) Navigate(ctx context.Context, cmd bridge.NavigateCommand) error {
	w, err := c.window()
	if err != nil {
		return err
	}
	return w.Navigate(ctx, cmd)
}

// Eval implements bridge.Controller.
func (c *controller) Eval(ctx context.Context, cmd bridge.EvalCommand) (json.RawMessage, error) {
	w, err := c.window()
	if err != nil {
		return nil, err
	}
	return w.Eval(ctx, cmd)
}

// Screenshot implements bridge.Controller.
func (c *controller) Screenshot(ctx context.Context, cmd bridge.ScreenshotCommand) (bridge.Screenshot, error) {
	w, err := c.window()
	if err != nil {
		return bridge.Screenshot{}, err
	}
	return w.Screenshot(ctx, cmd)
}

// SetDevice implements bridge.DeviceController: device.set goes to the
// window.
func (c *controller) SetDevice(ctx context.Context, cmd bridge.DeviceCommand) (bridge.DeviceResult, error) {
	res, err := c.p.SetDevice(ctx, cmd)
	if errors.Is(err, ErrNoWindow) {
		return res, bridge.Errorf(CodeNoWindow, "%s", err.Error())
	}
	return res, err
}

// SetNetwork implements bridge.NetworkController: network.set and
// network.clear go to the window.
func (c *controller) SetNetwork(ctx context.Context, cmd bridge.NetworkCommand) (bridge.NetworkResult, error) {
	res, err := c.p.SetNetwork(ctx, cmd)
	if errors.Is(err, ErrNoWindow) {
		return res, bridge.Errorf(CodeNoWindow, "%s", err.Error())
	}
	return res, err
}

var (
	_ bridge.NetworkController  = (*controller)(nil)
	_ bridge.DeviceController   = (*controller)(nil)
	_ bridge.DevToolsController = (*controller)(nil)
	_ bridge.ConsentReporter    = (*controller)(nil)
	_ bridge.ServiceController  = (*controller)(nil)
)

// ConsentOnScreen implements bridge.ConsentReporter through the Opener,
// when it can tell.
func (c *controller) ConsentOnScreen() (bridge.ConsentShownEvent, bool) {
	if cr, ok := c.p.cfg.Opener.(bridge.ConsentReporter); ok {
		return cr.ConsentOnScreen()
	}
	return bridge.ConsentShownEvent{}, false
}

// ShowDevTools implements bridge.DevToolsController: devtools.show goes to
// the Opener when it has a web inspector.
func (c *controller) ShowDevTools(ctx context.Context, cmd bridge.ViewCommand) error {
	err := c.p.ShowDevTools(ctx, cmd)
	switch {
	case errors.Is(err, ErrNoWindow):
		return bridge.Errorf(CodeNoWindow, "%s", err.Error())
	case errors.Is(err, ErrNoDevTools):
		return bridge.Errorf(bridge.CodeUnknownCommand, "%s", err.Error())
	}
	return err
}

// Close implements bridge.Controller.
func (c *controller) Close(ctx context.Context, cmd bridge.ViewCommand) error {
	w, err := c.window()
	if err != nil {
		return err
	}
	return w.Close(ctx, cmd)
}

// ServiceControl implements bridge.ServiceController: the development
// controls of the playground's embedded server, with its operator key.
func (c *controller) ServiceControl(ctx context.Context, control string, params json.RawMessage) (json.RawMessage, error) {
	return bridge.ServiceControls{Client: &devclient.Client{Dashboard: c.p.world.urls.Dashboard, Key: c.p.OperatorKey()}}.
		ServiceControl(ctx, control, params)
}

// ClockEvent reports a change of the embedded server's development clock
// (docs/dashboard.md, "The clock"): its time, real time and the offset
// between them. The inspector shows the offset until it is 0 again.
type ClockEvent devctl.ClockState

// Kind implements bridge.Event.
func (ClockEvent) Kind() string { return "service.clock" }
