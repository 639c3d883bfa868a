package playground

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/miniapp-host/miniapp-host/netlog"
)

// TestInjectedBadgeInChromium: a network entry that a development fault
// answered (netlog.Entry.Injected, docs/dashboard.md "Faults") shows an
// "injected" badge in the flow inspector, titled with the fault, and a
// real answer shows none.
func TestInjectedBadgeInChromium(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(p.LauncherURL())); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the automation channel", `document.body.dataset.ready === "true" && document.getElementById("channel").dataset.state === "open"`)
	const mark = "fault=flt_x1; endpoint=token; effect=error"
	p.Bus().Publish(netlog.NetworkEvent{Flow: "f-inj", Launch: "l-inj", Entry: 1, Source: netlog.SourceHost, EntryKind: netlog.KindToken,
		Method: "POST", URL: "http://127.0.0.1:1/oauth/token", Status: 400, Injected: mark})
	p.Bus().Publish(netlog.NetworkEvent{Flow: "f-inj", Launch: "l-inj", Entry: 2, Source: netlog.SourceHost, EntryKind: netlog.KindToken,
		Method: "POST", URL: "http://127.0.0.1:1/oauth/token", Status: 200})
	poll(t, ctx, "both network rows", `document.querySelectorAll('#timeline [data-flow="f-inj"] li[data-kind="network"]').length === 2`)
	got := eval[[]string](t, ctx, `[...document.querySelectorAll('#timeline [data-flow="f-inj"] li[data-kind="network"]')].map((li) => {
		const b = li.querySelector(".badge.injected");
		return b && !b.hidden && b.offsetParent !== null ? b.textContent + " " + b.title : "none";
	})`)
	if len(got) != 2 || got[0] != "injected "+mark || got[1] != "none" {
		t.Fatalf("badges: want [%q none], got %q", "injected "+mark, got)
	}
}
