//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// hostilePage tries every way a page has to reach the service's
// authorization endpoint other than a navigation (which the policy
// decides): WebSockets in every spelling of the service's server, and
// fetches from a dedicated worker, a shared worker and a service worker.
// It also reaches the service on purpose at control paths, which proves
// the request log counts. It writes what each attempt saw to window.results
// and sets window.done.
const hostilePage = `<!doctype html><html><body>hostile<script>
const PORT = %d, Q = "?client_id=demo-public&response_type=code";
const results = window.results = {};
function ws(name, u) {
  return new Promise((resolve) => {
    let s, settled = false;
    const done = (v) => { if (!settled) { settled = true; results[name] = v; resolve(); } };
    try { s = new WebSocket(u); } catch (e) { return done("throw " + e.name); }
    s.onopen = () => { done("open"); s.close(); };
    s.onerror = () => done("error");
    s.onclose = () => done("closed");
  });
}
async function run() {
  const spellings = {
    "127.0.0.1": "127.0.0.1", "localhost": "localhost", "localhost.": "localhost.", "LOCALHOST": "LOCALHOST",
    "2130706433": "2130706433", "127.1": "127.1", "userinfo": "u:p@127.0.0.1",
  };
  for (const [name, h] of Object.entries(spellings)) {
    await ws("ws " + name, "ws://" + h + ":" + PORT + "/oauth/authorize" + Q);
  }
  await ws("ws escaped", "ws://127.0.0.1:" + PORT + "/oauth/%%61uthorize" + Q);
  await ws("ws control", "ws://127.0.0.1:" + PORT + "/control-ws");
  try { await fetch("http://localhost:" + PORT + "/oauth/authorize" + Q, {mode: "no-cors"}); results["fetch localhost"] = "sent"; }
  catch (e) { results["fetch localhost"] = e.name; }
  try { await fetch("http://127.0.0.1:" + PORT + "/control-fetch", {mode: "no-cors"}); results["fetch control"] = "sent"; }
  catch (e) { results["fetch control"] = e.name; }
  // A dedicated worker: its loads go through the page, and so through the
  // view's content filter.
  await new Promise((resolve) => {
    const w = new Worker("/worker.js");
    w.onmessage = (e) => { Object.assign(results, e.data); resolve(); };
    w.onerror = (e) => { results["worker"] = "error " + e.message; resolve(); };
  });
  results["SharedWorker"] = typeof SharedWorker;
  results["serviceWorker"] = typeof navigator.serviceWorker;
  if (typeof SharedWorker !== "undefined") {
    await new Promise((resolve) => {
      const sw = new SharedWorker("/worker.js");
      sw.port.onmessage = (e) => { results["shared worker ran"] = JSON.stringify(e.data); resolve(); };
      sw.onerror = () => { results["shared worker ran"] = "error"; resolve(); };
      sw.port.start();
    });
  }
  if (navigator.serviceWorker) {
    try {
      await navigator.serviceWorker.register("/sw.js");
      await navigator.serviceWorker.ready;
      await fetch("/through-sw");
      results["service worker ran"] = "yes";
    } catch (e) { results["service worker ran"] = "error " + e.name; }
  }
  window.done = true;
}
run();
</script></body></html>`

// workerScript is the dedicated (or shared) worker: it tries the endpoint
// by fetch and by WebSocket, and reaches a control path.
const workerScript = `const PORT = %d, Q = "?client_id=demo-public&response_type=code";
async function attempt() {
  const r = {};
  try { await fetch("http://127.0.0.1:" + PORT + "/oauth/authorize" + Q, {mode: "no-cors"}); r["worker fetch"] = "sent"; }
  catch (e) { r["worker fetch"] = e.name; }
  await new Promise((resolve) => {
    const s = new WebSocket("ws://localhost:" + PORT + "/oauth/authorize" + Q);
    s.onopen = () => { r["worker ws"] = "open"; s.close(); resolve(); };
    s.onerror = () => { r["worker ws"] = "error"; resolve(); };
  });
  try { await fetch("http://127.0.0.1:" + PORT + "/control-worker", {mode: "no-cors"}); r["worker control"] = "sent"; }
  catch (e) { r["worker control"] = e.name; }
  return r;
}
if (typeof onconnect === "undefined") { attempt().then((r) => postMessage(r)); }
onconnect = (e) => { attempt().then((r) => e.ports[0].postMessage(r)); };
`

// swScript is a service worker that would reach the endpoint at install
// and from its fetch handler.
const swScript = `const PORT = %d;
self.addEventListener("install", (e) => e.waitUntil(fetch("http://127.0.0.1:" + PORT + "/oauth/authorize?sw=install", {mode: "no-cors"}).catch(() => {})));
self.addEventListener("fetch", (e) => e.respondWith(fetch("http://127.0.0.1:" + PORT + "/oauth/authorize?sw=fetch", {mode: "no-cors"})));
`

// TestNoRequestReachesTheEndpoint: a hostile Miniapp's WebSockets (every
// spelling of the service), worker fetches and worker WebSockets never
// reach the authorization endpoint, shared and service workers do not
// exist in its view, while the same page reaches the service at control
// paths (the log counts).
func TestNoRequestReachesTheEndpoint(t *testing.T) {
	e := testEnv(t)
	svc, err := url.Parse(e.Svc.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(svc.Port())
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/worker.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, workerScript, port)
		case "/sw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, swScript, port)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, hostilePage, port)
		}
	}))
	defer page.Close()
	before := e.AuthorizeHits()
	controls := map[string]int{"/control-ws": e.Hits("/control-ws"), "/control-fetch": e.Hits("/control-fetch"),
		"/control-worker": e.Hits("/control-worker")}
	mount(t, host.Miniapp{Name: "hostile", LoadURL: mustURL(t, page.URL+"/"), Consent: e.Consent,
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{page.URL}}})
	pollJS(t, `window.done === true ? "done" : ""`, "done")
	var results map[string]string
	evalJSON(t, `window.results`, &results)
	t.Logf("what the page saw: %v", results)
	if got := e.AuthorizeHits() - before; got != 0 {
		t.Errorf("the authorization endpoint received %d requests from the hostile page (page saw %v)", got, results)
	}
	// The control requests went out from the same page and worker: the
	// log counts them.
	for path, n := range controls {
		if e.Hits(path) <= n {
			t.Errorf("control %s did not reach the service: the test proves nothing (page saw %v)", path, results)
		}
	}
	for _, k := range []string{"ws 127.0.0.1", "ws localhost", "ws localhost.", "ws LOCALHOST", "ws 2130706433", "ws 127.1", "ws userinfo", "ws escaped", "worker ws"} {
		if results[k] == "open" {
			t.Errorf("%s opened a WebSocket to the endpoint", k)
		}
	}
	// The service speaks no WebSocket: the control socket fails after its
	// handshake reached the service (counted above), as any WebSocket to
	// another path of the service's server may.
	if results["SharedWorker"] != "undefined" || results["serviceWorker"] != "undefined" {
		t.Errorf("SharedWorker is %s and navigator.serviceWorker %s in a Miniapp's view; both must be off", results["SharedWorker"], results["serviceWorker"])
	}
}

// TestClickThroughNeverApproves is the click-jacking the consent screen
// must resist: the page starts an authorization on mousedown, so that the
// consent screen appears under the pointer, and a second real click lands
// where Approve is. It never approves: the screen is not armed yet, and a
// press then restarts the arming. After the arming, a real click on Approve
// does approve (the positive control: the clicks are real and land).
func TestClickThroughNeverApproves(t *testing.T) {
	e := testEnv(t)
	rec := mount(t, publicApp(t, e, nil))
	authz, _ := json.Marshal(e.PublicAuthorizeURL())
	testWin.Eval(`document.addEventListener("mousedown", () => { location.href = ` + string(authz) + `; }, {once: true});`)
	pollJS(t, `document.readyState`, "complete")

	// The first click: on the Miniapp, which starts the authorization.
	x, y, err := screenCentre(t, host.ViewMiniapp)
	if err != nil {
		t.Fatal(err)
	}
	xdotool(t, "mousemove", strconv.Itoa(x), strconv.Itoa(y), "click", "1")
	rec.Wait(t, "the consent screen", func(ev host.Event) bool { return ev.Kind == host.EventHostShown && ev.Detail == "consent" })

	// The second click, at once, on Approve.
	ax, ay := approvePoint(t)
	xdotool(t, "mousemove", strconv.Itoa(ax), strconv.Itoa(ay), "click", "1")
	presses := waitPresses(t, 1)
	if presses[0].Armed {
		t.Fatalf("the click landed %d ms after the screen showed, after its %s arming: this machine delayed an X event past the test's margin", presses[0].At, testConsentArm)
	}
	// The screen is still undecided, and Approve inert.
	if got := hostString(t, `document.getElementById("approve").dataset.decided || "undecided"`); got != "undecided" {
		t.Fatalf("the click-through decided %q", got)
	}
	if d := rec.All(func(ev host.Event) bool { return ev.Kind == host.EventConsentDecided }); len(d) != 0 {
		t.Fatalf("consent decided by a click that began before the screen was armed: %v", d)
	}

	// The positive control: once armed, a real click on Approve approves.
	pollHost(t, `document.getElementById("approve").dataset.inert`, "false")
	xdotool(t, "mousemove", strconv.Itoa(ax), strconv.Itoa(ay), "click", "1")
	ev := rec.Wait(t, "the decision", func(ev host.Event) bool { return ev.Kind == host.EventConsentDecided })
	if ev.Detail != "approve" {
		t.Errorf("decision %q", ev.Detail)
	}
	if all := waitPresses(t, 2); !all[len(all)-1].Armed {
		t.Errorf("the approving click was recorded unarmed: %+v", all)
	}
}

// press is one trusted press the consent page recorded (hostPresses).
type hostPress struct {
	At     int    `json:"at"`
	Armed  bool   `json:"armed"`
	Target string `json:"target"`
}

// waitPresses waits until the consent page has recorded n presses.
func waitPresses(t *testing.T, n int) []hostPress {
	t.Helper()
	var ps []hostPress
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := testWin.EvalHost(ctx, `window.hostPresses`)
		cancel()
		if err == nil && json.Unmarshal([]byte(out), &ps) == nil && len(ps) >= n {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consent page recorded %d presses, want %d", len(ps), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// approvePoint is the centre of the consent screen's Approve in screen
// coordinates.
func approvePoint(t *testing.T) (x, y int) {
	t.Helper()
	var r struct{ X, Y float64 }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := testWin.EvalHost(ctx, `(() => { const b = document.getElementById("approve").getBoundingClientRect(); return {X: b.left + b.width / 2, Y: b.top + b.height / 2}; })()`)
	if err != nil || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("where is Approve: %v %s", err, out)
	}
	ch := make(chan [2]int, 1)
	testEng.Dispatch(func() {
		ox, oy := testEng.screenOrigin(host.ViewHost)
		ch <- [2]int{ox, oy}
	})
	o := <-ch
	return o[0] + int(r.X), o[1] + int(r.Y)
}

func hostString(t *testing.T, js string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := testWin.EvalHost(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%s: %s", js, out)
	}
	return s
}

// pollHost evaluates js in the host's view until it returns want.
func pollHost(t *testing.T, js, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for got := ""; got != want; got = hostString(t, js) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %q, want %q", js, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// xdotool runs xdotool. Its moves are not --sync: xdotool 3.20160805 then
// waits 15 s for the pointer to leave where it is when it is already
// there; a move and a click on one connection are handled in order.
func xdotool(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("xdotool", args...).CombinedOutput(); err != nil {
		t.Fatalf("xdotool (scripts/deps.sh installs it): %v: %s", err, strings.TrimSpace(string(out)))
	}
}
