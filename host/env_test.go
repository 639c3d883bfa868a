//go:build linux && cgo

package host

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/seed"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/origin"
)

// env is the world of the end-to-end tests: the reference authorization
// server (with a log of every request it received) and the two demo
// Miniapps, registered with their loopback origins.
type env struct {
	svc       *httptest.Server
	srv       *oauth.Server
	st        *store.Store
	dir       string
	authorize string // the authorization endpoint
	token     string // the token endpoint
	consent   *NativeConsent

	public, confidential *demoapps.App
	other                *httptest.Server // a second origin, allowed for the public client

	mu   sync.Mutex // guards reqs
	reqs []string   // "METHOD path" of every request the service received
}

const (
	hostSecret = "host-secret-for-tests"
	confSecret = "confidential-secret-for-tests"
	testScope  = "openid profile"
)

var (
	envOnce sync.Once
	theEnv  *env
	envErr  error
)

// testEnv starts the world once for the process.
func testEnv(t *testing.T) *env {
	t.Helper()
	envOnce.Do(func() { theEnv, envErr = startEnv() })
	if envErr != nil {
		t.Fatalf("test env: %v", envErr)
	}
	return theEnv
}

func closeEnv() {
	if theEnv == nil {
		return
	}
	theEnv.public.Close()
	theEnv.confidential.Close()
	theEnv.other.Close()
	theEnv.svc.Close()
	theEnv.st.Close()
	os.RemoveAll(theEnv.dir)
}

func startEnv() (*env, error) {
	ctx := context.Background()
	e := &env{}
	var err error
	if e.dir, err = os.MkdirTemp("", "miniapp-host-svc-"); err != nil {
		return nil, err
	}
	if e.st, err = store.Open(ctx, filepath.Join(e.dir, "svc.db")); err != nil {
		return nil, err
	}
	world, err := seed.Read()
	if err != nil {
		return nil, err
	}
	if err := world.Load(ctx, e.st); err != nil {
		return nil, err
	}
	if err := world.LoadPolicies(ctx, e.st, time.Now()); err != nil {
		return nil, err
	}
	for id, secret := range map[string]string{"miniapp-host": hostSecret, "demo-confidential": confSecret} {
		if err := e.st.SetClientSecret(ctx, id, store.Hash(secret)); err != nil {
			return nil, err
		}
	}
	// The service's origin must exist before the server does (issuer):
	// start the listener with a handler that waits for the server.
	var handler http.Handler
	ready := make(chan struct{})
	e.svc = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		e.mu.Lock()
		e.reqs = append(e.reqs, r.Method+" "+r.URL.Path)
		e.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	cat, err := catalog.New(catalog.Endpoints{BaseURL: e.svc.URL + "/api", SigningBaseURL: "http://127.0.0.1:9/signing",
		InvoicingBaseURL: "http://127.0.0.1:9/invoicing"})
	if err != nil {
		return nil, err
	}
	if e.srv, err = oauth.New(ctx, oauth.Config{Issuer: e.svc.URL, Catalog: cat, Store: e.st}); err != nil {
		return nil, err
	}
	handler = e.srv.Handler()
	close(ready)
	e.authorize = e.srv.AuthorizationEndpoint()
	var meta struct {
		Token string `json:"token_endpoint"`
	}
	resp, err := http.Get(e.svc.URL + "/.well-known/openid-configuration")
	if err != nil {
		return nil, err
	}
	err = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	e.token = meta.Token
	e.consent = &NativeConsent{Endpoint: e.srv.NativeEndpoint(), ClientID: "miniapp-host", ClientSecret: hostSecret}

	e.other = httptest.NewServer(http.HandlerFunc(otherOrigin))
	if e.public, err = demoapps.StartPublic(demoapps.Config{ID: "demo-public", Name: "Demo public Miniapp",
		ClientID: "demo-public", AuthURL: e.authorize, TokenURL: e.token, Scope: testScope, Resource: e.svc.URL + "/api"}, ""); err != nil {
		return nil, err
	}
	if e.confidential, err = demoapps.StartConfidential(demoapps.Config{ID: "demo-confidential", Name: "Demo confidential Miniapp",
		ClientID: "demo-confidential", ClientSecret: confSecret, AuthURL: e.authorize, TokenURL: e.token, Scope: testScope, Resource: e.svc.URL + "/api"}, ""); err != nil {
		return nil, err
	}
	// Register the demo clients at the origins they got.
	for _, c := range []struct {
		id, typ string
		app     *demoapps.App
		extra   []string
	}{{"demo-public", "public", e.public, []string{e.other.URL}}, {"demo-confidential", "confidential", e.confidential, nil}} {
		if err := e.st.PutClient(ctx, &store.Client{ID: c.id, ProjectID: "prj_demo", Name: map[string]string{
			"demo-public": "Demo public Miniapp", "demo-confidential": "Demo confidential Miniapp"}[c.id],
			Type: store.ClientType(c.typ), RedirectURIs: []string{c.app.RedirectURI()},
			AllowedOrigins: append([]string{c.app.Origin}, c.extra...)}); err != nil {
			return nil, err
		}
		e.srv.InvalidateClient(c.id)
	}
	// PutClient may reset the confidential client's secret: set it again.
	if err := e.st.SetClientSecret(ctx, "demo-confidential", store.Hash(confSecret)); err != nil {
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

// authorizeHits counts the requests the service's authorization endpoint
// received, by any path spelling the server would route there.
func (e *env) authorizeHits() int {
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

// publicAuthorizeURL is a valid authorization request of the public demo
// client, with PKCE.
func (e *env) publicAuthorizeURL() string {
	c := &oauth2.Config{ClientID: "demo-public", RedirectURL: e.public.RedirectURI(),
		Endpoint: oauth2.Endpoint{AuthURL: e.authorize}, Scopes: strings.Fields(testScope)}
	return c.AuthCodeURL("st-"+randomHex(6), oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
		oauth2.SetAuthURLParam("resource", e.svc.URL+"/api"))
}

// mount mounts a Miniapp and waits for its first page. Each test starts as
// subjects who never consented to the Miniapp's client: a consent one test
// approved would otherwise be remembered, and the next test's consent
// view would never show.
func mount(t *testing.T, app Miniapp) *recorder {
	t.Helper()
	forgetConsents(t)
	rec := record(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testWin.Mount(ctx, app); err != nil {
		t.Fatalf("mount: %v", err)
	}
	// Match the URL exactly: a page the previous test left loading can
	// still report its own end after this Mount.
	want := app.LoadURL.String()
	rec.wait(t, "first load of "+want, func(e Event) bool { return e.Kind == EventLoadFinished && e.URL == want })
	return rec
}

// forgetConsents revokes every remembered consent of every seeded subject
// (spec 1: revocable), so that the next flow asks again.
func forgetConsents(t *testing.T) {
	t.Helper()
	world, err := seed.Read()
	if err != nil {
		t.Fatal(err)
	}
	ctx, st := context.Background(), testEnv(t).st
	for _, sub := range world.Subjects {
		cs, err := st.Consents(ctx, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if err := st.RevokeConsent(ctx, sub.ID, c.ClientID, time.Now()); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("revoking %s's consent to %s: %v", sub.ID, c.ClientID, err)
			}
		}
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := origin.ParseURL(raw)
	if err != nil {
		t.Fatalf("url %q: %v", raw, err)
	}
	return u
}

// recorder collects the window's events for one test.
type recorder struct {
	mu     sync.Mutex // guards evs
	evs    []Event
	notify chan struct{}
}

func record(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{notify: make(chan struct{}, 1)}
	remove := testWin.OnEvent(func(e Event) {
		r.mu.Lock()
		r.evs = append(r.evs, e)
		r.mu.Unlock()
		select {
		case r.notify <- struct{}{}:
		default:
		}
	})
	t.Cleanup(remove)
	return r
}

// wait returns the first event since the recorder started that matches,
// waiting up to 15 s for it.
func (r *recorder) wait(t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(15 * time.Second)
	seen := 0
	for {
		r.mu.Lock()
		evs := r.evs
		r.mu.Unlock()
		for ; seen < len(evs); seen++ {
			if match(evs[seen]) {
				return evs[seen]
			}
		}
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; events: %s", what, r.dump())
		}
	}
}

// waitAfter is wait for an event recorded after from.
func (r *recorder) waitAfter(t *testing.T, from Event, what string, match func(Event) bool) Event {
	t.Helper()
	after := false
	return r.wait(t, what, func(e Event) bool {
		if !after {
			after = e.At.Equal(from.At) && e.Kind == from.Kind && e.URL == from.URL
			return false
		}
		return match(e)
	})
}

func (r *recorder) all(match func(Event) bool) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, x := range r.evs {
		if match(x) {
			out = append(out, x)
		}
	}
	return out
}

func (r *recorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.evs {
		b.WriteString("\n  " + string(e.Kind) + " " + e.Action.String() + " " + e.URL + " " + e.Detail)
	}
	return b.String()
}

func kind(k EventKind) func(Event) bool { return func(e Event) bool { return e.Kind == k } }

// evalString evaluates js in the Miniapp's view and decodes a string result.
func evalJSON(t *testing.T, js string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := testWin.EvalResult(ctx, js)
	if err != nil {
		t.Fatalf("eval %q: %v", js, err)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("eval %q: %q: %v", js, out, err)
	}
}

// pollFor waits up to 10 s for cond.
func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pollJS evaluates js until it returns want, for up to 10 s.
func pollJS(t *testing.T, js, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		out, err := testWin.EvalResult(ctx, js)
		cancel()
		if err == nil {
			_ = json.Unmarshal([]byte(out), &got)
			if got == want {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: got %q, want %q", js, got, want)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// artifactDir is where tests write artefacts (screenshots): artifacts/ at
// the module root, which git ignores.
func artifactDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(filepath.Dir(wd), "artifacts", "host")
}
