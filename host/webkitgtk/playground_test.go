//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/playground"
)

// TestPlaygroundWindow is `make run` end to end in the window: the
// playground's servers, its launcher in the window's launcher page, a
// broken Miniapp launched from it and rejected with the stage and code it
// was built to fail with, the subject switched, and the confidential demo
// launched from it, mounted in the Miniapp's page, its navigation to the
// service caught, the consent approved through the automation controller,
// and the whole flow in the launcher's inspector (navigation with its
// rule, consent shown and decided, code, cookies, token and its claims),
// and beside it the server's audit events of the sign-in, whose
// token.issued selects the flow.
// It writes screenshots of the launcher and the inspector to
// artifacts/playground/.
func TestPlaygroundWindow(t *testing.T) {
	pw := playground.NewWindow(testWin, "test")
	bus := bridge.NewBus(nil)
	testBus.forwardTo(t, bus)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	p, err := playground.Start(ctx, playground.Config{Opener: pw, Bus: bus})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("playground: close: %v", err)
		}
		testWin.ShowPage(host.PageMiniapp)
	})
	dir := filepath.Join(filepath.Dir(artifactDir(t)), "playground")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	rec := record(t)
	if err := testWin.ShowLauncher(p.LauncherURL()); err != nil {
		t.Fatal(err)
	}
	loaded := rec.Wait(t, "the launcher loaded", kind(host.EventLauncherLoaded))
	if strings.Contains(loaded.URL, "token") {
		t.Errorf("the launcher's load event carries its token: %s", loaded.URL)
	}
	pollLauncher(t, `document.body.dataset.ready === "true" && document.getElementById("channel").dataset.state === "open" &&
		document.querySelectorAll("#list-broken li").length === 4 && document.querySelectorAll("#list-demo li").length === 3`)
	if got := launcherString(t, `document.getElementById("window-status").hidden ? "" : document.getElementById("window-status").textContent`); got != "" {
		t.Errorf("the launcher says %q about the window, want nothing: it has one", got)
	}
	snapLauncher(t, filepath.Join(dir, "window-launcher.png"))
	snapWindow(t, filepath.Join(dir, "window.png"))

	t.Run("broken Miniapp", func(t *testing.T) {
		launcherClick(t, `#miniapps-pane li[data-id="broken-unregistered"] button.launch`)
		pollLauncher(t, `document.querySelector('#launches > li[data-id="broken-unregistered"]') !== null`)
		var r struct{ Outcome, Failed, Code, Pointer, Window string }
		launcherJSON(t, `(() => {
			const li = document.querySelector('#launches > li[data-id="broken-unregistered"]');
			const q = (s) => { const e = li.querySelector(s); return e ? e.textContent : ""; };
			const f = li.querySelector('tr[data-outcome="failed"]');
			return { Outcome: li.dataset.outcome, Failed: f ? f.dataset.stage : "", Code: q(".reason .code"),
				Pointer: q(".reason .pointer").replace(/^ at /, ""), Window: li.querySelector(".window").dataset.opened };
		})()`, &r)
		if r.Outcome != "rejected" || r.Failed != "client" || r.Code != "client-not-registered" || r.Pointer != "/oauth/client_id" || r.Window != "false" {
			t.Errorf("report %+v, want rejected at client with client-not-registered at /oauth/client_id, not opened", r)
		}
		pollLauncher(t, `[...document.querySelectorAll('#timeline li[data-kind="resolve.stage"][data-ok="false"] .ev-summary')]
			.some((e) => e.textContent.startsWith("broken-unregistered") && e.textContent.includes("client-not-registered"))`)
	})

	t.Run("good Miniapp", func(t *testing.T) {
		// The subject switcher's choice signs in on the window's consent.
		if got := launcherString(t, `(() => { const s = document.getElementById("subject"); s.value = "sub_benjamin";
			s.dispatchEvent(new Event("change")); return s.value; })()`); got != "sub_benjamin" {
			t.Fatalf("subject switcher: %q", got)
		}
		pollFor(t, "the subject switched", func() bool { return p.Subject() == "sub_benjamin" })

		launcherClick(t, `#miniapps-pane li[data-id="demo-confidential"] button.launch`)
		pollLauncher(t, `(() => { const li = document.querySelector('#launches > li[data-id="demo-confidential"]');
			return li !== null && li.dataset.outcome === "accepted" && li.querySelector(".window").dataset.opened === "true"; })()`)
		rec.Wait(t, "the consent screen", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
		snapWindow(t, filepath.Join(dir, "window-consent.png"))
		actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := pw.ApproveConsent(actx, bridge.ApproveCommand{})
		acancel()
		if err != nil {
			t.Fatal(err)
		}
		rec.Wait(t, "the Miniapp signed in", func(e host.Event) bool {
			return e.Kind == host.EventLoadFinished && strings.Contains(e.URL, strings.TrimPrefix(entryOrigin(t, p, playground.DemoConfidentialID), "http://"))
		})

		// Back to the launcher: the inspector has the whole flow.
		testWin.ShowPage(host.PageLauncher)
		pollLauncher(t, `(() => {
			const sums = (k) => [...document.querySelectorAll('#timeline li[data-kind="' + k + '"] .ev-summary')].map((e) => e.textContent);
			return sums("navigation").some((s) => s.startsWith("consent ") && s.endsWith("rule authorization-endpoint")) &&
				sums("consent.shown").some((s) => s.startsWith("client demo-confidential asks")) &&
				sums("consent.decided").some((s) => s.startsWith("approve")) &&
				sums("code.issued").some((s) => s.startsWith("code for demo-confidential")) &&
				sums("cookies.synced").length > 0 &&
				sums("token.issued").length > 0 &&
				sums("token.claims").some((s) => s.startsWith("sub sub_benjamin"));
		})()`)
		// The server's side of the same sign-in, beside the inspector
		// (docs/playground.md, "Server events"): its audit events, live
		// through the launcher's stream in WebKit; its token.issued
		// selects the flow in the inspector.
		pollLauncher(t, `(() => { const k = [...document.querySelectorAll('#sev-list > li[data-client="demo-confidential"]')].map((l) => l.dataset.kind);
			return ["signin.started", "signin.authenticated", "consent.shown", "consent.approved", "token.issued"].every((x) => k.includes(x)); })()`)
		launcherClick(t, `#sev-list > li[data-client="demo-confidential"][data-kind="token.issued"]`)
		pollLauncher(t, `document.querySelectorAll('#timeline .flow[data-selected="true"]').length === 1 &&
			document.querySelector('#sev-list > li[data-kind="token.issued"]').dataset.flow === document.querySelector('#timeline .flow[data-selected="true"]').dataset.flow`)
		snapWindow(t, filepath.Join(dir, "window-events.png"))
		launcherString(t, `(() => { document.getElementById("inspector").scrollIntoView(); return ""; })()`)
		snapLauncher(t, filepath.Join(dir, "window-inspector.png"))
		snapWindow(t, filepath.Join(dir, "window-inspector-full.png"))
	})

	t.Run("network log", func(t *testing.T) {
		// The flow in the window, read back through the launcher's API:
		// WebKit's view requests beside the host's and the backend's.
		o := entryOrigin(t, p, playground.DemoConfidentialID)
		var flow netlog.FlowSummary
		pollFor(t, "the signed-in page in the network log", func() bool {
			for _, f := range p.NetLog().Flows() {
				x, _ := p.NetLog().Flow(f.ID)
				for _, e := range x.Entries {
					if f.Outcome == netlog.OutcomeCompleted && e.Kind == netlog.KindResource && e.Request.URL == o+"/" &&
						e.Response != nil && e.Response.Status == 200 {
						flow = f
						return true
					}
				}
			}
			return false
		})
		var list struct{ Flows []netlog.FlowSummary }
		apiGet(t, p, "/api/flows", &list)
		if len(list.Flows) == 0 || list.Flows[len(list.Flows)-1].ID != flow.ID || flow.ClientID != playground.DemoConfidentialID {
			t.Errorf("GET /api/flows: %+v, want the completed flow %s of demo-confidential last", list.Flows, flow.ID)
		}
		// The launcher's inspector shows that flow as one group, whose
		// HAR link names the log's id.
		pollLauncher(t, `document.querySelectorAll('#timeline .flow[data-flow="`+flow.ID+`"] a.har[href="/api/flows/`+flow.ID+`/har"]').length === 1`)
		if n := launcherString(t, `String(document.querySelector('#timeline .flow[data-flow="`+flow.ID+`"]').closest(".group").querySelectorAll(".flow").length)`); n != "1" {
			t.Errorf("the confidential launch shows %s flows in the inspector, want its one sign-in: %s", n, launcherString(t,
				`[...document.querySelector('#timeline .flow[data-flow="`+flow.ID+`"]').closest(".group").querySelectorAll(".flow")].map((f) =>
					f.dataset.flow + ": " + [...f.querySelectorAll("li[data-kind]")].map((l) => l.dataset.kind).join(",")).join(" | ")`))
		}
		var h netlog.HAR
		apiGet(t, p, "/api/flows/"+flow.ID+"/har", &h)
		kinds := map[string]int{}
		for _, e := range h.Log.Entries {
			kinds[e.Kind]++
			if _, err := time.Parse(time.RFC3339Nano, e.StartedDateTime); err != nil || e.Time < 0 || e.Timings.Send < 0 ||
				e.Timings.Wait < 0 || e.Timings.Receive < 0 {
				t.Errorf("HAR entry %s %s: started %q, time %v, timings %+v", e.Kind, e.Request.URL, e.StartedDateTime, e.Time, e.Timings)
			}
		}
		if h.Log.Version != "1.2" || kinds[netlog.KindAuthorize] != 1 || kinds[netlog.KindNativeConsent] != 2 ||
			kinds[netlog.KindCallback] != 1 || kinds[netlog.KindToken] != 1 || kinds[netlog.KindResource] < 2 {
			t.Errorf("HAR %s of flow %s: entries by kind %v", h.Log.Version, flow.ID, kinds)
		}
		cookies, err := testWin.Cookies(t.Context(), o+"/")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(h)
		for _, c := range strings.Split(cookies, ";") {
			if _, v, ok := strings.Cut(strings.TrimSpace(c), "="); ok && len(v) > 8 && strings.Contains(string(raw), v) {
				t.Errorf("the HAR holds a cookie value of the view: %q", v)
			}
		}
	})

	// While the confidential demo is the Miniapp mounted: its data is its
	// own (docs/host.md, "Each Miniapp's data"), and the view reads it.
	t.Run("reset storage", func(t *testing.T) {
		o := entryOrigin(t, p, playground.DemoConfidentialID)
		if h, err := testWin.Cookies(t.Context(), o+"/"); err != nil || !strings.Contains(h, "demo_session=") {
			t.Fatalf("before the reset the view sends %q (%v), want the demo's session cookie", h, err)
		}
		launcherClick(t, `#miniapps-pane li[data-id="demo-confidential"] button.reset`)
		pollLauncher(t, `(() => { const r = document.querySelector('#miniapps-pane li[data-id="demo-confidential"] .reset-result');
			return r !== null && r.textContent.startsWith("The window forgot"); })()`)
		if h, err := testWin.Cookies(t.Context(), o+"/"); err != nil || h != "" {
			t.Errorf("after the reset the view sends %q (%v), want no cookie", h, err)
		}
	})

	t.Run("public demo through the bridge", func(t *testing.T) {
		// The host obtains this token itself (window.miniapp.authorize):
		// the inspector still shows its claims and what is known of the
		// grant, in the flow of the sign-in.
		launcherClick(t, `#miniapps-pane li[data-id="demo-public"] button.launch`)
		loaded := rec.Wait(t, "the public demo loaded", func(e host.Event) bool {
			return e.Kind == host.EventLoadFinished && strings.Contains(e.URL, strings.TrimPrefix(entryOrigin(t, p, playground.DemoPublicID), "http://"))
		})
		testWin.Eval(`document.getElementById("bridge-signin").click()`)
		rec.WaitAfter(t, loaded, "the consent screen", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
		actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := pw.ApproveConsent(actx, bridge.ApproveCommand{})
		acancel()
		if err != nil {
			t.Fatal(err)
		}
		pollJS(t, `document.body.dataset.state`, "signed-in")
		testWin.ShowPage(host.PageLauncher)
		var list struct{ Flows []netlog.FlowSummary }
		apiGet(t, p, "/api/flows", &list)
		last := list.Flows[len(list.Flows)-1]
		if last.ClientID != playground.DemoPublicID || last.Outcome != netlog.OutcomeCompleted {
			t.Fatalf("the last flow of GET /api/flows is %+v, want the bridge's sign-in, completed", last)
		}
		// The bridge's flow, under the network log's id and with its
		// outcome: the host's token.issued (published once the flow has
		// ended), the token's claims and the grant are in it.
		pollLauncher(t, `(() => {
			const f = document.querySelector('#timeline .flow[data-flow="`+last.ID+`"]');
			return f !== null && f.dataset.status === "completed" && f.querySelector(".flow-head .title").textContent.startsWith("Flow `+last.ID+`") &&
				["consent.shown", "token.issued", "token.claims", "grant", "flow.ended"].every((k) => f.querySelector('li[data-kind="' + k + '"]'));
		})()`)
	})

	t.Run("exports say where", func(t *testing.T) {
		// Export HAR and Export JSON are downloads of the launcher's page:
		// the window saves each in its download folder and the launcher
		// says where, under its header.
		var list struct{ Flows []netlog.FlowSummary }
		apiGet(t, p, "/api/flows", &list)
		id := list.Flows[len(list.Flows)-1].ID
		var want netlog.HAR
		apiGet(t, p, "/api/flows/"+id+"/har", &want)
		for _, x := range []struct{ what, click, name string }{
			{"the HAR", `#timeline .flow[data-flow="` + id + `"] a.har`, "flow-" + id + ".har"},
			{"the timeline", `#export-timeline`, "miniapp-timeline-"},
		} {
			before := len(rec.All(kind(host.EventDownload)))
			launcherClick(t, x.click)
			ev := nth(t, rec, x.what+"'s download", before+1, kind(host.EventDownload))
			if ev.URL != "" {
				// The folder is the test process's: the next run's file
				// takes the same name.
				t.Cleanup(func() { os.Remove(ev.URL) })
			}
			if ev.Detail != "" || filepath.Dir(ev.URL) != testWin.DownloadDir() || !strings.HasPrefix(filepath.Base(ev.URL), x.name) ||
				strings.Contains(filepath.Base(ev.URL), " (") {
				t.Fatalf("%s was downloaded to %q (%s), want %s… in %s", x.what, ev.URL, ev.Detail, x.name, testWin.DownloadDir())
			}
			raw, err := os.ReadFile(ev.URL)
			if err != nil {
				t.Fatal(err)
			}
			if x.name != "miniapp-timeline-" {
				var got netlog.HAR
				if err := json.Unmarshal(raw, &got); err != nil || len(got.Log.Entries) != len(want.Log.Entries) || got.Log.Entries[0].Flow != id {
					t.Errorf("the saved HAR: %v, %d entries, want the API's %d of flow %s", err, len(got.Log.Entries), len(want.Log.Entries), id)
				}
			} else if !json.Valid(raw) {
				t.Errorf("the saved timeline is not JSON: %.200s", raw)
			}
			pollLauncher(t, `(() => { const n = document.getElementById("download-status");
				return !n.hidden && n.dataset.path === `+jsString(ev.URL)+` && n.textContent.includes("Saved to "+`+jsString(ev.URL)+`); })()`)
		}
		snapWindow(t, filepath.Join(dir, "window-download.png"))
	})

}

// apiGet reads a route of the launcher's API, as its page does, into v;
// the HAR is decoded with unknown members refused.
func apiGet(t *testing.T, p *playground.Playground, path string, v any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", p.LauncherOrigin()+path, nil)
	req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// entryOrigin is the origin the playground serves the Miniapp id at.
func entryOrigin(t *testing.T, p *playground.Playground, id string) string {
	t.Helper()
	list, err := p.Miniapps(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == id {
			return e.Origin
		}
	}
	t.Fatalf("the playground lists no %s", id)
	return ""
}

// launcherJSON evaluates js in the launcher's view and decodes its value.
func launcherJSON(t *testing.T, js string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := testWin.EvalLauncher(ctx, js)
	if err != nil {
		t.Fatalf("launcher eval: %v", err)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("launcher eval: %q: %v", out, err)
	}
}

func launcherString(t *testing.T, js string) string {
	t.Helper()
	var s string
	launcherJSON(t, js, &s)
	return s
}

// launcherClick clicks the element sel of the launcher page, as its
// automation does (the page's own click handler runs).
func launcherClick(t *testing.T, sel string) {
	t.Helper()
	q, _ := json.Marshal(sel)
	if got := launcherString(t, `(() => { const e = document.querySelector(`+string(q)+`); if (!e) return "missing"; e.click(); return "ok"; })()`); got != "ok" {
		t.Fatalf("launcher: %s is %s", sel, got)
	}
}

// pollLauncher evaluates cond in the launcher until it is true, for up to
// 20 s.
func pollLauncher(t *testing.T, cond string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := testWin.EvalLauncher(ctx, "!!("+cond+")")
		cancel()
		if err == nil && out == "true" {
			return
		}
		if time.Now().After(deadline) {
			tl, _ := testWin.EvalLauncher(context.Background(), `[...document.querySelectorAll("#timeline li")].map((l) => l.dataset.kind + ": " + l.querySelector(".ev-summary").textContent).join("\n")`)
			t.Fatalf("launcher: timed out waiting for %s (%s, %v); timeline:\n%s", cond, out, err, tl)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// snapLauncher writes the launcher's view as a PNG.
func snapLauncher(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testWin.SnapshotLauncher(ctx, path); err != nil {
		t.Errorf("launcher screenshot: %v", err)
	}
}

// snapWindow writes the whole window, as the screen shows it, as a PNG.
func snapWindow(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testWin.SnapshotWindow(ctx, path); err != nil {
		t.Errorf("window screenshot: %v", err)
	}
}

// nth waits for the n-th recorded window event (from 1) that matches.
func nth(t *testing.T, rec *recorder, what string, n int, match func(host.Event) bool) host.Event {
	t.Helper()
	seen := 0
	return rec.Wait(t, what, func(e host.Event) bool {
		if match(e) {
			seen++
			return seen == n
		}
		return false
	})
}
