//go:build qa

package qa

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tebeka/selenium"

	"github.com/miniapp-host/miniapp-host/demoapps"
)

// Bounds of every wait: a suite on a loaded machine is slow, never stuck.
const (
	// suiteTimeout bounds one test, its session and its waits.
	suiteTimeout = 3 * time.Minute
	// commandTimeout bounds every WebDriver request, New Session
	// included: a host that exits before it connects leaves New Session
	// waiting for ever (docs/webdriver.md, "Limits").
	commandTimeout = 90 * time.Second
	// pageTimeout bounds a wait for a page's state.
	pageTimeout = 60 * time.Second
)

// setup is what examples/qa/run.sh hands the suite.
type setup struct {
	driver       string // QA_WEBDRIVER_URL: miniapp-host webdriver
	dashboard    string // QA_DASHBOARD_URL: the playground's {dashboard_url}
	service      string // QA_SERVICE_URL: the playground's issuer
	public       string // QA_PUBLIC_ORIGIN: demo-public
	confidential string // QA_CONFIDENTIAL_ORIGIN: demo-confidential
	broken       string // QA_BROKEN_ORIGIN: a Miniapp the resolver rejects
	brokenID     string // QA_BROKEN_ID
	brokenStage  string // QA_BROKEN_STAGE: the stage that rejects it
	brokenCode   string // QA_BROKEN_CODE: the code it rejects it with
}

func loadSetup(t *testing.T) setup {
	t.Helper()
	var missing []string
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	}
	s := setup{
		driver:    get("QA_WEBDRIVER_URL"),
		dashboard: get("QA_DASHBOARD_URL"), service: get("QA_SERVICE_URL"),
		public: get("QA_PUBLIC_ORIGIN"), confidential: get("QA_CONFIDENTIAL_ORIGIN"),
		broken: get("QA_BROKEN_ORIGIN"), brokenID: get("QA_BROKEN_ID"),
		brokenStage: get("QA_BROKEN_STAGE"), brokenCode: get("QA_BROKEN_CODE"),
	}
	if len(missing) > 0 {
		t.Fatalf("%s not set: run this suite with examples/qa/run.sh go, which starts the playground and miniapp-host webdriver", strings.Join(missing, ", "))
	}
	return s
}

// session is one WebDriver session on `miniapp-host open --webdriver`,
// through `miniapp-host webdriver` (docs/webdriver.md).
type session struct {
	wd     selenium.WebDriver
	driver string        // the front's URL, for its extension commands
	ready  time.Duration // New Session until the session was ready
}

// newSession starts the host on the Miniapp at origin with id through the
// front (docs/webdriver.md, "A complete session"). The front fills in the
// binary: it starts its own miniapp-host only. It ends with the test.
func newSession(t *testing.T, s setup, origin, id string) *session {
	t.Helper()
	caps := selenium.Capabilities{
		"webkitgtk:browserOptions": map[string]any{
			"args": []string{"open", "--webdriver", "--origin", origin, "--id", id,
				"--dashboard", s.dashboard, "--service", s.service, "--ephemeral"},
		},
		// A navigation the host refuses never loads: bound it.
		"timeouts": map[string]any{"pageLoad": pageTimeout.Milliseconds(), "script": pageTimeout.Milliseconds()},
	}
	start := time.Now()
	wd, err := selenium.NewRemote(caps, s.driver)
	ready := time.Since(start)
	if err != nil {
		t.Fatalf("new session on %s (%s): %v (the host's reason, if any, is in the front's output)", id, origin, err)
	}
	t.Cleanup(func() {
		if err := wd.Quit(); err != nil {
			t.Errorf("delete session: %v", err)
		}
	})
	return &session{wd: wd, driver: s.driver, ready: ready}
}

// w3cError is a WebDriver error answer: its code ("no such alert") and
// message.
type w3cError struct {
	Status  int
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (e *w3cError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// consentCommand sends one of the front's extension commands, the
// consent screen's (docs/webdriver.md, "The consent screen"), and
// decodes its value into v. tebeka/selenium has no way to send a command
// it does not know, so this is plain HTTP, as every WebDriver command is.
func (ss *session) consentCommand(ctx context.Context, method, path string, body, v any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := ss.driver + "/session/" + ss.wd.SessionID() + "/miniapp-host/consent" + path
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	resp, err := selenium.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return fmt.Errorf("%s %s: %d, not WebDriver's JSON: %w", method, u, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		e := &w3cError{Status: resp.StatusCode}
		json.Unmarshal(answer.Value, e)
		return e
	}
	return json.Unmarshal(answer.Value, v)
}

// consentModel is what Get Consent answers: the consent screen's request.
type consentModel struct {
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
	Accounts []string `json:"accounts"`
	// Entries are what may be declined: each scope by name, each
	// authorization_details object by index, those Fixed never.
	Entries []struct {
		Kind  string `json:"kind"`
		Name  string `json:"name"`
		Fixed bool   `json:"fixed"`
	} `json:"entries"`
}

// consentShown waits (bounded) until a consent screen is shown and
// returns its model. "no such alert" means none is shown yet: the
// Miniapp's navigation to the service is not a WebDriver command the
// session waits for. A flow that goes on without one waits in vain: the
// service answers a consent it remembers without asking (an approval is
// kept per subject and client), so each run needs a fresh playground.
func (ss *session) consentShown(t *testing.T, ctx context.Context) consentModel {
	t.Helper()
	var shown consentModel
	var last error
	err := ss.wd.WaitWithTimeoutAndInterval(func(selenium.WebDriver) (bool, error) {
		last = ss.consentCommand(ctx, http.MethodGet, "", nil, &shown)
		var e *w3cError
		if errors.As(last, &e) && e.Code == "no such alert" {
			return false, nil
		}
		return true, last
	}, pageTimeout, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("waiting for the consent screen: %v (last answer: %v; the service may have remembered a consent: run each suite against a fresh playground, as examples/qa/run.sh does)", err, last)
	}
	return shown
}

// decide approves or denies the consent screen shown (after waiting for
// it) and returns the decision the host made.
func (ss *session) decide(t *testing.T, ctx context.Context, approve bool) string {
	t.Helper()
	ss.consentShown(t, ctx)
	path := "/deny"
	if approve {
		path = "/approve"
	}
	var decided struct {
		Decision string `json:"decision"`
	}
	if err := ss.consentCommand(ctx, http.MethodPost, path, map[string]any{}, &decided); err != nil {
		t.Fatalf("answering the consent screen: %v", err)
	}
	return decided.Decision
}

// waitScript waits until script returns want in the session's page: the
// page a host-started navigation loads, or a page's script finishing.
func (ss *session) waitScript(t *testing.T, what, script string, want any) {
	t.Helper()
	var last any
	var lastErr error
	err := ss.wd.WaitWithTimeoutAndInterval(func(wd selenium.WebDriver) (bool, error) {
		last, lastErr = wd.ExecuteScript(script, nil)
		// A page replaced while the script ran answers an error: ask again.
		return lastErr == nil && fmt.Sprint(last) == fmt.Sprint(want), nil
	}, pageTimeout, 50*time.Millisecond)
	if err != nil {
		u, _ := ss.wd.CurrentURL()
		t.Fatalf("waiting for %s: %v; the page (%s) last answered %v (%v)", what, err, u, last, lastErr)
	}
}

func (ss *session) text(t *testing.T, css string) string {
	t.Helper()
	el, err := ss.wd.FindElement(selenium.ByCSSSelector, css)
	if err != nil {
		t.Fatalf("find %s: %v", css, err)
	}
	txt, err := el.Text()
	if err != nil {
		t.Fatalf("text of %s: %v", css, err)
	}
	return txt
}

func (ss *session) click(t *testing.T, css string) {
	t.Helper()
	el, err := ss.wd.FindElement(selenium.ByCSSSelector, css)
	if err != nil {
		t.Fatalf("find %s: %v", css, err)
	}
	if err := el.Click(); err != nil {
		t.Fatalf("click %s: %v", css, err)
	}
}

// jsonBodies labels every request body as JSON. tebeka/selenium sends its
// POST bodies without a Content-Type, and `miniapp-host webdriver` refuses
// a body that is not application/json (what a web page's request is).
type jsonBodies struct{ next http.RoundTripper }

func (j jsonBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Header.Get("Content-Type") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	return j.next.RoundTrip(r)
}

func TestMain(m *testing.M) {
	// Every WebDriver request, New Session included, is bounded, and its
	// body is labelled JSON.
	selenium.HTTPClient = &http.Client{Timeout: commandTimeout, Transport: jsonBodies{http.DefaultTransport}}
	os.Exit(m.Run())
}

// TestPublicDemoDeclinesProfile approves the public demo's consent screen
// with a per-entry decision (docs/webdriver.md, "The consent screen"):
// openid cannot be declined (400 invalid argument, the screen stays), the
// profile scope is, and the token the page gets carries openid alone. It
// runs before TestPublicDemoSignsIn: the service remembers only what was
// granted, so that test's request for profile is asked again.
func TestPublicDemoDeclinesProfile(t *testing.T) {
	s := loadSetup(t)
	ctx, cancel := context.WithTimeout(t.Context(), suiteTimeout)
	defer cancel()
	ss := newSession(t, s, s.public, "demo-public")
	ss.waitScript(t, "the start page", `return document.readyState === "complete" && !!document.getElementById("bridge-signin")`, true)
	ss.click(t, "#bridge-signin")
	shown := ss.consentShown(t, ctx)
	var fixed []string
	for _, e := range shown.Entries {
		if e.Fixed {
			fixed = append(fixed, e.Kind+" "+e.Name)
		}
	}
	if !slices.Contains(shown.Scopes, "profile") || !slices.Equal(fixed, []string{"scope openid"}) {
		t.Fatalf("the consent screen asks for %+v; want profile among its scopes and openid alone fixed", shown)
	}
	var decided struct {
		Decision       string   `json:"decision"`
		DeclinedScopes []string `json:"declined_scopes"`
	}
	var e *w3cError
	err := ss.consentCommand(ctx, http.MethodPost, "/approve", map[string]any{"declined_scopes": []string{"openid"}}, &decided)
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != "invalid argument" {
		t.Fatalf("declining openid: %v, want 400 invalid argument", err)
	}
	if err := ss.consentCommand(ctx, http.MethodPost, "/approve", map[string]any{"declined_scopes": []string{"profile"}}, &decided); err != nil {
		t.Fatalf("approving without profile: %v", err)
	}
	if decided.Decision != "approved" || !slices.Equal(decided.DeclinedScopes, []string{"profile"}) {
		t.Fatalf("the host decided %+v, want approved with profile declined", decided)
	}
	ss.waitScript(t, "the signed-in page", `return document.body.dataset.state`, "signed-in")
	var result struct {
		Scope string `json:"scope"`
	}
	if raw := ss.text(t, "#result"); json.Unmarshal([]byte(raw), &result) != nil || result.Scope != "openid" {
		t.Errorf("the page's result %q, want scope openid alone", raw)
	}
}

// TestPublicDemoSignsIn signs in to the public demo through the host's
// bridge: the consent screen is approved with the front's extension
// command and the page says it is signed in with a token.
func TestPublicDemoSignsIn(t *testing.T) {
	s := loadSetup(t)
	ctx, cancel := context.WithTimeout(t.Context(), suiteTimeout)
	defer cancel()
	ss := newSession(t, s, s.public, "demo-public")
	ss.waitScript(t, "the start page", `return document.readyState === "complete" && !!document.getElementById("bridge-signin")`, true)
	if got := ss.text(t, "#status"); got != "Not signed in." {
		t.Fatalf("a fresh session's status is %q, want Not signed in.", got)
	}
	ss.click(t, "#bridge-signin")
	shown := ss.consentShown(t, ctx)
	if shown.ClientID != "demo-public" || !slices.Contains(shown.Scopes, "openid") {
		t.Fatalf("the consent screen asks for %+v, want demo-public and openid", shown)
	}
	if d := ss.decide(t, ctx, true); d != "approved" {
		t.Fatalf("the host decided %q, want approved", d)
	}
	ss.waitScript(t, "the signed-in page", `return document.body.dataset.state`, "signed-in")
	if got := ss.text(t, "#status"); got != "Signed in through the host." {
		t.Errorf("status %q, want Signed in through the host.", got)
	}
	var result struct {
		TokenType      string `json:"token_type"`
		HasAccessToken bool   `json:"has_access_token"`
	}
	if raw := ss.text(t, "#result"); json.Unmarshal([]byte(raw), &result) != nil || !result.HasAccessToken || result.TokenType != "Bearer" {
		t.Errorf("the page's result %q, want a Bearer access token", raw)
	}
}

// TestConfidentialDemoDeniesThenSignsIn opens the confidential demo, whose
// first load asks for consent at once: denied, the demo says
// access_denied; its Sign in then asks again, approved, and the demo's
// signed-in page shows. It also measures the figures BENCHMARKS.md keeps.
func TestConfidentialDemoDeniesThenSignsIn(t *testing.T) {
	s := loadSetup(t)
	ctx, cancel := context.WithTimeout(t.Context(), suiteTimeout)
	defer cancel()
	ss := newSession(t, s, s.confidential, "demo-confidential")

	// Its first load goes to its auth_url: the consent screen is up at once.
	if d := ss.decide(t, ctx, false); d != "denied" {
		t.Fatalf("the host decided %q, want denied", d)
	}
	// Decided: no screen is shown any more.
	var none consentModel
	var e *w3cError
	if err := ss.consentCommand(ctx, http.MethodGet, "", nil, &none); !errors.As(err, &e) || e.Status != http.StatusNotFound || e.Code != "no such alert" {
		t.Errorf("Get Consent after the decision: %v (%+v), want 404 no such alert", err, none)
	}
	denied := s.confidential + "/?error=access_denied"
	ss.waitScript(t, "the denied page", `return location.href + " " + document.readyState`, denied+" complete")
	if got := ss.text(t, "#status"); got != "Not signed in (access_denied)." {
		t.Errorf("status %q on the denied page, want Not signed in (access_denied).", got)
	}
	if signedIn, err := ss.wd.ExecuteScript(`return document.body.dataset.signedIn`, nil); err != nil || signedIn != "false" {
		t.Errorf("the denied page's data-signed-in is %v (%v), want false", signedIn, err)
	}

	ss.click(t, "#signin")
	if shown := ss.consentShown(t, ctx); shown.ClientID != "demo-confidential" {
		t.Fatalf("the consent screen asks for %+v, want demo-confidential", shown)
	}
	if d := ss.decide(t, ctx, true); d != "approved" {
		t.Fatalf("the host decided %q, want approved", d)
	}
	ss.waitScript(t, "the signed-in page", `return location.href + " " + document.body.dataset.signedIn`, s.confidential+"/ true")
	if got := ss.text(t, "#status"); !strings.HasPrefix(got, "Signed in. Scope: ") || !strings.Contains(got, "openid") {
		t.Errorf("status %q, want Signed in. Scope: ... openid", got)
	}
	// The session cookie is HttpOnly: WebDriver reads it, the page not.
	cookies, err := ss.wd.GetCookies()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cookies {
		names = append(names, c.Name)
	}
	if !slices.Contains(names, demoapps.SessionCookie) {
		t.Errorf("WebDriver reads cookies %q, want the session cookie %s the host synced", names, demoapps.SessionCookie)
	}

	// The figures BENCHMARKS.md keeps: New Session to a ready session,
	// and the round trip of Execute Script (20 times).
	var trips []time.Duration
	for range 20 {
		start := time.Now()
		if _, err := ss.wd.ExecuteScript(`return 1`, nil); err != nil {
			t.Fatal(err)
		}
		trips = append(trips, time.Since(start))
	}
	sort.Slice(trips, func(i, j int) bool { return trips[i] < trips[j] })
	t.Logf("new session -> ready: %s; execute script round trip: median %s, min %s, max %s (20)",
		ss.ready.Round(time.Millisecond), trips[len(trips)/2].Round(10*time.Microsecond),
		trips[0].Round(10*time.Microsecond), trips[len(trips)-1].Round(10*time.Microsecond))
}

// TestBrokenMiniappIsRejected opens a Miniapp the resolver rejects: the
// session opens on the host's rejection screen, which names the stage and
// the code, and the Miniapp is never loaded.
func TestBrokenMiniappIsRejected(t *testing.T) {
	s := loadSetup(t)
	ctx, cancel := context.WithTimeout(t.Context(), suiteTimeout)
	defer cancel()
	ss := newSession(t, s, s.broken, s.brokenID)
	ss.waitScript(t, "the rejection screen", `return document.body ? document.body.dataset.screen || "" : ""`, "rejection")
	text, err := ss.wd.ExecuteScript(`return document.body.innerText`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := text.(string)
	for _, want := range []string{
		"This Miniapp was rejected",
		"Stage " + s.brokenStage + " refused it; it was not loaded.",
		s.brokenStage + "/" + s.brokenCode + " at ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the rejection screen says %q, want %q in it", got, want)
		}
	}
	if u, err := ss.wd.CurrentURL(); err != nil || u != "about:blank" {
		t.Errorf("the session is on %q (%v), want the host's own about:blank document", u, err)
	}
	// Nothing to consent to: the front answers no such alert.
	var none consentModel
	var e *w3cError
	if err := ss.consentCommand(ctx, http.MethodPost, "/approve", map[string]any{}, &none); !errors.As(err, &e) || e.Status != http.StatusNotFound || e.Code != "no such alert" {
		t.Errorf("Approve Consent on the rejection screen: %v, want 404 no such alert", err)
	}
}
