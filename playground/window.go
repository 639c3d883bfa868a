package playground

import (
	"context"
	"errors"
	"fmt"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
)

// Window is the playground's desktop window: a host window with the
// launcher in one page and the Miniapp it launches in the other. It
// implements Opener, so that the playground mounts the Miniapps it has
// resolved, and bridge.Controller for the automation channel's consent,
// navigate, eval, screenshot and close commands on the Miniapp's view.
type Window struct {
	bridge.Controller
	w           *host.Window
	hostVersion string
}

var (
	_ Opener                    = (*Window)(nil)
	_ bridge.Controller         = (*Window)(nil)
	_ bridge.DevToolsController = (*Window)(nil)
	_ Reloader                  = (*Window)(nil)
	_ RejectionShower           = (*Window)(nil)
	_ bridge.DeviceController   = (*Window)(nil)
	_ bridge.NetworkController  = (*Window)(nil)
)

// SetNetwork implements bridge.NetworkController: the Miniapp view's
// network conditions, until the next launch.
func (pw *Window) SetNetwork(ctx context.Context, cmd bridge.NetworkCommand) (bridge.NetworkResult, error) {
	if cmd.View != "" && cmd.View != host.MainView {
		return bridge.NetworkResult{}, bridge.Errorf(bridge.CodeInvalidParams, "no view %q; this window has one Miniapp view, %q", cmd.View, host.MainView)
	}
	return pw.w.SetNetworkCommand(ctx, cmd)
}

// CurrentDevice implements DeviceReporter.
func (pw *Window) CurrentDevice() bridge.DeviceCommand {
	d := pw.w.Device()
	return bridge.DeviceCommand{Device: d.Device.Name, Landscape: d.Landscape, Theme: string(d.PageTheme().Theme), Locale: d.Locale, Zoom: d.Zoom}
}

// SetDevice implements bridge.DeviceController: the window shows its
// Miniapp as the device the command names.
func (pw *Window) SetDevice(ctx context.Context, cmd bridge.DeviceCommand) (bridge.DeviceResult, error) {
	if cmd.View != "" && cmd.View != host.MainView {
		return bridge.DeviceResult{}, bridge.Errorf(bridge.CodeInvalidParams, "no view %q; this window has one Miniapp view, %q", cmd.View, host.MainView)
	}
	return pw.w.SetDeviceCommand(ctx, cmd)
}

// NewWindow adapts w, made with host.Options.Launcher, to the playground.
func NewWindow(w *host.Window, hostVersion string) *Window {
	// The channel's open command is the playground's (a launch, reported
	// like any other); it never reaches this controller.
	ctl := w.Controller(func(context.Context, bridge.OpenCommand) error {
		return bridge.Errorf(bridge.CodeCommandFailed, "open goes through the playground's launch")
	})
	return &Window{Controller: ctl, w: w, hostVersion: hostVersion}
}

// Mount implements Opener: req.Miniapp, already resolved, is mounted as
// `open` mounts it (navigation policy, consent view, completion), with the
// subject switcher's choice signing in, and the Miniapp's page is brought
// to the front.
func (pw *Window) Mount(ctx context.Context, req OpenRequest) (string, error) {
	if req.Miniapp == nil {
		return "", errors.New("playground: no Miniapp to mount")
	}
	s := req.Services
	svc := &host.Service{Issuer: s.Issuer, Authorize: s.Authorization, Token: s.Token, Native: s.Native, Grant: s.Grant}
	if err := pw.w.MountResolved(ctx, req.Miniapp, svc, host.MountOptions{HostClientID: req.HostClientID,
		HostSecret: req.HostSecret, Subject: req.Subject, HostVersion: pw.hostVersion, HTTP: req.HTTP, NetLog: req.NetLog,
		Start: req.Start, Network: req.Network}); err != nil {
		return "", fmt.Errorf("playground: %w", err)
	}
	pw.w.ShowPage(host.PageMiniapp)
	return host.MainView, nil
}

// ConsentOnScreen implements bridge.ConsentReporter.
func (pw *Window) ConsentOnScreen() (bridge.ConsentShownEvent, bool) { return pw.w.ConsentOnScreen() }

// ShowDevTools implements bridge.DevToolsController (devtools.show, POST
// /api/devtools): the Miniapp's page comes to the front, its view's
// developer extras are turned on and its web inspector shown. The
// launcher's view and the consent view never get one.
func (pw *Window) ShowDevTools(ctx context.Context, cmd bridge.ViewCommand) error {
	if cmd.View != "" && cmd.View != host.MainView {
		return bridge.Errorf(bridge.CodeInvalidParams, "no view %q; this window has one Miniapp view, %q", cmd.View, host.MainView)
	}
	pw.w.ShowPage(host.PageMiniapp)
	return pw.w.ShowInspector(ctx)
}

// Reload implements Reloader: the Miniapp's page loads again, as the user's
// F5 loads it, with the view's cookies and storage kept.
func (pw *Window) Reload(ctx context.Context) error { return pw.w.Reload(ctx) }

// ShowRejection implements RejectionShower: the host's view says why the
// Miniapp was not opened, in the Miniapp's tab, brought to the front.
func (pw *Window) ShowRejection(title, text string) {
	pw.w.ShowRejection(title, text)
	pw.w.ShowPage(host.PageMiniapp)
}

// ResetStorage implements Opener: the window forgets the data of the
// Miniapp at origin with manifest id id (cookies, local storage,
// IndexedDB, caches). Each Miniapp's data is its own, so no other one is
// reset, even on the same host (docs/host.md, "Each Miniapp's data").
func (pw *Window) ResetStorage(ctx context.Context, origin, id string) error {
	if err := pw.w.ForgetMiniapp(ctx, origin, id); err != nil {
		return fmt.Errorf("playground: %w", err)
	}
	return nil
}
