package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// FAPI 2.0 Security Profile support (docs/fapi.md): pushed authorization
// requests (RFC 9126, par.go), private_key_jwt client authentication (RFC
// 7523, OpenID Connect Core §9, clientauth.go), DPoP (RFC 9449, dpop.go)
// and the per-client fapi2 profile. The state of all of it is kept apart
// from the rest of the server, in fapiState.

// FAPIConfig configures the FAPI 2.0 parts of the server. Zero values take
// the defaults named on each field.
type FAPIConfig struct {
	// RequirePAR refuses, for every client, authorization requests that
	// were not pushed (RFC 9126 §5, require_pushed_authorization_requests
	// in the metadata). A client's own setting requires it for that client
	// only (store.ClientSettings.RequirePAR).
	RequirePAR bool
	// RequireGrantManagementAction refuses, for every client,
	// authorization requests without grant_management_action (FAPI Grant
	// Management §4.1, grant_management_action_required); a client's own
	// setting requires it for that client only
	// (store.ClientSettings.GrantManagementActionRequired).
	RequireGrantManagementAction bool
	// PARTTL is how long a request_uri may be used: default 60 s; it must
	// be under 600 s (FAPI 2.0 Security Profile §5.3.2.2).
	PARTTL time.Duration
	// MaxPushedPerClient caps the unused pushed requests of one client;
	// default 10,000. MaxPushed caps them in all; default 100,000.
	MaxPushedPerClient, MaxPushed int
	// LocalJWKSURI lets the server fetch a client's jwks_uri on a
	// loopback or private address (jwksuri.go): development and tests.
	// Otherwise only public addresses are fetched. package authserver
	// sets it when its issuer is on a loopback host.
	LocalJWKSURI bool
}

// fapi2CodeTTL bounds the lifetime of a fapi2 client's codes (FAPI 2.0
// Security Profile §5.3.2.1: at most 60 seconds).
const fapi2CodeTTL = time.Minute

// maxPARTTL is the bound FAPI 2.0 puts on a request_uri's expires_in.
const maxPARTTL = 600 * time.Second

// maxSecurityCache bounds the cached client settings; past it the cache
// starts again empty, as clientCache does.
const maxSecurityCache = 10_000

// initFAPI checks the FAPI configuration and sets up the pieces the
// handlers share: the client settings cache, the single-use ids and the
// DPoP nonce key.
func (s *Server) initFAPI(ctx context.Context) error {
	c := s.cfg.FAPI
	if c.PARTTL <= 0 {
		c.PARTTL = time.Minute
	}
	if c.PARTTL >= maxPARTTL {
		return fmt.Errorf("oauth: FAPI.PARTTL %s must be under %s (FAPI 2.0 Security Profile: request_uri expires_in under 600 seconds)", c.PARTTL, maxPARTTL)
	}
	if c.MaxPushedPerClient <= 0 {
		c.MaxPushedPerClient = 10_000
	}
	if c.MaxPushed <= 0 {
		c.MaxPushed = 100_000
	}
	s.cfg.FAPI = c
	s.sec = &securityCache{st: s.store, m: map[string]*clientSecurity{}}
	s.replay = &replayGuard{st: s.store, now: s.cfg.Now}
	return s.initNonceKey(ctx)
}

// fapiRoutes registers the FAPI endpoints.
func (s *Server) fapiRoutes(mux *http.ServeMux) {
	// POST /oauth/par (RFC 9126 §2).
	mux.HandleFunc("POST "+s.path(pathPAR), s.par.handlePAR)
}

// fapiMetadata adds the FAPI members to the discovery document.
func (s *Server) fapiMetadata(md map[string]any) {
	md["pushed_authorization_request_endpoint"] = s.endpoint(pathPAR)
	md["require_pushed_authorization_requests"] = s.cfg.FAPI.RequirePAR
	// private_key_jwt (clientauth.go) wherever a client authenticates.
	for _, m := range []string{"token_endpoint_auth_methods_supported", "introspection_endpoint_auth_methods_supported",
		"revocation_endpoint_auth_methods_supported"} {
		if l, ok := md[m].([]string); ok {
			md[m] = append(l[:len(l):len(l)], "private_key_jwt")
		}
	}
	md["token_endpoint_auth_signing_alg_values_supported"] = fapiAlgs
	md["dpop_signing_alg_values_supported"] = fapiAlgs
	md["introspection_endpoint_auth_signing_alg_values_supported"] = fapiAlgs
	md["revocation_endpoint_auth_signing_alg_values_supported"] = fapiAlgs
}

// clientSecurity is a client's settings with its keys parsed.
type clientSecurity struct {
	store.ClientSettings
	keys *jose.JSONWebKeySet // nil without JWKS (a client with a JWKSURI has its keys fetched)
}

// fapi2 reports whether the client follows the FAPI 2.0 profile.
func (cs *clientSecurity) fapi2() bool { return cs.Profile == store.ProfileFAPI2 }

// requirePAR reports whether the client's authorization requests must be
// pushed.
func (cs *clientSecurity) requirePAR() bool { return cs.RequirePAR || cs.fapi2() }

// requireDPoP reports whether the client's access tokens must be DPoP-bound.
func (cs *clientSecurity) requireDPoP() bool { return cs.DPoPBound || cs.fapi2() }

// securityCache keeps the clients' security settings (PAR, DPoP, the
// FAPI 2.0 profile, their keys) in memory, as clientCache keeps clients.
type securityCache struct {
	st  settingsSource
	mu  sync.RWMutex // guards m and gen
	m   map[string]*clientSecurity
	gen uint64 // incremented by every forget
}

// settingsSource is what the security cache reads.
type settingsSource interface {
	ClientSettings(ctx context.Context, clientID string) (store.ClientSettings, error)
	Cacheable() bool
}

// get returns the settings of client c, cached like clients are.
func (f *securityCache) get(ctx context.Context, c *store.Client) (*clientSecurity, error) {
	f.mu.RLock()
	cs, ok := f.m[c.ID]
	gen := f.gen
	f.mu.RUnlock()
	if ok && f.st.Cacheable() {
		return cs, nil
	}
	set, err := f.st.ClientSettings(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	cs = &clientSecurity{ClientSettings: set}
	if len(set.JWKS) > 0 {
		cs.keys = new(jose.JSONWebKeySet)
		if err := json.Unmarshal(set.JWKS, cs.keys); err != nil {
			return nil, fmt.Errorf("oauth: client %s: stored jwks: %w", c.ID, err)
		}
	}
	f.mu.Lock()
	if f.gen == gen {
		if len(f.m) >= maxSecurityCache {
			clear(f.m)
		}
		f.m[c.ID] = cs
	}
	f.mu.Unlock()
	return cs, nil
}

// forget drops a client's cached settings ("" for every client's).
func (f *securityCache) forget(id string) {
	f.mu.Lock()
	f.gen++
	if id == "" {
		clear(f.m)
	} else {
		delete(f.m, id)
	}
	f.mu.Unlock()
}
