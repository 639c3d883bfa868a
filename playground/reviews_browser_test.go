package playground

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPendingReviewsInChromium: the launcher in headless Chromium lists the
// submissions pending on the dashboard under Pending reviews; Approve grants
// the policy (the dashboard's approved policy has its scopes), Reject
// without a reason shows the dashboard's refusal and with one rejects, and
// what the page writes of an answer stays text.
func TestPendingReviewsInChromium(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	s := submitForReview(t, p)
	openLauncher(t, ctx, p)
	poll(t, ctx, "the pending reviews", `document.getElementById("reviews").dataset.loaded === "true" &&
		document.querySelectorAll("#reviews li").length === 3`)
	item := func(id string) string { return `document.querySelector('#reviews li[data-id="` + id + `"]')` }
	text := eval[string](t, ctx, item(s.rs)+`.textContent`)
	if !strings.Contains(text, "Resource Server "+s.rs) || !strings.Contains(text, "resource https://payslips.example/api; scopes payslips:read") ||
		!strings.Contains(text, "project "+s.project) {
		t.Errorf("the Resource Server's entry: %q", text)
	}

	click(t, ctx, `#reviews li[data-id="`+s.policy+`"] button.approve`)
	poll(t, ctx, "the approval", item(s.policy)+`.dataset.outcome === "approved"`)
	if got := approvedScopes(t, p, s); strings.Join(got, " ") != "openid profile" {
		t.Fatalf("approved policy after Approve: %v", got)
	}
	if !eval[bool](t, ctx, item(s.policy)+`.querySelector("button.approve").disabled`) {
		t.Error("Approve is still enabled after the decision")
	}

	click(t, ctx, `#reviews li[data-id="`+s.another+`"] button.reject`)
	poll(t, ctx, "the refused rejection", item(s.another)+`.querySelector(".review-outcome.error") !== null`)
	if got := eval[string](t, ctx, item(s.another)+`.querySelector(".review-outcome").textContent`); !strings.Contains(got, "/reason") {
		t.Errorf("a rejection without reason says %q", got)
	}
	const reason = `<img src=x onerror="document.body.dataset.pwned=1">not now`
	eval[bool](t, ctx, `(() => { `+item(s.another)+`.querySelector("input.reason").value = `+jsString(reason)+`; return true; })()`)
	click(t, ctx, `#reviews li[data-id="`+s.another+`"] button.reject`)
	poll(t, ctx, "the rejection", item(s.another)+`.dataset.outcome === "rejected"`)
	if got := eval[string](t, ctx, item(s.another)+`.querySelector(".review-outcome").textContent`); got != "rejected: "+reason {
		t.Errorf("the rejection shows %q", got)
	}
	if eval[bool](t, ctx, `document.querySelector("#reviews img") !== null || document.body.dataset.pwned === "1"`) {
		t.Error("the reason became markup")
	}

	// Refresh lists what is still pending: the Resource Server.
	click(t, ctx, "#reviews-refresh")
	poll(t, ctx, "the refreshed list", `document.getElementById("reviews").dataset.loaded === "true" &&
		[...document.querySelectorAll("#reviews li")].map((li) => li.dataset.id).join(" ") === "`+s.rs+`"`)
}

// jsString quotes s as a JavaScript string literal (JSON is one).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
