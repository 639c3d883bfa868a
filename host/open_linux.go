//go:build linux && cgo

package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// Open opens one Miniapp in a desktop window and returns when the window
// is closed or ctx ends. It must run on the main goroutine. The window
// opens at once; resolution runs beside it, and a rejection is shown in
// the window (the Miniapp is never loaded) and returned.
func Open(ctx context.Context, cfg OpenConfig) error {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	dir, cleanup, err := cfg.dataDir()
	if err != nil {
		return err
	}
	defer cleanup()
	if err := UseDataDir(dir); err != nil {
		return err
	}
	bus := bridge.NewBus(nil)
	w, err := NewWindow(Options{Title: "Miniapp Host", DataDir: dir, Ephemeral: cfg.Ephemeral, Subject: cfg.Subject,
		HTTPClient: cfg.HTTP, Events: bus})
	if err != nil {
		return err
	}
	if cfg.Automation {
		a, err := bridge.NewAutomation(bridge.AutomationConfig{Addr: cfg.AutomationAddr, Bus: bus,
			Controller: w.Controller(func(ctx context.Context, cmd bridge.OpenCommand) error {
				c := cfg
				c.Origin, c.ID = cmd.Origin, cmd.ID
				if cmd.Dashboard != "" {
					c.Dashboard = cmd.Dashboard
				}
				return w.openOrShow(ctx, c)
			})})
		if err != nil {
			return err
		}
		if err := a.Listen(); err != nil {
			return err
		}
		defer a.Close()
		fmt.Fprintf(cfg.Log, "open: automation channel %s token %s\n", a.URL(), a.Token())
	}
	if cfg.OnEvent != nil {
		w.OnEvent(cfg.OnEvent)
	}
	fmt.Fprintf(cfg.Log, "open: WebKit data in %s\n", dir)
	result := make(chan error, 1)
	go func() { result <- w.openOrShow(ctx, cfg) }()
	go func() {
		<-ctx.Done()
		w.Terminate()
	}()
	w.Run()
	select {
	case err := <-result:
		return err
	default:
		return ctx.Err()
	}
}

// openOrShow opens a Miniapp, or shows in the window why it could not.
func (w *Window) openOrShow(ctx context.Context, cfg OpenConfig) error {
	err := w.openMiniapp(ctx, cfg)
	if err != nil {
		title, text := rejectionText(err)
		w.ShowRejection(title, text)
	}
	return err
}

// openMiniapp resolves the Miniapp and mounts it. Discovery (then the
// content filter) and resolution run at the same time: each is a few
// round trips, and the window is waiting for both.
func (w *Window) openMiniapp(ctx context.Context, cfg OpenConfig) error {
	type discovered struct {
		svc *Service
		err error
	}
	dc := make(chan discovered, 1)
	go func() {
		svc, err := Discover(ctx, cfg.HTTP, cfg.Service)
		if err == nil {
			var auth *url.URL
			if auth, err = parseCanonical(svc.Authorize); err == nil {
				err = w.PrepareFilter(ctx, auth)
			}
		}
		dc <- discovered{svc, err}
	}()
	r, err := resolver.New(resolver.Config{Dashboard: cfg.Dashboard, HTTPClient: cfg.HTTP})
	if err != nil {
		return err
	}
	app, err := r.Resolve(ctx, cfg.ID, cfg.Origin)
	publishReport(w.opts.Events, cfg, err, app)
	if cfg.OnResolved != nil {
		cfg.OnResolved(app, err)
	}
	if err != nil {
		return err
	}
	d := <-dc
	if d.err != nil {
		return d.err
	}
	m, err := w.miniappOf(app, d.svc, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Log, "open: loading %s\n", m.LoadURL)
	return w.Mount(ctx, m)
}

// miniappOf turns a resolved Miniapp into what the window mounts.
func (w *Window) miniappOf(app *resolver.Miniapp, svc *Service, cfg OpenConfig) (Miniapp, error) {
	auth, err := parseCanonical(svc.Authorize)
	if err != nil {
		return Miniapp{}, err
	}
	m := Miniapp{Name: app.Manifest.Name, LoadURL: app.LoadURL, StartURL: app.StartURL,
		Confidential: app.Client.Confidential(), ClientID: app.Manifest.OAuth.ClientID,
		Policy:  Policy{Authorize: auth, Allowed: app.Client.AllowedOrigins},
		Consent: &NativeConsent{Endpoint: svc.Native, ClientID: cfg.HostClientID, ClientSecret: cfg.HostSecret, HTTP: cfg.HTTP}}
	if !m.Confidential {
		// A public client signs in through the bridge (way 2): the host
		// needs one of its redirect_uris on the Miniapp's origin.
		redirect := ""
		for _, ru := range app.Client.RedirectURIs {
			if u, err := parseCanonical(ru); err == nil && sameOriginAs(u, app.Origin) {
				redirect = ru
				break
			}
		}
		if redirect == "" {
			return Miniapp{}, errors.New("host: the public client has no redirect_uri on the Miniapp's origin; the bridge cannot authorize")
		}
		d, err := w.NewBridge(BridgeConfig{Origin: app.Origin, ID: app.Manifest.ID, ClientID: app.Manifest.OAuth.ClientID,
			RedirectURI: redirect, AuthorizeURL: svc.Authorize, TokenURL: svc.Token, Issuer: svc.Issuer,
			Resource: svc.BaseURL(), HostVersion: cfg.HostVersion, HTTP: cfg.HTTP, Events: w.opts.Events})
		if err != nil {
			return Miniapp{}, err
		}
		m.Bridge = d
	}
	return m, nil
}
