package playground

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The launcher and the demo Miniapps in a plain browser tab, in Debian's
// headless Chromium driven from Go (docs/playground.md, "Tests"). Screenshots go to
// artifacts/playground/ at the repository's root.

// artifacts is where the browser tests write their screenshots.
const artifacts = "../artifacts/playground"

// chromiumPath finds Debian's chromium (scripts/deps.sh installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: run scripts/deps.sh (Debian package chromium)")
	return ""
}

// browser starts headless Chromium with a profile of its own and returns
// the context of its first tab, once the browser is up.
func browser(t *testing.T) context.Context {
	t.Helper()
	profile := t.TempDir()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1480, 1000),
	)
	ctx, cancelTab := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	return ctx
}

// closeFirst closes the browser before the playground closes (cleanups run
// last-registered first): Chromium keeps preconnected sockets open, which
// net/http counts as active for 5 s and which would make the servers'
// graceful shutdown time out.
func closeFirst(t *testing.T, ctx context.Context) {
	t.Helper()
	t.Cleanup(func() { _ = chromedp.Cancel(ctx) })
}

// poll waits until the JavaScript expression is truthy in the tab. It
// evaluates again after errors, which a navigation in progress causes.
func poll(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		var ok bool
		if ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")")); err == nil && ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: timed out (last error: %v)", what, err)
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

func writeArtifact(t *testing.T, name string, png []byte) {
	t.Helper()
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(artifacts, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

// openLauncher loads the launcher in the tab and waits until it has drawn
// its lists.
func openLauncher(t *testing.T, ctx context.Context, p *Playground) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(p.LauncherURL())); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the launcher's lists", `document.body.dataset.ready === "true" && document.querySelectorAll("#list-broken li").length === 4`)
}

// report is what the launcher shows of one launch.
type report struct {
	Outcome string   `json:"outcome"`
	Stages  []string `json:"stages"` // "stage=outcome"
	Code    string   `json:"code"`
	Pointer string   `json:"pointer"`
	Hint    string   `json:"hint"`
	Window  string   `json:"window"`
	TabURL  string   `json:"tab_url"`
}

// launchFromList clicks a Miniapp's Launch button and reads its report off
// the page.
func launchFromList(t *testing.T, ctx context.Context, id string) report {
	t.Helper()
	click(t, ctx, `#miniapps-pane li[data-id="`+id+`"] button.launch`)
	return readReport(t, ctx, id)
}

func readReport(t *testing.T, ctx context.Context, id string) report {
	t.Helper()
	sel := `#launches > li[data-id="` + id + `"]`
	poll(t, ctx, "the report of "+id, `document.querySelector('`+sel+`') !== null`)
	return eval[report](t, ctx, `(() => {
		const li = document.querySelector('`+sel+`');
		const q = (s) => { const e = li.querySelector(s); return e ? e.textContent : ""; };
		const a = li.querySelector(".tab-link");
		return {
			outcome: li.dataset.outcome,
			stages: [...li.querySelectorAll("tr[data-stage]")].map((r) => r.dataset.stage + "=" + r.dataset.outcome),
			code: q(".reason .code"), pointer: q(".reason .pointer").replace(/^ at /, ""), hint: q(".reason .hint"),
			window: q(".window-message"), tab_url: a ? a.href : "",
		};
	})()`)
}

// TestLauncherInChromium loads the launcher in headless Chromium, finds
// the good and the broken Miniapps, launches each broken one and finds the
// stage and code it was built to fail with, launches a good one from the
// list and one from the form and finds every stage passed, and sees the
// resolution in the inspector's timeline. It logs the figure "playground
// start to launcher rendered" and writes the launcher's screenshot.
func TestLauncherInChromium(t *testing.T) {
	ctx := browser(t)
	t0 := time.Now()
	p := start(t, Config{})
	served := time.Since(t0)
	closeFirst(t, ctx)
	openLauncher(t, ctx, p)
	rendered := time.Since(t0)
	t.Logf("figure: playground Start to launcher served %v, to launcher rendered in Chromium %v",
		served.Round(time.Millisecond), rendered.Round(time.Millisecond))

	lists := eval[map[string][]string](t, ctx, `({
		demo: [...document.querySelectorAll("#list-demo li")].map((li) => li.dataset.id),
		broken: [...document.querySelectorAll("#list-broken li")].map((li) => li.dataset.id),
	})`)
	if strings.Join(lists["demo"], " ") != DemoPublicID+" "+DemoConfidentialID+" "+DemoFAPIID ||
		strings.Join(lists["broken"], " ") != strings.Join(BrokenKinds(), " ") {
		t.Fatalf("lists %v", lists)
	}
	if got := eval[string](t, ctx, `document.querySelector("#window-status .notice-text").textContent`); got != msgNoWindow {
		t.Errorf("window status %q", got)
	}

	for _, id := range BrokenKinds() {
		t.Run(id, func(t *testing.T) {
			want := brokenSpecs[id].expect
			r := launchFromList(t, ctx, id)
			if r.Outcome != "rejected" || r.Code != want.Code || r.Pointer != want.Pointer || r.Hint == "" {
				t.Errorf("report %+v, want %+v", r, want)
			}
			if !containsStage(r.Stages, string(want.Stage)+"=failed") {
				t.Errorf("stages %v: %s did not fail", r.Stages, want.Stage)
			}
			if r.Window != msgRejected || r.TabURL != "" {
				t.Errorf("window %q, tab %q", r.Window, r.TabURL)
			}
		})
	}

	t.Run("good from the list", func(t *testing.T) {
		r := launchFromList(t, ctx, DemoConfidentialID)
		conf := entry(t, p, DemoConfidentialID)
		checkAccepted(t, r, conf.Origin+"/login")
	})
	t.Run("good from the form", func(t *testing.T) {
		pub := entry(t, p, DemoPublicID)
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS(`#open-form input[name=origin]`), pub.Origin),
			chromedp.SetValue(chromedp.CSS(`#open-form input[name=id]`), pub.ID),
			chromedp.Click(chromedp.CSS(`#open-form button`)),
		); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, "two launches of demo-public's origin", `document.querySelectorAll('#launches > li[data-id="demo-public"]').length === 1`)
		checkAccepted(t, readReport(t, ctx, DemoPublicID), pub.Origin+"/")
	})
	t.Run("timeline", func(t *testing.T) {
		// Four failed stages (one per broken Miniapp), and the good ones'
		// seven passed stages each.
		poll(t, ctx, "the resolution in the timeline",
			`document.querySelectorAll('#timeline li[data-kind="resolve.stage"][data-ok="false"]').length === 4 &&
			 document.querySelectorAll('#timeline li[data-kind="resolve.stage"][data-ok="true"]').length >= 14`)
	})
	t.Run("reset storage without a window", func(t *testing.T) {
		click(t, ctx, `#list-demo li[data-id="demo-public"] button.reset`)
		poll(t, ctx, "the reset's answer", `document.querySelector('#list-demo li[data-id="demo-public"] .reset-result') !== null`)
		got := eval[string](t, ctx, `document.querySelector('#list-demo li[data-id="demo-public"] .reset-result').textContent`)
		if !strings.Contains(got, "unavailable: this process has no window") {
			t.Errorf("reset says %q", got)
		}
	})

	// What the window shows first (the README's image), then the whole page.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	writeArtifact(t, "launcher.png", png)
	if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	writeArtifact(t, "launcher-full.png", png)
}

func containsStage(stages []string, s string) bool {
	for _, x := range stages {
		if x == s {
			return true
		}
	}
	return false
}

func checkAccepted(t *testing.T, r report, tabURL string) {
	t.Helper()
	if r.Outcome != "accepted" || len(r.Stages) != 7 {
		t.Fatalf("report %+v", r)
	}
	for _, s := range r.Stages {
		if !strings.HasSuffix(s, "=ok") {
			t.Errorf("stage %s", s)
		}
	}
	if r.Window != msgNoWindow || r.TabURL != tabURL {
		t.Errorf("window %q, tab %q, want tab %q", r.Window, r.TabURL, tabURL)
	}
}

// signIn answers the server's web sign-in page (when the browser has no
// session there yet) as subject, then approves on its consent page.
func signIn(t *testing.T, ctx context.Context, subject string) {
	t.Helper()
	poll(t, ctx, "the sign-in or consent page", `document.querySelector('input[name=subject]') || document.querySelector('button[value=approve]')`)
	if eval[bool](t, ctx, `document.querySelector('input[name=subject]') !== null`) {
		click(t, ctx, `input[name=subject][value="`+subject+`"]`)
		click(t, ctx, `button[name=action][value=login]`)
		poll(t, ctx, "the consent page", `document.querySelector('button[value=approve]') !== null`)
	}
	click(t, ctx, `button[name=action][value=approve]`)
}

// TestDemoMiniappsInPlainTab runs the demo Miniapps, unchanged, in a plain
// Chromium tab against the server's web sign-in and consent pages: the
// confidential demo's backend signs the tab in (and the launcher's
// inspector shows its resolution, its token's claims and its grant), and
// the public demo gets
// its authorization response with a matching state. It writes the
// inspector's screenshot.
func TestDemoMiniappsInPlainTab(t *testing.T) {
	launcher := browser(t)
	p := start(t, Config{})
	closeFirst(t, launcher)
	openLauncher(t, launcher, p)
	poll(t, launcher, "the automation channel", `document.getElementById("channel").dataset.state === "open"`)
	tab, cancel := chromedp.NewContext(launcher)
	defer cancel()

	t.Run("confidential", func(t *testing.T) {
		// Launched from the launcher, which has no window here: its report
		// offers the URL a browser tab starts at, the demo's auth_url.
		conf := entry(t, p, DemoConfidentialID)
		r := launchFromList(t, launcher, DemoConfidentialID)
		checkAccepted(t, r, conf.Origin+"/login")
		if err := chromedp.Do(tab, chromedp.Navigate(r.TabURL)); err != nil {
			t.Fatal(err)
		}
		signIn(t, tab, "sub_benjamin")
		poll(t, tab, "the signed-in start page", `location.origin === "`+conf.Origin+`" && document.body && document.body.dataset.signedIn === "true"`)
		if got := eval[string](t, tab, `document.getElementById("status").textContent`); got != "Signed in. Scope: "+demoScope {
			t.Errorf("status %q", got)
		}
		// The session cookie is HttpOnly: the page's scripts see none.
		if got := eval[string](t, tab, `document.getElementById("cookies").textContent`); got != `""` {
			t.Errorf("document.cookie %s", got)
		}
		// The inspector shows the token's claims and the grant.
		poll(t, launcher, "the token's claims and the grant in the inspector",
			`[...document.querySelectorAll('#timeline li[data-kind="token.claims"] .ev-summary')].some((e) => e.textContent.startsWith("sub sub_benjamin")) &&
			 [...document.querySelectorAll('#timeline li[data-kind="grant"] .ev-summary')].some((e) => e.textContent.includes("200: subject sub_benjamin, scopes openid profile")) &&
			 document.querySelector('#timeline li[data-kind="token.issued"]') !== null`)
		// Unfold the claims' data for the screenshot.
		click(t, launcher, `#timeline li[data-kind="token.claims"] .data-toggle`)
		png, err := chromedp.Run(launcher, chromedp.Screenshot(chromedp.CSS("#inspector")))
		if err != nil {
			t.Fatal(err)
		}
		writeArtifact(t, "inspector.png", png)
	})

	t.Run("public", func(t *testing.T) {
		pub := entry(t, p, DemoPublicID)
		if err := chromedp.Do(tab, chromedp.Navigate(pub.Origin+"/")); err != nil {
			t.Fatal(err)
		}
		// In a plain tab nothing injects window.miniapp: the page says so.
		click(t, tab, "#bridge-signin")
		poll(t, tab, "the bridge's absence", `document.body.dataset.state === "error"`)
		click(t, tab, "#signin")
		signIn(t, tab, "sub_ana")
		poll(t, tab, "the callback page", `location.origin === "`+pub.Origin+`" && document.body && document.body.dataset.state !== undefined`)
		if st := eval[string](t, tab, `document.body.dataset.state`); st != "code" {
			t.Fatalf("callback state %q: %s", st, eval[string](t, tab, `document.getElementById("result").textContent`))
		}
		if got := eval[string](t, tab, `document.getElementById("status").textContent`); got != "Authorization code received." {
			t.Errorf("status %q", got)
		}
	})
}
