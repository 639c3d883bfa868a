package playground

import (
	"slices"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/bridge"
)

// TestInspectorPerEntryDecision: the flow inspector's line for a consent
// decision says what the subject declined and which automatic charge was
// allowed less than it asked (docs/playground.md), and a plain approval
// reads as before.
func TestInspectorPerEntryDecision(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	openLauncher(t, ctx, p)
	poll(t, ctx, "the automation channel", `document.getElementById("channel").dataset.state === "open"`)
	p.Bus().Publish(bridge.ConsentDecidedEvent{Decision: bridge.ConsentApproved, Account: "acc-1"})
	p.Bus().Publish(bridge.ConsentDecidedEvent{Decision: bridge.ConsentApproved, Account: "acc-2",
		DeclinedScopes: []string{"email", "phone"}, DeclinedDetails: []int{3},
		LoweredMaximums: []bridge.LoweredMaximum{{Index: 2, Maximum: "20000"}}})
	poll(t, ctx, "both decisions in the timeline", `document.querySelectorAll('#timeline li[data-kind="consent.decided"]').length === 2`)
	got := eval[[]string](t, ctx, `[...document.querySelectorAll('#timeline li[data-kind="consent.decided"] .ev-summary')].map((e) => e.textContent)`)
	want := []string{"approved with account acc-1",
		"approved with account acc-2; declined scopes email phone; declined details #3; lowered maximum #2 to 20000 CLP"}
	// The timeline may show the newest first: compare as sets.
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the inspector says\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestInspectorGrantManagementAction: the flow inspector's line for a
// consent screen says when the request merges into or replaces a grant
// (its grant_management_action and grant_id), and a request without them
// reads as before.
func TestInspectorGrantManagementAction(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	openLauncher(t, ctx, p)
	poll(t, ctx, "the automation channel", `document.getElementById("channel").dataset.state === "open"`)
	p.Bus().Publish(bridge.ConsentShownEvent{ClientID: "c1", Scopes: []string{"openid"}})
	p.Bus().Publish(bridge.ConsentShownEvent{ClientID: "c1", Scopes: []string{"email"}, GrantManagementAction: "merge", GrantID: "g-42", Pushed: true})
	poll(t, ctx, "both screens in the timeline", `document.querySelectorAll('#timeline li[data-kind="consent.shown"]').length === 2`)
	got := eval[[]string](t, ctx, `[...document.querySelectorAll('#timeline li[data-kind="consent.shown"] .ev-summary')].map((e) => e.textContent)`)
	want := []string{"client c1 asks scopes email; grant_management_action merge of grant g-42 (the pushed request its request_uri named)",
		"client c1 asks scopes openid"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the inspector says\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
