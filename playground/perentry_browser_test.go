package playground

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/bridge"
)

// TestInspectorPerEntryDecision: the flow inspector's line for a consent
// decision says what the subject declined and which automatic charge was
// allowed less than it asked (docs/playground.md), and a plain approval
// reads as before.
func TestInspectorPerEntryDecision(t *testing.T) {
	got := inspectorSummaries(t, "consent.decided",
		bridge.ConsentDecidedEvent{Decision: bridge.ConsentApproved, Account: "acc-1"},
		bridge.ConsentDecidedEvent{Decision: bridge.ConsentApproved, Account: "acc-2",
			DeclinedScopes: []string{"email", "phone"}, DeclinedDetails: []int{3},
			LoweredMaximums: []bridge.LoweredMaximum{{Index: 2, Maximum: "20000"}}})
	want := []string{"approved with account acc-1",
		"approved with account acc-2; declined scopes email phone; declined details #3; lowered maximum #2 to 20000 CLP"}
	if !slices.Equal(got, want) {
		t.Errorf("the inspector says\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestInspectorGrantManagementAction: the flow inspector's line for a
// consent screen says when the request merges into or replaces a grant
// (its grant_management_action and grant_id), and a request without them
// reads as before.
func TestInspectorGrantManagementAction(t *testing.T) {
	got := inspectorSummaries(t, "consent.shown",
		bridge.ConsentShownEvent{ClientID: "c1", Scopes: []string{"openid"}},
		bridge.ConsentShownEvent{ClientID: "c1", Scopes: []string{"email"}, GrantManagementAction: "merge", GrantID: "g-42", Pushed: true})
	want := []string{"client c1 asks scopes email; grant_management_action merge of grant g-42 (the pushed request its request_uri named)",
		"client c1 asks scopes openid"}
	if !slices.Equal(got, want) {
		t.Errorf("the inspector says\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// inspectorSummaries publishes events, all of kind, on a playground whose
// launcher is open in Chromium, and returns the summary lines the flow
// inspector shows for them, sorted (the timeline may show the newest
// first).
func inspectorSummaries(t *testing.T, kind string, events ...bridge.Event) []string {
	t.Helper()
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	openLauncher(t, ctx, p)
	poll(t, ctx, "the automation channel", `document.getElementById("channel").dataset.state === "open"`)
	for _, e := range events {
		p.Bus().Publish(e)
	}
	sel := `#timeline li[data-kind="` + kind + `"]`
	poll(t, ctx, "the events in the timeline", `document.querySelectorAll('`+sel+`').length === `+strconv.Itoa(len(events)))
	got := eval[[]string](t, ctx, `[...document.querySelectorAll('`+sel+` .ev-summary')].map((e) => e.textContent)`)
	slices.Sort(got)
	return got
}
