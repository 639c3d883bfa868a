package playground

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/netshape"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// Opener mounts Miniapps in a desktop window. Package host implements it;
// the playground only resolves, reports and hands over accepted Miniapps.
//
// An Opener that also implements bridge.Controller receives the automation
// channel's other commands (consent.approve, consent.deny, navigate, eval,
// screenshot, close); the channel's open command always goes through
// [Playground.Launch], so that every launch is reported the same way. One
// that implements bridge.DevToolsController shows the Miniapp view's web
// inspector for POST /api/devtools and devtools.show.
type Opener interface {
	// Mount mounts req.Miniapp, which the resolver accepted, and returns
	// the id of its view, as the automation channel's open command names
	// it. It returns once the load is issued, not when the page is
	// loaded. The host publishes its events (navigation, consent, code,
	// token, cookies) on the Bus of the playground's Config.
	Mount(ctx context.Context, req OpenRequest) (view string, err error)
	// ResetStorage deletes everything the webview keeps for the Miniapp
	// at origin with manifest id id (cookies, local storage, IndexedDB,
	// caches), so that its next launch starts signed out.
	ResetStorage(ctx context.Context, origin, id string) error
}

// OpenRequest is what an Opener needs to mount a Miniapp: the resolved
// Miniapp, who signs in, and the service with the host's own credential for
// its native-consent API.
type OpenRequest struct {
	// Miniapp is the resolver's answer, report included: the Opener
	// mounts it as it is and does not resolve it again.
	Miniapp *resolver.Miniapp
	// Subject is who signs in on the consent screen (the subject
	// switcher's choice).
	Subject  string
	Services Services
	// HostClientID and HostSecret are the host's credential for the
	// native-consent API (Services.Native).
	HostClientID, HostSecret string
	// HTTP is the client for the host's own requests to the service (the
	// native-consent API and, for a public client signing in through the
	// bridge, the token request). Its transport reads the token responses
	// for the inspector (token.claims, grant), as it does for the demo
	// backends; nil lets the host use its own client.
	HTTP *http.Client
	// NetLog records the launch's consent flows in the playground's
	// network log (GET /api/flows); the Opener hands it to the host.
	NetLog *netlog.Launch
	// Start is the path and query the Miniapp starts on ("" its
	// start_url): a launch profile's.
	Start string
	// Network is the launch's network conditions for the Miniapp's view:
	// its profile's, else Config.Network.
	Network netshape.Conditions
}

// LaunchResult is the answer of POST /api/launch: the resolver's staged
// report and what became of the window.
type LaunchResult struct {
	// Launch names this launch ("launch-3"), as the resolve.stage events
	// it published do, so that the inspector groups them.
	Launch string           `json:"launch"`
	Report *resolver.Report `json:"report"`
	Window WindowStatus     `json:"window"`
	// Manifest and Client are what the resolver read, for the launcher's
	// manifest panel; nil when the resolver got no valid manifest or
	// client configuration (the report says why).
	Manifest *resolver.Manifest     `json:"manifest,omitempty"`
	Client   *resolver.ClientConfig `json:"client,omitempty"`
	// Icons are the manifest's icons, resolved against its URL, each with
	// the launcher path that serves it (GET /api/icon) or why it cannot.
	Icons []IconRef `json:"icons,omitempty"`
}

// WindowStatus says whether a launch reached a window.
type WindowStatus struct {
	// Available is whether this process has a window at all (an Opener).
	Available bool `json:"available"`
	// Opened is whether the Miniapp was mounted; View names its view.
	Opened bool   `json:"opened"`
	View   string `json:"view,omitempty"`
	// Message says what happened, for people.
	Message string `json:"message"`
	// TabURL is where a plain browser tab starts an accepted Miniapp
	// (its load_url: oauth.auth_url for a confidential client, else
	// start_url).
	TabURL string `json:"tab_url,omitempty"`
}

// Messages of WindowStatus, stable enough for tests to match.
const (
	msgNoWindow = "This process has no window (no desktop host is attached: no display, or a build without WebKitGTK). " +
		"The Miniapp was resolved and reported, not opened. Open it in a browser tab instead: it runs unchanged there " +
		"against the server's web sign-in and consent pages."
	msgRejected  = "Rejected: the Miniapp must not be opened."
	msgUndecided = "Undecided: no answer could be had; nothing was rejected. Try again when the server answers."
)

// ErrNoWindow is the error of the window actions (reset storage, the
// automation channel's view commands) in a playground without an Opener.
var ErrNoWindow = errors.New("playground: this process has no window: no desktop host is attached (no display, or a build without WebKitGTK)")

// Launch resolves the Miniapp id at origin, publishes each stage on the
// event bus, and, when it is accepted and the playground has an Opener,
// mounts it. A rejection or an undecided resolve is not an error: the
// report says it. The error is for input that cannot be resolved at all.
func (p *Playground) Launch(ctx context.Context, origin, id string) (*LaunchResult, error) {
	return p.launch(ctx, origin, id, launchOptions{})
}

// launchOptions are what a launch profile adds to a launch.
type launchOptions struct {
	subject, start string
	network        *netshape.Conditions // nil: Config.Network
}

func (p *Playground) launch(ctx context.Context, origin, id string, o launchOptions) (*LaunchResult, error) {
	origin, id = strings.TrimSpace(origin), strings.TrimSpace(id)
	if origin == "" || id == "" {
		return nil, errors.New("playground: launch needs an origin and an id")
	}
	app, err := p.res.Resolve(ctx, id, origin)
	var (
		rej *resolver.Rejection
		und *resolver.Undecided
		res = &LaunchResult{Launch: p.launches.next(), Window: WindowStatus{Available: p.cfg.Opener != nil}}
	)
	switch {
	case err == nil:
		res.Report = app.Report
		res.Window.TabURL = app.LoadURL.String()
		res.Manifest, res.Client = app.Manifest, app.Client
		res.Icons = p.launches.keep(res.Launch, app)
	case errors.As(err, &rej):
		res.Report, res.Window.Message = rej.Report, msgRejected
	case errors.As(err, &und):
		res.Report, res.Window.Message = und.Report, msgUndecided
	default:
		return nil, fmt.Errorf("playground: %w", err)
	}
	p.publishStages(res.Launch, res.Report)
	if err != nil {
		return res, nil
	}
	if p.cfg.Opener == nil {
		res.Window.Message = msgNoWindow
		return res, nil
	}
	hostID, hostSecret := p.HostCredential()
	network := p.cfg.Network
	if o.network != nil {
		network = *o.network
	}
	subject := o.subject
	if subject == "" {
		subject = p.Subject()
	}
	view, err := p.cfg.Opener.Mount(ctx, OpenRequest{Miniapp: app, Subject: subject, Services: p.Services(),
		HostClientID: hostID, HostSecret: hostSecret, HTTP: p.hostHTTP, Start: o.start, Network: network,
		NetLog: p.netlog.BeginLaunch(app.Origin.String(), app.Manifest.ID, app.Manifest.OAuth.ClientID)})
	if err != nil {
		res.Window.Message = "Accepted, but the window could not open it: " + err.Error()
		return res, nil
	}
	res.Window.Opened, res.Window.View = true, view
	res.Window.Message = fmt.Sprintf("Opened in the window (view %s), signing in as %s.", view, subject)
	return res, nil
}

// ResetStorage asks the window to forget what it keeps for a Miniapp.
func (p *Playground) ResetStorage(ctx context.Context, origin, id string) error {
	if p.cfg.Opener == nil {
		return ErrNoWindow
	}
	return p.cfg.Opener.ResetStorage(ctx, origin, id)
}

// ErrNoDevTools is the error of ShowDevTools when the window's Opener has
// no web inspector (it does not implement bridge.DevToolsController).
var ErrNoDevTools = errors.New("playground: this window has no web inspector")

// ShowDevTools asks the window to turn developer extras on in the
// Miniapp's view and show its web inspector (POST /api/devtools). The
// Opener must implement bridge.DevToolsController.
func (p *Playground) ShowDevTools(ctx context.Context, cmd bridge.ViewCommand) error {
	if p.cfg.Opener == nil {
		return ErrNoWindow
	}
	dt, ok := p.cfg.Opener.(bridge.DevToolsController)
	if !ok {
		return ErrNoDevTools
	}
	return dt.ShowDevTools(ctx, cmd)
}

// publishStages puts one resolve.stage event per stage that ran on the bus,
// each with every reason of its stage and the launch's name.
func (p *Playground) publishStages(launch string, rep *resolver.Report) {
	if rep == nil {
		return
	}
	for _, ev := range host.StageEvents(rep, rep.Origin, rep.ID, launch) {
		p.bus.Publish(ev)
	}
}

// Miniapps lists the launcher's Miniapps: the developer's own (Dev), the
// demos, the broken demos, and
// those published on the dashboard when Config.Published is set.
func (p *Playground) Miniapps(ctx context.Context) ([]Entry, error) {
	out := p.world.demos()
	p.mu.Lock()
	if p.dev != nil {
		out = append([]Entry{*p.dev}, out...)
	}
	p.mu.Unlock()
	for _, b := range p.broken {
		e := b.entry
		exp := *b.entry.Expect
		e.Expect = &exp
		out = append(out, e)
	}
	if p.cfg.Published == nil {
		return out, nil
	}
	pub, err := p.cfg.Published(ctx)
	if err != nil {
		return out, fmt.Errorf("playground: published Miniapps: %w", err)
	}
	for _, e := range pub {
		e.Kind = KindPublished
		out = append(out, e)
	}
	return out, nil
}
