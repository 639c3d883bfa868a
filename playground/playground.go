package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/devctl"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/launchprofile"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/netshape"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/resolver"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// Addrs are the listen addresses of everything the playground serves. Each
// "" means "127.0.0.1:0", a free loopback port. Every address must be a
// loopback address: the launcher and the automation channel can open
// Miniapps and approve consent.
type Addrs struct {
	// Service, Dashboard, Signing and Invoicing are the reference
	// server's roles (authserver.Config).
	Service, Dashboard, Signing, Invoicing string
	// Launcher serves the launcher page and its API.
	Launcher string
	// Automation is the automation channel's WebSocket.
	Automation string
	// Public and Confidential are the two demo Miniapps, FAPI the demo
	// on the FAPI 2.0 profile (docs/fapi.md).
	Public, Confidential, FAPI string
	// Broken are the broken demo Miniapps, in the order of [BrokenKinds];
	// missing entries mean free ports.
	Broken []string
	// Dev is where `miniapp-host dev` serves a developer's folder (package
	// devapp): Start does not listen there, but checks it as it checks the
	// others, so that it collides with none of them.
	Dev string
}

// Config configures [Start]. The zero value starts everything on free
// loopback ports with a fresh database.
type Config struct {
	// DataDir holds the reference server's database (authserver.db),
	// created with the seed world when missing. "": a fresh temporary
	// folder that Close removes, so each run starts from the seed world.
	DataDir string
	// Addrs are the listen addresses; see [Addrs].
	Addrs Addrs
	// Opener mounts accepted Miniapps in a desktop window (package host).
	// Nil: launches resolve and report, and say that this process has no
	// window.
	Opener Opener
	// Published lists the Miniapps published on the dashboard, shown in
	// the launcher beside the demos. Nil: those approved on the
	// playground's own dashboard (GET {dashboard_url}/api/miniapps).
	Published func(ctx context.Context) ([]Entry, error)
	// Bus carries the host's events to the automation channel and the
	// inspector. Nil: Start makes one. Give the same Bus to the host's
	// window (host.Options.Events) so that its events reach the inspector.
	Bus *bridge.Bus
	// Subject is who signs in on the host's consent screen at first;
	// the launcher's subject switcher changes it. "": the first seeded
	// subject.
	Subject string
	// HTTP sends the resolver's requests and the inspector's grant reads;
	// nil means a client of the playground's own. Its transport also
	// carries the demo Miniapps' token requests (observed for the
	// inspector).
	HTTP *http.Client
	// Now is the clock of the event bus, the resolver and the server; nil
	// means time.Now.
	Now func() time.Time
	// Logger receives internal errors of every part; nil discards them.
	Logger *slog.Logger
	// HostSecret fixes the secret of the host's own credential
	// (miniapp-host) for the native-consent API, so that a separate
	// `miniapp-host open --dashboard <this dashboard>`, given the same
	// secret in MINIAPP_HOST_SECRET, can complete consents. "": a fresh
	// random secret at each start, read it from HostCredential.
	HostSecret string
	// OperatorKey fixes the operator credential of the playground's
	// dashboard (authserver.Config.OperatorKey), so that `miniapp-host
	// review ... --dashboard <its dashboard_url>` can be given a key known
	// before the start. "": a fresh random key at each start, read it from
	// Playground.OperatorKey.
	OperatorKey string
	// History is how many recent events GET /api/events keeps for a
	// launcher that connects late; 0 means 500.
	History int
	// Profiles is the launch profiles file (package launchprofile);
	// "" means launchprofile.DefaultPath() when Start runs.
	Profiles string
	// Network is the network conditions of every launch whose profile
	// names none (`playground --network`, `--mock`; docs/playground.md,
	// "Network conditions and mocks").
	Network netshape.Conditions
	// Traces records the reference server's spans (authserver.Config.Traces;
	// docs/deploy.md, "Traces"); nil: none. The caller shuts it down.
	Traces *telemetry.Provider
	// TraceUI is the address of a trace's page in a trace UI, with
	// telemetry.TraceIDPlaceholder for its id (telemetry.CheckTraceUI):
	// the inspector links each flow's trace there (docs/playground.md,
	// "Inspector"); "": trace ids without links.
	TraceUI string
}

// Playground is a running playground. Close stops every part.
type Playground struct {
	cfg      Config
	bus      *bridge.Bus
	world    *world
	broken   []*brokenApp
	res      *resolver.Resolver
	auto     *bridge.Automation
	launcher *http.Server
	mux      *http.ServeMux // the launcher's routes
	ln       net.Listener
	origin   string // the launcher's origin, e.g. http://127.0.0.1:8700
	history  *history
	obs      *observer // the demo backends' token requests
	hostObs  *observer // the host's own token requests (OpenRequest.HTTP)
	hostHTTP *http.Client
	launches launchLog
	netlog   *netlog.Log
	follow   *followers // the Server events streams (serverevents.go)
	tempDir  string

	mu      sync.Mutex // guards below
	subject string
	dev     *Entry // the Miniapp of Dev, once launched
}

// Start starts the reference server, the demo and broken Miniapps, the
// automation channel and the launcher, and returns once all of them accept
// connections. ctx bounds the start only; Close stops everything.
func Start(ctx context.Context, cfg Config) (_ *Playground, err error) {
	p := &Playground{cfg: cfg.withDefaults()}
	if err := p.cfg.Addrs.validate(); err != nil {
		return nil, err
	}
	p.bus = cfg.Bus
	if p.bus == nil {
		p.bus = bridge.NewBus(p.cfg.Now)
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	dir, err := p.dataDir()
	if err != nil {
		return nil, err
	}

	// The launcher listens first: its origin is the one page origin the
	// automation channel lets in.
	if p.ln, err = net.Listen("tcp", orFree(cfg.Addrs.Launcher)); err != nil {
		return nil, fmt.Errorf("playground: listen for the launcher: %w", err)
	}
	p.origin = "http://" + p.ln.Addr().String()

	p.netlog = netlog.New(netlog.Config{Events: p.bus, Now: p.cfg.Now, Creator: "miniapp-host playground"})
	p.obs = &observer{bus: p.bus, base: p.cfg.HTTP.Transport, client: p.cfg.HTTP, log: p.cfg.Logger, netlog: p.netlog}
	if p.world, err = startWorld(ctx, worldConfig{
		db: filepath.Join(dir, "authserver.db"), addrs: cfg.Addrs, now: cfg.Now, logger: p.cfg.Logger, obs: p.obs,
		hostSecret: cfg.HostSecret, operatorKey: cfg.OperatorKey, traces: cfg.Traces,
	}); err != nil {
		return nil, err
	}
	// The inspector shows the development clock's offset: every change,
	// by the automation channel, the CLI or the dashboard API, is an event.
	p.world.srv.Clock().OnChange(func(st devctl.ClockState) { p.bus.Publish(ClockEvent(st)) })
	// The host publishes token.issued for the tokens it obtains itself
	// (the bridge's authorize): its observer adds the claims and grant.
	p.hostObs = &observer{bus: p.bus, base: p.cfg.HTTP.Transport, client: p.cfg.HTTP, log: p.cfg.Logger,
		token: p.obs.token, grant: p.obs.grant, hostIssues: true}
	p.hostHTTP = &http.Client{Transport: p.hostObs, Timeout: 30 * time.Second}
	if p.cfg.Published == nil {
		p.cfg.Published = p.dashboardMiniapps
	}
	if p.broken, err = startBroken(ctx, p.world, cfg.Addrs.Broken); err != nil {
		return nil, err
	}
	p.subject = cfg.Subject
	if p.subject == "" && len(p.world.subjects) > 0 {
		p.subject = p.world.subjects[0].ID
	}

	if p.res, err = resolver.New(resolver.Config{Dashboard: p.world.urls.Dashboard, HTTPClient: p.cfg.HTTP, Now: p.cfg.Now}); err != nil {
		return nil, fmt.Errorf("playground: %w", err)
	}
	p.history = newHistory(p.bus, p.cfg.History)

	if p.auto, err = bridge.NewAutomation(bridge.AutomationConfig{Addr: cfg.Addrs.Automation, AllowedOrigins: []string{p.origin},
		Bus: p.bus, Controller: &controller{p: p}, Logger: p.cfg.Logger}); err != nil {
		return nil, fmt.Errorf("playground: %w", err)
	}
	if err := p.auto.Listen(); err != nil {
		return nil, fmt.Errorf("playground: %w", err)
	}

	p.follow = newFollowers()
	p.mux = p.routes()
	p.launcher = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(p.cfg.Logger.Handler(), slog.LevelWarn)}
	go p.launcher.Serve(p.ln)
	return p, nil
}

// withDefaults fills in what Config leaves out: the clock, a silent
// logger, 500 events of history, an HTTP client with a 30 s timeout and
// the default launch profiles file.
func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.History <= 0 {
		c.History = 500
	}
	if c.HTTP == nil {
		c.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if c.Profiles == "" {
		c.Profiles = launchprofile.DefaultPath()
	}
	return c
}

// dataDir makes the data folder: Config.DataDir, else a temporary one
// that Close removes.
func (p *Playground) dataDir() (string, error) {
	dir := p.cfg.DataDir
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("playground: data dir: %w", err)
		}
		return dir, nil
	}
	var err error
	if p.tempDir, err = os.MkdirTemp("", "miniapp-host-playground-"); err != nil {
		return "", fmt.Errorf("playground: data dir: %w", err)
	}
	return p.tempDir, nil
}

// validate refuses an address that is not on loopback, and two parts on
// one port (Addrs.Check).
func (a Addrs) validate() error {
	for _, n := range a.named() {
		if n.addr == "" {
			continue
		}
		if err := origin.CheckLoopbackAddr(n.addr); err != nil {
			return fmt.Errorf("playground: %s: %w", n.name, err)
		}
	}
	return a.Check()
}

func orFree(addr string) string {
	if addr == "" {
		return "127.0.0.1:0"
	}
	return addr
}

// Close stops the launcher, the automation channel, the Miniapps and the
// server, and removes a temporary data folder.
func (p *Playground) Close() error {
	var errs []error
	// The playground's own client may hold a connection to its servers that
	// never carried a request: two requests at once to one server make it
	// dial twice, and when the first connection comes back idle and takes
	// the second request, the other one waits in the pool. A server's
	// Shutdown counts such a connection (http.StateNew) as active until it
	// is 5 s old, past the deadlines below. The client is ours: closing its
	// idle connections ends them, and each Shutdown returns when its last
	// response is out.
	p.cfg.HTTP.CloseIdleConnections()
	if p.follow != nil {
		// The pages' event streams end now, not at the launcher's deadline.
		p.follow.stop()
	}
	if p.launcher != nil {
		// A browser's preconnected sockets count as active for 5 s: after
		// the grace period the launcher closes what is left.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := p.launcher.Shutdown(ctx); err != nil {
			errs = append(errs, p.launcher.Close())
		}
		cancel()
	} else if p.ln != nil {
		p.ln.Close()
	}
	if p.auto != nil {
		errs = append(errs, p.auto.Close())
	}
	if p.history != nil {
		p.history.close()
	}
	for _, b := range p.broken {
		errs = append(errs, b.close())
	}
	if p.world != nil {
		errs = append(errs, p.world.close())
	}
	for _, o := range []*observer{p.obs, p.hostObs} {
		if o != nil {
			o.wait()
		}
	}
	if p.tempDir != "" {
		errs = append(errs, os.RemoveAll(p.tempDir))
	}
	return errors.Join(errs...)
}

// Bus is the event bus of the automation channel and the inspector.
func (p *Playground) Bus() *bridge.Bus { return p.bus }

// NetLog is the network log of the consent flows of the Miniapps launched
// in the window (GET /api/flows).
func (p *Playground) NetLog() *netlog.Log { return p.netlog }

// LauncherURL is the launcher page, with the automation token in the
// fragment: the page needs it for its API and its WebSocket, and a fragment
// is never sent to a server nor written to its logs. Show it only to the user
// who started the playground.
func (p *Playground) LauncherURL() string { return p.origin + "/#token=" + p.auto.Token() }

// LauncherOrigin is the launcher's origin, without the token.
func (p *Playground) LauncherOrigin() string { return p.origin }

// AutomationURL and AutomationToken are how a program reaches the
// automation channel (docs/automation.md).
func (p *Playground) AutomationURL() string { return p.auto.URL() }

// AutomationToken is the automation channel's token; see AutomationURL.
func (p *Playground) AutomationToken() string { return p.auto.Token() }

// Services are the reference server's addresses.
func (p *Playground) Services() Services { return p.world.urls }

// HostCredential is the host's own client credential for the
// native-consent API of this run.
func (p *Playground) HostCredential() (clientID, secret string) {
	return p.world.hostID, p.world.hostSecret
}

// HostSecretGiven reports whether the host's secret was given
// (Config.HostSecret), not made by this run: a given secret is never
// printed (docs/security.md, "Secrets"), as serve never prints one.
func (p *Playground) HostSecretGiven() bool { return p.cfg.HostSecret != "" }

// Subject is who signs in on the host's consent screen now.
func (p *Playground) Subject() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.subject
}

// SetSubject chooses who signs in on the host's consent screen from the next
// launch on; it must be one of Subjects.
func (p *Playground) SetSubject(id string) error {
	for _, s := range p.world.subjects {
		if s.ID == id {
			p.mu.Lock()
			p.subject = id
			p.mu.Unlock()
			return nil
		}
	}
	return fmt.Errorf("playground: no seeded subject %q", id)
}

// Subjects are the seeded subjects of the reference server.
func (p *Playground) Subjects() []Subject { return append([]Subject(nil), p.world.subjects...) }
