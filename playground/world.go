package playground

// This file is the playground's one contact with packages authserver and
// demoapps, which are still moving: everything they export that the
// playground uses is called here and nowhere else.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/seed"
	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// Services are the reference server's addresses, as authserver reports
// them; the launcher's API serves them as they are.
type Services = authserver.URLs

// Subject is a seeded subject, for the subject switcher.
type Subject struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
}

// HostClientID is the host's own client id in the seed world: its
// credential for the native-consent API.
const HostClientID = "miniapp-host"

// Demo Miniapps: ids, which are also their client ids.
const (
	DemoPublicID       = demoapps.PublicID
	DemoConfidentialID = demoapps.ConfidentialID
	DemoFAPIID         = demoapps.FAPIID
	// demoScope is what both demos ask for, with {base_url} as resource.
	demoScope = "openid profile"
)

// world is the reference server and the three demo Miniapps.
type world struct {
	srv                  *authserver.Server
	public, confidential *demoapps.App
	fapi                 *demoapps.App
	urls                 Services
	subjects             []Subject
	hostID, hostSecret   string
}

type worldConfig struct {
	db     string
	addrs  Addrs
	now    func() time.Time
	logger *slog.Logger
	// obs observes the demos' token requests; startWorld tells it the
	// service's endpoints before any demo starts.
	obs *observer
	// hostSecret fixes the host credential's secret; "" a random one.
	hostSecret string
	// operatorKey fixes the dashboard's operator key; "" a random one.
	operatorKey string
	// traces records the server's spans; nil: none.
	traces *telemetry.Provider
}

// startWorld starts the reference server, then the demo Miniapps, and
// registers the demos' clients at the origins they got.
func startWorld(ctx context.Context, cfg worldConfig) (_ *world, err error) {
	w := &world{}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if w.srv, err = authserver.Start(ctx, authserver.Config{DB: cfg.db, ServiceAddr: cfg.addrs.Service,
		DashboardAddr: cfg.addrs.Dashboard, SigningAddr: cfg.addrs.Signing, InvoicingAddr: cfg.addrs.Invoicing,
		Now: cfg.now, Logger: cfg.logger, Secrets: hostSecrets(cfg.hostSecret), OperatorKey: cfg.operatorKey,
		MetricsAddr: "127.0.0.1:0", Traces: cfg.traces}); err != nil { // the server's Prometheus metrics, on a free loopback port
		return nil, fmt.Errorf("playground: %w", err)
	}
	u := w.srv.URLs()
	w.urls = u
	if cfg.obs.token, err = origin.ParseURL(u.Token); err != nil {
		return nil, fmt.Errorf("playground: token endpoint: %w", err)
	}
	if cfg.obs.grant, err = origin.ParseURL(u.Grant); err != nil {
		return nil, fmt.Errorf("playground: grant endpoint: %w", err)
	}
	if cfg.obs.par, err = origin.ParseURL(u.PAR); err != nil {
		return nil, fmt.Errorf("playground: PAR endpoint: %w", err)
	}
	demoHTTP := &http.Client{Transport: cfg.obs, Timeout: 30 * time.Second}
	if host, ok := w.srv.Credential(HostClientID); ok {
		w.hostID, w.hostSecret = host.ClientID, host.ClientSecret
	}
	sw, err := seed.Read()
	if err != nil {
		return nil, fmt.Errorf("playground: %w", err)
	}
	for _, s := range sw.Subjects {
		w.subjects = append(w.subjects, Subject{ID: s.ID, Name: s.Profile.Name, Email: s.Profile.Email})
	}

	demo := func(id, name string) demoapps.Config {
		return demoapps.Config{ID: id, Name: name, ClientID: id, AuthURL: u.Authorization, TokenURL: u.Token,
			Scope: demoScope, Resource: u.BaseURL, HTTP: demoHTTP}
	}
	if w.public, err = demoapps.StartPublic(demo(DemoPublicID, "Demo public Miniapp"), cfg.addrs.Public); err != nil {
		return nil, fmt.Errorf("playground: %w", err)
	}
	if err := w.register(ctx, DemoPublicID, "Demo public Miniapp", false, w.public.Origin); err != nil {
		return nil, err
	}
	// The confidential demo needs its secret before it starts, and the
	// server makes the secret when the client is registered with the
	// demo's origin: so the demo's port is opened first (port 0 resolved
	// to the port it got), its client registered with that origin, then
	// the demo served on it.
	ln, confOrigin, err := demoapps.Listen(cfg.addrs.Confidential)
	if err != nil {
		return nil, fmt.Errorf("playground: %w", err)
	}
	conf := demo(DemoConfidentialID, "Demo confidential Miniapp")
	if conf.ClientSecret, err = w.registerSecret(ctx, DemoConfidentialID, conf.Name, true, confOrigin); err != nil {
		ln.Close()
		return nil, err
	}
	w.confidential = demoapps.ServeConfidential(conf, ln)
	if err := w.startFAPI(ctx, cfg, demoHTTP); err != nil {
		return nil, err
	}
	return w, nil
}

// fapiOrg is the Company the FAPI demo's authorization_details act for: the
// first seeded subject's (docs/playground.md).
const fapiOrg = "org_andes"

// startFAPI starts the FAPI demo (docs/fapi.md, "Running a Miniapp on the
// profile"): a key made for this run, its client registered with the
// fapi2 profile and the key's public JWK Set at the demo's origin, then
// the demo served with the private key. It asks for openid and the
// signing provider's signing-key detail for fapiOrg.
func (w *world) startFAPI(ctx context.Context, cfg worldConfig, demoHTTP *http.Client) error {
	u := w.urls
	key, err := demoapps.NewKey()
	if err != nil {
		return fmt.Errorf("playground: %w", err)
	}
	ln, fapiOrigin, err := demoapps.Listen(cfg.addrs.FAPI)
	if err != nil {
		return fmt.Errorf("playground: %w", err)
	}
	const name = "Demo FAPI Miniapp"
	if _, err := w.srv.RegisterClient(ctx, authserver.ClientSpec{ID: DemoFAPIID, Name: name, Confidential: true,
		RedirectURIs: []string{fapiOrigin + "/callback"}, AllowedOrigins: []string{fapiOrigin}, IDTokenAlg: "ES256",
		JWKS: demoapps.PublicJWKS(key), Profile: "fapi2"}); err != nil {
		ln.Close()
		return fmt.Errorf("playground: register client %s: %w", DemoFAPIID, err)
	}
	signing := strings.TrimSuffix(u.SigningBaseURL, "/api")
	details, _ := json.Marshal([]map[string]any{{"type": signing + "/authorization-details/signing-key",
		"actions": []string{"read"}, "locations": []string{u.SigningBaseURL}}})
	w.fapi = demoapps.ServeFAPI(demoapps.FAPIConfig{
		Config: demoapps.Config{ID: DemoFAPIID, Name: name, ClientID: DemoFAPIID, AuthURL: u.Authorization, TokenURL: u.Token,
			Scope: "openid", Resource: u.BaseURL, AuthorizationDetails: string(details), HTTP: demoHTTP},
		Issuer: u.Issuer, PARURL: u.PAR, GrantURL: u.Grant, OrgID: fapiOrg, Key: key,
	}, ln)
	return nil
}

// register adds (or replaces) a client of the demo project whose redirect
// URI is origin/callback and whose only allowed origin is origin, plus
// extra allowed origins.
func (w *world) register(ctx context.Context, id, name string, confidential bool, origin string, extra ...string) error {
	_, err := w.registerSecret(ctx, id, name, confidential, origin, extra...)
	return err
}

func (w *world) registerSecret(ctx context.Context, id, name string, confidential bool, origin string, extra ...string) (string, error) {
	cred, err := w.srv.RegisterClient(ctx, authserver.ClientSpec{ID: id, Name: name, Confidential: confidential,
		RedirectURIs: []string{origin + "/callback"}, AllowedOrigins: append([]string{origin}, extra...), IDTokenAlg: "ES256"})
	if err != nil {
		return "", fmt.Errorf("playground: register client %s: %w", id, err)
	}
	return cred.ClientSecret, nil
}

// demos lists the two demo Miniapps for the launcher.
func (w *world) demos() []Entry {
	return []Entry{
		{ID: DemoPublicID, Name: "Demo public Miniapp", Origin: w.public.Origin, Kind: KindDemo,
			Description: "Public client: signs in through the host's bridge (authorize), or by navigating to the service with PKCE made in the page."},
		{ID: DemoConfidentialID, Name: "Demo confidential Miniapp", Origin: w.confidential.Origin, Kind: KindDemo,
			Description: "Confidential client: its Go backend starts the sign-in at oauth.auth_url, exchanges the code and sets an HttpOnly session cookie."},
		{ID: DemoFAPIID, Name: "Demo FAPI Miniapp", Origin: w.fapi.Origin, Kind: KindDemo,
			Description: "FAPI 2.0 client (fapi2 profile): its backend pushes the request (PAR) with private_key_jwt, PKCE, authorization_details and a DPoP proof, and reads the grant with its DPoP-bound token."},
	}
}

func (w *world) close() error {
	var errs []error
	for _, a := range []*demoapps.App{w.public, w.confidential, w.fapi} {
		if a != nil {
			errs = append(errs, a.Close())
		}
	}
	if w.srv != nil {
		errs = append(errs, w.srv.Close())
	}
	return errors.Join(errs...)
}

// freePort returns a loopback address with a port that was free a moment
// ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("playground: find a free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// hostSecrets fixes the host credential's secret when one is given.
func hostSecrets(secret string) map[string]string {
	if secret == "" {
		return nil
	}
	return map[string]string{HostClientID: secret}
}
