//go:build linux && cgo

package webkitgtk

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// TestFigures measures, in the test window under Xvfb, the two latencies
// BENCHMARKS.md reports for the consent flow, over several runs each:
//   - caught: a navigation caught towards the authorization endpoint →
//     the consent view painted (the host view's "shown" message, sent
//     after two animation frames);
//   - approve: Approve decided → the confidential Miniapp's signed-in page
//     loaded in the view (decision, callback request, cookie copy,
//     navigation).
//
// It logs the figures and asserts only that each run completes.
func TestFigures(t *testing.T) {
	e := testEnv(t)
	const runs = 20
	var caught, approve []time.Duration
	for i := 0; i < runs; i++ {
		clearCookies(t)
		rec := record(t)
		forgetConsents(t) // a fresh subject: the consent view shows
		if err := testWin.Mount(context.Background(), confidentialApp(t, e)); err != nil {
			t.Fatal(err)
		}
		nav := rec.Wait(t, "caught", func(ev host.Event) bool { return ev.Kind == host.EventNavigation && ev.Action == host.Consent })
		shown := rec.Wait(t, "consent shown", func(ev host.Event) bool { return ev.Kind == host.EventHostShown && ev.Detail == "consent" })
		press(t, "approve")
		// From the decision, not from the press: the press waits out the
		// screen's arming (testConsentArm), which is no part of the flow's
		// latency.
		decided := rec.Wait(t, "decided", kind(host.EventConsentDecided))
		completed := rec.Wait(t, "completed", kind(host.EventCompleted))
		loaded := rec.WaitAfter(t, completed, "signed-in page", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == completed.URL })
		caught = append(caught, shown.At.Sub(nav.At))
		approve = append(approve, loaded.At.Sub(decided.At))
	}
	t.Logf("caught navigation -> consent view visible: %s", stats(caught))
	t.Logf("Approve -> callback page loaded (confidential): %s", stats(approve))
}

func stats(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) string { return strings.TrimSuffix(x.Round(100*time.Microsecond).String(), "0s") }
	return "median " + ms(s[len(s)/2]) + ", min " + ms(s[0]) + ", max " + ms(s[len(s)-1]) + " (n=" + itoa(len(s)) + ")"
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
