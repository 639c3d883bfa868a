package playground

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// dashboardCall sends one request to the playground's dashboard with key
// (a project's or the operator's) and decodes the answer into out.
func dashboardCall(t *testing.T, p *Playground, key, method, path string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, strings.TrimSuffix(p.Services().Dashboard, "/")+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e any
		_ = json.NewDecoder(resp.Body).Decode(&e)
		t.Fatalf("dashboard %s %s: %s %v", method, path, resp.Status, e)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("dashboard %s %s: %v", method, path, err)
		}
	}
}

// manifestServer serves one Miniapp manifest (built by manifest from the
// server's origin) at /miniapp.webmanifest and a start page.
func manifestServer(t *testing.T, manifest func(origin string) map[string]any) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/miniapp.webmanifest" {
			w.Header().Set("Content-Type", "application/manifest+json")
			_ = json.NewEncoder(w).Encode(manifest(srv.URL))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!doctype html><title>notes</title>"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// publish publishes a public Miniapp on the playground's dashboard as a
// developer does (project, credential, submission) and approves it as the
// operator; it returns the Miniapp's origin.
func publish(t *testing.T, p *Playground, id, name string) string {
	t.Helper()
	var clientID string
	srv := manifestServer(t, func(o string) map[string]any {
		return map[string]any{"id": id, "name": name, "start_url": "/", "oauth": map[string]any{"client_id": clientID}}
	})
	var prj struct{ ID, Key string }
	dashboardCall(t, p, "", http.MethodPost, "/api/projects", map[string]any{"name": name}, &prj)
	var cred struct {
		ClientID string `json:"client_id"`
	}
	dashboardCall(t, p, prj.Key, http.MethodPost, "/api/projects/"+prj.ID+"/credentials", map[string]any{"type": "public",
		"redirect_uris": []string{srv.URL + "/callback"}, "allowed_origins": []string{srv.URL}}, &cred)
	clientID = cred.ClientID
	var sub struct{ ID string }
	dashboardCall(t, p, prj.Key, http.MethodPost, "/api/projects/"+prj.ID+"/miniapps", map[string]any{"origin": srv.URL,
		"manifest": map[string]any{"id": id, "name": name, "start_url": "/", "oauth": map[string]any{"client_id": clientID}}}, &sub)
	dashboardCall(t, p, p.world.srv.OperatorKey(), http.MethodPost, "/api/review/"+sub.ID+"/approve", map[string]any{}, nil)
	return srv.URL
}

// scheme switches the tab between the light and the dark scheme.
func scheme(t *testing.T, ctx context.Context, dark bool) {
	t.Helper()
	v := "light"
	if dark {
		v = "dark"
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}}); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the "+v+" scheme", `matchMedia("(prefers-color-scheme: `+v+`)").matches`)
}

// viewport sets the tab's size, as a window of that size would have it.
func viewport(t *testing.T, ctx context.Context, w, h int64) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: w, Height: h, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the viewport's size", `innerWidth === `+jsInt(w)+` && innerHeight === `+jsInt(h))
}

func jsInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// shoot writes a screenshot of the element sel (or the viewport when sel
// is "") in the light and the dark scheme, as name-light.png and
// name-dark.png.
func shoot(t *testing.T, ctx context.Context, name, sel string) {
	t.Helper()
	for _, dark := range []bool{false, true} {
		scheme(t, ctx, dark)
		var png []byte
		var err error
		if sel == "" {
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		} else {
			png, err = chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
		}
		if err != nil {
			t.Fatal(err)
		}
		suffix := "-light.png"
		if dark {
			suffix = "-dark.png"
		}
		writeArtifact(t, name+suffix, png)
	}
	scheme(t, ctx, false)
}

// exported is the JSON the inspector's Export downloads.
type exported struct {
	ExportedAt string `json:"exported_at"`
	Filter     struct {
		Kind, Level, Search *string
	} `json:"filter"`
	Groups []struct {
		Launch string          `json:"launch"`
		Title  string          `json:"title"`
		Origin string          `json:"origin"`
		Events []exportedEvent `json:"events"`
		Flows  []struct {
			ID         string          `json:"id"`
			ClientID   string          `json:"client_id"`
			Status     string          `json:"status"`
			Started    time.Time       `json:"started"`
			Ended      time.Time       `json:"ended"`
			DurationMS float64         `json:"duration_ms"`
			Events     []exportedEvent `json:"events"`
		} `json:"flows"`
	} `json:"groups"`
}

type exportedEvent struct {
	Type string          `json:"type"`
	Seq  int             `json:"seq"`
	Kind string          `json:"kind"`
	Time string          `json:"time"`
	Data json.RawMessage `json:"data"`
}

// allowDownloads lets the browser save downloads into dir and returns a
// function that waits for the next one to be complete, and its path: the
// browser writes a file under its final name while it downloads, so its
// name appearing says nothing of its content (Browser.downloadProgress
// says when it is whole). Call it before the click that downloads.
func allowDownloads(t *testing.T, ctx context.Context, dir string) func() string {
	t.Helper()
	done := make(chan string, 4)
	names := map[string]string{} // guid -> suggested file name
	var mu sync.Mutex
	chromedp.ListenBrowser(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *cdpbrowser.EventDownloadWillBegin:
			names[e.GUID] = e.SuggestedFilename
		case *cdpbrowser.EventDownloadProgress:
			if e.State == cdpbrowser.DownloadProgressStateCompleted {
				select {
				case done <- filepath.Join(dir, names[e.GUID]):
				default:
				}
			}
		}
	})
	events := true
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, EventsEnabled: &events}); err != nil {
		t.Fatal(err)
	}
	return func() string {
		t.Helper()
		select {
		case p := <-done:
			return p
		case <-time.After(30 * time.Second):
			t.Fatalf("no download completed in %s", dir)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		return ""
	}
}

// TestInspectorInChromium drives the launcher as a developer would, in
// headless Chromium: the Miniapps published on the dashboard are listed
// and launch; a launch from the form reports next to the form, with every
// reason of a stage that failed twice, and so does a launch that cannot
// start; the manifest panel draws the demo's icons through the launcher's
// API and shows its client configuration and checks; a sign-in in another
// tab shows its token, claims and grant with durations in its launch, and
// no flow, as GET /api/flows has none; the
// filter, the search, copy and the JSON export show and give exactly what
// is asked; the Web Inspector button shows the API's JSON error (this
// playground has no window), and the HAR link while its endpoint is
// missing; each pane scrolls on its own
// while the page does not, from 1280x800 down to 800x600. It writes every
// panel in the light and the dark scheme to artifacts/playground/.
func TestInspectorInChromium(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	pubOrigin := publish(t, p, "notes-published", "Published notes")
	viewport(t, ctx, 1280, 800)
	openLauncher(t, ctx, p)
	poll(t, ctx, "the automation channel", `document.getElementById("channel").dataset.state === "open"`)

	t.Run("published list", func(t *testing.T) {
		got := eval[[]string](t, ctx, `[...document.querySelectorAll("#list-published li")].map((li) => li.dataset.id + " " + li.querySelector(".entry-origin").textContent)`)
		if len(got) != 1 || !strings.HasPrefix(got[0], "notes-published "+pubOrigin) {
			t.Fatalf("published list %q, want notes-published at %s", got, pubOrigin)
		}
		if note := eval[string](t, ctx, `document.getElementById("published-note").textContent`); strings.Contains(note, "no list") {
			t.Errorf("the note still says %q", note)
		}
		click(t, ctx, `#list-published li[data-id="notes-published"] button.launch`)
		poll(t, ctx, "the published Miniapp's report", `document.querySelector('#launches > li[data-id="notes-published"][data-outcome="accepted"]') !== null`)
	})

	// Two schema faults at once: the report and the timeline show both.
	twoFaults := manifestServer(t, func(o string) map[string]any {
		return map[string]any{"id": "two-faults", "name": "Two faults", "start_url": "/", "display": "cinema",
			"permissions": []string{"camera"}, "oauth": map[string]any{"client_id": DemoPublicID}}
	})
	t.Run("form feedback", func(t *testing.T) {
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS(`#open-form input[name=origin]`), twoFaults.URL),
			chromedp.SetValue(chromedp.CSS(`#open-form input[name=id]`), "two-faults"),
			chromedp.Click(chromedp.CSS(`#open-form button`)),
		); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, "the report next to the form", `document.querySelector('#open-feedback [data-id="two-faults"]') !== null`)
		fb := eval[struct {
			Outcome string   `json:"outcome"`
			Codes   []string `json:"codes"`
			Gap     float64  `json:"gap"`
			Visible bool     `json:"visible"`
		}](t, ctx, `(() => {
			const r = document.querySelector('#open-feedback [data-id="two-faults"]');
			const form = document.getElementById("open-form").getBoundingClientRect();
			const fb = r.getBoundingClientRect();
			const pane = document.querySelector("#miniapps-pane .pane-body").getBoundingClientRect();
			return { outcome: r.dataset.outcome, codes: [...r.querySelectorAll('tr[data-stage="schema"] .reason .code')].map((e) => e.textContent),
				gap: fb.top - form.bottom, visible: fb.top >= pane.top && fb.top < pane.bottom };
		})()`)
		if fb.Outcome != "rejected" || len(fb.Codes) != 2 {
			t.Errorf("feedback %+v, want rejected with two schema reasons", fb)
		}
		if fb.Gap < 0 || fb.Gap > 24 || !fb.Visible {
			t.Errorf("the report is %vpx under the form (visible %v): it must be right under it, in view", fb.Gap, fb.Visible)
		}
		poll(t, ctx, "both reasons in the timeline", `(() => {
			const li = [...document.querySelectorAll('#timeline li[data-kind="resolve.stage"][data-ok="false"]')]
				.find((l) => l.querySelector(".ev-summary").textContent.startsWith("two-faults"));
			return li && li.querySelectorAll(".ev-extra .reason").length === 2;
		})()`)

		// A launch that cannot even start says why, next to the form.
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS(`#open-form input[name=id]`), "   "),
			chromedp.Click(chromedp.CSS(`#open-form button`)),
		); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, "the error next to the form", `document.querySelector('#open-feedback .launch-error') !== null`)
		if got := eval[string](t, ctx, `document.querySelector('#open-feedback .launch-error').textContent`); !strings.Contains(got, "invalid_request") {
			t.Errorf("form error %q", got)
		}
		shoot(t, ctx, "panel-miniapps", "#miniapps-pane")
	})

	t.Run("manifest panel", func(t *testing.T) {
		click(t, ctx, `#miniapps-pane li[data-id="demo-public"] button.launch`)
		sel := `#launches > li[data-id="demo-public"]`
		poll(t, ctx, "the demo's report", `document.querySelector('`+sel+`') !== null`)
		click(t, ctx, sel+` .tab-manifest`)
		poll(t, ctx, "the icons drawn", `(() => { const imgs = document.querySelectorAll('`+sel+` .icons img');
			return imgs.length === 2 && [...imgs].every((i) => i.dataset.loaded === "true" && i.complete && i.naturalWidth > 0); })()`)
		m := eval[map[string]string](t, ctx, `(() => {
			const li = document.querySelector('`+sel+`');
			const dd = (k) => { const dt = [...li.querySelectorAll(".manifest-panel dt")].find((d) => d.textContent === k); return dt ? dt.nextElementSibling.textContent : ""; };
			return { client_type: dd("client_type"), client_id: dd("oauth.client_id"), allowed: dd("allowed_origins"),
				checks: [...li.querySelectorAll(".manifest-panel ul.checks li")].map((c) => c.dataset.stage + "=" + c.dataset.outcome).join(" "),
				report_hidden: String(li.querySelector(".report-panel").hidden) };
		})()`)
		pub := entry(t, p, DemoPublicID)
		if m["client_type"] != "public" || m["client_id"] != DemoPublicID || !strings.Contains(m["allowed"], pub.Origin) ||
			m["checks"] != "origin=ok download=ok parse=ok schema=ok identity=ok client=ok origins=ok" || m["report_hidden"] != "true" {
			t.Errorf("manifest panel %v", m)
		}
		eval[bool](t, ctx, `(() => { document.querySelector('`+sel+`').scrollIntoView({ block: "start" }); return true; })()`)
		shoot(t, ctx, "panel-manifest", "#launches-pane")
		click(t, ctx, sel+` .tab-report`)
		shoot(t, ctx, "panel-launches", "#launches-pane")
	})

	t.Run("flow", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		conf := entry(t, p, DemoConfidentialID)
		click(t, ctx, `#miniapps-pane li[data-id="demo-confidential"] button.launch`)
		poll(t, ctx, "the confidential demo's report", `document.querySelector('#launches > li[data-id="demo-confidential"]') !== null`)
		if err := chromedp.Do(tab, chromedp.Navigate(conf.Origin+"/login")); err != nil {
			t.Fatal(err)
		}
		signIn(t, tab, "sub_carla")
		poll(t, tab, "the signed-in start page", `document.body && document.body.dataset.signedIn === "true"`)
		cancel()
		// The sign-in is in the confidential demo's launch, with the token,
		// its claims and the grant. A plain tab's sign-in is no flow of the
		// network log (GET /api/flows lists the window's flows only), so
		// the inspector shows no flow either: it never makes one up.
		poll(t, ctx, "the sign-in's events", `(() => {
			const g = document.querySelector(".group:first-child");
			return g && ["token.issued", "token.claims", "grant"].every((k) => g.querySelector('li[data-kind="' + k + '"]'));
		})()`)
		f := eval[map[string]string](t, ctx, `(() => {
			const g = document.querySelector(".group:first-child");
			return { launch: g.dataset.launch, title: g.querySelector(".group-head .title").textContent,
				flows: String(document.querySelectorAll("#timeline .flow").length),
				issued: g.querySelector('li[data-kind="token.issued"] .ev-summary').textContent,
				claims: g.querySelector('li[data-kind="token.claims"] .ev-extra').textContent,
				grant: g.querySelector('li[data-kind="grant"] .ev-extra').textContent,
				delta: g.querySelector('li[data-kind="grant"] .duration').textContent };
		})()`)
		if !strings.HasPrefix(f["launch"], "launch-") || f["title"] != DemoConfidentialID {
			t.Errorf("the sign-in is in group %q (%q), want the confidential demo's launch", f["launch"], f["title"])
		}
		if !strings.Contains(f["issued"], "demo-confidential") || !strings.Contains(f["claims"], "sub_carla") ||
			!strings.Contains(f["grant"], "sub_carla") || !strings.HasPrefix(f["delta"], "+") {
			t.Errorf("sign-in %v", f)
		}
		var list struct {
			Flows []json.RawMessage `json:"flows"`
		}
		if st := call(t, p, "GET", "/api/flows", nil, &list); st != 200 || len(list.Flows) != 0 || f["flows"] != "0" {
			t.Errorf("GET /api/flows: %d, %d flows; the page shows %s flows", st, len(list.Flows), f["flows"])
		}
		click(t, ctx, `.group:first-child li[data-kind="token.claims"] .data-toggle`)
		click(t, ctx, `.group:first-child li[data-kind="grant"] .data-toggle`)
	})

	t.Run("filter and search", func(t *testing.T) {
		visibleKinds := func() []string {
			return eval[[]string](t, ctx, `[...document.querySelectorAll("#timeline li[data-kind]")].filter((l) => l.offsetParent !== null).map((l) => l.dataset.kind)`)
		}
		setFilter := func(id, v string) {
			t.Helper()
			q, _ := json.Marshal(v)
			eval[bool](t, ctx, `(() => { const e = document.getElementById("`+id+`"); e.value = `+string(q)+`;
				e.dispatchEvent(new Event(e.tagName === "INPUT" ? "input" : "change")); return true; })()`)
		}
		setFilter("filter-level", "error")
		// Only the failed stages of the broken launch are errors (the
		// schema stage, and every later stage that could check what the
		// schema accepted and failed too).
		got := eval[[]string](t, ctx, `[...document.querySelectorAll("#timeline li[data-kind]")].filter((l) => l.offsetParent !== null)
			.map((l) => l.dataset.kind + "/" + l.dataset.ok)`)
		if len(got) == 0 || slices.ContainsFunc(got, func(k string) bool { return k != "resolve.stage/false" }) {
			t.Errorf("errors only: %v, want failed resolve.stage events and nothing else", got)
		}
		setFilter("filter-level", "")
		setFilter("filter-kind", "grant")
		if got := visibleKinds(); len(got) != 1 || got[0] != "grant" {
			t.Errorf("kind grant: %v", got)
		}
		setFilter("filter-kind", "")
		setFilter("filter-text", "SUB_CARLA")
		got = visibleKinds()
		if len(got) < 2 || eval[bool](t, ctx, `[...document.querySelectorAll("#timeline li[data-kind]")].filter((l) => l.offsetParent !== null)
			.some((l) => !(l.textContent.toLowerCase().includes("sub_carla")))`) {
			t.Errorf("search sub_carla shows %v, some without it", got)
		}
		if c := eval[string](t, ctx, `document.getElementById("timeline-count").textContent`); !strings.Contains(c, " of ") {
			t.Errorf("count %q", c)
		}

		// Export what is shown: the events the search let through, grouped.
		downloaded := allowDownloads(t, ctx, t.TempDir())
		click(t, ctx, "#export-timeline")
		path := downloaded()
		if ok, _ := filepath.Match("miniapp-timeline-*.json", filepath.Base(path)); !ok {
			t.Errorf("the export is named %s, want miniapp-timeline-*.json", filepath.Base(path))
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var ex exported
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ex); err != nil {
			t.Fatalf("export: %v\n%s", err, raw)
		}
		if ex.Filter.Search == nil || *ex.Filter.Search != "sub_carla" || len(ex.Groups) != 1 || len(ex.Groups[0].Flows) != 0 {
			t.Fatalf("export %s", raw)
		}
		for _, e := range ex.Groups[0].Events {
			if !strings.Contains(strings.ToLower(string(e.Data)), "sub_carla") {
				t.Errorf("exported %s without sub_carla: %s", e.Kind, e.Data)
			}
		}
		if n := len(ex.Groups[0].Events); n != len(got) || ex.Groups[0].Launch == "" {
			t.Errorf("export has %d events of launch %q (the page shows %d)", n, ex.Groups[0].Launch, len(got))
		}
		setFilter("filter-text", "")
	})

	t.Run("copy", func(t *testing.T) {
		// The clipboard is for the focused page: a headless tab is focused
		// only when asked to be.
		if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted,
				Origin: p.LauncherOrigin()}); err != nil {
				t.Fatal(err)
			}
		}
		seq := eval[int](t, ctx, `Number(document.querySelector('#timeline li[data-kind="grant"]').dataset.seq)`)
		click(t, ctx, `#timeline li[data-kind="grant"] button.copy`)
		poll(t, ctx, "the copy's answer", `document.querySelector('#timeline li[data-kind="grant"] .copied') !== null`)
		if got := eval[string](t, ctx, `document.querySelector('#timeline li[data-kind="grant"] .copied').textContent`); got != "copied" {
			t.Fatalf("copy says %q", got)
		}
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Seq  int    `json:"seq"`
			Kind string `json:"kind"`
			Data struct {
				Grant struct {
					Subject string `json:"subject"`
				} `json:"grant"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(text), &env); err != nil || env.Seq != seq || env.Kind != "grant" || env.Data.Grant.Subject != "sub_carla" {
			t.Errorf("clipboard %q (%v), want the grant event #%d", text, err, seq)
		}
	})

	t.Run("web inspector", func(t *testing.T) {
		click(t, ctx, "#devtools")
		poll(t, ctx, "the Web Inspector's answer", `!document.getElementById("devtools-status").hidden`)
		if got := eval[string](t, ctx, `document.getElementById("devtools-status").textContent`); !strings.Contains(got, "409") || !strings.Contains(got, `"code":"no_window"`) {
			t.Errorf("Web Inspector says %q", got)
		}
	})

	shoot(t, ctx, "panel-inspector", "#inspector")
	for _, size := range []struct {
		name string
		w, h int64
	}{{"1280x800", 1280, 800}, {"800x600", 800, 600}, {"640x860", 640, 860}} {
		t.Run("panes scroll at "+size.name, func(t *testing.T) {
			viewport(t, ctx, size.w, size.h)
			s := eval[map[string]float64](t, ctx, `(() => {
				const body = (id) => document.querySelector("#" + id + " .pane-body");
				const tl = body("inspector"), la = body("launches-pane");
				const laBefore = la.scrollTop;
				tl.scrollTop = 200;
				return { page: document.documentElement.scrollHeight - document.documentElement.clientHeight,
					tlOver: tl.scrollHeight - tl.clientHeight, laOver: la.scrollHeight - la.clientHeight,
					tlTop: tl.scrollTop, laMoved: la.scrollTop - laBefore, pageTop: document.scrollingElement.scrollTop };
			})()`)
			if s["page"] != 0 || s["pageTop"] != 0 {
				t.Errorf("the page scrolls by %v px (scrollTop %v): only the panes may", s["page"], s["pageTop"])
			}
			if s["tlOver"] <= 0 || s["laOver"] <= 0 {
				t.Errorf("the panes do not overflow (inspector %v, launches %v px): the test shows nothing", s["tlOver"], s["laOver"])
			}
			if s["tlTop"] != 200 || s["laMoved"] != 0 {
				t.Errorf("scrolling the inspector moved it to %v and the launches by %v", s["tlTop"], s["laMoved"])
			}
			shoot(t, ctx, "launcher-"+size.name, "")
		})
	}
}
