package playground

import (
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTraceLinkInChromium: the flow inspector shows a flow's trace id
// (GET /api/flows' trace_id) as a link to the trace UI of Config.TraceUI,
// with the id in place of {trace_id}, and nothing for a flow without a
// trace (docs/playground.md, "Trace ids").
func TestTraceLinkInChromium(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{TraceUI: "http://127.0.0.1:16686/trace/{trace_id}"})
	closeFirst(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(p.LauncherURL())); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the automation channel", `document.body.dataset.ready === "true" && document.getElementById("channel").dataset.state === "open"`)
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	la := p.netlog.BeginLaunch("http://127.0.0.1:1", "traced", "demo-public")
	u, _ := url.Parse("http://127.0.0.1:2/oauth/authorize?client_id=demo-public")
	traced, untraced := la.BeginTracedFlow(u, id), la.BeginFlow(u)
	sel := func(f string) string {
		return `document.querySelector('#timeline .flow[data-flow="` + f + `"] .trace')`
	}
	poll(t, ctx, "the traced flow's link", sel(traced.ID())+` && `+sel(traced.ID())+`.querySelector("a") !== null`)
	got := eval[[]string](t, ctx, `[`+sel(traced.ID())+`.querySelector("a").href, `+sel(traced.ID())+`.textContent, String(`+sel(traced.ID())+`.hidden)]`)
	if want := []string{"http://127.0.0.1:16686/trace/" + id, "trace " + id, "false"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("the traced flow shows %q, want %q", got, want)
	}
	poll(t, ctx, "the untraced flow", sel(untraced.ID())+` !== null`)
	if hidden := eval[bool](t, ctx, sel(untraced.ID())+`.hidden`); !hidden {
		t.Error("a flow without a trace shows a trace id")
	}
}
