package playground

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/miniapp-host/miniapp-host/bridge"
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
