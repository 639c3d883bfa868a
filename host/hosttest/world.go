package hosttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/seed"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// World is the world of the end-to-end tests: the reference authorization
// server (with a log of every request it received) and the two demo
// Miniapps, registered with their loopback origins.
type World struct {
	Svc       *httptest.Server
	Srv       *oauth.Server
	Store     *store.Store
	Dir       string
	Authorize string // the authorization endpoint
	Token     string // the token endpoint
	Consent   *host.NativeConsent

	Public, Confidential *demoapps.App
	Other                *httptest.Server // a second origin, allowed for the public client

	mu   sync.Mutex // guards reqs
	reqs []string   // "METHOD path" of every request the service received
}

const (
	// HostSecret is the host's own credential's secret in the world.
	HostSecret = "host-secret-for-the-tests"
	// ConfidentialSecret is the confidential demo's secret.
	ConfidentialSecret = "confidential-secret-for-tests"
	// Scope is what the demo Miniapps ask for.
	Scope = "openid profile"
)

// Start starts the world: the reference server on a loopback port with
// the seed world and the two demo Miniapps registered at the origins they
// got. Close stops it.
func Start() (*World, error) {
	ctx := context.Background()
	e := &World{}
	var err error
	if e.Dir, err = os.MkdirTemp("", "miniapp-host-svc-"); err != nil {
		return nil, err
	}
	if e.Store, err = store.Open(ctx, filepath.Join(e.Dir, "svc.db")); err != nil {
		return nil, err
	}
	world, err := seed.Read()
	if err != nil {
		return nil, err
	}
	if err := world.Load(ctx, e.Store); err != nil {
		return nil, err
	}
	if err := world.LoadPolicies(ctx, e.Store, time.Now()); err != nil {
		return nil, err
	}
	for id, secret := range map[string]string{"miniapp-host": HostSecret, "demo-confidential": ConfidentialSecret} {
		if err := e.Store.SetClientSecret(ctx, id, store.Hash(secret)); err != nil {
			return nil, err
		}
	}
	// The service's origin must exist before the server does (issuer):
	// start the listener with a handler that waits for the server.
	var handler http.Handler
	ready := make(chan struct{})
	e.Svc = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		e.mu.Lock()
		e.reqs = append(e.reqs, r.Method+" "+r.URL.Path)
		e.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	cat, err := catalog.New(catalog.Endpoints{BaseURL: e.Svc.URL + "/api", SigningBaseURL: "http://127.0.0.1:9/signing",
		InvoicingBaseURL: "http://127.0.0.1:9/invoicing"})
	if err != nil {
		return nil, err
	}
	if e.Srv, err = oauth.New(ctx, oauth.Config{Issuer: e.Svc.URL, Catalog: cat, Store: e.Store}); err != nil {
		return nil, err
	}
	handler = e.Srv.Handler()
	close(ready)
	e.Authorize = e.Srv.AuthorizationEndpoint()
	var meta struct {
		Token string `json:"token_endpoint"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Svc.URL+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, err
	}
	if _, err := jsonhttp.Call(nil, req, 1<<20, &meta); err != nil {
		return nil, err
	}
	e.Token = meta.Token
	e.Consent = &host.NativeConsent{Endpoint: e.Srv.NativeEndpoint(), ClientID: "miniapp-host", ClientSecret: HostSecret}

	e.Other = httptest.NewServer(http.HandlerFunc(otherOrigin))
	if e.Public, err = demoapps.StartPublic(demoapps.Config{ID: "demo-public", Name: "Demo public Miniapp",
		ClientID: "demo-public", AuthURL: e.Authorize, TokenURL: e.Token, Scope: Scope, Resource: e.Svc.URL + "/api"}, ""); err != nil {
		return nil, err
	}
	if e.Confidential, err = demoapps.StartConfidential(demoapps.Config{ID: "demo-confidential", Name: "Demo confidential Miniapp",
		ClientID: "demo-confidential", ClientSecret: ConfidentialSecret, AuthURL: e.Authorize, TokenURL: e.Token, Scope: Scope, Resource: e.Svc.URL + "/api"}, ""); err != nil {
		return nil, err
	}
	// Register the demo clients at the origins they got.
	for _, c := range []struct {
		id, typ string
		app     *demoapps.App
		extra   []string
	}{{"demo-public", "public", e.Public, []string{e.Other.URL}}, {"demo-confidential", "confidential", e.Confidential, nil}} {
		if err := e.Store.PutClient(ctx, &store.Client{ID: c.id, ProjectID: "prj_demo", Name: map[string]string{
			"demo-public": "Demo public Miniapp", "demo-confidential": "Demo confidential Miniapp"}[c.id],
			Type: store.ClientType(c.typ), RedirectURIs: []string{c.app.RedirectURI()},
			AllowedOrigins: append([]string{c.app.Origin}, c.extra...)}); err != nil {
			return nil, err
		}
		e.Srv.InvalidateClient(c.id)
	}
	// PutClient may reset the confidential client's secret: set it again.
	if err := e.Store.SetClientSecret(ctx, "demo-confidential", store.Hash(ConfidentialSecret)); err != nil {
		return nil, err
	}
	return e, nil
}

// otherOrigin serves pages of a second origin: /frame is a page that tries
// to use the Miniapp's bridge from inside an iframe.
func otherOrigin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(`<!doctype html><html><body>other origin<script>
var h = window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.miniappHost;
document.body.dataset.hasHandler = String(!!h);
document.body.dataset.hasPost = String(typeof window.__miniappHostPost);
if (h) h.postMessage(JSON.stringify({v: 1, id: 1, key: "guessed", method: "getContext"}));
try { parent.__miniappHostPost('{"v":1,"id":2,"key":"x","method":"getContext"}'); document.body.dataset.parent = "reached"; }
catch (e) { document.body.dataset.parent = e.name; }
parent.postMessage({hasHandler: document.body.dataset.hasHandler, hasPost: document.body.dataset.hasPost, parent: document.body.dataset.parent}, "*");
</script></body></html>`))
}

// AuthorizeHits counts the requests the service's authorization endpoint
// received, by any path spelling the server would route there.
func (e *World) AuthorizeHits() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.reqs {
		if strings.HasSuffix(r, " /oauth/authorize") {
			n++
		}
	}
	return n
}

// Hits counts the requests the service received for path, whatever the
// method (a WebSocket handshake is a GET).
func (e *World) Hits(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.reqs {
		if strings.HasSuffix(r, " "+path) {
			n++
		}
	}
	return n
}

// PublicAuthorizeURL is a valid authorization request of the public demo
// client, with PKCE.
func (e *World) PublicAuthorizeURL() string {
	c := &oauth2.Config{ClientID: "demo-public", RedirectURL: e.Public.RedirectURI(),
		Endpoint: oauth2.Endpoint{AuthURL: e.Authorize}, Scopes: strings.Fields(Scope)}
	return c.AuthCodeURL("st-"+randomHex(6), oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
		oauth2.SetAuthURLParam("resource", e.Svc.URL+"/api"))
}

// ForgetConsents revokes every remembered consent of every seeded subject
// (docs/service.md §1: revocable), so that the next flow asks again.
func (e *World) ForgetConsents(ctx context.Context) error {
	world, err := seed.Read()
	if err != nil {
		return err
	}
	for _, sub := range world.Subjects {
		cs, err := e.Store.Consents(ctx, sub.ID)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if err := e.Store.RevokeConsent(ctx, sub.ID, c.ClientID, time.Now()); err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("revoking %s's consent to %s: %w", sub.ID, c.ClientID, err)
			}
		}
	}
	return nil
}

// Close stops the world and removes its database.
func (e *World) Close() {
	e.Public.Close()
	e.Confidential.Close()
	e.Other.Close()
	e.Svc.Close()
	e.Store.Close()
	os.RemoveAll(e.Dir)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
