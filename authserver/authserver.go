// Package authserver is the embedded reference authorization server: it
// implements the service of docs/service.md on the developer's machine so
// that a Miniapp can be developed end to end with nothing outside, and it
// can be deployed, several instances behind a reverse proxy on one
// PostgreSQL database (docs/deploy.md). Start opens the database (loading
// the seed world on first start) and serves each role on its own origin
// (loopback ones by default), as in production: the service (authorization
// server and {base_url}), the dashboard ({dashboard_url}), and the example
// signing and invoicing providers.
//
// The roles live in sub-packages: store (SQLite or PostgreSQL), seed (the
// seed world), oauth (the OAuth/OIDC endpoints, native-consent API, grant
// endpoint and the three checks of docs/service.md §1), dashboard (the
// client configuration API, onboarding and operator review), devctl (a
// development server's controls), httplimit (the listeners' limits) and
// providers (the example Resource Servers). Approved Resource Servers extend the catalog in force, rebuilt
// from the database at every start.
package authserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
	"github.com/miniapp-host/miniapp-host/authserver/devctl"
	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/metrics"
	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/providers"
	"github.com/miniapp-host/miniapp-host/authserver/seed"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
)

// Paths of the resource addresses on their origins: {base_url} is the
// service origin plus BankPath, and each provider's resource address is its
// origin plus ProviderPath.
const (
	BankPath     = "/bank"
	ProviderPath = "/api"
)

// Default addresses of `miniapp-host serve`: the service, then the
// dashboard, signing and invoicing roles on the next ports.
const (
	DefaultServiceAddr   = "127.0.0.1:8600"
	DefaultDashboardAddr = "127.0.0.1:8601"
	DefaultSigningAddr   = "127.0.0.1:8602"
	DefaultInvoicingAddr = "127.0.0.1:8603"
)

// DefaultDB is the database file in the user's data directory:
// $XDG_DATA_HOME/miniapp-host/authserver.db, else ~/.local/share/... on
// Unix, or the OS's per-user configuration directory elsewhere.
func DefaultDB() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if runtime.GOOS != "linux" || err != nil {
			if dir, err = os.UserConfigDir(); err != nil {
				return "", fmt.Errorf("authserver: no data directory: %w", err)
			}
		} else {
			dir = filepath.Join(home, ".local", "share")
		}
	}
	return filepath.Join(dir, "miniapp-host", "authserver.db"), nil
}

// Config configures Start.
type Config struct {
	// DB is the SQLite database file, created with the seed world when it
	// does not exist; or a postgres:// URL of a database that several
	// instances may share (docs/authserver.md, "Several instances").
	// Required.
	DB string
	// ServiceAddr, DashboardAddr, SigningAddr and InvoicingAddr are the
	// listen addresses of the roles; "" means "127.0.0.1:0", a free
	// loopback port.
	ServiceAddr, DashboardAddr, SigningAddr, InvoicingAddr string
	// Issuer is the service's public address, the issuer identifier (RFC
	// 8414 §2): an absolute http(s) URL without query or fragment, written
	// canonically, possibly with a path (Validate). Discovery, every
	// endpoint, the iss of tokens and {base_url} (Issuer + BankPath) follow
	// from it; with a path, the service serves its routes below that path,
	// so a reverse proxy forwards them unchanged. Empty means
	// "http://" + the service's listen address, as on a developer's
	// machine.
	Issuer string
	// DashboardURL, SigningURL and InvoicingURL are the public origins of
	// the dashboard ({dashboard_url}) and of the example providers, whose
	// resource addresses are the origin + ProviderPath: each
	// scheme://host[:port] without path. Empty means "http://" + the
	// role's listen address.
	DashboardURL, SigningURL, InvoicingURL string
	// ReadyTimeout bounds the database query of GET /readyz; zero means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Listen opens the listeners; nil means net.Listen.
	Listen func(network, address string) (net.Listener, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand is the source of secrets, codes and tokens; nil means
	// crypto/rand.Reader.
	Rand io.Reader
	// Logger receives internal errors; nil discards them.
	Logger *slog.Logger
	// OperatorKey fixes the operator credential of the dashboard's review
	// API (docs/dashboard.md), of at least MinSecretBits (SecretRule);
	// empty means a new random key at each start,
	// read it from Server.OperatorKey. Only its hash is stored. On a shared
	// database an empty OperatorKey keeps the key another instance set (and
	// Server.OperatorKey is then empty); a new one is made only when the
	// database has none.
	OperatorKey string
	// Secrets fixes the secrets of seeded confidential clients, by client
	// id; each of at least MinSecretBits (SecretRule), and naming a seeded
	// confidential client still in the database. Every other seeded confidential client gets a fresh random secret
	// at each start (read it from Credentials): the database keeps only
	// hashes, so a secret cannot be shown again later. On a shared
	// database, only a client without a secret gets one; a secret another
	// instance set is kept, and empty in Credentials. The example
	// providers read grants with their clients' secrets, so instances that
	// share a database should all be given those of signing-provider and
	// invoicing-provider.
	Secrets map[string]string
	// DashboardOrigins are origins, beside the dashboard's own, whose web
	// pages may change state through the dashboard API (a front end served
	// elsewhere); each a bare origin such as "http://localhost:5173". Empty
	// means none: the CLI and other programs, which send no Origin header,
	// need none (docs/dashboard.md, "Requests from browsers").
	DashboardOrigins []string
	// TrustAnyProxy allows HTTP.TrustedProxies wider than one host outside
	// the private networks (Validate refuses them otherwise): every peer
	// in such a range may name any client in X-Forwarded-For.
	TrustAnyProxy bool
	// HTTP bounds every listener (service, dashboard, providers): header,
	// body and idle timeouts, the header size and the concurrent
	// connections per source address; zero fields take httplimit's
	// defaults (docs/authserver.md, Limits).
	HTTP httplimit.Config
	// OAuth tunes the token lifetimes and limits; its Issuer, Catalog,
	// Store, Now, Rand and Logger are set by Start.
	OAuth oauth.Config
	// PurgeEvery is how often codes and tokens long expired are deleted
	// (store.Purge), starting at Start; zero means every 10 minutes, a
	// negative value never.
	PurgeEvery time.Duration
	// PurgeKeep is how long past their expiry codes and tokens are kept, so
	// that a replayed code still revokes its grant and an expired token is
	// still named expired; zero means 24 hours.
	PurgeKeep time.Duration
	// MetricsAddr, when set, serves the Prometheus metrics of this
	// instance (package metrics; docs/deploy.md, "Metrics") at
	// metrics.Path on this HOST:PORT, which must be on loopback unless
	// MetricsPublic; "" serves none and records none.
	MetricsAddr string
	// MetricsPublic allows a MetricsAddr off loopback.
	MetricsPublic bool
	// EventsKeep is how many audit events the database keeps, the newest
	// (docs/deploy.md, "Audit events"); zero means audit.DefaultKeep.
	EventsKeep int
	// EventsOff records no audit event (the events API answers 503
	// events_unavailable): the cost benchmarks' server without them.
	EventsOff bool
}

// URLs are the public addresses of a running server: Config's public
// addresses, or those derived from the listeners.
type URLs struct {
	Issuer           string `json:"issuer"`
	BaseURL          string `json:"base_url"`
	Dashboard        string `json:"dashboard_url"`
	SigningBaseURL   string `json:"signing_base_url"`
	InvoicingBaseURL string `json:"invoicing_base_url"`
	Discovery        string `json:"discovery"`
	Authorization    string `json:"authorization_endpoint"`
	Token            string `json:"token_endpoint"`
	Grant            string `json:"grant_endpoint"`
	Native           string `json:"native_consent_endpoint"`
	PAR              string `json:"pushed_authorization_request_endpoint"`
	// Metrics is the Prometheus metrics' URL on the metrics listener
	// (Config.MetricsAddr), "" without one.
	Metrics string `json:"metrics,omitempty"`
}

// ListenAddrs are the addresses a running server's roles listen on
// (host:port, the ports actually bound), whatever their public addresses.
type ListenAddrs struct {
	Service   string `json:"service"`
	Dashboard string `json:"dashboard"`
	Signing   string `json:"signing"`
	Invoicing string `json:"invoicing"`
	Metrics   string `json:"metrics,omitempty"` // Config.MetricsAddr's listener; "" without one
}

// Credential is a client with its secret for this run (empty for a public
// client).
type Credential struct {
	ClientID       string   `json:"client_id"`
	ClientSecret   string   `json:"client_secret,omitempty"`
	Type           string   `json:"client_type"`
	Name           string   `json:"name"`
	RedirectURIs   []string `json:"redirect_uris"`
	AllowedOrigins []string `json:"allowed_origins"`
	Roles          []string `json:"roles,omitempty"`
	// SecretGiven is true when ClientSecret is the one Config.Secrets
	// gave, false when this start made it: a caller prints only the
	// secrets it did not give (serve).
	SecretGiven bool `json:"-"`
}

// The store is the storage the OAuth server and the dashboard declare
// (oauth/storage.go, dashboard/storage.go): each group of theirs is served
// by one part of the store, and the whole *store.Store is what New takes.
var (
	_ oauth.Clients         = (*store.ClientStore)(nil)
	_ oauth.World           = (*store.WorldStore)(nil)
	_ oauth.Reviews         = (*store.ReviewStore)(nil)
	_ oauth.FlowState       = (*store.FlowStore)(nil)
	_ oauth.Grants          = (*store.GrantStore)(nil)
	_ oauth.Consents        = (*store.ConsentStore)(nil)
	_ oauth.Keys            = (*store.KeyStore)(nil)
	_ oauth.Settings        = (*store.ReviewStore)(nil)
	_ oauth.PushedRequests  = (*store.FlowStore)(nil)
	_ oauth.UsedIDs         = (*store.FlowStore)(nil)
	_ oauth.Instances       = (*store.Store)(nil)
	_ oauth.Storage         = (*store.Store)(nil)
	_ dashboard.Projects    = (*store.WorldStore)(nil)
	_ dashboard.Credentials = (*store.ClientStore)(nil)
	_ dashboard.Reviews     = (*store.ReviewStore)(nil)
	_ dashboard.Settings    = (*store.ReviewStore)(nil)
	_ dashboard.Storage     = (*store.Store)(nil)
)

// Server is a running reference server.
type Server struct {
	st      *store.Store
	cat     *catalog.Catalog
	oauth   *oauth.Server
	servers []*http.Server
	urls    URLs
	listen  ListenAddrs
	health  *health
	creds   []Credential
	rand    io.Reader
	opKey   string
	warns   []string      // Warnings
	clock   *devctl.Clock // the development clock; nil unless the issuer is on loopback
	events  *audit.Recorder

	stopPurge chan struct{} // closed by Shutdown
	purgeDone chan struct{} // closed when the purge loop has returned
	catMu     sync.Mutex    // serialises refreshCatalog

	shutdownOnce sync.Once
	shutdownErr  error // Shutdown's result, for every later call
}

// role is one listener and what it serves.
type role struct {
	name string
	ln   net.Listener
	h    http.Handler
}

// fillDefaults gives cfg the listener and the randomness Start uses when
// it names none.
func (cfg *Config) fillDefaults() {
	if cfg.Listen == nil {
		cfg.Listen = net.Listen
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
}

// listenAll listens on every role's address and, with mx, the metrics'
// (nil without): all of them, or none.
func listenAll(cfg Config, mx *metrics.Metrics) ([]*role, net.Listener, error) {
	roles, err := listenRoles(cfg)
	if err != nil {
		return nil, nil, err
	}
	metricsLn, err := listenMetrics(cfg, mx)
	if err != nil {
		closeRoles(roles)
		return nil, nil, err
	}
	return roles, metricsLn, nil
}

// Start opens the database, listens on every role's address and serves
// until Close.
func Start(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.DB == "" {
		return nil, errors.New("authserver: Config.DB is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fillDefaults()
	mx, err := newMetrics(cfg)
	if err != nil {
		return nil, err
	}
	// The database first: a second server on the same file is refused
	// with its owner's name and addresses, before it competes for ports.
	st, err := store.OpenWith(ctx, cfg.DB, store.Options{Logger: cfg.Logger, Metrics: mx})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	roles, metricsLn, err := listenAll(cfg, mx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			closeRoles(roles)
			if metricsLn != nil {
				metricsLn.Close()
			}
		}
	}()
	s := &Server{rand: cfg.Rand, st: st}
	if !cfg.EventsOff {
		s.events = audit.New(audit.Config{Store: st, Metrics: mx, Logger: cfg.Logger, Now: cfg.Now, Keep: cfg.EventsKeep})
	}
	defer func() {
		if err != nil {
			s.events.Close()
		}
	}()
	s.setAddresses(cfg, roles)
	s.cat, err = catalog.New(catalog.Endpoints{BaseURL: s.urls.BaseURL, SigningBaseURL: s.urls.SigningBaseURL,
		InvoicingBaseURL: s.urls.InvoicingBaseURL})
	if err != nil {
		return nil, fmt.Errorf("authserver: %w", err)
	}
	if err := s.seed(ctx, cfg); err != nil {
		return nil, err
	}
	if err := s.checkRegistrations(ctx, cfg.Logger); err != nil {
		return nil, err
	}
	// A server whose issuer is on loopback is a development or test one:
	// its clients' jwks_uri may be on loopback too (docs/fapi.md, "Keys at
	// a jwks_uri"), and it has the development controls (package devctl:
	// its clock, faults, fixtures, explain), which a deployed one never has.
	local := loopbackURL(s.urls.Issuer)
	var faults *devctl.Faults // in memory: a restart has none
	oc := cfg.OAuth
	if local {
		s.clock = devctl.NewClockOn(cfg.Now)
		cfg.Now = s.clock.Now
		faults = devctl.NewFaults()
		oc.Faults = faults
	}
	oc.Issuer, oc.Catalog, oc.Store, oc.Now, oc.Rand, oc.Logger = s.urls.Issuer, s.cat, s.st, cfg.Now, cfg.Rand, cfg.Logger
	oc.TrustedProxies = cfg.HTTP.TrustedProxies
	oc.Store, oc.Metrics, oc.Events = meterStorage(s.st, mx), mx, s.events
	oc.FAPI.LocalJWKSURI = oc.FAPI.LocalJWKSURI || local
	if s.oauth, err = oauth.New(ctx, oc); err != nil {
		return nil, err
	}
	// The approved Resource Servers' permissions live in the database; the
	// catalog in force is rebuilt from them at every start (docs/service.md §5.8).
	if err := s.extendCatalog(ctx, cfg.Logger); err != nil {
		return nil, err
	}
	s.followReviews(cfg.Logger)
	s.urls.Discovery = s.oauth.DiscoveryEndpoint()
	s.urls.Authorization, s.urls.Token = s.oauth.AuthorizationEndpoint(), s.oauth.TokenEndpoint()
	s.urls.Grant, s.urls.Native, s.urls.PAR = s.oauth.GrantEndpoint(), s.oauth.NativeEndpoint(), s.oauth.PAREndpoint()

	roles[0].h = s.events.Wrap(s.oauth.Handler(), false)
	if roles[1].h, err = s.dashboardHandler(cfg, oc.FAPI.LocalJWKSURI, faults); err != nil {
		return nil, err
	}
	roles[1].h = s.events.Wrap(roles[1].h, true)
	if roles[2].h, roles[3].h, err = s.providerHandlers(cfg, faults); err != nil {
		return nil, err
	}
	// The lock note names the listeners: a developer who meets the lock
	// looks for a process on this machine.
	if err := s.st.Announce(map[string]string{"service": "http://" + s.listen.Service, "dashboard": "http://" + s.listen.Dashboard,
		"signing": "http://" + s.listen.Signing, "invoicing": "http://" + s.listen.Invoicing}); err != nil {
		return nil, err
	}
	s.serve(cfg, roles, mx, metricsLn)
	return s, nil
}

// listenRoles listens on the four roles' addresses (a free loopback port
// where none is configured), in the order service, dashboard, signing,
// invoicing. On failure it closes the listeners it opened.
func listenRoles(cfg Config) ([]*role, error) {
	var roles []*role
	for _, a := range []struct{ name, addr string }{{"service", cfg.ServiceAddr}, {"dashboard", cfg.DashboardAddr},
		{"signing", cfg.SigningAddr}, {"invoicing", cfg.InvoicingAddr}} {
		if a.addr == "" {
			a.addr = "127.0.0.1:0"
		}
		ln, err := cfg.Listen("tcp", a.addr)
		if err != nil {
			closeRoles(roles)
			return nil, fmt.Errorf("authserver: listen for %s on %s: %w", a.name, a.addr, err)
		}
		roles = append(roles, &role{name: a.name, ln: ln})
	}
	return roles, nil
}

// closeRoles closes the roles' listeners.
func closeRoles(roles []*role) {
	for _, r := range roles {
		r.ln.Close()
	}
}

// setAddresses records the listeners' addresses and derives every
// advertised address from them: the public ones when configured, else the
// listeners' (a developer's machine).
func (s *Server) setAddresses(cfg Config, roles []*role) {
	s.listen = ListenAddrs{Service: roles[0].ln.Addr().String(), Dashboard: roles[1].ln.Addr().String(),
		Signing: roles[2].ln.Addr().String(), Invoicing: roles[3].ln.Addr().String()}
	issuer := cfg.Issuer
	if issuer == "" {
		issuer = "http://" + s.listen.Service
	}
	s.urls = URLs{
		Issuer: issuer, BaseURL: issuer + BankPath, Dashboard: publicOrigin(cfg.DashboardURL, s.listen.Dashboard),
		SigningBaseURL:   publicOrigin(cfg.SigningURL, s.listen.Signing) + ProviderPath,
		InvoicingBaseURL: publicOrigin(cfg.InvoicingURL, s.listen.Invoicing) + ProviderPath,
	}
}

// publicOrigin is the configured public origin of a role, else its
// listener's.
func publicOrigin(configured, listen string) string {
	if configured == "" {
		return "http://" + listen
	}
	o, _ := canonicalOrigin(configured) // Validate accepted it
	return o
}

// followReviews keeps the catalog in force in step with the review
// decisions of other instances on a shared database (store.OnChange).
func (s *Server) followReviews(logger *slog.Logger) {
	s.st.OnChange(func(c store.Change) {
		if c.Kind == store.ChangedReview || c.Kind == store.ChangedAll {
			go func() {
				if err := s.refreshCatalog(context.Background(), logger); err != nil && logger != nil {
					logger.Error("authserver: rebuilding the catalog after a review decision", "err", err)
				}
			}()
		}
	})
}

// dashboardHandler builds the dashboard role's handler, with the
// development controls when faults is not nil (a loopback issuer).
func (s *Server) dashboardHandler(cfg Config, localJWKSURI bool, faults *devctl.Faults) (http.Handler, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	dc := dashboard.Config{Store: s.st, Catalog: s.oauth.Catalog, SetCatalog: s.oauth.SetCatalog,
		InvalidateClient: s.oauth.InvalidateClient, Now: now, Rand: cfg.Rand, Logger: cfg.Logger,
		Origin: s.urls.Dashboard, AllowedOrigins: cfg.DashboardOrigins, Issuer: s.urls.Issuer,
		LocalJWKSURI: localJWKSURI, Events: s.events}
	if s.st.Shared() {
		// An approval extends the catalog every instance approved.
		dc.RefreshCatalog = func(ctx context.Context) error { return s.refreshCatalog(ctx, cfg.Logger) }
	}
	if faults != nil {
		ctl, err := devctl.New(devctl.Config{Clock: s.clock, Logger: cfg.Logger, Faults: faults,
			Fixtures: s.st, Authority: s.oauth, Explain: explainFor(s.oauth)})
		if err != nil {
			return nil, fmt.Errorf("authserver: %w", err)
		}
		dc.Dev = ctl.Handler()
	}
	if err := dc.Validate(); err != nil {
		return nil, fmt.Errorf("authserver: %w", err)
	}
	return dashboard.New(dc).Handler(), nil
}

// providerHandlers builds the example Resource Servers' handlers. They
// read grants over HTTP with their own credential, exactly as a
// third-party Resource Server would, but from this process's own service
// listener: behind a reverse proxy the public grant endpoint may not be
// reachable from the instance (a TLS certificate it does not trust, a
// network it is not on), and every instance answers for the same database.
func (s *Server) providerHandlers(cfg Config, faults *devctl.Faults) (signing, invoicing http.Handler, err error) {
	iu, err := url.Parse(s.urls.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("authserver: issuer: %w", err)
	}
	localGrant := "http://" + s.listen.Service + iu.Path + strings.TrimPrefix(s.urls.Grant, s.urls.Issuer)
	pc := func(clientID, endpoint string) providers.Config {
		cred, _ := s.Credential(clientID)
		c := providers.Config{Catalog: s.cat, Now: cfg.Now, Log: cfg.Logger,
			Grants: &providers.GrantClient{Endpoint: localGrant, ClientID: cred.ClientID, ClientSecret: cred.ClientSecret}}
		if faults != nil {
			c.Faults = faults.Provider(endpoint, s.oauth.DPoPNonce)
		}
		return c
	}
	if signing, err = providers.NewSigning(pc("signing-provider", devctl.FaultSigning)); err != nil {
		return nil, nil, err
	}
	if invoicing, err = providers.NewInvoicing(pc("invoicing-provider", devctl.FaultInvoicing)); err != nil {
		return nil, nil, err
	}
	return signing, invoicing, nil
}

// serve serves every role behind the health gate and the connection
// limits of cfg.HTTP (each counted by mx), the metrics on metricsLn (when
// not nil), and starts the purge loop.
func (s *Server) serve(cfg Config, roles []*role, mx *metrics.Metrics, metricsLn net.Listener) {
	s.health = &health{ping: s.st.Ping, timeout: cfg.ReadyTimeout, log: cfg.Logger}
	if s.health.timeout <= 0 {
		s.health.timeout = DefaultReadyTimeout
	}
	var errorLog *log.Logger
	if cfg.Logger != nil {
		errorLog = slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)
	}
	hc := cfg.HTTP.WithDefaults()
	for _, r := range roles {
		hs := httplimit.Server(mx.Wrap(r.name, s.health.wrap(r.h), HealthPath, ReadyPath), hc, errorLog)
		s.servers = append(s.servers, hs)
		go hs.Serve(httplimit.NewListener(r.ln, hc.MaxConnsPerSource, hc.TrustedProxies))
	}
	if metricsLn != nil {
		s.serveMetrics(mx, metricsLn, hc, errorLog)
	}
	s.stopPurge, s.purgeDone = make(chan struct{}), make(chan struct{})
	go s.purgeLoop(cfg)
}

// purgeLoop deletes long-expired codes and tokens at start and then every
// cfg.PurgeEvery, until Close.
func (s *Server) purgeLoop(cfg Config) {
	defer close(s.purgeDone)
	every, keep, now := cfg.PurgeEvery, cfg.PurgeKeep, cfg.Now
	if every < 0 {
		return
	}
	if every == 0 {
		every = 10 * time.Minute
	}
	if keep <= 0 {
		keep = 24 * time.Hour
	}
	if now == nil {
		now = time.Now
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := s.st.Purge(context.Background(), now(), keep); err != nil && cfg.Logger != nil {
			cfg.Logger.Error("authserver: purging expired codes and tokens", "err", err)
		}
		select {
		case <-s.stopPurge:
			return
		case <-t.C:
		}
	}
}

// refreshCatalog rebuilds the catalog in force from the database: after a
// review decision of another instance, and around this one's approvals on
// a shared database (dashboard.Config.RefreshCatalog). Rebuilds run one at
// a time, each reading the database afresh, so that the one left in force
// is never older than an earlier one.
func (s *Server) refreshCatalog(ctx context.Context, log *slog.Logger) error {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	return s.extendCatalog(ctx, log)
}

// extendCatalog puts in force the base catalog extended with every
// approved Resource Server. A declaration the catalog now refuses (a name
// taken by a newer catalog) is logged and left out rather than stopping
// the server.
func (s *Server) extendCatalog(ctx context.Context, log *slog.Logger) error {
	decls, err := dashboard.ApprovedDeclarations(ctx, s.st, "")
	if err != nil || len(decls) == 0 {
		return err
	}
	cat := s.cat
	for _, d := range decls {
		ext, err := cat.Extend(d)
		if err != nil {
			if log != nil {
				log.WarnContext(ctx, "authserver: approved Resource Server left out of the catalog", "id", d.ID, "err", err)
			}
			continue
		}
		cat = ext
	}
	return s.oauth.SetCatalog(cat)
}

// seed loads the seed world into a new database, the seeded projects'
// policies into a database that has none, the operator credential, and sets
// the secrets of the seeded confidential clients for this run; under
// store.Exclusive, so that instances starting at once on a shared database
// seed it once between them.
//
// Secrets are kept only as hashes, so a random one is new at each start.
// On a shared database a secret (or the operator key) is set only when the
// database has none or Config gives one: otherwise every instance that
// starts would replace the credentials the others handed out. Such a
// credential is then unknown to this instance (empty in Credentials and
// OperatorKey).
func (s *Server) seed(ctx context.Context, cfg Config) error {
	w, err := seed.Read()
	if err != nil {
		return err
	}
	return s.st.Exclusive(ctx, func() error { return s.seedLocked(ctx, cfg, w) })
}

// seedLocked seeds under store.Exclusive (seed).
func (s *Server) seedLocked(ctx context.Context, cfg Config, w *seed.World) error {
	empty, err := s.st.Empty(ctx)
	if err != nil {
		return err
	}
	if empty {
		if err := w.Load(ctx, s.st); err != nil {
			return err
		}
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	if err := w.LoadPolicies(ctx, s.st, now()); err != nil {
		return err
	}
	if err := s.seedOperatorKey(ctx, cfg); err != nil {
		return err
	}
	return s.seedSecrets(ctx, cfg, w)
}

// seedOperatorKey sets the operator credential. Like the seeded clients'
// secrets, it is new at each start unless fixed, because only its hash is
// kept; on a shared database one another instance set is kept (unknown
// here).
func (s *Server) seedOperatorKey(ctx context.Context, cfg Config) error {
	keep := false
	if s.opKey = cfg.OperatorKey; s.opKey == "" && s.st.Shared() {
		_, err := s.st.Setting(ctx, dashboard.OperatorKeySetting)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		keep = err == nil
	}
	if s.opKey == "" && !keep {
		var err error
		if s.opKey, err = s.newSecret(); err != nil {
			return err
		}
	}
	if s.opKey == "" {
		return nil
	}
	return s.st.PutSetting(ctx, dashboard.OperatorKeySetting, store.Hash(s.opKey))
}

// seedSecrets sets the secrets of the seeded confidential clients still
// in the database and records every seeded client's credential; every
// secret Config gives must have found its client.
func (s *Server) seedSecrets(ctx context.Context, cfg Config, w *seed.World) error {
	for _, wc := range w.Clients {
		c, err := s.st.Client(ctx, wc.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // removed by the developer
		} else if err != nil {
			return err
		}
		cred := credentialOf(c)
		if c.Type == store.Confidential {
			if err := s.seedSecret(ctx, cfg, c, &cred); err != nil {
				return err
			}
		}
		s.creds = append(s.creds, cred)
	}
	// Validate checked the ids against the seed world; the database may
	// no longer have one of them as a confidential client.
	for id := range cfg.Secrets {
		if !slices.ContainsFunc(s.creds, func(c Credential) bool { return c.ClientID == id && c.SecretGiven }) {
			return &SettingError{Field: "Secrets", Key: id, Rule: "the database has no confidential client of this id (removed, or made public, since it was seeded)"}
		}
	}
	return nil
}

// seedSecret sets the secret of one seeded confidential client: the one
// Config gives, else a new one, except on a shared database where another
// instance set one (then unknown here, and cred keeps no secret).
func (s *Server) seedSecret(ctx context.Context, cfg Config, c *store.Client, cred *Credential) error {
	secret, ok := cfg.Secrets[c.ID]
	switch {
	case ok:
		cred.SecretGiven = true
	case s.st.Shared() && len(c.SecretHash) > 0:
		return nil // set by another instance; unknown here
	default:
		var err error
		if secret, err = s.newSecret(); err != nil {
			return err
		}
	}
	if err := s.st.SetClientSecret(ctx, c.ID, store.Hash(secret)); err != nil {
		return err
	}
	cred.ClientSecret = secret
	return nil
}

func credentialOf(c *store.Client) Credential {
	return Credential{ClientID: c.ID, Type: string(c.Type), Name: c.Name, RedirectURIs: slices.Clone(c.RedirectURIs),
		AllowedOrigins: slices.Clone(c.AllowedOrigins), Roles: slices.Clone(c.Roles)}
}

func (s *Server) newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(s.rand, b); err != nil {
		return "", fmt.Errorf("authserver: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// checkRegistrations checks the redirect URIs of every registered client
// with the dashboard's one check (dashboard.RedirectURIWarnings): one that
// two URL parsers read differently, or that is not written as a browser
// writes it, is a warning naming its client, logged and kept for Warnings.
func (s *Server) checkRegistrations(ctx context.Context, log *slog.Logger) error {
	clients, err := s.st.Clients(ctx)
	if err != nil {
		return err
	}
	s.warns = dashboard.RedirectURIWarnings(clients)
	for _, w := range s.warns {
		if log != nil {
			log.Warn("authserver: a registered redirect URI breaks the redirect URI rules (docs/dashboard.md); register it again as said", "problem", w)
		}
	}
	return nil
}

// Warnings returns what the server found wrong in its database at start
// and serves nonetheless: registered redirect URIs that the dashboard
// would refuse today, each naming its client and the fix.
func (s *Server) Warnings() []string { return slices.Clone(s.warns) }

// OperatorKey returns the operator credential of this run: the Bearer key
// of the dashboard's review API.
func (s *Server) OperatorKey() string { return s.opKey }

// Clock is the development clock every endpoint reads (package devctl),
// or nil on a server whose issuer is not on loopback.
func (s *Server) Clock() *devctl.Clock { return s.clock }

// URLs returns the server's public addresses.
func (s *Server) URLs() URLs { return s.urls }

// ListenAddrs returns the addresses the roles listen on.
func (s *Server) ListenAddrs() ListenAddrs { return s.listen }

// Catalog returns the catalog in force: the catalog built for the server's
// endpoints, extended with the approved Resource Servers.
func (s *Server) Catalog() *catalog.Catalog { return s.oauth.Catalog() }

// Credentials returns the seeded clients with their secrets for this run.
func (s *Server) Credentials() []Credential { return slices.Clone(s.creds) }

// Credential returns one client of Credentials.
func (s *Server) Credential(clientID string) (Credential, bool) {
	for _, c := range s.creds {
		if c.ClientID == clientID {
			return c, true
		}
	}
	return Credential{}, false
}

// ClientSpec describes a client to register.
type ClientSpec struct {
	ID             string
	Name           string
	Confidential   bool
	RedirectURIs   []string
	AllowedOrigins []string
	// IDTokenAlg signs the client's ID tokens: RS256 when empty, or ES256
	// or EdDSA (store.IDTokenAlgs).
	IDTokenAlg string
	// JWKS, when set, makes a confidential client authenticate with
	// private_key_jwt (RFC 7523) by these public keys, a JWK Set (RFC
	// 7517 §5) checked as the dashboard checks it; it gets no secret.
	JWKS json.RawMessage
	// Profile is "" or "fapi2" (with JWKS): PAR, DPoP-bound tokens and
	// private_key_jwt required (docs/fapi.md, "The fapi2 profile").
	Profile string

	secretHash []byte // RegisterDevClient: the secret kept on update
}

// RegisterClient adds or replaces an OAuth client under the demo project,
// for Miniapps whose loopback origin is known only at run time (the
// playground's demo Miniapps, tests). A confidential client gets a fresh
// secret, returned once.
func (s *Server) RegisterClient(ctx context.Context, spec ClientSpec) (Credential, error) {
	return s.registerClient(ctx, spec, demoProjectID, false)
}

// Seeded projects that RegisterClient and RegisterDevClient register under.
const (
	demoProjectID = "prj_demo"
	// DevProjectID is the development project of `miniapp-host dev`: the
	// seed approves for it every permission of the built-in catalog, as an
	// operator's review would for a real project (docs/your-miniapp.md).
	DevProjectID = "prj_dev"
)

// ClientTakenError is RegisterDevClient's answer for a client id that
// belongs to another project than the development one: a developer's
// manifest may not take over a client of the demos or of a real project.
type ClientTakenError struct {
	ClientID, ProjectID string
}

func (e *ClientTakenError) Error() string {
	return fmt.Sprintf("authserver: client %q belongs to project %s, not to the development project %s: choose another oauth.client_id",
		e.ClientID, e.ProjectID, DevProjectID)
}

// RegisterDevClient creates or updates the client of a Miniapp in
// development under the development project (DevProjectID). Updating keeps
// a confidential client's secret, so that a backend given it keeps working
// while the developer edits the manifest; the secret is returned only when
// it is new (a new client, or a public one turned confidential).
func (s *Server) RegisterDevClient(ctx context.Context, spec ClientSpec) (Credential, error) {
	old, err := s.st.Client(ctx, spec.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s.registerClient(ctx, spec, DevProjectID, false)
	case err != nil:
		return Credential{}, fmt.Errorf("authserver: %w", err)
	case old.ProjectID != DevProjectID:
		return Credential{}, &ClientTakenError{ClientID: spec.ID, ProjectID: old.ProjectID}
	}
	keep := spec.Confidential && old.Type == store.Confidential && len(old.SecretHash) > 0
	if keep {
		spec.secretHash = old.SecretHash
	}
	return s.registerClient(ctx, spec, DevProjectID, keep)
}

func (s *Server) registerClient(ctx context.Context, spec ClientSpec, projectID string, keepSecret bool) (Credential, error) {
	if err := checkClientSpec(spec); err != nil {
		return Credential{}, err
	}
	set, err := clientSettings(spec)
	if err != nil {
		return Credential{}, err
	}
	c := &store.Client{ID: spec.ID, ProjectID: projectID, Name: spec.Name, Type: store.Public,
		RedirectURIs: spec.RedirectURIs, AllowedOrigins: spec.AllowedOrigins, IDTokenAlg: spec.IDTokenAlg}
	if c.Name == "" {
		c.Name = spec.ID
	}
	var secret string
	switch {
	case set.JWKS != nil:
		c.Type = store.Confidential // private_key_jwt: no secret
	case spec.Confidential && keepSecret:
		c.Type, c.SecretHash = store.Confidential, spec.secretHash
	case spec.Confidential:
		if secret, err = s.newSecret(); err != nil {
			return Credential{}, err
		}
		c.Type, c.SecretHash = store.Confidential, store.Hash(secret)
	}
	// The settings first: a client never exists without them (a
	// replaced client's old settings are replaced too).
	if err := s.st.PutClientSettings(ctx, c.ID, set); err != nil {
		return Credential{}, err
	}
	if err := s.st.PutClient(ctx, c); err != nil {
		return Credential{}, err
	}
	s.oauth.InvalidateClient(c.ID)
	cred := credentialOf(c)
	cred.ClientSecret = secret
	return cred, nil
}

// checkClientSpec checks a client's id, ID token algorithm and redirect
// URIs.
func checkClientSpec(spec ClientSpec) error {
	if spec.ID == "" || strings.ContainsAny(spec.ID, "/?#") {
		return fmt.Errorf("authserver: client id %q is empty or not URL-safe", spec.ID)
	}
	if spec.IDTokenAlg != "" && !slices.Contains(store.IDTokenAlgs, spec.IDTokenAlg) {
		return fmt.Errorf("authserver: client %q: ID token algorithm %q is not one of %s", spec.ID, spec.IDTokenAlg,
			strings.Join(store.IDTokenAlgs, ", "))
	}
	for _, raw := range spec.RedirectURIs {
		if err := dashboard.CheckRedirectURI(raw); err != nil {
			return fmt.Errorf("authserver: client %q: redirect URI %q: %w", spec.ID, raw, err)
		}
	}
	return nil
}

// clientSettings reads a client's keys and profile: keys need a
// confidential client, and the FAPI 2.0 profile needs keys.
func clientSettings(spec ClientSpec) (store.ClientSettings, error) {
	if spec.JWKS == nil && spec.Profile == "" {
		return store.ClientSettings{}, nil
	}
	if !spec.Confidential || spec.JWKS == nil {
		return store.ClientSettings{}, fmt.Errorf("authserver: client %q: keys (JWKS) need a confidential client, and the %q profile needs keys", spec.ID, spec.Profile)
	}
	if spec.Profile != "" && spec.Profile != store.ProfileFAPI2 {
		return store.ClientSettings{}, fmt.Errorf("authserver: client %q: profile %q is not %q or empty", spec.ID, spec.Profile, store.ProfileFAPI2)
	}
	if err := dashboard.CheckJWKS(spec.JWKS); err != nil {
		return store.ClientSettings{}, fmt.Errorf("authserver: client %q: jwks: %w", spec.ID, err)
	}
	return store.ClientSettings{JWKS: spec.JWKS, Profile: spec.Profile}, nil
}

// Drain turns readiness (GET /readyz) to 503 "shutting down" while every
// other route keeps serving: a reverse proxy that checks readiness stops
// sending new requests here before Shutdown refuses them. It cannot be
// undone; Shutdown drains too.
func (s *Server) Drain() { s.health.draining.Store(true) }

// Shutdown stops the server gracefully: it drains (Drain), closes every
// listener at once, so that new connections are refused, lets the requests
// in flight finish (http.Server.Shutdown) until ctx ends, cuts the
// connections of those still running then, stops the purge loop and
// closes the database. It returns an error when requests were cut off or
// the database did not close cleanly; later calls return the first call's
// result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.Drain()
	s.events.StopFollowers() // an event stream never ends by itself
	names := []string{"service", "dashboard", "signing", "invoicing", "metrics"}
	errs := make([]error, len(s.servers))
	var wg sync.WaitGroup
	for i, hs := range s.servers {
		wg.Go(func() {
			if err := hs.Shutdown(ctx); err != nil {
				hs.Close()
				errs[i] = fmt.Errorf("authserver: %s: requests still running at the shutdown deadline were cut off: %w", names[i], err)
			}
		})
	}
	wg.Wait()
	close(s.stopPurge)
	<-s.purgeDone
	s.events.Close() // what is queued is stored before the store closes
	return errors.Join(append(errs, s.st.Close())...)
}

// Events is the server's audit event log (docs/deploy.md, "Audit events").
func (s *Server) Events() *audit.Recorder { return s.events }

// Close shuts the server down (Shutdown), giving requests in flight at
// most 5 seconds.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Shutdown(ctx)
}

// loopbackURL reports whether raw is a URL on a loopback host (localhost,
// 127.0.0.0/8, ::1).
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	ip := net.ParseIP(h)
	return h == "localhost" || ip != nil && ip.IsLoopback()
}
