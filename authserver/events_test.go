package authserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
	"github.com/miniapp-host/miniapp-host/redact"
)

// eventsOf lists the server's stored events through the dashboard API,
// once every event recorded so far is stored.
func (e *env) eventsOf(query string) []audit.Event {
	e.t.Helper()
	e.srv.Events().Flush()
	req, _ := http.NewRequest(http.MethodGet, e.u.Dashboard+"/api/events?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+e.srv.OperatorKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /api/events?%s: %d %s", query, resp.StatusCode, raw)
	}
	var page struct {
		Events    []audit.Event `json:"events"`
		NextAfter int64         `json:"next_after"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		e.t.Fatalf("GET /api/events: %v: %s", err, raw)
	}
	return page.Events
}

// kinds are the kinds of evs, in order.
func kinds(evs []audit.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func wantKinds(t *testing.T, evs []audit.Event, want ...string) {
	t.Helper()
	if got := strings.Join(kinds(evs), " "); got != strings.Join(want, " ") {
		t.Fatalf("events:\n got %s\nwant %s\n%s", got, strings.Join(want, " "), jsonOf(t, evs))
	}
}

// oauth2Config is the public client's, for golang.org/x/oauth2.
func (e *env) oauth2Config() *oauth2.Config {
	return &oauth2.Config{ClientID: publicID, RedirectURL: publicRedir, Scopes: []string{"openid", "profile", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: e.u.Authorization, TokenURL: e.u.Token, AuthStyle: oauth2.AuthStyleInParams}}
}

// A browser sign-in, a native one and a refused request leave exactly
// their events, in order, each naming the client and the subject.
func TestEventsOfFlows(t *testing.T) {
	e := start(t)
	cfg := e.oauth2Config()
	ctx := context.Background()

	// Browser.
	v := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("st-1", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.u.BaseURL))
	q := newBrowser(t, e.u.Issuer).browserCode(authURL, subAna, map[string]string{"action": "approve"})
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(v))
	if err != nil {
		t.Fatal(err)
	}
	evs := e.eventsOf("client=" + publicID)
	wantKinds(t, evs, audit.SignInStarted, audit.SignInAuthenticated, audit.ConsentShown, audit.ConsentApproved, audit.TokenIssued)
	for _, ev := range evs {
		if ev.ClientID != publicID || ev.Instance == "" || ev.Time.IsZero() || ev.ID == 0 {
			t.Errorf("event without its client, instance, time or id: %+v", ev)
		}
		if ev.Kind != audit.SignInStarted && ev.Subject != subAna {
			t.Errorf("%s: subject %q, want %q", ev.Kind, ev.Subject, subAna)
		}
		if ev.Detail["flow"] != "" && ev.Detail["flow"] != audit.FlowBrowser {
			t.Errorf("%s: flow %q", ev.Kind, ev.Detail["flow"])
		}
	}
	if a := evs[3]; a.Outcome != audit.OutcomeApproved || a.GrantID == "" || a.Actor != audit.Subject(subAna) {
		t.Errorf("consent.approved: %+v", a)
	}
	if ti := evs[4]; ti.Detail["grant_type"] != "authorization_code" || ti.GrantID != evs[3].GrantID || ti.Actor != audit.Client(publicID) {
		t.Errorf("token.issued: %+v", ti)
	}
	last := evs[len(evs)-1].ID

	// Native.
	v2, c2 := pkce(t)
	e.publicTokens(e.authParams(c2), v2)
	evs = e.eventsOf("client=" + publicID + "&after=" + itoa(last))
	wantKinds(t, evs, audit.SignInStarted, audit.SignInAuthenticated, audit.ConsentShown, audit.ConsentApproved, audit.TokenIssued)
	for _, ev := range evs {
		if ev.Subject != subAna || ev.Detail["flow"] != "" && ev.Detail["flow"] != audit.FlowNative {
			t.Errorf("native %s: %+v", ev.Kind, ev)
		}
	}
	if evs[0].Actor != audit.Host(hostID) {
		t.Errorf("native signin.started: actor %q, want %q", evs[0].Actor, audit.Host(hostID))
	}
	last = evs[len(evs)-1].ID

	// Refused: a redirect_uri not registered, at the authorization
	// endpoint; the refusal says what was sent and what was expected.
	bad := e.authParams(c2)
	bad.Set("redirect_uri", "https://evil.example/cb")
	if p := newBrowser(t, e.u.Issuer).get(e.u.Authorization + "?" + bad.Encode()); p.status != http.StatusBadRequest {
		t.Fatalf("bad redirect_uri: %d", p.status)
	}
	evs = e.eventsOf("after=" + itoa(last))
	wantKinds(t, evs, audit.RequestRefused)
	f := evs[0].Refusal
	if f == nil || f.Error != "invalid_request" || f.Field != "redirect_uri" || f.Sent != "https://evil.example/cb" ||
		f.Expected != publicRedir || !strings.Contains(f.Rule, "not registered") || evs[0].ClientID != publicID {
		t.Fatalf("refusal: %+v %+v", evs[0], f)
	}
	if evs[0].Detail["route"] != "/oauth/authorize" {
		t.Errorf("refusal route: %q", evs[0].Detail["route"])
	}

	// A token refresh is a token.issued of its grant type; the revocation
	// of the refresh token (RFC 7009) revokes the grant.
	last = evs[0].ID
	src := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken})
	if _, err := src.Token(); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"token": {tok.RefreshToken}, "client_id": {publicID}}
	req, _ := http.NewRequest(http.MethodPost, e.u.Issuer+"/oauth/revoke", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if st, m, _ := e.do(req); st != http.StatusOK {
		t.Fatalf("revoke: %d %v", st, m)
	}
	evs = e.eventsOf("after=" + itoa(last))
	wantKinds(t, evs, audit.TokenIssued, audit.GrantRevoked)
	if evs[0].Detail["grant_type"] != "refresh_token" {
		t.Errorf("refresh: %+v", evs[0])
	}
	if r := evs[1]; r.GrantID != evs[0].GrantID || r.Subject != subAna || r.Actor != audit.Client(publicID) || r.Detail["via"] != "revocation" {
		t.Errorf("grant.revoked: %+v", r)
	}
}

func itoa(n int64) string { return strings.TrimSpace(strings.Replace(jsonNum(n), "\n", "", -1)) }

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

// The operator's fixture reset (a development control) revokes the
// subject's grants: each a grant.revoked by the operator.
func TestEventsOperatorRevocation(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"})
	approved := e.eventsOf("kind=consent.approved")
	if st, m := e.dashRaw(http.MethodPost, "/api/dev/fixtures/reset", `{"subject":"`+subAna+`"}`); st != http.StatusOK {
		t.Fatalf("fixture reset: %d %v", st, m)
	}
	evs := e.eventsOf("kind=grant.revoked")
	if len(approved) != 1 || len(evs) != 1 || evs[0].GrantID != approved[0].GrantID || evs[0].Actor != audit.ActorOperator ||
		evs[0].Subject != subAna || evs[0].Detail["via"] != "fixture_reset" {
		t.Fatalf("approved %s; revoked %s", jsonOf(t, approved), jsonOf(t, evs))
	}
	if ch := e.eventsOf("kind=dashboard.changed"); len(ch) != 1 || ch[0].Actor != audit.ActorOperator || ch[0].Detail["path"] != "/api/dev/fixtures/reset" {
		t.Fatalf("the control itself: %s", jsonOf(t, ch))
	}
}

// A denial at the consent screen is a consent.denied of the subject.
func TestEventsDenied(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "deny"})
	evs := e.eventsOf("kind=consent.denied,consent.approved")
	wantKinds(t, evs, audit.ConsentDenied)
	if evs[0].Outcome != audit.OutcomeDenied || evs[0].Subject != subAna {
		t.Errorf("%+v", evs[0])
	}
}

// A change through the dashboard API records who made it, and what.
func TestEventsDashboardChange(t *testing.T) {
	e := start(t)
	st, m := e.dashRaw(http.MethodPost, "/api/projects", `{"name":"Audit"}`)
	if st != http.StatusCreated {
		t.Fatalf("create project: %d %v", st, m)
	}
	pid, key := m["id"].(string), m["key"].(string)
	req, _ := http.NewRequest(http.MethodPost, e.u.Dashboard+"/api/projects/"+pid+"/credentials",
		strings.NewReader(`{"redirect_uris":["https://audit.example/cb"],"type":"public"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	st, cred, _ := e.do(req)
	if st != http.StatusCreated {
		t.Fatalf("add credential: %d %v", st, cred)
	}
	evs := e.eventsOf("kind=dashboard.changed")
	wantKinds(t, evs, audit.DashboardChanged, audit.DashboardChanged)
	if evs[0].Actor != audit.ActorPublic || evs[0].Detail["route"] != "/api/projects" || evs[0].Detail["method"] != "POST" {
		t.Errorf("project created: %+v", evs[0])
	}
	if c := evs[1]; c.Actor != audit.Project(pid) || c.Detail["project_id"] != pid || c.Detail["route"] != "/api/projects/{project_id}/credentials" {
		t.Errorf("credential added: %+v", c)
	}
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), key) {
			t.Errorf("the project key is in an event: %s", b)
		}
	}
	// A refused dashboard call is a request.refused naming its field.
	req, _ = http.NewRequest(http.MethodPost, e.u.Dashboard+"/api/projects/"+pid+"/credentials", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer wrong")
	if st, _, _ := e.do(req); st != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d", st)
	}
	evs = e.eventsOf("kind=request.refused")
	if len(evs) != 1 || evs[0].Refusal.Error != "invalid_key" || evs[0].Refusal.Field != "Authorization" {
		t.Fatalf("dashboard refusal: %s", jsonOf(t, evs))
	}
}

// The listing's filters, and its bad filters: 400 naming the field, the
// rule and the fix.
func TestEventsListFilters(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"})
	_, c = pkce(t)
	e.nativeCode(e.confAuthParams(c), subAna, map[string]string{"action": "deny"})
	all := e.eventsOf("")
	if len(all) < 8 {
		t.Fatalf("want the events of two sign-ins, got %s", strings.Join(kinds(all), " "))
	}
	for _, ev := range e.eventsOf("client=" + confID) {
		if ev.ClientID != confID {
			t.Errorf("client filter: %+v", ev)
		}
	}
	if evs := e.eventsOf("subject=nobody"); len(evs) != 0 {
		t.Errorf("subject filter: %+v", evs)
	}
	if evs := e.eventsOf("limit=2"); len(evs) != 2 || evs[1].ID != all[len(all)-1].ID || evs[0].ID >= evs[1].ID {
		t.Errorf("limit=2: want the newest two, oldest first: %s", jsonOf(t, evs))
	}
	if evs := e.eventsOf("after=" + itoa(all[1].ID) + "&limit=1"); len(evs) != 1 || evs[0].ID != all[2].ID {
		t.Errorf("after: %s", jsonOf(t, evs))
	}
	for _, tc := range []struct{ query, field string }{
		{"kind=signin.finished", "kind"},
		{"after=x", "after"},
		{"after=-1", "after"},
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"client_id=x", "client_id"},
		{"client=a&client=b", "client"},
	} {
		st, m := e.dashRaw(http.MethodGet, "/api/events?"+tc.query, "")
		if st != http.StatusBadRequest || m["code"] != "invalid_filter" || m["field"] != tc.field || !strings.Contains(m["message"].(string), ";") {
			t.Errorf("?%s: want 400 invalid_filter naming %s, got %d %v", tc.query, tc.field, st, m)
		}
	}
	// The operator credential only.
	req, _ := http.NewRequest(http.MethodGet, e.u.Dashboard+"/api/events", nil)
	if st, _, _ := e.do(req); st != http.StatusUnauthorized {
		t.Errorf("without a key: %d", st)
	}
}

// sseEvent is one event of a stream.
type sseEvent struct {
	id    string
	event audit.Event
}

// follow opens the event stream with the header h and returns a channel
// of its events; the stream is closed at the test's end.
func (e *env) follow(query string, h http.Header) (<-chan sseEvent, *http.Response) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.u.Dashboard+"/api/events/stream?"+query, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+e.srv.OperatorKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	ch := make(chan sseEvent, 64)
	if resp.StatusCode != http.StatusOK {
		cancel()
		resp.Body.Close()
		close(ch)
		return ch, resp
	}
	var wg sync.WaitGroup
	wg.Add(1)
	e.t.Cleanup(func() { cancel(); resp.Body.Close(); wg.Wait() })
	go func() {
		defer wg.Done()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				cur.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.event)
			case line == "" && cur.id != "":
				ch <- cur
				cur = sseEvent{}
			}
		}
	}()
	return ch, resp
}

func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	ev, ok := <-ch
	if !ok {
		t.Fatal("the stream ended")
	}
	return ev
}

// The stream delivers a new event, from now on by default, and resumes
// after Last-Event-ID.
func TestEventsStream(t *testing.T) {
	e := start(t)
	_, c := pkce(t)
	e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "deny"})
	before := e.eventsOf("")
	ch, resp := e.follow("kind=signin.started", nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	// The stream is open (its headers came): an event now is delivered.
	_, c = pkce(t)
	e.nativeCode(e.confAuthParams(c), subAna, map[string]string{"action": "deny"})
	ev := next(t, ch)
	if ev.event.Kind != audit.SignInStarted || ev.event.ClientID != confID || ev.id != itoa(ev.event.ID) || ev.event.ID <= before[len(before)-1].ID {
		t.Fatalf("streamed: %+v", ev)
	}
	// Last-Event-ID: the stream resumes after it, with what was missed.
	ch2, _ := e.follow("", http.Header{"Last-Event-Id": {itoa(before[0].ID)}})
	if got := next(t, ch2); got.event.ID != before[1].ID {
		t.Fatalf("after Last-Event-ID %d: got %d", before[0].ID, got.event.ID)
	}
	// A bad filter or Last-Event-ID is a 400 before any stream.
	if _, r := e.follow("kind=nope", nil); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad kind: %d", r.StatusCode)
	}
	if _, r := e.follow("", http.Header{"Last-Event-Id": {"x"}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad Last-Event-ID: %d", r.StatusCode)
	}
}

// Followers are bounded: past the cap a stream is refused 429 with the
// dashboard's error, and a closed stream frees its place.
func TestEventsStreamCap(t *testing.T) {
	e := start(t)
	max := e.srv.Events().MaxFollowers()
	for range max {
		if _, r := e.follow("", nil); r.StatusCode != http.StatusOK {
			t.Fatalf("stream: %d", r.StatusCode)
		}
	}
	st, m := e.dashRaw(http.MethodGet, "/api/events/stream", "")
	if st != http.StatusTooManyRequests || m["code"] != "too_many_followers" {
		t.Fatalf("past the cap: %d %v", st, m)
	}
}

// Two instances on one PostgreSQL database: a follower on B sees the
// events A records, and the listing is one list, each event with its
// instance.
func TestEventsAcrossInstances(t *testing.T) {
	db := storetest.Postgres(t)
	instance := func() *env {
		return startWith(t, db, &clock{t: time.Now()}, func(c *authserver.Config) { c.OperatorKey = "operator-key-for-tests-0123456789" })
	}
	a, b := instance(), instance()
	ch, _ := b.follow("kind=signin.started", nil)
	_, c := pkce(t)
	a.nativeCode(a.authParams(c), subAna, map[string]string{"action": "deny"})
	ev := next(t, ch)
	if ev.event.Instance != a.srv.Events().Instance() || ev.event.Instance == b.srv.Events().Instance() {
		t.Fatalf("B's follower got %+v; A is %s, B %s", ev.event, a.srv.Events().Instance(), b.srv.Events().Instance())
	}
	_, c = pkce(t)
	b.nativeCode(b.authParams(c), subAna, map[string]string{"action": "deny"})
	a.srv.Events().Flush()
	evs := b.eventsOf("kind=signin.started")
	if len(evs) != 2 || evs[0].Instance != a.srv.Events().Instance() || evs[1].Instance != b.srv.Events().Instance() {
		t.Fatalf("one list of both instances: %s", jsonOf(t, evs))
	}
}

// No secret is in an event or a log line: flows with known secrets (the
// client's secret, the codes, the tokens, the PKCE verifiers, the
// operator key, a project key) leave none of them in what is stored or
// logged.
func TestEventsHoldNoSecret(t *testing.T) {
	var logs syncBuffer
	db := storetest.DB(t)
	e := startWith(t, db, &clock{t: time.Now()}, func(c *authserver.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var secrets []string
	secrets = append(secrets, e.confSecret, e.srv.OperatorKey(), hostSecret)
	// Confidential client, native flow, code exchange with its secret.
	v, c := pkce(t)
	rq := e.nativeCode(e.confAuthParams(c), subAna, map[string]string{"action": "approve"})
	code := rq.Get("code")
	st, tok := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir},
		"code_verifier": {v}}, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, tok)
	}
	secrets = append(secrets, code, v, tok["access_token"].(string), tok["refresh_token"].(string), tok["id_token"].(string))
	// Replayed code, a wrong verifier, a wrong secret: refusals that echo.
	e.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {v}}, confID, e.confSecret)
	e.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}, confID, "wrong-"+e.confSecret)
	v2, c2 := pkce(t)
	rq = e.nativeCode(e.authParams(c2), subAna, map[string]string{"action": "approve"})
	e.exchange(rq.Get("code"), v+"x")
	secrets = append(secrets, rq.Get("code"), v2, v+"x", "wrong-"+e.confSecret)
	// A browser flow: its session cookie and CSRF token.
	br := newBrowser(t, e.u.Issuer)
	v3, c3 := pkce(t)
	rq = br.browserCode(e.u.Authorization+"?"+e.authParams(c3).Encode(), subCarla, map[string]string{"action": "approve"})
	secrets = append(secrets, rq.Get("code"), v3)
	u, _ := url.Parse(e.u.Issuer)
	for _, ck := range br.hc.Jar.Cookies(u) {
		secrets = append(secrets, ck.Value)
	}
	// A dashboard project key.
	_, m := e.dashRaw(http.MethodPost, "/api/projects", `{"name":"Secretive"}`)
	secrets = append(secrets, m["key"].(string))

	evs := e.eventsOf("limit=1000")
	if len(evs) < 15 {
		t.Fatalf("too few events to mean anything: %s", strings.Join(kinds(evs), " "))
	}
	stored, _ := json.Marshal(evs)
	logged := logs.String()
	if !strings.Contains(logged, `"msg":"audit event"`) {
		t.Fatalf("no audit log line: %s", logged)
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if bytes.Contains(stored, []byte(s)) {
			t.Errorf("a secret (%s) is in a stored event", redact.Fingerprint(s))
		}
		if strings.Contains(logged, s) {
			t.Errorf("a secret (%s) is in a log line", redact.Fingerprint(s))
		}
	}
}

// A code presented twice and a refresh token used twice each revoke
// their grant (RFC 6749 §4.1.2, RFC 9700 §4.14.2): the audit log says so
// with a grant.revoked naming the grant and why, beside the refusal.
func TestEventsOfReplays(t *testing.T) {
	e := start(t)
	cfg := e.oauth2Config()
	ctx := context.Background()
	v := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("st-1", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.u.BaseURL))
	code := newBrowser(t, e.u.Issuer).browserCode(authURL, subAna, map[string]string{"action": "approve"}).Get("code")
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(v))
	if err != nil {
		t.Fatal(err)
	}
	last := e.eventsOf("kind=token.issued")
	grant := last[len(last)-1].GrantID
	if _, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(v)); err == nil {
		t.Fatal("a replayed code was redeemed")
	}
	evs := e.eventsOf("after=" + itoa(last[len(last)-1].ID))
	wantKinds(t, evs, audit.GrantRevoked, audit.RequestRefused)
	if r := evs[0]; r.GrantID != grant || r.ClientID != publicID || r.Detail["via"] != "code_replay" || r.Actor != audit.Client(publicID) {
		t.Errorf("grant.revoked of the replayed code: %+v, want grant %s via code_replay", r, grant)
	}

	// Another subject's sign-in; its refresh token used twice.
	v = oauth2.GenerateVerifier()
	authURL = cfg.AuthCodeURL("st-2", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.u.BaseURL))
	code = newBrowser(t, e.u.Issuer).browserCode(authURL, subCarla, map[string]string{"action": "approve"}).Get("code")
	if tok, err = cfg.Exchange(ctx, code, oauth2.VerifierOption(v)); err != nil {
		t.Fatal(err)
	}
	refresh := func() error {
		_, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
		return err
	}
	if err := refresh(); err != nil {
		t.Fatal(err)
	}
	last = e.eventsOf("kind=token.issued")
	grant = last[len(last)-1].GrantID
	if err := refresh(); err == nil {
		t.Fatal("a used refresh token was accepted")
	}
	evs = e.eventsOf("after=" + itoa(last[len(last)-1].ID))
	wantKinds(t, evs, audit.GrantRevoked, audit.RequestRefused)
	if r := evs[0]; r.GrantID != grant || r.Subject != subCarla || r.Detail["via"] != "refresh_reuse" {
		t.Errorf("grant.revoked of the reused refresh token: %+v, want grant %s of %s via refresh_reuse", r, grant, subCarla)
	}
}

// A refusal that compares what the request sent with what the rule
// expects says both in its event: a widened scope at a refresh, an
// Origin outside the client's allowed_origins, a code_challenge_method
// other than S256.
func TestEventsSayWhatWasCompared(t *testing.T) {
	e := start(t)
	cfg := e.oauth2Config()
	ctx := context.Background()
	v := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("st-1", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", e.u.BaseURL))
	code := newBrowser(t, e.u.Issuer).browserCode(authURL, subAna, map[string]string{"action": "approve"}).Get("code")
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(v))
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, send func()) audit.Refusal {
		t.Helper()
		before := e.eventsOf("")
		send()
		evs := e.eventsOf("kind=request.refused&after=" + itoa(before[len(before)-1].ID))
		if len(evs) != 1 || evs[0].Refusal == nil {
			t.Fatalf("%s: want one request.refused, got %s", what, jsonOf(t, evs))
		}
		return *evs[0].Refusal
	}
	post := func(form url.Values, origin string) {
		req, _ := http.NewRequest(http.MethodPost, e.u.Token, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if st, m, _ := e.do(req); st != http.StatusBadRequest {
			t.Fatalf("want 400, got %d %v", st, m)
		}
	}
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {publicID}}

	wide := url.Values{"scope": {"openid email"}}
	for k, v := range refresh {
		wide[k] = v
	}
	if f := refused("a widened scope", func() { post(wide, "") }); f.Field != "scope" || f.Sent != "email" ||
		f.Expected != "openid profile offline_access" || f.Error != "invalid_scope" {
		t.Errorf("widened scope: %+v", f)
	}
	if f := refused("an origin not allowed", func() { post(refresh, "http://127.0.0.1:9") }); f.Field != "Origin" ||
		f.Sent != "http://127.0.0.1:9" || f.Expected == "" {
		t.Errorf("origin: %+v", f)
	}
	q := e.authParams("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
	q.Set("code_challenge_method", "plain")
	newBrowser(t, e.u.Issuer).get(e.u.Authorization + "?" + q.Encode())
	evs := e.eventsOf("kind=request.refused")
	if f := evs[len(evs)-1].Refusal; f == nil || f.Field != "code_challenge_method" || f.Sent != "plain" || f.Expected != "S256" {
		t.Errorf("code_challenge_method: %+v", f)
	}
}
