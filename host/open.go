package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/devclient"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/netshape"
	"github.com/miniapp-host/miniapp-host/privatefile"
	"github.com/miniapp-host/miniapp-host/resolver"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// OpenConfig is what `miniapp-host open` passes to [Open].
type OpenConfig struct {
	Origin, ID string
	// Device is how the Miniapp is shown (docs/playground.md, "Devices");
	// the zero value fills the window as a desktop page.
	Device DeviceSettings
	// Start is the path and query the Miniapp starts on, on its origin
	// ("" is its start_url); see MountOptions.Start.
	Start string
	// Network is the launch's network conditions for the Miniapp's view
	// (`open --network`, `--mock`; Miniapp.Network).
	Network netshape.Conditions
	// Dashboard is {dashboard_url}, where the resolver reads the client.
	Dashboard string
	// Service is the authorization service's issuer URL. Empty: the one
	// the dashboard names (GET {dashboard_url}/api/service, see
	// DiscoverService).
	Service string
	// Subject is who signs in on the consent screen.
	Subject string
	// HostClientID and HostSecret are the host's own credential for the
	// native-consent API.
	HostClientID, HostSecret string
	// OperatorKey is the service's operator credential; given, the
	// automation channel runs the development controls of the dashboard
	// (docs/automation.md, "The service's development controls").
	OperatorKey string
	// Ephemeral keeps each Miniapp's WebKit data (cookies, storage) in
	// memory: nothing of it is written, and it is gone when the process
	// ends.
	Ephemeral bool
	// DataRoot holds the Miniapps' data folders, one per Miniapp (by
	// origin and manifest id, MiniappDir); the user's data directory
	// (miniapp-host/miniapps) when empty.
	DataRoot string
	// HostVersion is reported to pages by getContext.
	HostVersion string
	// HTTP is the client for discovery, resolution and the callback;
	// http.DefaultClient when nil.
	HTTP *http.Client
	// Traces records each sign-in as a trace (Options.Traces); nil: none.
	Traces *telemetry.Provider
	// Log receives one line per step; io.Discard when nil.
	Log io.Writer
	// OnResolved is told the resolver's answer (a *resolver.Miniapp, or a
	// *resolver.Rejection or *resolver.Undecided error) before the
	// Miniapp is mounted or the rejection shown.
	OnResolved func(app *resolver.Miniapp, err error)
	// OnEvent receives every event of the window.
	OnEvent func(Event)
	// Automation starts the automation channel (docs/automation.md) on
	// AutomationAddr (a free loopback port when empty) and writes its URL
	// and token to Log.
	Automation     bool
	AutomationAddr string
	// AutomationFile, when set, receives the channel's URL and token as
	// JSON ({"url": ..., "token": ...}, mode 0600) once it listens, before
	// the window's loop runs: a WebDriver session (which needs the loop)
	// is never ready before the file is written.
	AutomationFile string
	// AutomationOut, when set, receives the same JSON (and a newline) at
	// the same moment and is then closed: the program that started the
	// host reads it from a pipe (`open --automation-fd`, which
	// `miniapp-host webdriver` uses; docs/webdriver.md). A host that exits
	// before it closes the pipe without writing. An *os.File is made
	// close-on-exec first, so that no process WebKit starts holds it open.
	AutomationOut io.WriteCloser
	// DevTools enables the web inspector in the Miniapp's view.
	DevTools bool
	// WebDriver lets the W3C WebDriver session of the WebKitWebDriver
	// that started this process drive the Miniapp's view
	// (Options.WebDriver, docs/webdriver.md).
	WebDriver bool
	// StopGrace bounds how long the UI loop may take to stop once ctx
	// ends; 3s. Stuck is called when it does not (the loop is stalled), after
	// the data folder of an ephemeral Miniapp is removed: it must end the
	// process.
	StopGrace time.Duration
	Stuck     func()
}

// publishReport sends the resolver's stages to the automation channel.
func publishReport(pub bridge.Publisher, cfg OpenConfig, err error, app *resolver.Miniapp) {
	var rep *resolver.Report
	var rej *resolver.Rejection
	var und *resolver.Undecided
	switch {
	case err == nil && app != nil:
		rep = app.Report
	case errors.As(err, &rej):
		rep = rej.Report
	case errors.As(err, &und):
		rep = und.Report
	}
	if rep == nil || pub == nil {
		return
	}
	for _, ev := range StageEvents(rep, cfg.Origin, cfg.ID, "") {
		pub.Publish(ev)
	}
}

// StageEvents are the automation channel's resolve.stage events of a
// report: one per stage that ran, each with every reason of its stage (the
// first also as code, pointer and hint) and the launch it belongs to ("" for
// none).
func StageEvents(rep *resolver.Report, origin, id, launch string) []bridge.ResolveStageEvent {
	var out []bridge.ResolveStageEvent
	for _, st := range rep.Stages {
		if st.Outcome == resolver.OutcomeSkipped {
			continue
		}
		ev := bridge.ResolveStageEvent{Origin: origin, ID: id, Stage: string(st.Stage), OK: st.Outcome == resolver.OutcomeOK, Launch: launch}
		if len(st.Reasons) > 0 {
			ev.Code, ev.Pointer, ev.Hint = st.Reasons[0].Code, st.Reasons[0].Pointer, st.Reasons[0].Hint
		}
		for _, r := range st.Reasons {
			ev.Reasons = append(ev.Reasons, bridge.StageReason{Code: r.Code, Pointer: r.Pointer, Message: r.Message, Hint: r.Hint})
		}
		out = append(out, ev)
	}
	return out
}

// dataRoot returns the folder that holds each Miniapp's data folder
// (MiniappDir): DataRoot, else the user's data directory's
// miniapp-host/miniapps; "" for an ephemeral window, whose Miniapps keep
// their data in memory. It reads XDG_DATA_HOME, so it runs before
// UseDataDir moves it.
func (c *OpenConfig) dataRoot() (string, error) {
	if c.Ephemeral {
		return "", nil
	}
	if c.DataRoot != "" {
		return c.DataRoot, nil
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("host: data dir: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "miniapp-host", "miniapps"), nil
}

// rejectionText says why a Miniapp was not opened, for the host's view.
func rejectionText(err error) (title, text string) {
	var b strings.Builder
	switch e := err.(type) {
	case *resolver.Rejection:
		title = "This Miniapp was rejected"
		fmt.Fprintf(&b, "Stage %s refused it; it was not loaded.\n", e.Stage)
		for _, r := range e.Reasons {
			fmt.Fprintf(&b, "%s/%s", r.Stage, r.Code)
			if r.Pointer != "" {
				fmt.Fprintf(&b, " at %s", r.Pointer)
			}
			fmt.Fprintf(&b, ": %s\n", r.Message)
			if r.Hint != "" {
				fmt.Fprintf(&b, "Hint: %s\n", r.Hint)
			}
		}
	case *resolver.Undecided:
		title = "This Miniapp could not be checked"
		fmt.Fprintf(&b, "Stage %s could not get an answer (%s): %s\nNothing was rejected; try again when the server answers.", e.Stage, e.Code, e.Message)
	default:
		title = "This Miniapp could not be opened"
		b.WriteString(err.Error())
	}
	return title, strings.TrimSpace(b.String())
}

// Open opens one Miniapp in a desktop window made by newEngine and returns
// when the window is closed or ctx ends. It must run on the main
// goroutine. The window opens at once; resolution runs beside it, and a
// rejection is shown in the window (the Miniapp is never loaded) and
// returned. When ctx ends and the UI loop does not stop within
// cfg.StopGrace, cfg.Stuck is called (see RunUntil).
func Open(ctx context.Context, newEngine NewEngine, cfg OpenConfig) error {
	cfg.setDefaults()
	if cfg.AutomationOut != nil {
		// Before WebKit starts a process: none may hold the pipe open.
		keepFromChildren(cfg.AutomationOut)
	}
	root, err := cfg.dataRoot()
	if err != nil {
		return err
	}
	// The window's own files (WebKit's XDG folders, the content filter)
	// live for the process; each Miniapp's data is in its own folder under
	// root, or in memory (docs/host.md, "Each Miniapp's data").
	dir, err := os.MkdirTemp("", "miniapp-host-open-")
	if err != nil {
		return fmt.Errorf("host: data dir: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	defer cleanup()
	if err := UseDataDir(dir); err != nil {
		return err
	}
	bus := bridge.NewBus(nil)
	width, height := windowFor(cfg.Device)
	w, err := NewWindow(newEngine, Options{Title: "Miniapp Host", DataDir: dir, DataRoot: root, Ephemeral: cfg.Ephemeral,
		FirstOrigin: cfg.Origin, FirstID: cfg.ID, Subject: cfg.Subject, Width: width, Height: height, Device: cfg.Device,
		HTTPClient: cfg.HTTP, Events: bus, DevTools: cfg.DevTools, WebDriver: cfg.WebDriver, NetworkProxy: cfg.Automation, Traces: cfg.Traces})
	if err != nil {
		return err
	}
	if cfg.Automation {
		a, err := cfg.startAutomation(w, bus)
		if err != nil {
			return err
		}
		defer a.Close()
	}
	if cfg.OnEvent != nil {
		w.OnEvent(cfg.OnEvent)
	}
	if cfg.Ephemeral {
		fmt.Fprintf(cfg.Log, "open: WebKit data in memory (--ephemeral)\n")
	} else {
		fmt.Fprintf(cfg.Log, "open: WebKit data in %s\n", MiniappDir(root, cfg.Origin, cfg.ID))
	}
	// The orchestration ends with the window: its answer (a rejection is
	// exit 1) is waited for, never dropped.
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	result := make(chan error, 1)
	go func() { result <- cfg.openOrShow(octx, w) }()
	w.RunUntil(ctx, cfg.StopGrace, func() { cleanup(); cfg.Stuck() })
	ocancel()
	if err := <-result; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// setDefaults fills in what Open takes when it is not given.
func (cfg *OpenConfig) setDefaults() {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 3 * time.Second
	}
	if cfg.Stuck == nil {
		cfg.Stuck = func() {}
	}
}

// startAutomation starts the automation channel of w on bus
// (docs/automation.md) and says where it listens: in the log, and with its
// token in AutomationFile and AutomationOut when they are given.
func (cfg OpenConfig) startAutomation(w *Window, bus *bridge.Bus) (*bridge.Automation, error) {
	a, err := bridge.NewAutomation(bridge.AutomationConfig{Addr: cfg.AutomationAddr, Bus: bus,
		Controller: w.controllerFor(cfg.serviceControls(), func(ctx context.Context, cmd bridge.OpenCommand) error {
			if cfg.WebDriver && DataKey(cmd.Origin, cmd.ID) != DataKey(cfg.Origin, cfg.ID) {
				// The session holds the Miniapp's view, which keeps its
				// Miniapp's data (docs/host.md, "WebDriver").
				return bridge.Errorf(bridge.CodeCommandFailed, "this window's WebDriver session drives %s (%s); "+
					"another Miniapp has data of its own and needs a view of its own: start a new session for it", cfg.ID, cfg.Origin)
			}
			c := cfg
			c.Origin, c.ID = cmd.Origin, cmd.ID
			if cmd.Dashboard != "" {
				c.Dashboard = cmd.Dashboard
			}
			return c.openOrShow(ctx, w)
		})})
	if err != nil {
		return nil, err
	}
	if err := a.Listen(); err != nil {
		return nil, err
	}
	if err := cfg.announceAutomation(a.URL(), a.Token()); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// announceAutomation says where the automation channel listens.
func (cfg OpenConfig) announceAutomation(url, token string) error {
	if cfg.AutomationOut != nil {
		// Whoever started the host reads the token there; the log
		// (a WebDriver front's, a CI run's artifacts) never holds it.
		fmt.Fprintf(cfg.Log, "open: automation channel %s (its token written to the automation descriptor only)\n", url)
	} else {
		fmt.Fprintf(cfg.Log, "open: automation channel %s token %s\n", url, token)
	}
	if cfg.AutomationFile != "" {
		if err := writeAutomationFile(cfg.AutomationFile, url, token); err != nil {
			return err
		}
	}
	if cfg.AutomationOut != nil {
		if err := writeAutomationOut(cfg.AutomationOut, url, token); err != nil {
			return err
		}
	}
	return nil
}

// openOrShow opens a Miniapp in w, or shows in the window why it could
// not.
func (cfg OpenConfig) openOrShow(ctx context.Context, w *Window) error {
	err := cfg.openMiniapp(ctx, w)
	if err != nil {
		title, text := rejectionText(err)
		w.ShowRejection(title, text)
	}
	return err
}

// openMiniapp resolves the Miniapp and mounts it. Discovery (then the
// content filter) and resolution run at the same time: each is a few
// round trips, and the window is waiting for both.
func (cfg OpenConfig) openMiniapp(ctx context.Context, w *Window) error {
	type discovered struct {
		svc *Service
		err error
	}
	dc := make(chan discovered, 1)
	go func() {
		svc, err := DiscoverService(ctx, cfg.HTTP, cfg.Service, cfg.Dashboard)
		if err == nil {
			how := "given"
			if cfg.Service == "" {
				how = "named by the dashboard " + cfg.Dashboard
			}
			fmt.Fprintf(cfg.Log, "open: authorization server %s (%s)\n", svc.Issuer, how)
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
	fmt.Fprintf(cfg.Log, "open: loading %s\n", app.LoadURL)
	return w.MountResolved(ctx, app, d.svc, MountOptions{HostClientID: cfg.HostClientID, HostSecret: cfg.HostSecret,
		HostVersion: cfg.HostVersion, HTTP: cfg.HTTP, Start: cfg.Start, Network: cfg.Network})
}

// MountOptions are what MountResolved needs besides the Miniapp and the
// service.
type MountOptions struct {
	// HostClientID and HostSecret are the host's own credential for the
	// native-consent API.
	HostClientID, HostSecret string
	// Subject, when set, signs in instead of Options.Subject.
	Subject string
	// HostVersion is reported to pages by getContext.
	HostVersion string
	// HTTP is the client for the native-consent API, the callback and
	// the token request; Options.HTTPClient when nil.
	HTTP *http.Client
	// NetLog records the launch's consent flows (Miniapp.NetLog); nil
	// records nothing.
	NetLog *netlog.Launch
	// Start is the path and query a public Miniapp's page starts on,
	// on its own origin, instead of its start_url ("/orders?tab=open").
	// A confidential Miniapp starts at its auth_url, where its server
	// signs it in: it has none.
	Start string
	// Network is the launch's network conditions (Miniapp.Network).
	Network netshape.Conditions
}

// MountResolved mounts a Miniapp the resolver accepted, signing in with the
// service svc: the navigation policy from its client's allowed origins,
// the native consent with the host's credential, and for a public client
// the bridge with one of its redirect_uris.
func (w *Window) MountResolved(ctx context.Context, app *resolver.Miniapp, svc *Service, o MountOptions) error {
	if o.HTTP == nil {
		o.HTTP = w.opts.HTTPClient
	}
	m, err := w.miniappOf(app, svc, o)
	if err != nil {
		return err
	}
	m.Subject, m.NetLog, m.Network = o.Subject, o.NetLog, o.Network
	if o.Start != "" {
		if m.LoadURL, err = startURL(app, o.Start); err != nil {
			if m.Bridge != nil {
				m.Bridge.Close()
			}
			return err
		}
	}
	if err := w.Mount(ctx, m); err != nil {
		if m.Bridge != nil {
			m.Bridge.Close()
		}
		return err
	}
	return nil
}

// startURL is the page a Miniapp starts on for a start path: on its own
// origin, never another site.
func startURL(app *resolver.Miniapp, start string) (*url.URL, error) {
	if app.Client.Confidential() {
		return nil, fmt.Errorf("host: a start path (%q) is for a public Miniapp: a confidential one starts at its auth_url, where its server signs it in; "+
			"make its server's sign-in lead to the page", start)
	}
	if !strings.HasPrefix(start, "/") || strings.HasPrefix(start, "//") {
		return nil, fmt.Errorf("host: start %q: write a path on the Miniapp's origin, /path?query", start)
	}
	u, err := parseCanonical(app.Origin.String() + start)
	if err != nil || !sameOriginAs(u, app.Origin) {
		return nil, fmt.Errorf("host: start %q is not a page of the Miniapp's origin %s", start, app.Origin)
	}
	return u, nil
}

// windowFor is the size a window of its own opens at for d: the device in
// its frame with room around it, or 1024x768 for the desktop. A device
// taller than that is fitted (zoomed out).
func windowFor(d DeviceSettings) (width, height int) {
	v := d.Viewport()
	if v.Width == 0 {
		return 1024, 768
	}
	room := 2 * (16 + 14)
	return v.Width + room, min(v.Height+room, 960)
}

// miniappOf turns a resolved Miniapp into what the window mounts.
func (w *Window) miniappOf(app *resolver.Miniapp, svc *Service, cfg MountOptions) (Miniapp, error) {
	auth, err := parseCanonical(svc.Authorize)
	if err != nil {
		return Miniapp{}, err
	}
	m := Miniapp{Name: app.Manifest.Name, Origin: app.Origin.String(), ID: app.Manifest.ID, LoadURL: app.LoadURL, StartURL: app.StartURL,
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

// AutomationInfo is what OpenConfig.AutomationFile holds.
type AutomationInfo struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// writeAutomationOut writes the channel's address and token to w, as
// JSON and a newline, and closes w.
func writeAutomationOut(w io.WriteCloser, url, token string) error {
	b, err := json.Marshal(AutomationInfo{URL: url, Token: token})
	if err != nil {
		w.Close()
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		w.Close()
		return fmt.Errorf("host: automation fd: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("host: automation fd: %w", err)
	}
	return nil
}

// writeAutomationFile writes the channel's address and token for a
// program that started the host without reading its stderr (a WebDriver
// client: docs/webdriver.md). The token approves consent: the file is
// the user's only, and never written through a symbolic link
// (package privatefile).
func writeAutomationFile(path, url, token string) error {
	b, err := json.Marshal(AutomationInfo{URL: url, Token: token})
	if err != nil {
		return err
	}
	if err := privatefile.Write(path, b); err != nil {
		return fmt.Errorf("host: automation file: %w", err)
	}
	return nil
}

// serviceControls is the client of the dashboard's development controls,
// or nil without an operator key.
func (cfg OpenConfig) serviceControls() *devclient.Client {
	if cfg.OperatorKey == "" || cfg.Dashboard == "" {
		return nil
	}
	return &devclient.Client{Dashboard: cfg.Dashboard, Key: cfg.OperatorKey, HTTP: cfg.HTTP}
}
