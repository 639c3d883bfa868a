package demoapps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Config describes a demo Miniapp and the service it signs in with.
type Config struct {
	ID       string // manifest id
	Name     string // manifest name
	ClientID string
	// ClientSecret is the confidential client's secret; empty for the
	// public one.
	ClientSecret string
	// AuthURL and TokenURL are the service's authorization and token
	// endpoints.
	AuthURL, TokenURL string
	// Scope is what the Miniapp asks for, space-separated.
	Scope string
	// Resource is the service's {base_url}, sent as resource with the
	// scopes (docs/service.md §2.1).
	Resource string
	// AuthorizationDetails is an optional RFC 9396 authorization_details
	// array (JSON) added to the request.
	AuthorizationDetails string
	// HTTP makes the token request; http.DefaultClient when nil.
	HTTP *http.Client
}

// App is a running demo Miniapp.
type App struct {
	// Origin is where it is served, e.g. http://127.0.0.1:8702.
	Origin string
	srv    *http.Server
}

// RedirectURI is the Miniapp's callback, to register with the client.
func (a *App) RedirectURI() string { return a.Origin + "/callback" }

// ManifestURL is the Miniapp's manifest document (docs/service.md §4.3).
func (a *App) ManifestURL() string { return a.Origin + "/miniapp.webmanifest" }

// Close stops the server.
func (a *App) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return a.srv.Shutdown(ctx)
}

func start(addr string, routes func(origin string) http.Handler) (*App, error) {
	ln, err := listen(addr)
	if err != nil {
		return nil, err
	}
	return serve(ln, routes), nil
}

// listen opens addr ("" for any loopback port).
func listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("demoapps: %w", err)
	}
	return ln, nil
}

// Listen opens addr ("" or port 0 for a free loopback port) for
// ServeConfidential and returns the origin it will be served at.
func Listen(addr string) (net.Listener, string, error) {
	ln, err := listen(addr)
	if err != nil {
		return nil, "", err
	}
	return ln, "http://" + ln.Addr().String(), nil
}

func serve(ln net.Listener, routes func(origin string) http.Handler) *App {
	a := &App{Origin: "http://" + ln.Addr().String()}
	a.srv = &http.Server{Handler: routes(a.Origin), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return a
}

// manifest serves GET /miniapp.webmanifest.
func manifest(cfg Config, authURL string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		oauth := map[string]string{"client_id": cfg.ClientID}
		if authURL != "" {
			oauth["auth_url"] = authURL
		}
		w.Header().Set("Content-Type", "application/manifest+json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": cfg.ID, "name": cfg.Name, "short_name": cfg.Name, "start_url": "/",
			"display": "standalone", "theme_color": "#1f5fd1", "background_color": "#ffffff", "oauth": oauth,
			"icons": manifestIcons(),
		})
	}
}

const style = `<style>body{font:15px/1.45 system-ui,sans-serif;margin:32px;color:#1d2330}
button,a.btn{font:inherit;padding:8px 16px;margin:4px 8px 4px 0;border:1px solid #1f5fd1;border-radius:8px;background:#1f5fd1;color:#fff;text-decoration:none;display:inline-block}
pre{background:#f3f5f9;padding:12px;border-radius:8px;white-space:pre-wrap;word-break:break-all}</style>`

func splitScope(s string) []string { return strings.Fields(s) }

// contextWithClient makes x/oauth2 use client for the token request.
func contextWithClient(ctx context.Context, client *http.Client) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, client)
}
