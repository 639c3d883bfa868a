package playground

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/netlog"
)

// TestInspectorErrorsOnlyInChromium: the inspector's "errors only" filter
// shows the errors of the flows in the network log and nothing else. Two
// flows go through the playground's own log, as the host records them: one
// completed, whose caught authorization request (never sent, so without a
// response) is no error, and one whose native-consent call failed. With
// the filter, the failed call and the failed flow's end are shown; the
// caught requests of both flows and the completed flow's end are not. A
// refused consent.approve is listed as an error.
func TestInspectorErrorsOnlyInChromium(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	openLauncher(t, ctx, p)
	poll(t, ctx, "the automation channel", `document.getElementById("channel").dataset.state === "open"`)

	la := p.netlog.BeginLaunch("http://127.0.0.1:1", "demo-public", DemoPublicID)
	caught, _ := url.Parse("http://127.0.0.1:2/oauth/authorize?client_id=" + DemoPublicID + "&response_type=code")
	ok := la.BeginFlow(caught)
	ok.End(netlog.OutcomeCompleted, "")
	bad := la.BeginFlow(caught)
	now := time.Now()
	bad.Add(netlog.Exchange{Source: netlog.SourceHost, Kind: netlog.KindNativeConsent, Method: "POST", URL: "http://127.0.0.1:2/native/requests",
		Started: now, Done: now, Err: "connection refused"})
	bad.End(netlog.OutcomeError, "host: native consent: connection refused")
	// A consent.approve the host refused is an error too.
	p.bus.Publish(bridge.ConsentRefusedEvent{Action: "approve", Code: "no_consent", Message: "no consent screen is shown", Account: "acc-2"})
	poll(t, ctx, "both flows and the refusal in the timeline", `document.querySelectorAll('#timeline li[data-kind="flow.ended"]').length === 2 &&
		document.querySelector('#timeline li[data-kind="consent.refused"]') !== null`)

	const shown = `[...document.querySelectorAll("#timeline li[data-kind]")].filter((l) => l.offsetParent !== null)
		.map((l) => l.dataset.kind + " " + l.querySelector(".ev-summary").textContent)`
	all := eval[[]string](t, ctx, shown)
	eval[bool](t, ctx, `(() => { const e = document.getElementById("filter-level"); e.value = "error"; e.dispatchEvent(new Event("change")); return true; })()`)
	got := eval[[]string](t, ctx, shown)
	if len(got) != 3 || !slices.ContainsFunc(got, func(s string) bool {
		return strings.HasPrefix(s, "network POST http://127.0.0.1:2/native/requests → 0")
	}) || !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "flow.ended") }) ||
		!slices.Contains(got, "consent.refused approve refused (no_consent): no consent screen is shown; account acc-2") {
		t.Errorf("errors only shows %q\nof %q;\nwant the failed native-consent call, the failed flow's end and the refused approval only", got, all)
	}
}
