package playground

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/netlog"
)

// envelope is an automation event as the channel sends it.
type envelope struct {
	Seq  int             `json:"seq"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// flowData is what every event of a flow says about it.
type flowData struct {
	Flow     string `json:"flow"`
	Decision string `json:"decision"`
	Outcome  string `json:"outcome"`
}

func (e envelope) flow() flowData {
	var d flowData
	_ = json.Unmarshal(e.Data, &d)
	return d
}

// channel keeps every event the bus published since it was made, as the
// automation channel's clients (the inspector among them) get them.
type channel struct {
	mu     sync.Mutex // guards evs
	evs    []envelope
	notify chan struct{}
	sub    *bridge.Subscription
	done   chan struct{}
}

func listen(t *testing.T, bus *bridge.Bus) *channel {
	c := &channel{notify: make(chan struct{}, 1), sub: bus.Subscribe(8192), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for raw := range c.sub.C() {
			var e envelope
			if json.Unmarshal(raw, &e) != nil {
				continue
			}
			c.mu.Lock()
			c.evs = append(c.evs, e)
			c.mu.Unlock()
			select {
			case c.notify <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { c.sub.Close(); <-c.done })
	return c
}

// wait returns the n-th event (from 1) that matches, waiting for it.
func (c *channel) wait(t *testing.T, what string, n int, match func(envelope) bool) envelope {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		evs := slices.Clone(c.evs)
		c.mu.Unlock()
		seen := 0
		for _, e := range evs {
			if match(e) {
				if seen++; seen == n {
					return e
				}
			}
		}
		if c.sub.Dropped() {
			t.Fatalf("the bus dropped the test's subscription before %s", what)
		}
		select {
		case <-c.notify:
		case <-deadline.C:
			t.Fatalf("waiting for %s, which never came; %d events", what, len(evs))
		}
	}
}

func (c *channel) all() []envelope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.evs)
}

// flowKinds are the events that belong to a consent flow (docs/playground.md,
// "Flow inspector").
var flowKinds = []string{"consent.shown", "consent.decided", "code.issued", "cookies.synced", "token.issued", "token.claims",
	"grant", "network", "flow.ended"}

func inFlow(e envelope) bool {
	return slices.Contains(flowKinds, e.Kind) || e.Kind == "navigation" && e.flow().Decision == bridge.NavigationConsent
}

// windowed is a playground whose Opener is the host's window on the fake
// engine: the host's core mounts what the playground launches, and the
// network log records its flows.
type windowed struct {
	p   *Playground
	eng *hosttest.Engine
	rec *hosttest.Recorder
	ch  *channel
}

func startWindowed(t *testing.T) *windowed {
	t.Helper()
	return startWindowedCfg(t, Config{})
}

// startWindowedCfg is startWindowed with cfg (its Opener and Bus are the window's).
func startWindowedCfg(t *testing.T, cfg Config) *windowed {
	t.Helper()
	bus := bridge.NewBus(nil)
	x := &windowed{rec: hosttest.NewRecorder(), ch: listen(t, bus)}
	w, err := host.NewWindow(hosttest.Factory(&x.eng), host.Options{DataDir: t.TempDir(), Events: bus, Launcher: true})
	if err != nil {
		t.Fatal(err)
	}
	w.OnEvent(x.rec.Add)
	ran := make(chan struct{})
	go func() { w.Run(); close(ran) }()
	t.Cleanup(func() { w.Terminate(); <-ran })
	cfg.Opener, cfg.Bus = NewWindow(w, "test"), bus
	x.p = start(t, cfg)
	return x
}

// launch launches the Miniapp id through the API and waits for its page
// to load in the window. (The page a previous flow led to may or may not
// load before: the new Miniapp's policy decides it.)
func (x *windowed) launch(t *testing.T, id string) Entry {
	t.Helper()
	e := entry(t, x.p, id)
	page := func(ev host.Event) bool {
		return ev.Kind == host.EventLoadFinished && strings.HasPrefix(ev.URL, e.Origin+"/")
	}
	loads := len(x.rec.All(page))
	var res LaunchResult
	if st := call(t, x.p, "POST", "/api/launch", miniappRef{Origin: e.Origin, ID: id}, &res); st != 200 || !res.Window.Opened {
		t.Fatalf("launch %s: %d %+v", id, st, res.Window)
	}
	nth(t, x.rec, id+"'s page", loads+1, page)
	return e
}

// nth waits for the n-th window event (from 1) that matches.
func nth(t *testing.T, rec *hosttest.Recorder, what string, n int, match func(host.Event) bool) host.Event {
	t.Helper()
	seen := 0
	return rec.Wait(t, what, func(e host.Event) bool {
		if match(e) {
			seen++
			return seen == n
		}
		return false
	})
}

// confidentialFlow signs in to the confidential demo as WebKit would
// (auth_url, its redirect caught) and answers the consent with action
// (approve or deny); it returns when the flow's flow.ended is out.
func (x *windowed) confidentialFlow(t *testing.T, consents int, action string) {
	t.Helper()
	conf := x.launch(t, DemoConfidentialID)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(conf.Origin + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		done := make(chan error, 1)
		x.eng.Dispatch(func() {
			x.eng.AddCookies([]host.Cookie{{Name: ck.Name, Value: ck.Value, Domain: "127.0.0.1", Path: "/", MaxAge: -1, HTTPOnly: true}},
				func(err error) { done <- err })
		})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	x.eng.Navigate(host.ViewMiniapp, host.Navigation{URL: resp.Header.Get("Location"), Method: "GET", Trigger: host.TriggerOther, Redirect: true})
	x.consent(t, consents, action)
}

// consent answers the consents-th consent screen with action and waits for
// the end of its flow.
func (x *windowed) consent(t *testing.T, consents int, action string) {
	t.Helper()
	nth(t, x.rec, "the consent screen", consents, func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	x.eng.Post(host.ViewHost, `{"action":"`+action+`"}`)
	x.ch.wait(t, "the flow's end", consents, func(e envelope) bool { return e.Kind == "flow.ended" })
}

// bridgeFlow asks the public demo's bridge for a sign-in, as its page's
// script does, and answers the consent with action.
func (x *windowed) bridgeFlow(t *testing.T, consents int, action string) {
	t.Helper()
	x.launch(t, DemoPublicID)
	script := x.eng.Script()
	i := strings.Index(script, `"key":"`)
	if i < 0 {
		t.Fatal("no bridge key in the public demo's script")
	}
	key := script[i+len(`"key":"`):]
	key = key[:strings.IndexByte(key, '"')]
	msg, _ := json.Marshal(map[string]any{"v": 1, "id": 1, "key": key, "method": "authorize",
		"params": map[string]any{"scope": "openid profile"}})
	x.eng.Post(host.ViewMiniapp, x.w().TransportKey()+string(msg))
	x.consent(t, consents, action)
}

func (x *windowed) w() *host.Window { return x.p.cfg.Opener.(*Window).w }

// runFlows runs three flows: the confidential demo's, approved; the public
// demo's through its bridge, denied; and the same approved (the host
// publishes its token.issued after the network log has ended the flow).
func (x *windowed) runFlows(t *testing.T) {
	t.Helper()
	x.confidentialFlow(t, 1, "approve")
	// The confidential flow's grant read runs after its token response.
	x.ch.wait(t, "the confidential flow's grant", 1, func(e envelope) bool { return e.Kind == "grant" })
	// Denied first: an approval is remembered, and the next consent would
	// not be asked.
	x.bridgeFlow(t, 2, "deny")
	x.bridgeFlow(t, 3, "approve")
	// The host's token.issued comes after flow.ended.
	x.ch.wait(t, "the bridge's token.issued", 1, func(e envelope) bool {
		return e.Kind == "token.issued" && e.flow().Flow != "" && strings.Contains(string(e.Data), DemoPublicID)
	})
}

// apiFlows is GET /api/flows.
func apiFlows(t *testing.T, p *Playground) []netlog.FlowSummary {
	t.Helper()
	var list struct {
		Flows []netlog.FlowSummary `json:"flows"`
	}
	if st := call(t, p, "GET", "/api/flows", nil, &list); st != 200 {
		t.Fatalf("GET /api/flows: %d", st)
	}
	return list.Flows
}

// TestFlowIDsOfTheInspector runs three flows in the window (the fake
// engine, the real playground servers) and checks what the inspector
// groups by: every event of a flow names it by the network log's id; the
// ids named are exactly those of GET /api/flows; each flow's flow.ended
// says the outcome the API lists; the host's token.issued of the bridge's
// sign-in is in the flow of its consent; and the HAR link of every flow
// answers 200 with that flow's entries.
func TestFlowIDsOfTheInspector(t *testing.T) {
	x := startWindowed(t)
	x.runFlows(t)
	flows := apiFlows(t, x.p)
	if len(flows) != 3 {
		t.Fatalf("GET /api/flows: %+v, want three flows", flows)
	}
	want := map[string]string{}
	for _, f := range flows {
		want[f.ID] = f.Outcome
	}
	if got := []string{flows[0].Outcome, flows[1].Outcome, flows[2].Outcome}; !slices.Equal(got,
		[]string{netlog.OutcomeCompleted, netlog.OutcomeDenied, netlog.OutcomeCompleted}) {
		t.Errorf("outcomes %v, want completed, denied, completed", got)
	}

	named := map[string]int{}
	ended := map[string][]string{}
	shownIn := map[string]string{} // client_id → the flow of its last consent.shown
	var bridgeToken envelope
	for _, e := range x.ch.all() {
		if !inFlow(e) {
			if d := e.flow(); d.Flow != "" && e.Kind != "bridge.call" {
				t.Errorf("event #%d %s names flow %s but is not a flow's kind", e.Seq, e.Kind, d.Flow)
			}
			continue
		}
		d := e.flow()
		if _, ok := want[d.Flow]; !ok {
			t.Errorf("event #%d %s names flow %q, which GET /api/flows does not list (%v): %s", e.Seq, e.Kind, d.Flow, want, e.Data)
			continue
		}
		named[d.Flow]++
		switch e.Kind {
		case "flow.ended":
			ended[d.Flow] = append(ended[d.Flow], d.Outcome)
		case "consent.shown":
			var s struct {
				ClientID string `json:"client_id"`
			}
			_ = json.Unmarshal(e.Data, &s)
			shownIn[s.ClientID] = d.Flow
		case "token.issued":
			if strings.Contains(string(e.Data), `"client_id":"`+DemoPublicID+`"`) {
				bridgeToken = e
			}
		}
	}
	for id, outcome := range want {
		if named[id] < 4 {
			t.Errorf("flow %s: %d events name it", id, named[id])
		}
		if len(ended[id]) != 1 || ended[id][0] != outcome {
			t.Errorf("flow %s: flow.ended says %v, GET /api/flows %s", id, ended[id], outcome)
		}
		resp, err := http.DefaultClient.Do(authed(t, x.p, "/api/flows/"+id+"/har"))
		if err != nil {
			t.Fatal(err)
		}
		var h har
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil || len(h.Log.Entries) == 0 || h.Log.Entries[0].Flow != id {
			t.Errorf("the HAR link of flow %s: %d, %v, %d entries", id, resp.StatusCode, err, len(h.Log.Entries))
		}
		if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename="flow-`+id+`.har"` {
			t.Errorf("the HAR of flow %s is offered as %q", id, cd)
		}
	}
	if bridgeToken.Seq == 0 || bridgeToken.flow().Flow != flows[2].ID || shownIn[DemoConfidentialID] != flows[0].ID {
		t.Errorf("the bridge's token.issued is in flow %q, want %s, the flow of its consent; the confidential consent in %q",
			bridgeToken.flow().Flow, flows[2].ID, shownIn[DemoConfidentialID])
	}
}

// authed is a GET of an API route with the launcher's token.
func authed(t *testing.T, p *Playground, path string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", p.LauncherOrigin()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
	return req
}

// TestInspectorFlowsInChromium opens the launcher in headless Chromium
// before three flows run in the window, and again after: both times the
// inspector shows exactly the flows of GET /api/flows, by their ids
// ("Flow f2"), each with the API's outcome as its status and every event
// that names it inside it; Export HAR of a flow downloads flow-<id>.har,
// the API's HAR of that flow.
func TestInspectorFlowsInChromium(t *testing.T) {
	ctx := browser(t)
	x := startWindowed(t)
	closeFirst(t, ctx)
	openLauncher(t, ctx, x.p)
	poll(t, ctx, "the automation channel", `document.getElementById("channel").dataset.state === "open"`)
	x.runFlows(t)
	flows := apiFlows(t, x.p)
	var want []string
	count := map[string]int{}
	for _, e := range x.ch.all() {
		if d := e.flow(); inFlow(e) {
			count[d.Flow]++
		}
	}
	for _, f := range flows {
		want = append(want, f.ID+" "+f.Outcome+" "+jsInt(int64(count[f.ID]))+" Flow "+f.ID)
	}
	shown := `[...document.querySelectorAll("#timeline .flow")].map((f) => f.dataset.flow + " " + f.dataset.status + " " +
		f.querySelectorAll("li[data-kind]").length + " " + f.querySelector(".flow-head .title").textContent.split(" · ")[0]).sort()`
	wantJS, _ := json.Marshal(want)
	for _, how := range []string{"live", "after a reload"} {
		t.Run(how, func(t *testing.T) {
			if how != "live" {
				if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
					t.Fatal(err)
				}
				poll(t, ctx, "the automation channel", `document.body.dataset.ready === "true" && document.getElementById("channel").dataset.state === "open"`)
			}
			pollOr(t, ctx, "the flows of GET /api/flows", `JSON.stringify(`+shown+`) === JSON.stringify(`+string(wantJS)+`)`, shown)
			hars := eval[[]string](t, ctx, `[...document.querySelectorAll("#timeline .flow a.har")].map((a) => a.getAttribute("href")).sort()`)
			for i, f := range flows {
				if i >= len(hars) || hars[i] != "/api/flows/"+f.ID+"/har" {
					t.Errorf("HAR links %v, want one per flow of the API", hars)
					break
				}
			}
		})
	}

	dir := t.TempDir()
	downloaded := allowDownloads(t, ctx, dir)
	id := flows[2].ID
	// Clicked from the page: the flow's head is drawn again with each of
	// its events, so a node found by the driver may be gone at its click.
	eval[bool](t, ctx, `(() => { document.querySelector('#timeline .flow[data-flow="`+id+`"] a.har').click(); return true; })()`)
	path := downloaded()
	if path != filepath.Join(dir, "flow-"+id+".har") {
		t.Errorf("the HAR is saved as %s, want flow-%s.har", path, id)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h har
	if err := json.Unmarshal(raw, &h); err != nil || len(h.Log.Entries) == 0 || h.Log.Entries[0].Flow != id {
		t.Errorf("the downloaded HAR of %s: %v, %d entries", id, err, len(h.Log.Entries))
	}
}

// pollOr is poll that, when it times out, says what show evaluated to.
func pollOr(t *testing.T, ctx context.Context, what, expr, show string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")")); err == nil && ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[any](show))
	t.Fatalf("timed out waiting for %s: the page shows %v (%v)", what, got, err)
}
