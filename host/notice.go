package host

import (
	"fmt"
	"strings"

	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/redact"
)

// The notice of blocked navigations (docs/host.md, "Blocked
// navigations"): a navigation of the Miniapp's view that the policy
// blocks is shown over the Miniapp, with its URL (redacted as the network
// log keeps URLs) and the rule that decided it, so that a sign-in that
// goes nowhere is never silent. A consent, an error or a crash on screen
// is never replaced by it; further blocked navigations while it is shown
// are added to it.

// screenBlocked is the host view's screen of the notice.
const screenBlocked = "blocked"

// noticeMax is how many blocked navigations the notice lists; earlier
// ones are counted.
const noticeMax = 5

// blockedNav is one line of the notice.
type blockedNav struct {
	URL, Rule string
}

// noticeBlockedUI shows, or adds to, the notice of blocked navigations of
// app; UI thread. Whether the host's view is free is decided in a
// function dispatched after every render asked for before it, so that a
// consent or an error on its way to the screen is never covered: busy
// then says whether app is no longer mounted or a consent flow runs.
func (h *hostView) noticeBlockedUI(app *Miniapp, rawURL, rule string, busy func() bool) {
	nav := blockedNav{URL: redact.URL(rawURL), Rule: rule}
	h.eng.Dispatch(func() {
		if busy() || h.screen != "" && h.screen != screenBlocked {
			return
		}
		h.blocked = append(h.blocked, nav)
		if len(h.blocked) > noticeMax {
			h.blockedMore += len(h.blocked) - noticeMax
			h.blocked = append([]blockedNav(nil), h.blocked[len(h.blocked)-noticeMax:]...)
		}
		title, text := noticeText(app, h.blocked, h.blockedMore)
		if name, js, ok := h.render(map[string]any{"screen": screenBlocked, "title": title, "text": text}); ok {
			h.renderUI(name, js)
		}
	})
}

// noticeText is the notice's title and text: one paragraph per blocked
// navigation, naming its URL and rule, and what to do about a sign-in
// with another server.
func noticeText(app *Miniapp, blocked []blockedNav, more int) (title, text string) {
	var b strings.Builder
	title = "The host blocked a navigation of the Miniapp"
	other := false
	for _, n := range blocked {
		other = other || n.Rule == RuleOtherServer
	}
	if other {
		title = "The Miniapp tried to sign in with another authorization server"
	}
	if more > 0 {
		fmt.Fprintf(&b, "%d earlier blocked navigations are not listed.\n", more)
	}
	for _, n := range blocked {
		fmt.Fprintf(&b, "Blocked %s\nRule %s: %s.\n", n.URL, n.Rule, DescribeRule(n.Rule))
	}
	if other && app != nil && app.Policy.Authorize != nil {
		fmt.Fprintf(&b, "This host signs in with the authorization server at %s only (its authorization endpoint: %s). "+
			"If the Miniapp belongs to another service, open it with that service's dashboard (open --dashboard) or issuer (open --service).\n",
			origin.Of(app.Policy.Authorize), redact.URL(app.Policy.Authorize.String()))
	}
	b.WriteString("The Miniapp stays on its page; Close returns to it.")
	return title, b.String()
}
