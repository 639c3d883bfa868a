package playground

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// start starts a playground on free ports for one test.
func start(t *testing.T, cfg Config) *Playground {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p
}

// call sends one API request as the launcher page does and decodes the
// answer into out (when not nil); it returns the status.
func call(t *testing.T, p *Playground, method, path string, body any, out any) int {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, p.LauncherOrigin()+path, rd)
	req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
	req.Header.Set("Origin", p.LauncherOrigin())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

func entry(t *testing.T, p *Playground, id string) Entry {
	t.Helper()
	list, err := p.Miniapps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no Miniapp %s in %+v", id, list)
	return Entry{}
}

// stageEvents collects the resolve.stage events of the bus.
type stageEvents struct {
	mu  sync.Mutex
	evs []bridge.ResolveStageEvent
}

func collect(t *testing.T, bus *bridge.Bus) *stageEvents {
	t.Helper()
	sub := bus.Subscribe(256)
	t.Cleanup(sub.Close)
	s := &stageEvents{}
	go func() {
		for env := range sub.C() {
			var e struct {
				Kind string                   `json:"kind"`
				Data bridge.ResolveStageEvent `json:"data"`
			}
			if json.Unmarshal(env, &e) == nil && e.Kind == "resolve.stage" {
				s.mu.Lock()
				s.evs = append(s.evs, e.Data)
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// waitFor waits until the events of id include a stage matching ok.
func (s *stageEvents) waitFor(t *testing.T, id, stage string, ok bool) bridge.ResolveStageEvent {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		for _, e := range s.evs {
			if e.ID == id && e.Stage == stage && e.OK == ok {
				s.mu.Unlock()
				return e
			}
		}
		s.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no resolve.stage event %s/%s ok=%v", id, stage, ok)
	return bridge.ResolveStageEvent{}
}

// TestLaunchBrokenMiniapps launches each broken Miniapp through the API the
// launcher page uses and finds the rejection it was built for: the failed
// stage, its code and pointer, the stages before it passed and those after
// it skipped, and the same verdict on the automation channel's bus.
func TestLaunchBrokenMiniapps(t *testing.T) {
	p := start(t, Config{})
	evs := collect(t, p.Bus())
	for _, id := range BrokenKinds() {
		t.Run(id, func(t *testing.T) {
			e := entry(t, p, id)
			if e.Kind != KindBroken || e.Expect == nil {
				t.Fatalf("entry %+v", e)
			}
			var res LaunchResult
			if st := call(t, p, "POST", "/api/launch", miniappRef{Origin: e.Origin, ID: id}, &res); st != http.StatusOK {
				t.Fatalf("status %d", st)
			}
			rep := res.Report
			if rep.Outcome != resolver.OutcomeRejected || len(rep.Reasons) == 0 {
				t.Fatalf("report %+v", rep)
			}
			if r := rep.Reasons[0]; r.Stage != e.Expect.Stage || r.Code != e.Expect.Code || r.Pointer != e.Expect.Pointer || r.Hint == "" {
				t.Errorf("first reason %+v, want %+v with a hint", r, *e.Expect)
			}
			// The stages before the failed one passed; those after it ran
			// when they had their input (docs/resolve.md), and each broken
			// Miniapp has one thing wrong, so none of them failed.
			failed := slices.IndexFunc(rep.Stages, func(s resolver.StageReport) bool { return s.Stage == e.Expect.Stage })
			for i, s := range rep.Stages {
				switch {
				case i < failed && s.Outcome != resolver.OutcomeOK,
					i == failed && s.Outcome != resolver.OutcomeFailed,
					i > failed && s.Outcome != resolver.OutcomeOK && s.Outcome != resolver.OutcomeSkipped:
					t.Errorf("stage %s (%d, failed at %d): %s", s.Stage, i, failed, s.Outcome)
				}
			}
			if res.Window.Opened || res.Window.TabURL != "" || res.Window.Message != msgRejected {
				t.Errorf("window %+v", res.Window)
			}
			ev := evs.waitFor(t, id, string(e.Expect.Stage), false)
			if ev.Code != e.Expect.Code || ev.Pointer != e.Expect.Pointer {
				t.Errorf("event %+v", ev)
			}
		})
	}
}

// TestLaunchDemoMiniappsWithoutWindow launches the two demos in a playground
// without a window: every stage passes, the answer says plainly that there
// is no window, and offers the URL a browser tab starts at.
func TestLaunchDemoMiniappsWithoutWindow(t *testing.T) {
	t.Run("free ports", func(t *testing.T) { launchDemos(t, Config{}) })
	// What `playground --addr 127.0.0.1:0 --launcher-addr 127.0.0.1:0`
	// passes: port 0 everywhere, each resolved to the port it got before
	// any client is registered with its origin.
	zero := "127.0.0.1:0"
	t.Run("port 0", func(t *testing.T) {
		launchDemos(t, Config{Addrs: Addrs{Service: zero, Dashboard: zero, Signing: zero, Invoicing: zero,
			Launcher: zero, Public: zero, Confidential: zero, Automation: zero}})
	})
}

func launchDemos(t *testing.T, cfg Config) {
	p := start(t, cfg)
	for _, c := range []struct{ id, loadPath, clientType string }{
		{DemoPublicID, "/", resolver.ClientPublic},
		{DemoConfidentialID, "/login", resolver.ClientConfidential},
	} {
		t.Run(c.id, func(t *testing.T) {
			e := entry(t, p, c.id)
			var res LaunchResult
			if st := call(t, p, "POST", "/api/launch", miniappRef{Origin: e.Origin, ID: c.id}, &res); st != http.StatusOK {
				t.Fatalf("status %d", st)
			}
			if res.Report.Outcome != resolver.OutcomeAccepted || len(res.Report.Stages) != len(resolver.Stages()) {
				t.Fatalf("report %+v", res.Report)
			}
			for _, s := range res.Report.Stages {
				if s.Outcome != resolver.OutcomeOK {
					t.Errorf("stage %s: %s", s.Stage, s.Outcome)
				}
			}
			if m := res.Report.Miniapp; m == nil || m.ClientType != c.clientType || m.ClientID != c.id {
				t.Errorf("summary %+v", m)
			}
			w := res.Window
			if w.Available || w.Opened || w.Message != msgNoWindow || w.TabURL != e.Origin+c.loadPath {
				t.Errorf("window %+v", w)
			}
		})
	}
}

// opener is a stand-in for the host's window (which needs a display):
// it records what the playground hands over.
type opener struct {
	mu     sync.Mutex
	mounts []OpenRequest
	resets []string
}

func (o *opener) Mount(ctx context.Context, req OpenRequest) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mounts = append(o.mounts, req)
	return "view-1", nil
}

func (o *opener) ResetStorage(ctx context.Context, origin, id string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.resets = append(o.resets, origin+" "+id)
	return nil
}

// TestLaunchWithOpener checks the seam the host implements: an accepted
// Miniapp is handed over with the switched subject and the host's
// credential, a rejected one never is, and reset storage reaches it.
func TestLaunchWithOpener(t *testing.T) {
	o := &opener{}
	p := start(t, Config{Opener: o})
	if st := call(t, p, "POST", "/api/subject", map[string]string{"subject": "sub_benjamin"}, nil); st != http.StatusOK {
		t.Fatalf("switch subject: %d", st)
	}
	demo := entry(t, p, DemoConfidentialID)
	var res LaunchResult
	call(t, p, "POST", "/api/launch", miniappRef{Origin: demo.Origin, ID: demo.ID}, &res)
	if !res.Window.Available || !res.Window.Opened || res.Window.View != "view-1" {
		t.Fatalf("window %+v", res.Window)
	}
	broken := entry(t, p, BrokenNoAuthURL)
	call(t, p, "POST", "/api/launch", miniappRef{Origin: broken.Origin, ID: broken.ID}, &res)
	if res.Window.Opened {
		t.Errorf("a rejected Miniapp was opened: %+v", res.Window)
	}
	if st := call(t, p, "POST", "/api/reset", miniappRef{Origin: demo.Origin, ID: demo.ID}, nil); st != http.StatusOK {
		t.Errorf("reset: %d", st)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.mounts) != 1 {
		t.Fatalf("mounts %+v", o.mounts)
	}
	m := o.mounts[0]
	id, secret := p.HostCredential()
	if m.Subject != "sub_benjamin" || m.Miniapp.Manifest.ID != DemoConfidentialID || m.Miniapp.AuthURL == nil ||
		m.HostClientID != id || secret == "" || m.HostSecret != secret || m.Services.Native == "" {
		t.Errorf("mount %+v", m)
	}
	if len(o.resets) != 1 || o.resets[0] != demo.Origin+" "+demo.ID {
		t.Errorf("resets %v", o.resets)
	}
	var out struct{ Error struct{ Code string } }
	if st := call(t, p, "POST", "/api/devtools", struct{}{}, &out); st != http.StatusConflict || out.Error.Code != "no_devtools" {
		t.Errorf("devtools of a window without an inspector: %d %q, want 409 no_devtools", st, out.Error.Code)
	}
}

// inspectingOpener is an opener whose window has a web inspector.
type inspectingOpener struct {
	opener
	shown []bridge.ViewCommand
}

func (o *inspectingOpener) ShowDevTools(_ context.Context, cmd bridge.ViewCommand) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shown = append(o.shown, cmd)
	return nil
}

// TestDevToolsAPI: POST /api/devtools (the launcher's button) and the
// automation channel's devtools.show reach the window's web inspector,
// with an empty body too.
func TestDevToolsAPI(t *testing.T) {
	o := &inspectingOpener{}
	p := start(t, Config{Opener: o})
	var out struct{ Message string }
	if st := call(t, p, "POST", "/api/devtools", struct{}{}, &out); st != http.StatusOK || !strings.Contains(out.Message, "web inspector") {
		t.Errorf("devtools: %d %q", st, out.Message)
	}
	req, _ := http.NewRequest("POST", p.LauncherOrigin()+"/api/devtools", nil)
	req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("devtools with an empty body: %d", resp.StatusCode)
	}
	ctl := &controller{p: p}
	if err := ctl.ShowDevTools(t.Context(), bridge.ViewCommand{View: "main"}); err != nil {
		t.Errorf("devtools.show: %v", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.shown) != 3 || o.shown[2].View != "main" {
		t.Errorf("inspector shown %+v, want three times, the last for view main", o.shown)
	}
}

// TestAPIGate refuses what another page or a DNS-rebound name could send,
// and answers the launcher's own requests.
func TestAPIGate(t *testing.T) {
	p := start(t, Config{})
	demo := entry(t, p, DemoPublicID)
	launch := `{"origin":"` + demo.Origin + `","id":"demo-public"}`
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		code                     string
	}{
		{"page without token", "GET", "/", "", nil, 200, ""},
		{"rebound host", "GET", "/", "", map[string]string{"Host": "evil.example:80"}, 403, "bad_host"},
		{"api without token", "GET", "/api/session", "", map[string]string{"Authorization": ""}, 401, "bad_token"},
		{"api with a wrong token", "GET", "/api/session", "", map[string]string{"Authorization": "Bearer nope"}, 401, "bad_token"},
		{"api", "GET", "/api/session", "", nil, 200, ""},
		{"launch from another origin", "POST", "/api/launch", launch, map[string]string{"Origin": "http://evil.example"}, 403, "bad_origin"},
		{"launch as a form", "POST", "/api/launch", launch, map[string]string{"Content-Type": "text/plain"}, 415, "bad_content_type"},
		{"launch with an unknown member", "POST", "/api/launch", `{"origin":"x","id":"y","z":1}`, nil, 400, "invalid_request"},
		{"launch without an id", "POST", "/api/launch", `{"origin":"` + demo.Origin + `"}`, nil, 400, "invalid_request"},
		{"launch", "POST", "/api/launch", launch, nil, 200, ""},
		{"reset without a window", "POST", "/api/reset", launch, nil, 409, "no_window"},
		{"devtools without a window", "POST", "/api/devtools", `{}`, nil, 409, "no_window"},
		{"devtools with a member", "POST", "/api/devtools", `{"view":"main"}`, nil, 400, "invalid_request"},
		{"devtools from another origin", "POST", "/api/devtools", `{}`, map[string]string{"Origin": "http://evil.example"}, 403, "bad_origin"},
		{"devtools as a form", "POST", "/api/devtools", `{}`, map[string]string{"Content-Type": "text/plain"}, 415, "bad_content_type"},
		{"unknown subject", "POST", "/api/subject", `{"subject":"sub_nobody"}`, nil, 400, "invalid_request"},
		{"unknown route", "GET", "/api/nothing", "", nil, 404, "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, p.LauncherOrigin()+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
			req.Header.Set("Origin", p.LauncherOrigin())
			req.Header.Set("Content-Type", "application/json")
			for k, v := range c.header {
				if k == "Host" {
					req.Host = v
				} else if v == "" {
					req.Header.Del(k)
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Error struct{ Code string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode != c.status || out.Error.Code != c.code {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, out.Error.Code, c.status, c.code)
			}
			if c.path == "/" && c.status == 200 {
				csp := resp.Header.Get("Content-Security-Policy")
				ws := strings.TrimSuffix(p.AutomationURL(), "/automation")
				if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "connect-src 'self' "+ws+";") {
					t.Errorf("CSP %q", csp)
				}
			}
		})
	}
}

// TestAPIStrictJSON: the API reads its bodies with the project's strict
// JSON rules: a member named twice is refused rather than read as its last
// value (a launch of a Miniapp other than the one a checker saw), and so
// are data after the object and a body over the limit.
func TestAPIStrictJSON(t *testing.T) {
	p := start(t, Config{})
	demo := entry(t, p, DemoPublicID)
	cases := []struct {
		name, body string
		status     int
		code, says string
	}{
		{"origin named twice", `{"origin":"http://127.0.0.1:9","origin":"` + demo.Origin + `","id":"demo-public"}`, 400, "invalid_request", `"origin"`},
		{"data after the object", `{"origin":"` + demo.Origin + `","id":"demo-public"} {}`, 400, "invalid_request", "after"},
		{"a body over 64 KiB", `{"origin":"` + demo.Origin + `","id":"` + strings.Repeat("a", 64<<10) + `"}`, 413, "too_large", "65536"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", p.LauncherOrigin()+"/api/launch", strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode != c.status || out.Error.Code != c.code || !strings.Contains(out.Error.Message, c.says) {
				t.Errorf("%d %q %q, want %d %q saying %q", resp.StatusCode, out.Error.Code, out.Error.Message, c.status, c.code, c.says)
			}
		})
	}
}

// TestSubjects lists the seeded subjects and switches between them.
func TestSubjects(t *testing.T) {
	p := start(t, Config{})
	var out struct {
		Subjects []Subject `json:"subjects"`
		Current  string    `json:"current"`
	}
	call(t, p, "GET", "/api/subjects", nil, &out)
	ids := []string{}
	for _, s := range out.Subjects {
		ids = append(ids, s.ID)
		if s.Name == "" {
			t.Errorf("subject %+v has no name", s)
		}
	}
	for _, want := range []string{"sub_ana", "sub_benjamin", "sub_carla"} {
		if !slices.Contains(ids, want) {
			t.Errorf("subjects %v lack %s", ids, want)
		}
	}
	if out.Current != "sub_ana" {
		t.Errorf("current %q", out.Current)
	}
	call(t, p, "POST", "/api/subject", map[string]string{"subject": "sub_carla"}, nil)
	if p.Subject() != "sub_carla" {
		t.Errorf("subject %q after switching", p.Subject())
	}
}

// TestAutomationOpen drives the playground as a test program would, over the
// automation channel: open resolves and reports, a rejection is a
// command_failed naming the code, and an accepted Miniapp without a window
// is no_window; the resolve.stage events arrive on the same connection.
func TestAutomationOpen(t *testing.T) {
	p := start(t, Config{})
	h := http.Header{"Sec-WebSocket-Protocol": {bridge.AutomationProtocol + ", " + bridge.TokenProtocolPrefix + p.AutomationToken()}}
	conn, _, err := websocket.DefaultDialer.Dial(p.AutomationURL(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	broken, demo := entry(t, p, BrokenUnregistered), entry(t, p, DemoPublicID)
	for i, e := range []Entry{broken, demo} {
		msg, _ := json.Marshal(map[string]any{"id": i + 1, "command": "open", "params": map[string]string{"origin": e.Origin, "id": e.ID}})
		if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
	}
	replies := map[int]string{}
	var failedStage string
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(replies) < 2 || failedStage == "" {
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Type  string `json:"type"`
			ID    int    `json:"id"`
			Kind  string `json:"kind"`
			Data  bridge.ResolveStageEvent
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Type == "reply":
			replies[m.ID] = m.Error.Code + " " + m.Error.Message
		case m.Kind == "resolve.stage" && !m.Data.OK:
			failedStage = m.Data.Stage + "/" + m.Data.Code
		}
	}
	if r := replies[1]; !strings.HasPrefix(r, "command_failed ") || !strings.Contains(r, resolver.CodeNotRegistered) {
		t.Errorf("open of a broken Miniapp: %q", r)
	}
	if r := replies[2]; !strings.HasPrefix(r, "no_window ") {
		t.Errorf("open without a window: %q", r)
	}
	if failedStage != "client/"+resolver.CodeNotRegistered {
		t.Errorf("failed stage event %q", failedStage)
	}
}

// TestAddrsLoopbackOnly refuses to listen anywhere but on loopback.
func TestAddrsLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		addrs Addrs
		ok    bool
	}{
		{Addrs{}, true},
		{Addrs{Launcher: "127.0.0.1:0", Broken: []string{"[::1]:0"}}, true},
		{Addrs{Launcher: "0.0.0.0:8700"}, false},
		{Addrs{Service: "192.168.1.2:8600"}, false},
		{Addrs{Broken: []string{"", "example.com:80"}}, false},
	} {
		if err := c.addrs.validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.addrs, err)
		}
	}
}

// TestLaunchUndecided launches an origin where nothing listens: the report
// is undecided at the download stage, which is not a rejection, and the
// answer says to try again.
func TestLaunchUndecided(t *testing.T) {
	p := start(t, Config{})
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	var res LaunchResult
	if st := call(t, p, "POST", "/api/launch", miniappRef{Origin: "http://" + addr, ID: "nothing"}, &res); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	if res.Report.Outcome != resolver.OutcomeUndecided || res.Report.Stages[1].Outcome != resolver.OutcomeUndecided ||
		res.Report.Stages[1].Reasons[0].Code != resolver.CodeNetwork {
		t.Errorf("report %+v", res.Report)
	}
	if res.Window.Message != msgUndecided || res.Window.Opened {
		t.Errorf("window %+v", res.Window)
	}
}
