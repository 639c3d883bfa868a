package playground

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConnectedMiniappsInChromium: after a sign-in to the confidential demo
// in a Chromium tab, the server's Connected Miniapps page (same browser
// session) lists the grant with its meanings and last use; its Revoke
// button takes the scope profile away. After a second sign-in the
// launcher's Connected Miniapps panel names the client once with its two
// grants, the first without profile, and its Revoke grant buttons empty it.
// It writes the page's screenshot (docs/images/connected-miniapps.png is one).
func TestConnectedMiniappsInChromium(t *testing.T) {
	launcher := browser(t)
	p := start(t, Config{})
	closeFirst(t, launcher)
	tab, cancel := chromedp.NewContext(launcher)
	defer cancel()
	conf := entry(t, p, DemoConfidentialID)
	if err := chromedp.Do(tab, chromedp.Navigate(conf.Origin+"/login")); err != nil {
		t.Fatal(err)
	}
	signIn(t, tab, p.Subject())
	poll(t, tab, "the signed-in start page", `location.origin === "`+conf.Origin+`" && document.body && document.body.dataset.signedIn === "true"`)

	page := p.world.urls.Issuer + "/oauth/connected"
	if err := chromedp.Do(tab, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	poll(t, tab, "the grant on the page", `document.querySelector('section[data-client="`+DemoConfidentialID+`"] article.held-grant') !== null`)
	text := eval[string](t, tab, `document.querySelector("main").innerText`)
	for _, want := range []string{"Connected Miniapps", "last used", "Revoke everything of this grant", "the sign-in itself"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not say %q:\n%s", want, text)
		}
	}
	if got := eval[string](t, tab, `document.querySelector('li[data-entry="scope profile"] .meaning').textContent`); got == "" {
		t.Error("the scope profile has no meaning on the page")
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	writeArtifact(t, "connected-miniapps.png", png)

	click(t, tab, `li[data-entry="scope profile"] form.revoke button`)
	poll(t, tab, "the revocation's notice", `document.querySelector(".notice") !== null && document.querySelector(".notice").textContent.startsWith("The entry was revoked")`)
	if eval[bool](t, tab, `document.querySelector('li[data-entry="scope profile"]') !== null`) {
		t.Error("the revoked scope is still listed")
	}

	// A second sign-in to the same client makes a second grant: the panel
	// names the client once, with both grants under it, newest first.
	signInConfidentialDemo(t, p)
	openLauncher(t, launcher, p)
	poll(t, launcher, "the Connected Miniapps panel", `document.getElementById("connected").dataset.loaded === "true" &&
		document.querySelectorAll('#connected li[data-kind="grant"]').length === 2`)
	clients := eval[string](t, launcher, `[...document.querySelectorAll('#connected > li[data-kind="client"]')].map((li) =>
		li.dataset.client + ":" + li.querySelectorAll('li[data-kind="grant"]').length + ":" + li.querySelector(".entry-name").textContent.trim()).join(",")`)
	_, listed := listConnected(t, p)
	if want := DemoConfidentialID + ":2:" + listed[0].ClientName; clients != want {
		t.Errorf("the panel's clients %q, want %q: the client once, with its two grants", clients, want)
	}
	entries := eval[string](t, launcher, `[...document.querySelectorAll('#connected li[data-kind="grant"]')].map((g) =>
		[...g.querySelectorAll("li[data-entry]")].map((li) => li.dataset.entry).join("+")).join(",")`)
	if entries != "scope openid+scope profile,scope openid" {
		t.Errorf("the panel's grants hold %q, want the new grant's openid and profile, then the first grant's openid alone", entries)
	}
	if got := eval[string](t, launcher, `document.getElementById("connected-page").href`); got != page {
		t.Errorf("the panel links %q, want %q", got, page)
	}
	for left := 1; left >= 0; left-- {
		click(t, launcher, `#connected li[data-kind="grant"] button.revoke-grant`)
		poll(t, launcher, "the panel after revoking a grant", `document.getElementById("connected").dataset.loaded === "true" &&
			document.querySelectorAll('#connected li[data-kind="grant"]').length === `+strconv.Itoa(left))
	}
	poll(t, launcher, "the emptied panel", `document.querySelectorAll('#connected li[data-kind="client"]').length === 0 &&
		document.getElementById("connected-note").textContent.startsWith("No Miniapp holds a grant")`)
}
