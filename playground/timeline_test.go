package playground

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/netlog"
)

// TestTimelineStaysBounded: the flow inspector of a launcher kept open
// keeps the latest events only (here 50, set with ?keep=50; 2,000 by
// default): after 160 events the page holds 50 list items, the newest
// among them, the launch whose events all went is gone from the page, and
// the count says how many older events were dropped. Every event kept
// used to stay in the launcher's web process for as long as the window
// was open (BENCHMARKS.md, "Soak").
func TestTimelineStaysBounded(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	u := strings.Replace(p.LauncherURL(), "/#", "/?keep=50#", 1)
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the automation channel", `document.body.dataset.ready === "true" && document.getElementById("channel").dataset.state === "open"`)

	defer func() {
		if t.Failed() {
			t.Logf("the page shows: %s", eval[string](t, ctx, `document.getElementById("timeline-count").textContent + " | " + document.querySelectorAll("#timeline li[data-kind]").length + " items"`))
		}
	}()
	bus := p.Bus()
	bus.Publish(bridge.ResolveStageEvent{Origin: "http://127.0.0.1:1", ID: "old", Stage: "manifest", OK: true, Launch: "launch-old"})
	for i := 0; i < 9; i++ {
		bus.Publish(bridge.BridgeCallEvent{Method: "getContext", Decision: "allowed"})
	}
	bus.Publish(bridge.ResolveStageEvent{Origin: "http://127.0.0.1:2", ID: "new", Stage: "manifest", OK: true, Launch: "launch-new"})
	for i := 0; i < 149; i++ {
		bus.Publish(bridge.BridgeCallEvent{Method: "ready", Decision: "allowed"})
	}
	// The count is drawn once the last event is filed.
	poll(t, ctx, "the count after the last event", `/^50 events, 1 group \(the latest 50 kept: \d+ older dropped\)$/.test(document.getElementById("timeline-count").textContent)`)
	if n := eval[int](t, ctx, `document.querySelectorAll("#timeline li[data-kind]").length`); n != 50 {
		t.Errorf("the timeline shows %d events, want the latest 50", n)
	}
	if eval[bool](t, ctx, `document.querySelector('#timeline [data-launch="launch-old"]') !== null`) {
		t.Error("the launch whose events were all dropped is still on the page")
	}
	if !eval[bool](t, ctx, `document.querySelector('#timeline [data-launch="launch-new"]') !== null`) {
		t.Error("the latest launch is not on the page")
	}
	count := eval[string](t, ctx, `document.getElementById("timeline-count").textContent`)
	var dropped int
	if _, err := fmt.Sscanf(count[strings.Index(count, ":")+1:], "%d", &dropped); err != nil || dropped < 110 {
		t.Errorf("count %q: want at least 110 older events dropped (160 published, 50 kept)", count)
	}
	// The newest event kept is the last one published: a bridge.call of ready, after launch-new's stage.
	if got := eval[string](t, ctx, `(() => { const li = [...document.querySelectorAll("#timeline li[data-kind]")]; return li[li.length - 1].dataset.kind + " " + li[li.length - 1].closest("[data-launch]").dataset.launch; })()`); got != "bridge.call launch-new" {
		t.Errorf("the last event on the page is %q, want a bridge.call of launch-new", got)
	}
}

// publishRound publishes the events of one round of the soak (package
// soak) in the order a window publishes them: for each demo, the stages of
// its launch, navigations, the consent flow with its network entries, the
// code, the token, its claims and grant, the flow's end, console messages,
// and for the public demo 40 bridge calls. It returns the last event's
// sequence number, read from a subscription of the test's own.
func publishRound(t *testing.T, bus *bridge.Bus, sub *bridge.Subscription, n int) uint64 {
	t.Helper()
	for c, id := range []string{DemoConfidentialID, DemoPublicID} {
		origin := fmt.Sprintf("http://127.0.0.1:%d", 8701+c)
		launch := fmt.Sprintf("launch-%d", 2*n+c)
		flow := fmt.Sprintf("f%d", 2*n+c+1)
		for _, s := range []string{"origin", "download", "parse", "schema", "identity", "client", "origins"} {
			bus.Publish(bridge.ResolveStageEvent{Origin: origin, ID: id, Stage: s, OK: true, Launch: launch})
		}
		bus.Publish(bridge.NavigationEvent{URL: origin + "/", Decision: "allowed", Rule: "same-origin"})
		if id == DemoPublicID {
			for i := 0; i < 40; i++ {
				bus.Publish(bridge.BridgeCallEvent{Method: "getContext", Decision: "allowed"})
			}
			bus.Publish(bridge.BridgeCallEvent{Method: "authorize", Decision: "allowed"})
		}
		bus.Publish(bridge.NavigationEvent{URL: "http://127.0.0.1:8600/bank/authorize?client_id=" + id, Decision: "consent", Rule: "authorization-endpoint", Flow: flow})
		for e := 0; e < 3; e++ {
			bus.Publish(netlog.NetworkEvent{Flow: flow, Launch: launch, Entry: e, Source: "host", EntryKind: "request", Method: "POST",
				URL: "http://127.0.0.1:8600/bank/native/consent", Status: 200, DurationMS: 3.2})
		}
		bus.Publish(bridge.ConsentShownEvent{ClientID: id, Scopes: []string{"openid", "profile"}, Accounts: []string{"acc-1", "acc-2"}, Flow: flow})
		bus.Publish(bridge.ConsentDecidedEvent{Decision: "approved", Account: "acc-2", Flow: flow})
		bus.Publish(bridge.CodeIssuedEvent{ClientID: id, RedirectURI: origin + "/callback", Fingerprint: fmt.Sprintf("c%d", n), Flow: flow})
		bus.Publish(bridge.CookiesSyncedEvent{Origin: origin, Names: []string{"session"}, Flow: flow})
		bus.Publish(bridge.TokenIssuedEvent{ClientID: id, TokenType: "Bearer", Scope: "openid profile", ExpiresIn: 300, Fingerprint: fmt.Sprintf("t%d", n), Flow: flow})
		bus.Publish(TokenClaimsEvent{ClientID: id, Fingerprint: fmt.Sprintf("t%d", n), Flow: flow,
			Claims: json.RawMessage(`{"sub":"sub_benjamin","aud":["bank"],"scope":"openid profile","exp":1790000000,"iat":1789999700}`)})
		bus.Publish(GrantEvent{ClientID: id, Fingerprint: fmt.Sprintf("t%d", n), Status: 200, Flow: flow,
			Grant: json.RawMessage(`{"subject":"sub_benjamin","scopes":["openid","profile"]}`)})
		for e := 3; e < 6; e++ {
			bus.Publish(netlog.NetworkEvent{Flow: flow, Launch: launch, Entry: e, Source: "backend", EntryKind: "request", Method: "GET",
				URL: origin + "/callback", Status: 302, DurationMS: 5.5})
		}
		bus.Publish(netlog.FlowEndedEvent{Flow: flow, Launch: launch, Outcome: "completed"})
		for i := 0; i < 3; i++ {
			bus.Publish(bridge.NavigationEvent{URL: fmt.Sprintf("%s/?i=%d", origin, i), Decision: "allowed", Rule: "same-origin"})
			bus.Publish(bridge.ConsoleEvent{Type: "console", Level: "log", Message: fmt.Sprintf("page loaded %d", n),
				Source: origin + "/app.js:1:1", Frame: origin + "/", MainFrame: true})
		}
	}
	var last uint64
	for {
		select {
		case env, ok := <-sub.C():
			if !ok {
				t.Fatal("the test's subscription was dropped: its buffer is too small")
			}
			var e struct{ Seq uint64 }
			if err := json.Unmarshal(env, &e); err != nil {
				t.Fatal(err)
			}
			last = e.Seq
		default:
			return last
		}
	}
}

// TestTimelineMakesNoElementPerEvent: a launcher kept open makes no new
// element for an event once its timeline is full. In WebKit an element a
// script made and the page dropped stays in the launcher's web process
// until JavaScriptCore's next full collection, which this page's little
// JavaScript seldom brings: a page that made some 40 elements per event
// grew by about 14 KB per event past the bound (BENCHMARKS.md, "Where the
// WebKit memory goes"). Here, past the bound (?keep=200, 99 events a
// round), 1,000 more events of the soak's mix make fewer than one element
// per event (a launch group, a flow and its tables per launch; the rows of
// dropped events are filled again), the page has as many elements as
// when it was first full, and every row still works: "data"
// shows the event's JSON and the newest event is shown.
func TestTimelineMakesNoElementPerEvent(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	u := strings.Replace(p.LauncherURL(), "/#", "/?keep=200#", 1)
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the automation channel", `document.body.dataset.ready === "true" && document.getElementById("channel").dataset.state === "open"`)
	// Count the elements the page makes from here on.
	eval[bool](t, ctx, `(() => {
		const make = document.createElement.bind(document);
		window.__made = 0;
		document.createElement = (...a) => { window.__made++; return make(...a); };
		return true;
	})()`)
	sub := p.Bus().Subscribe(4096)
	defer sub.Close()
	round := func(n int) {
		last := publishRound(t, p.Bus(), sub, n)
		poll(t, ctx, fmt.Sprintf("event #%d on the page", last), fmt.Sprintf(`document.querySelector('#timeline li[data-seq="%d"]') !== null`, last))
	}
	type counts struct{ Made, Elements, Rows int }
	read := func() counts {
		return eval[counts](t, ctx, `({made: window.__made, elements: document.getElementsByTagName("*").length,
			rows: document.querySelectorAll("#timeline li[data-seq]").length})`)
	}
	for n := 0; n < 3; n++ {
		round(n)
	}
	full := read()
	if full.Rows != 200 {
		t.Fatalf("after 297 events the timeline shows %d rows, want the latest 200", full.Rows)
	}
	const rounds = 10
	for n := 3; n < 3+rounds; n++ {
		round(n)
	}
	after := read()
	events := rounds * 99
	if made := after.Made - full.Made; made >= events {
		t.Errorf("%d more events made %d elements (%.1f per event), want fewer than one per event", events, made, float64(made)/float64(events))
	} else {
		t.Logf("%d more events made %d elements (%.2f per event)", events, made, float64(made)/float64(events))
	}
	if after.Rows != 200 {
		t.Errorf("the timeline shows %d rows, want 200", after.Rows)
	}
	// The same number of rows, groups and flows: as many elements, give or
	// take the launches' tables in the rows kept.
	if d := after.Elements - full.Elements; d > full.Elements/20 || d < -full.Elements/20 {
		t.Errorf("the page has %d elements, %d when first full", after.Elements, full.Elements)
	}
	// A row filled again: its "data" shows its own event's JSON.
	got := eval[string](t, ctx, `(() => {
		const li = document.querySelector('#timeline li[data-kind="token.claims"]');
		li.querySelector(".data-toggle").click();
		const pre = li.querySelector("pre.ev-data");
		return li.dataset.seq + " " + (pre && !pre.hidden ? JSON.parse(pre.textContent).claims.sub : "no JSON shown");
	})()`)
	if !strings.HasSuffix(got, " sub_benjamin") {
		t.Errorf("data of a token.claims row: %q, want its claims", got)
	}
}
