package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/metrics"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/origin"
)

// Config configures a Server. Zero durations take the defaults named on
// each field.
type Config struct {
	// Issuer is the server's issuer identifier (RFC 8414 §2): an https or
	// loopback http URL without query or fragment, and without a final
	// "/". Required. With a path, every route is served below that path
	// (the RFC 8414 metadata at /.well-known/oauth-authorization-server
	// followed by the path, RFC 8414 §3.1), so that a reverse proxy passes
	// the public paths through unchanged.
	Issuer string
	// Catalog is the permission catalog; its BaseURL is {base_url}, the
	// resource address of the service. Required.
	Catalog *catalog.Catalog
	// Store holds clients, the world, keys, grants and tokens (storage.go
	// says what it must guarantee); package store's *Store is one.
	// Required.
	Store Storage

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand is the source of codes, tokens, ids and CSRF tokens; nil means
	// crypto/rand.Reader.
	Rand io.Reader
	// Logger receives internal errors; nil discards them.
	Logger *slog.Logger

	// CodeTTL is the authorization code lifetime; default 60s (RFC 6749
	// §4.1.2 recommends at most 10 minutes).
	CodeTTL time.Duration
	// AccessTokenTTL defaults to 10 minutes.
	AccessTokenTTL time.Duration
	// IDTokenTTL defaults to 10 minutes.
	IDTokenTTL time.Duration
	// RefreshTokenTTL defaults to 30 days.
	RefreshTokenTTL time.Duration
	// ConsentTTL bounds how long a pending authorization request waits for
	// sign-in and a decision; default 10 minutes.
	ConsentTTL time.Duration
	// MaxPending caps the pending browser authorization requests held (in
	// memory, or in a shared database), all clients and sources together;
	// default 100,000. Native requests do not count against it.
	MaxPending int
	// MaxPendingPerClient caps the pending browser requests of one client;
	// default 10,000.
	MaxPendingPerClient int
	// MaxPendingPerSource caps the pending browser requests of one source
	// IP address; default 1,000.
	MaxPendingPerSource int
	// MaxPendingPerHost caps the pending requests of one host client of the
	// native-consent API, which are counted apart from browser requests;
	// default 10,000.
	MaxPendingPerHost int
	// MaxSessionsPerSource caps the browser sessions of one source IP
	// address, signed-in and not apart; default 1,000 each.
	MaxSessionsPerSource int
	// MaxSessions caps the browser sessions in all, signed-in and not
	// apart; default 250,000 each.
	MaxSessions int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the source of a request for the per-source quotas (httplimit.Proxies);
	// none by default: the source is the peer.
	TrustedProxies httplimit.Proxies
	// SessionTTL is how long a signed-in browser session lasts; default 12
	// hours. A session not signed in lasts ConsentTTL: it serves only the
	// sign-in of a pending request.
	SessionTTL time.Duration

	// FAPI configures PAR and DPoP (docs/fapi.md).
	FAPI FAPIConfig

	// Faults, on a development server only, injects QA's faults at the
	// endpoints (faults.go); nil injects none.
	Faults FaultHook

	// Metrics counts sign-ins, consent decisions and tokens (docs/deploy.md, "Metrics"); nil counts none.
	Metrics *metrics.Metrics
	// Events records the audit events (docs/deploy.md, "Audit events"), and counts in Metrics what they decide; nil records none.
	Events *audit.Recorder
}

// BaseURL is {base_url}: the catalog's banking resource address.
func (c Config) baseURL() string { return strings.TrimSuffix(c.Catalog.Endpoints().BaseURL, "/") }

// withDefaults is c with the defaults named on each field in place of
// zero values.
func (c Config) withDefaults() Config {
	cfg := c
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.CodeTTL, time.Minute)
	def(&cfg.AccessTokenTTL, 10*time.Minute)
	def(&cfg.IDTokenTTL, 10*time.Minute)
	def(&cfg.RefreshTokenTTL, 30*24*time.Hour)
	def(&cfg.ConsentTTL, 10*time.Minute)
	defN := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	defN(&cfg.MaxPending, 100_000)
	defN(&cfg.MaxPendingPerClient, 10_000)
	defN(&cfg.MaxPendingPerSource, 1_000)
	defN(&cfg.MaxPendingPerHost, 10_000)
	defN(&cfg.MaxSessionsPerSource, 1_000)
	defN(&cfg.MaxSessions, 250_000)
	def(&cfg.SessionTTL, 12*time.Hour)
	return cfg
}

// base is what every handler shares and none owns: the configuration's
// values, the issuer's paths, the catalog in force, the client cache, the
// pages' templates and the DPoP nonce key, with the helpers that write
// answers and errors. It holds no storage: each handler names the storage
// it uses in its own fields.
type base struct {
	cfg     Config
	log     *slog.Logger
	clients *clientCache
	pages   *pages
	// nonceKey authenticates DPoP server nonces (dpop.go).
	nonceKey []byte

	issuerURL *url.URL
	prefix    string // the issuer's path, below which every route is served ("" for none)
	basePath  string // path of {base_url} on the issuer's origin

	// cat is the catalog in force (Server.SetCatalog), shared with the
	// Server.
	cat *atomic.Pointer[catalog.Catalog]
}

// catalog returns the catalog in force.
func (s *base) catalog() *catalog.Catalog { return s.cat.Load() }

// Server serves the OAuth/OIDC endpoints. Build it with New.
type Server struct {
	*base
	keys     atomic.Pointer[keySet]
	keysMu   sync.Mutex   // serialises reloadKeys
	pending  pendingStore // in memory, or in a shared database (flowstate.go)
	sessions sessionStore
	store    Storage

	// The pieces the handlers share (fapi.go, replay.go, clientauth.go,
	// dpop.go, grant.go).
	sec    *securityCache
	replay *replayGuard
	auth   *clientAuth
	dpop   *dpopVerifier
	tokens *bearerTokens

	// The handlers.
	requests  *authzRequests    // authorize.go
	flow      *consentFlow      // authorize.go, checks.go
	token     *tokenHandler     // token.go, introspect.go
	sess      *browserSessions  // sessions.go
	browser   *browserHandler   // pages.go, authorize.go
	native    *nativeHandler    // native.go, consents.go
	connected *connectedHandler // connected.go
	grantMgmt *grantMgmtHandler // grantmgmt.go
	resource  *resourceHandler  // grant.go, charge.go
	par       *parHandler       // par.go

	// cat is the catalog in force and metadata its discovery document.
	// SetCatalog swaps both when the operator approves a Resource Server
	// (docs/service.md §5.8), so a request is checked against one catalog throughout
	// and discovery never advertises a type the catalog would refuse.
	cat      atomic.Pointer[catalog.Catalog]
	metadata atomic.Pointer[[]byte]
}

// New checks the configuration, loads (or on first start creates) the
// signing keys and returns a server.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Issuer == "" || cfg.Catalog == nil || cfg.Store == nil {
		return nil, errors.New("oauth: Issuer, Catalog and Store are required")
	}
	iu, err := url.Parse(cfg.Issuer)
	if err != nil || (iu.Scheme != "https" && iu.Scheme != "http") || iu.Host == "" || iu.RawQuery != "" || iu.Fragment != "" ||
		strings.HasSuffix(cfg.Issuer, "/") {
		return nil, fmt.Errorf("oauth: issuer %q must be an http(s) URL without query, fragment or final slash", cfg.Issuer)
	}
	cfg = cfg.withDefaults()
	bu, err := url.Parse(cfg.baseURL())
	if err != nil || !origin.SameOrigin(bu, iu) || !strings.HasPrefix(bu.Path, iu.Path+"/") {
		return nil, fmt.Errorf("oauth: base_url %q must be below the issuer %q", cfg.baseURL(), cfg.Issuer)
	}
	s := &Server{store: cfg.Store}
	s.base = &base{
		cfg:       cfg,
		log:       cfg.Logger,
		clients:   newClientCache(cfg.Store),
		issuerURL: iu,
		prefix:    iu.Path,
		basePath:  strings.TrimSuffix(bu.Path, "/"),
		cat:       &s.cat,
	}
	// No handler reaches the whole store: each is given, in wire, the
	// narrow interfaces it declares.
	s.base.cfg.Store = nil
	if err := s.initFAPI(ctx); err != nil {
		return nil, err
	}
	ks, err := loadKeys(ctx, cfg.Store, cfg.Now)
	if err != nil {
		return nil, err
	}
	s.keys.Store(ks)
	s.wire(cfg.Store)
	cfg.Store.OnChange(s.changed)
	if err := s.SetCatalog(cfg.Catalog); err != nil {
		return nil, err
	}
	s.pages, err = loadPages()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// wire builds the shared pieces and the handlers, each given the part of
// st it uses (the narrow interfaces declared beside each handler).
func (s *Server) wire(st Storage) {
	s.auth = &clientAuth{base: s.base, sec: s.sec, replay: s.replay, jwks: newJWKSCache(s.cfg.FAPI.LocalJWKSURI, s.cfg.Now)}
	s.dpop = &dpopVerifier{base: s.base, sec: s.sec, replay: s.replay}
	s.tokens = &bearerTokens{base: s.base, st: st}
	s.requests = &authzRequests{base: s.base, st: st, sec: s.sec}
	s.sessions, s.pending = newFlowState(s.cfg, st, s.requests.validateAuthorize)
	s.flow = &consentFlow{base: s.base, st: st, sec: s.sec, requests: s.requests, pending: s.pending}
	s.sess = &browserSessions{base: s.base, sessions: s.sessions}
	s.browser = &browserHandler{base: s.base, st: st, sess: s.sess, requests: s.requests, flow: s.flow, pending: s.pending}
	s.native = &nativeHandler{base: s.base, st: st, auth: s.auth, requests: s.requests, flow: s.flow, pending: s.pending}
	s.token = &tokenHandler{base: s.base, st: st, auth: s.auth, dpop: s.dpop, tokens: s.tokens, sec: s.sec, keys: &s.keys}
	s.connected = &connectedHandler{base: s.base, st: st, sess: s.sess}
	s.grantMgmt = &grantMgmtHandler{base: s.base, st: st, dpop: s.dpop, tokens: s.tokens}
	s.resource = &resourceHandler{base: s.base, auth: s.auth, dpop: s.dpop, tokens: s.tokens}
	s.par = &parHandler{base: s.base, st: st, auth: s.auth, dpop: s.dpop, requests: s.requests}
}

// SetCatalog puts a catalog in force: Config.Catalog extended with the
// approved Resource Servers (catalog.Extend). Its endpoints must be those of
// Config.Catalog. Requests already pending keep the catalog they were
// checked with.
func (s *Server) SetCatalog(c *catalog.Catalog) error {
	if c.Endpoints() != s.cfg.Catalog.Endpoints() {
		return errors.New("oauth: SetCatalog: the catalog's endpoints differ from the server's")
	}
	md, err := s.buildMetadata(c)
	if err != nil {
		return err
	}
	// The two stores are not one atomic step; for an instant discovery may
	// lag the catalog, never lead it, because the catalog is set first and
	// an approval only ever adds permissions.
	s.cat.Store(c)
	s.metadata.Store(&md)
	return nil
}

// Catalog returns the catalog in force.
func (s *Server) Catalog() *catalog.Catalog { return s.cat.Load() }

// Endpoint paths below the issuer (Server.path).
const (
	pathOIDCConfig  = "/.well-known/openid-configuration"
	pathASMetadata  = "/.well-known/oauth-authorization-server"
	pathJWKS        = "/oauth/jwks"
	pathAuthorize   = "/oauth/authorize"
	pathToken       = "/oauth/token"
	pathUserinfo    = "/oauth/userinfo"
	pathIntrospect  = "/oauth/introspect"
	pathRevoke      = "/oauth/revoke"
	pathLogin       = "/oauth/login"
	pathConsent     = "/oauth/consent"
	pathStatic      = "/oauth/static/"
	pathNative      = "/native/requests"
	grantPathSuffix = "/authorization" // appended to {base_url}'s path
)

// endpoint returns the absolute URL of an endpoint path.
func (s *base) endpoint(path string) string { return s.cfg.Issuer + path }

// path returns the path an endpoint is served at on the issuer's origin:
// below the issuer's own path, if it has one.
func (s *base) path(p string) string { return s.prefix + p }

// DiscoveryEndpoint is the OpenID Connect discovery document's URL: the
// issuer followed by /.well-known/openid-configuration (OpenID Connect
// Discovery 1.0 §4).
func (s *Server) DiscoveryEndpoint() string { return s.endpoint(pathOIDCConfig) }

// AuthorizationEndpoint is the URL hosts watch for: navigations to it are
// authorization requests.
func (s *Server) AuthorizationEndpoint() string { return s.endpoint(pathAuthorize) }

// TokenEndpoint is the token endpoint's URL.
func (s *Server) TokenEndpoint() string { return s.endpoint(pathToken) }

// PAREndpoint is the pushed authorization request endpoint (RFC 9126 §2).
func (s *Server) PAREndpoint() string { return s.endpoint(pathPAR) }

// NativeEndpoint is the native-consent API's collection URL.
func (s *Server) NativeEndpoint() string { return s.endpoint(pathNative) }

// GrantEndpoint is GET {base_url}/authorization.
func (s *Server) GrantEndpoint() string { return s.cfg.baseURL() + grantPathSuffix }

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	return mux
}

// routes registers every handler of the service origin, below the
// issuer's path. The comments name the routes of an issuer without path.
func (s *Server) routes(mux *http.ServeMux) {
	// GET {issuer}/.well-known/openid-configuration (OpenID Connect
	// Discovery 1.0 §4) and the RFC 8414 document, whose well-known
	// segment goes before the issuer's path (RFC 8414 §3.1); with no path
	// both are at the root.
	mux.HandleFunc("GET "+s.path(pathOIDCConfig), s.handleMetadata)
	mux.HandleFunc("GET "+pathASMetadata+s.prefix, s.handleMetadata)
	// GET /oauth/jwks
	mux.HandleFunc("GET "+s.path(pathJWKS), s.handleJWKS)
	// GET and POST /oauth/authorize (OIDC Core §3.1.2.1 allows both).
	mux.HandleFunc("GET "+s.path(pathAuthorize), s.browser.handleAuthorize)
	mux.HandleFunc("POST "+s.path(pathAuthorize), s.browser.handleAuthorize)
	// GET and POST /oauth/login: pick a seeded subject.
	mux.HandleFunc("GET "+s.path(pathLogin), s.browser.handleLoginPage)
	mux.HandleFunc("POST "+s.path(pathLogin), s.browser.handleLoginSubmit)
	// GET and POST /oauth/consent: the browser consent page.
	mux.HandleFunc("GET "+s.path(pathConsent), s.browser.handleConsentPage)
	mux.HandleFunc("POST "+s.path(pathConsent), s.browser.handleConsentSubmit)
	// GET /oauth/static/: the pages' stylesheet.
	mux.HandleFunc("GET "+s.path(pathStatic+"{file}"), s.browser.handleStatic)
	// The subject's Connected Miniapps page and its JSON API (connected.go).
	s.connected.routes(mux)
	// POST /oauth/token
	mux.HandleFunc("POST "+s.path(pathToken), s.token.handleToken)
	// GET and POST /oauth/userinfo (OIDC Core §5.3.1).
	mux.HandleFunc("GET "+s.path(pathUserinfo), s.token.handleUserinfo)
	mux.HandleFunc("POST "+s.path(pathUserinfo), s.token.handleUserinfo)
	// OPTIONS /oauth/token, /oauth/revoke and /oauth/userinfo: the CORS
	// preflight of browser-based public clients (cors.go); no other
	// endpoint answers one.
	mux.HandleFunc("OPTIONS "+s.path(pathToken), handlePreflight("POST"))
	mux.HandleFunc("OPTIONS "+s.path(pathRevoke), handlePreflight("POST"))
	mux.HandleFunc("OPTIONS "+s.path(pathUserinfo), handlePreflight("GET, POST"))
	// POST /oauth/introspect (RFC 7662).
	mux.HandleFunc("POST "+s.path(pathIntrospect), s.token.handleIntrospect)
	// POST /oauth/revoke (RFC 7009).
	mux.HandleFunc("POST "+s.path(pathRevoke), s.token.handleRevoke)
	// POST /native/requests: a host submits a caught authorization request.
	mux.HandleFunc("POST "+s.path(pathNative), s.native.handleNativeSubmit)
	// POST /native/requests/{id}/decision: the host posts the subject's decision.
	mux.HandleFunc("POST "+s.path(pathNative+"/{id}/decision"), s.native.handleNativeDecision)
	// GET /native/consents?subject=S: the subject's remembered consents.
	mux.HandleFunc("GET "+s.path("/native/consents"), s.native.handleConsents)
	// DELETE /native/consents/{client_id}?subject=S: revoke a consent.
	mux.HandleFunc("DELETE "+s.path("/native/consents/{client_id}"), s.native.handleRevokeConsent)
	// GET {base_url}/authorization (docs/service.md §4.1).
	mux.HandleFunc("GET "+s.basePath+grantPathSuffix, s.resource.handleGrant)
	// POST {base_url}/automatic-charges: a charge within the grant's
	// transaction limits (docs/service.md §2.4).
	mux.HandleFunc("POST "+s.basePath+pathCharges, s.resource.handleCharge)
	// The FAPI 2.0 endpoints (fapi.go).
	s.fapiRoutes(mux)
	// GET and DELETE {grant_management_endpoint}/{grant_id} (grantmgmt.go).
	s.grantMgmt.routes(mux)
}

// randomToken returns n random bytes, base64url-encoded without padding.
func (s *base) randomToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.cfg.Rand, b); err != nil {
		return "", fmt.Errorf("oauth: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// resourceOf fills the placeholders of a Resource Server client's stored
// resource ("{signing_base_url}"...), which the seed keeps unfilled because
// the providers' ports may change between starts.
func (s *base) resourceOf(c *store.Client) string {
	return s.fill(c.Resource)
}

// fill replaces the endpoint placeholders of seeded values ({base_url},
// {signing_base_url}, {signing_origin}...) with this run's addresses.
func (s *base) fill(v string) string { return s.cfg.Catalog.Fill(v) }

// clientCache keeps clients in memory: the token and grant endpoints read a
// client on every request, and clients change only through Invalidate.
// It holds at most maxClientCacheBytes (estimated); past that it starts
// again empty, which bounds it without bookkeeping (the clients a server
// serves are few, and reading one again costs one query).
type clientCache struct {
	st    clientSource
	mu    sync.RWMutex // guards m, gen and bytes
	m     map[string]*store.Client
	gen   uint64 // incremented by every invalidation
	bytes int
}

// maxClientCacheBytes bounds the client cache: a client with its redirect
// URIs and origins takes about 1 kB.
const maxClientCacheBytes = 4 << 20

// clientSize estimates the memory a cached client holds.
func clientSize(c *store.Client) int {
	n := 256 + 2*len(c.ID) + len(c.ProjectID) + len(c.Name) + len(c.SecretHash) + len(c.Resource) + len(c.IDTokenAlg)
	for _, l := range [][]string{c.RedirectURIs, c.AllowedOrigins, c.Roles} {
		for _, x := range l {
			n += 16 + len(x)
		}
	}
	return n
}

// clientSource is what the client cache reads.
type clientSource interface {
	Clients
	Cacheable() bool
}

func newClientCache(st clientSource) *clientCache {
	return &clientCache{st: st, m: map[string]*store.Client{}}
}

// get returns a client, or store.ErrNotFound.
func (c *clientCache) get(ctx context.Context, id string) (*store.Client, error) {
	c.mu.RLock()
	cl, ok := c.m[id]
	gen := c.gen
	c.mu.RUnlock()
	if ok && c.st.Cacheable() {
		return cl, nil
	}
	cl, err := c.st.Client(ctx, id)
	if err != nil {
		return nil, err
	}
	size := clientSize(cl)
	c.mu.Lock()
	// A client invalidated while it was read may be the old one: keep it
	// for this request only.
	if c.gen == gen {
		if c.bytes+size > maxClientCacheBytes {
			clear(c.m)
			c.bytes = 0
		}
		if old, ok := c.m[id]; ok {
			c.bytes -= clientSize(old)
		}
		c.m[id] = cl
		c.bytes += size
	}
	c.mu.Unlock()
	return cl, nil
}

// changed brings the caches of this package in line with a change that
// another process made to a shared database (store.OnChange): a client
// changed, a key was added (every instance then signs with the newest key
// of each algorithm and publishes all of them), or anything may have.
func (s *Server) changed(c store.Change) {
	switch c.Kind {
	case store.ChangedClient:
		if c.Key != "" {
			s.InvalidateClient(c.Key)
			return
		}
		s.invalidateClients()
	case store.ChangedAll:
		s.invalidateClients()
		go s.reloadKeys()
	case store.ChangedKeys:
		// Off the listener's goroutine: reading the keys is a query.
		go s.reloadKeys()
	}
}

// reloadKeys reads the keys again after another process added one.
func (s *Server) reloadKeys() {
	// Every algorithm's key exists since this server's start, so reading is
	// all there is to do: no cross-process lock (loadKeys takes one to
	// create keys). keysMu keeps an older read from replacing a newer one.
	s.keysMu.Lock()
	defer s.keysMu.Unlock()
	ks, err := loadKeysLocked(context.Background(), s.store, s.cfg.Now)
	if err != nil {
		if s.log != nil {
			s.log.Error("oauth: reloading the signing keys", "err", err)
		}
		return
	}
	s.keys.Store(ks)
}

func (s *Server) invalidateClients() {
	s.sec.forget("")
	s.clients.mu.Lock()
	s.clients.gen++
	clear(s.clients.m)
	s.clients.bytes = 0
	s.clients.mu.Unlock()
}

// InvalidateClient drops a cached client; call it after changing the
// client in the store.
func (s *Server) InvalidateClient(id string) {
	s.sec.forget(id)
	s.clients.mu.Lock()
	s.clients.gen++
	if old, ok := s.clients.m[id]; ok {
		s.clients.bytes -= clientSize(old)
		delete(s.clients.m, id)
	}
	s.clients.mu.Unlock()
}
