//go:build linux && cgo

package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/playground"
)

// PlaygroundWindow is the playground's desktop window: the launcher in
// one page, the Miniapp it launches in the other. It implements
// playground.Opener, so that the playground mounts the Miniapps it has
// resolved, and bridge.Controller for the automation channel's consent,
// navigate, eval, screenshot and close commands on the Miniapp's view.
type PlaygroundWindow struct {
	bridge.Controller
	w           *Window
	hostVersion string
	http        *http.Client
}

var (
	_ playground.Opener = (*PlaygroundWindow)(nil)
	_ bridge.Controller = (*PlaygroundWindow)(nil)
)

// NewPlaygroundWindow makes the window with its launcher page. Like
// NewWindow, it must run on the main goroutine, once, before Run; point
// the XDG directories at a data folder first (UseDataDir).
func NewPlaygroundWindow(cfg PlaygroundConfig) (*PlaygroundWindow, error) {
	if cfg.Options.Title == "" {
		cfg.Options.Title = "Miniapp Host playground"
	}
	if cfg.Options.Width == 0 {
		cfg.Options.Width, cfg.Options.Height = 1280, 860
	}
	w, err := NewWindow(cfg.Options)
	if err != nil {
		return nil, err
	}
	if err := w.AddLauncher(); err != nil {
		return nil, err
	}
	return newPlaygroundWindow(w, cfg.HostVersion), nil
}

// Window is the window itself: Run it on the main goroutine, and
// ShowLauncher once the playground serves the launcher.
func (pw *PlaygroundWindow) Window() *Window { return pw.w }

func newPlaygroundWindow(w *Window, hostVersion string) *PlaygroundWindow {
	pw := &PlaygroundWindow{w: w, hostVersion: hostVersion, http: w.opts.HTTPClient}
	// The channel's open command is the playground's (a launch, reported
	// like any other); it never reaches this controller.
	pw.Controller = w.Controller(func(context.Context, bridge.OpenCommand) error {
		return bridge.Errorf(bridge.CodeCommandFailed, "open goes through the playground's launch")
	})
	return pw
}

// Mount implements playground.Opener: req.Miniapp, already resolved, is
// mounted as `open` mounts it (navigation policy, consent view,
// completion), with the subject switcher's choice signing in, and the
// Miniapp's page is brought to the front.
func (pw *PlaygroundWindow) Mount(ctx context.Context, req playground.OpenRequest) (string, error) {
	if req.Miniapp == nil {
		return "", errors.New("host: playground: no Miniapp to mount")
	}
	s := req.Services
	svc := &Service{Issuer: s.Issuer, Authorize: s.Authorization, Token: s.Token, Native: s.Native, Grant: s.Grant}
	m, err := pw.w.miniappOf(req.Miniapp, svc, OpenConfig{HostClientID: req.HostClientID, HostSecret: req.HostSecret,
		HostVersion: pw.hostVersion, HTTP: pw.http})
	if err != nil {
		return "", err
	}
	m.Subject = req.Subject
	pw.w.mu.Lock()
	prev := pw.w.app
	pw.w.mu.Unlock()
	if err := pw.w.Mount(ctx, m); err != nil {
		if d, ok := m.Bridge.(*bridge.Dispatcher); ok {
			d.Close()
		}
		return "", fmt.Errorf("host: playground: %w", err)
	}
	// The previous Miniapp's calls end with it.
	if prev != nil {
		if d, ok := prev.Bridge.(*bridge.Dispatcher); ok {
			d.Close()
		}
	}
	pw.w.showPage(pageMiniapp)
	return mainView, nil
}

// ResetStorage implements playground.Opener. WebKit keeps site data by
// host name, so every Miniapp on the same host is reset with it (all the
// playground's loopback Miniapps share 127.0.0.1).
func (pw *PlaygroundWindow) ResetStorage(ctx context.Context, raw, _ string) error {
	o, err := origin.Parse(raw)
	if err != nil {
		return fmt.Errorf("host: reset storage: %w", err)
	}
	return pw.w.ForgetSite(ctx, o)
}
