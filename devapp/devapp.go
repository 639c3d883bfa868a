// Package devapp is a developer's own Miniapp while it is being written:
// a folder served on a loopback origin (static files with their content
// types, never cached), or the origin of a development server the developer
// already runs (Vite, webpack, a backend), and the changes to the folder's
// files, so that `miniapp-host dev` can check the manifest again and reload
// the view on every save (docs/your-miniapp.md).
//
// It owns no OAuth and no window: package playground registers the
// Miniapp's client from its manifest and launches it.
package devapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
	"github.com/miniapp-host/miniapp-host/origin"
)

// ManifestPath is where a Miniapp serves its manifest, on its own origin
// (docs/service.md, "The Miniapp manifest").
const ManifestPath = "/miniapp.webmanifest"

// maxManifest bounds the manifest read for registration; the resolver
// applies its own limits when it checks the manifest.
const maxManifest = 1 << 20

// Config says which Miniapp to run. Exactly one of Dir and URL is set.
type Config struct {
	// Dir is a folder holding the Miniapp's files, miniapp.webmanifest at
	// its top. It is served on Addr and watched for changes.
	Dir string
	// URL is the origin (or any URL on it) of a server the developer runs;
	// nothing is served nor watched here.
	URL string
	// Addr is the loopback address Dir is served on; "" picks a free port.
	Addr string
	// Logger receives the watcher's errors; nil discards them.
	Logger *slog.Logger
}

// App is a Miniapp in development. Close stops serving and watching.
type App struct {
	dir    string
	origin origin.Origin
	srv    *http.Server
	files  *files // what srv serves; nil for a development server
	watch  *watcher
	http   *http.Client
}

// Start serves cfg.Dir on a loopback origin and watches it, or takes
// cfg.URL's origin as it is.
func Start(cfg Config) (*App, error) {
	if (cfg.Dir == "") == (cfg.URL == "") {
		return nil, errors.New("devapp: give a folder or the URL of a development server, not both and not neither")
	}
	a := &App{}
	// The manifest is read from the Miniapp's origin only: a redirect
	// elsewhere is not followed (the resolver refuses it too).
	a.http = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 || !origin.Of(req.URL).Equal(a.origin) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.URL != "" {
		u, err := origin.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("devapp: %q is not a URL: %w", cfg.URL, err)
		}
		o := origin.Of(u)
		if o.IsOpaque() || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("devapp: %q is not an http or https URL", cfg.URL)
		}
		a.origin = o
		return a, nil
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("devapp: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("devapp: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("devapp: %s is not a folder", Quote(dir))
	}
	a.dir = dir
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := origin.CheckLoopbackAddr(addr); err != nil {
		return nil, fmt.Errorf("devapp: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("devapp: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("devapp: serve %s: %w", Quote(dir), err)
	}
	if a.origin, err = origin.Parse("http://" + ln.Addr().String()); err != nil {
		ln.Close()
		root.Close()
		return nil, fmt.Errorf("devapp: %w", err)
	}
	if a.watch, err = watch(dir, cfg.Logger); err != nil {
		ln.Close()
		root.Close()
		return nil, err
	}
	a.files = &files{root: root}
	a.srv = &http.Server{Handler: a.files, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	go a.srv.Serve(ln)
	return a, nil
}

// Origin is the Miniapp's origin: where the folder is served, or the
// development server's.
func (a *App) Origin() origin.Origin { return a.origin }

// Dir is the folder served, or "" for a development server.
func (a *App) Dir() string { return a.dir }

// Changes delivers the files changed under the folder, relative to it
// with forward slashes. Changes that happen while the receiver is busy
// are merged into one delivery, so a save that touches several files (or
// writes one in several steps) is handled once it is complete enough to
// be read, and no change is lost. It is closed by Close; nil for a
// development server.
func (a *App) Changes() <-chan Change {
	if a.watch == nil {
		return nil
	}
	return a.watch.out
}

// Change is a set of files changed under the folder.
type Change struct {
	// Paths are the changed files, sorted, relative to the folder.
	Paths []string
}

// Manifest reports whether the change touched the manifest.
func (c Change) Manifest() bool {
	for _, p := range c.Paths {
		if "/"+p == ManifestPath {
			return true
		}
	}
	return false
}

// Members are the manifest members that registering the Miniapp's client
// needs. The resolver checks the whole manifest; these are read leniently
// (a member of another type reads as missing), so that a manifest with an
// error elsewhere still gets its client.
type Members struct {
	ID, Name, StartURL string
	OAuth              struct{ ClientID, AuthURL string }
}

// Manifest is the manifest as fetched from the Miniapp's origin: the
// bytes, which the resolver checks before anything is registered from
// them, and the members read from them.
type Manifest struct {
	URL     string
	Body    []byte
	Members Members
}

// ReadMembers fetches the manifest from the Miniapp's origin, as a host
// would, and reads the members of Members.
func (a *App) ReadMembers(ctx context.Context) (Members, error) {
	m, err := a.ReadManifest(ctx)
	return m.Members, err
}

// ReadManifest fetches the manifest from the Miniapp's origin, as a host
// would (a redirect off the origin is not followed), and reads the members
// of Members from it.
func (a *App) ReadManifest(ctx context.Context) (Manifest, error) {
	var m Manifest
	u := a.origin.String() + ManifestPath
	m.URL = u
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return m, fmt.Errorf("devapp: %w", err)
	}
	ans, err := jsonhttp.Do(a.http, req, maxManifest)
	if err != nil {
		return m, fmt.Errorf("devapp: %w", err)
	}
	if ans.Status != http.StatusOK {
		return m, fmt.Errorf("devapp: GET %s answered %s", u, ans.StatusText)
	}
	m.Body = ans.Body
	if m.Members, err = readMembers(ans.Body); err != nil {
		return m, fmt.Errorf("devapp: %s: %w", u, err)
	}
	return m, nil
}

// readMembers reads Members from a manifest's bytes.
func readMembers(body []byte) (Members, error) {
	var m Members
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		return m, errors.New("the manifest is not a JSON object")
	}
	str := func(obj map[string]any, k string) string { s, _ := obj[k].(string); return s }
	m.ID, m.Name, m.StartURL = str(doc, "id"), str(doc, "name"), str(doc, "start_url")
	if o, ok := doc["oauth"].(map[string]any); ok {
		m.OAuth.ClientID, m.OAuth.AuthURL = str(o, "client_id"), str(o, "auth_url")
	}
	return m, nil
}

// StartURL resolves the manifest's start_url against the manifest's URL,
// as the resolver does; the origin's root when it is missing or invalid.
func (a *App) StartURL(m Members) string {
	return a.resolve(m.StartURL, "/")
}

// AuthURL resolves oauth.auth_url likewise; "" when not declared.
func (a *App) AuthURL(m Members) string {
	if strings.TrimSpace(m.OAuth.AuthURL) == "" {
		return ""
	}
	return a.resolve(m.OAuth.AuthURL, "")
}

func (a *App) resolve(ref, fallback string) string {
	base, err := origin.ParseURL(a.origin.String() + ManifestPath)
	if err == nil {
		if r, err := origin.ResolveReference(base, ref); err == nil && strings.TrimSpace(ref) != "" {
			return r.String()
		}
	}
	if fallback == "" {
		return ""
	}
	return a.origin.String() + fallback
}

// Close stops serving and watching.
func (a *App) Close() error {
	var errs []error
	if a.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := a.srv.Shutdown(ctx); err != nil {
			errs = append(errs, a.srv.Close())
		}
		cancel()
	}
	if a.watch != nil {
		errs = append(errs, a.watch.close())
	}
	if a.files != nil {
		errs = append(errs, a.files.root.Close())
	}
	a.http.CloseIdleConnections()
	return errors.Join(errs...)
}

// parseIssuer checks an issuer URL: http or https, no query, no fragment
// (OpenID Connect Discovery 1.0, section 3).
func parseIssuer(raw string) (string, error) {
	u, err := origin.ParseURL(raw)
	if err != nil {
		return "", fmt.Errorf("devapp: issuer %q is not a URL: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("devapp: issuer %q: use an http or https URL without user, query or fragment", raw)
	}
	return u.String(), nil
}

// Quote is how `dev` prints a name it did not choose (a file's, a
// folder's): as it is when every character is printable and not a space,
// a quote or a backslash; else Go-quoted, so that control characters (an
// ESC or OSC sequence, a C1 control, a bidirectional override) reach the
// terminal as escapes, never as what they would do, and a name with a
// space stays one name on the line (docs/security.md).
func Quote(name string) string {
	for _, r := range name {
		if r == utf8.RuneError || r == ' ' || r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}
