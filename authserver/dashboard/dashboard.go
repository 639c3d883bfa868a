// Package dashboard is the reference server's dashboard origin
// ({dashboard_url}): the public OAuth client configuration that hosts read
// when they resolve a Miniapp manifest (docs/service.md §4.2 and §2.10), and the JSON API
// of onboarding and review (docs/service.md §2.7, §5.8; docs/dashboard.md): projects and
// their OAuth credentials, scope policies, Resource Server declarations and
// published Miniapps' manifests, each approved or rejected by the operator.
//
// Two credentials open it, both random keys kept as SHA-256 hashes and
// compared in constant time: a project's own key (returned once when the
// project is created) for that project's routes, and the operator
// credential for review. There is no self-service approval: no project key
// opens a review route.
//
// What the dashboard keeps is declared in storage.go (Storage); package
// store implements it.
package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/origin"
)

// Config configures a Server. Only Store is required for the client
// configuration API; the onboarding API needs Catalog and SetCatalog too.
type Config struct {
	// Store holds projects, clients and submissions (storage.go says what
	// it must guarantee); package store's *Store is one.
	Store Storage
	// Catalog returns the catalog in force: policies are checked against
	// it and Resource Server declarations must not collide with it.
	Catalog func() *catalog.Catalog
	// SetCatalog puts an extended catalog in force when the operator
	// approves a Resource Server (discovery and request checking).
	SetCatalog func(*catalog.Catalog) error
	// RefreshCatalog, when set, puts in force the catalog rebuilt from the
	// approvals in the database, in place of SetCatalog: on a database
	// that several instances share, an approval then extends what every
	// instance approved, not only what this one knows.
	RefreshCatalog func(context.Context) error
	// InvalidateClient drops a client from the OAuth server's cache after
	// it changed; nil does nothing.
	InvalidateClient func(id string)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand is the source of ids, keys and secrets; nil means
	// crypto/rand.Reader.
	Rand io.Reader
	// Logger receives internal errors, never shown to callers; nil
	// discards them.
	Logger *slog.Logger
	// Origin is the dashboard's own origin ({dashboard_url}, such as
	// "http://127.0.0.1:8601"): a state-changing request whose Origin
	// header names it is accepted (gate.go). Empty accepts no browser
	// origin but those of AllowedOrigins.
	Origin string
	// AllowedOrigins are further origins whose pages may change state
	// through the dashboard API (a web front end on another port); each is
	// a bare origin that origin.Parse accepts. Empty means none.
	AllowedOrigins []string
	// Issuer is the issuer identifier (RFC 8414 section 2) of the
	// authorization server the dashboard's clients are registered with,
	// which GET /api/service names: a host that knows only the dashboard
	// finds the service there (docs/dashboard.md, "The service"). Empty:
	// that route answers 404 issuer_unknown.
	Issuer string
	// LocalJWKSURI accepts a credential's jwks_uri on a loopback or
	// private host (http on loopback included): development and tests,
	// where the authorization server fetches such URLs too
	// (oauth.FAPIConfig.LocalJWKSURI). Otherwise a jwks_uri is https on a
	// public host (docs/fapi.md, "Keys at a jwks_uri").
	LocalJWKSURI bool
	// Dev serves the development controls under /api/dev/ (package
	// devctl; docs/dashboard.md, "Development controls"), for the
	// operator credential only. Nil, as on every server whose issuer is
	// not on loopback, answers those routes 403 development_only.
	Dev http.Handler
	// Events is the audit event log of the events API (events.go) and
	// records the dashboard's own events; nil answers that API 503
	// events_unavailable.
	Events *audit.Recorder
}

// OperatorKeySetting is the store setting holding the SHA-256 hash of the
// operator credential.
const OperatorKeySetting = "operator_key_hash"

// Server serves the dashboard API.
type Server struct {
	cfg Config
	st  Storage
	log *slog.Logger

	// reviewMu serializes review decisions: approving a Resource Server
	// reads the catalog in force and puts an extended one in force, and two
	// approvals interleaved would lose one of them. Across instances on a
	// shared database, store.Exclusive does the same.
	reviewMu sync.Mutex

	own *origin.Origin // cfg.Origin parsed; nil when unset
}

// Validate reports a configured origin that origin.Parse refuses, and an
// Issuer that is not an absolute http(s) URL without query or fragment.
func (cfg *Config) Validate() error {
	if cfg.Issuer != "" {
		u, err := url.Parse(cfg.Issuer)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(cfg.Issuer, "#") {
			return fmt.Errorf("dashboard: issuer %q: want an absolute http(s) URL without user, query or fragment (RFC 8414 section 2)", cfg.Issuer)
		}
	}
	for _, raw := range append([]string{cfg.Origin}, cfg.AllowedOrigins...) {
		if raw == "" {
			continue
		}
		if _, err := origin.Parse(raw); err != nil {
			return fmt.Errorf("dashboard: allowed origin %q: %w", raw, err)
		}
	}
	return nil
}

// New returns a dashboard server. An origin of cfg that Validate refuses
// matches no request.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.InvalidateClient == nil {
		cfg.InvalidateClient = func(string) {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, st: cfg.Store, log: cfg.Logger}
	if o, err := origin.Parse(cfg.Origin); err == nil {
		s.own = &o
	}
	return s
}

// Handler returns the dashboard's routes behind its gate against
// cross-site requests (gate.go), which runs before any route.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.checkRequest(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *Server) routes(mux *http.ServeMux) {
	// GET /api/oauth/clients/{client_id}: public client configuration (docs/service.md §4.2).
	mux.HandleFunc("GET /api/oauth/clients/{client_id}", s.handleClient)
	// GET /api/service: the issuer of the authorization server of these clients; public.
	mux.HandleFunc("GET /api/service", s.handleService)

	// POST /api/projects: create a project with a name only (docs/service.md §2.7); public.
	mux.HandleFunc("POST /api/projects", s.handleCreateProject)
	// GET /api/projects/{project_id}: the project, its credentials and submissions (project key).
	mux.HandleFunc("GET /api/projects/{project_id}", s.project(s.handleGetProject))
	// POST /api/projects/{project_id}/credentials: add an OAuth credential (project key).
	mux.HandleFunc("POST /api/projects/{project_id}/credentials", s.project(s.handleAddCredential))
	// GET /api/projects/{project_id}/credentials: list the credentials (project key).
	mux.HandleFunc("GET /api/projects/{project_id}/credentials", s.project(s.handleListCredentials))
	// POST /api/projects/{project_id}/credentials/{client_id}/rotate: new client_secret (project key).
	mux.HandleFunc("POST /api/projects/{project_id}/credentials/{client_id}/rotate", s.project(s.handleRotateSecret))
	// PATCH /api/projects/{project_id}/credentials/{client_id}: replace its redirect_uris or allowed_origins (project key).
	mux.HandleFunc("PATCH /api/projects/{project_id}/credentials/{client_id}", s.project(s.handleUpdateCredential))
	// DELETE /api/projects/{project_id}/credentials/{client_id}: remove a credential (project key).
	mux.HandleFunc("DELETE /api/projects/{project_id}/credentials/{client_id}", s.project(s.handleRemoveCredential))
	// POST /api/projects/{project_id}/policy: request a scope policy for review (project key).
	mux.HandleFunc("POST /api/projects/{project_id}/policy", s.project(s.handleRequestPolicy))
	// POST /api/projects/{project_id}/resource-servers: declare a Resource Server for review (project key).
	mux.HandleFunc("POST /api/projects/{project_id}/resource-servers", s.project(s.handleDeclareRS))
	// POST /api/projects/{project_id}/miniapps: submit a published Miniapp's manifest for review (project key).
	mux.HandleFunc("POST /api/projects/{project_id}/miniapps", s.project(s.handleSubmitMiniapp))

	// GET /api/review: submissions, ?status= and ?kind= filters (operator).
	mux.HandleFunc("GET /api/review", s.operator(s.handleReviewList))
	// POST /api/review/{submission_id}/approve: approve, optional reason (operator).
	mux.HandleFunc("POST /api/review/{submission_id}/approve", s.operator(s.handleApprove))
	// POST /api/review/{submission_id}/reject: reject with a reason (operator).
	mux.HandleFunc("POST /api/review/{submission_id}/reject", s.operator(s.handleReject))

	// GET /api/miniapps: the approved Miniapps, for launchers; public.
	mux.HandleFunc("GET /api/miniapps", s.handleMiniapps)
	// GET /api/resource-servers: the approved Resource Servers with their ids (docs/service.md §2.8); public.
	mux.HandleFunc("GET /api/resource-servers", s.handleResourceServers)

	// GET /api/events: audit events, ?client= ?subject= ?kind= ?after= ?limit= (operator).
	mux.HandleFunc("GET /api/events", s.operator(s.handleEvents))
	// GET /api/events/stream: audit events as server-sent events, the same filters and Last-Event-ID (operator).
	mux.HandleFunc("GET /api/events/stream", s.operator(s.handleEventsStream))

	// /api/dev/...: the development controls (operator; development servers only).
	mux.HandleFunc("/api/dev/", s.handleDev)
}

// handleDev passes a request to the development controls, which only a
// development server has and only the operator may use.
func (s *Server) handleDev(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Dev == nil {
		s.writeError(w, r, &Error{Code: codeDevelopmentOnly, Field: "path",
			Message: "this server's issuer is not on loopback: faults, the clock, fixtures and explain exist only on a development server (the embedded one, or serve with a loopback issuer)"})
		return
	}
	s.operatorFor("the development controls need the operator credential (printed by miniapp-host serve and playground as operator key)", s.cfg.Dev.ServeHTTP)(w, r)
}

// clientConfig is the public configuration of a client (docs/service.md §2.10). It has
// exactly these members; a secret, even its hash, never leaves the store.
type clientConfig struct {
	RedirectURIs   []string `json:"redirect_uris"`
	AllowedOrigins []string `json:"allowed_origins"`
	ClientType     string   `json:"client_type"`
}

func clientConfigOf(c *store.Client) clientConfig {
	cfg := clientConfig{RedirectURIs: c.RedirectURIs, AllowedOrigins: c.AllowedOrigins, ClientType: string(c.Type)}
	if cfg.RedirectURIs == nil {
		cfg.RedirectURIs = []string{}
	}
	if cfg.AllowedOrigins == nil {
		cfg.AllowedOrigins = []string{}
	}
	return cfg
}

// handleClient returns a client's public configuration, or 404.
func (s *Server) handleClient(w http.ResponseWriter, r *http.Request) {
	c, err := s.st.Client(r.Context(), r.PathValue("client_id"))
	if errors.Is(err, store.ErrNotFound) {
		err = &Error{Code: codeClientNotFound}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Public data, read by browser-based hosts too.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, clientConfigOf(c))
}

// serviceInfo names the authorization server whose clients the dashboard
// serves. Only the issuer: a host reads the rest from the server's own
// metadata (RFC 8414 section 3), whose issuer it checks against this one.
type serviceInfo struct {
	Issuer string `json:"issuer"`
}

// handleService names the issuer, or answers 404 issuer_unknown.
func (s *Server) handleService(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Issuer == "" {
		s.writeError(w, r, &Error{Code: codeIssuerUnknown, Message: "this dashboard was started without the issuer of its " +
			"authorization server (dashboard.Config.Issuer); give the host the issuer itself (miniapp-host open --service URL)"})
		return
	}
	// Public data, read by browser-based hosts too.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, serviceInfo{Issuer: s.cfg.Issuer})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}
