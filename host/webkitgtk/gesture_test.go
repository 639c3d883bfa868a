//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/origin"
)

// gesturePage has a full-window button whose click handler opens a URL
// through the bridge, and forge, which plays a Miniapp script that has
// learnt both keys: from a timer (no user input), it posts openExternal
// with "gesture": true straight to the host's message handler.
const gesturePage = `<!doctype html><html><body style="margin:0">
<button id=b style="position:fixed;left:0;top:0;width:100vw;height:100vh">open</button>
<script>
document.getElementById("b").addEventListener("click", function () {
  window.miniapp.openExternal("https://docs.example/clicked").then(
    function () { document.body.dataset.click = "ok"; },
    function (e) { document.body.dataset.click = e.code; });
});
window.forge = function (hostKey, key, id, url) {
  setTimeout(function () {
    window.webkit.messageHandlers.miniappHost.postMessage(hostKey + JSON.stringify(
      {v: 1, id: id, key: key, method: "openExternal", params: {url: url, gesture: true}}));
  }, 50);
};
</script></body></html>`

// TestOpenExternalNeedsNativeInput: the host opens a URL for openExternal
// only after a real click on the Miniapp's view, once per click, whatever
// the page claims.
func TestOpenExternalNeedsNativeInput(t *testing.T) {
	e := testEnv(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, gesturePage)
	}))
	defer page.Close()
	// The window's own bridge host, wrapped to record what its
	// OpenExternal answered (a host error reaches only the page).
	o := origin.MustParse(page.URL)
	h := &openRecorder{Host: testWin.BridgeHost(host.BridgeConfig{Origin: o, ID: "gesture-test", ClientID: "demo-public",
		RedirectURI: e.Public.RedirectURI(), AuthorizeURL: e.Authorize, TokenURL: e.Token})}
	v := &replyView{Window: testWin, notify: make(chan struct{}, 1)}
	d, err := bridge.New(bridge.Config{Origin: o, Host: h, View: v})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := regexp.MustCompile(`"key":"([0-9a-f]{64})"`).FindStringSubmatch(d.Script())
	if m == nil {
		t.Fatal("no key in the bridge script")
	}
	bridgeKey := m[1]
	rec := record(t)
	app := host.Miniapp{Name: "gestures", LoadURL: mustURL(t, page.URL+"/"), Consent: e.Consent, Bridge: d,
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{page.URL}}}
	forgetConsents(t) // a fresh subject: the consent view shows
	if err := testWin.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, "the page loaded", kind(host.EventLoadFinished))
	pollJS(t, `typeof window.miniapp`, "object")

	externals.mu.Lock()
	start := len(externals.urls)
	externals.mu.Unlock()
	opened := func() []string {
		externals.mu.Lock()
		defer externals.mu.Unlock()
		return slices.Clone(externals.urls[start:])
	}
	decisions := h.answers
	forge := func(id int, u string) {
		hk, _ := json.Marshal(testWin.TransportKey())
		bk, _ := json.Marshal(bridgeKey)
		uu, _ := json.Marshal(u)
		testWin.Eval(fmt.Sprintf(`window.forge(%s, %s, %d, %s)`, hk, bk, id, uu))
	}
	// want waits for the n-th OpenExternal answer and checks it.
	want := func(n int, decision string) {
		t.Helper()
		// The reply must be in the page, not only the host's answer: a reply
		// is a host evaluation in the page, and WebKitGTK ends each one by
		// using up the page's user activation, so a reply still on its way
		// when the test clicks could land between the press and the click
		// and make the page's own check refuse the click.
		v.waitReplies(t, n)
		pollFor(t, fmt.Sprintf("openExternal decision %d", n), func() bool { return len(decisions()) >= n })
		if got := decisions()[n-1]; got != decision {
			t.Errorf("openExternal decision %d = %q, want %q (all: %q)", n, got, decision, decisions())
		}
	}

	// No input at all: the page's claim of a gesture is refused.
	forge(1001, "https://docs.example/forged-1")
	want(1, "https://docs.example/forged-1 "+string(bridge.CodeNoUserGesture))

	// A real click: the page's own call opens its URL.
	clickMiniapp(t)
	// The host's answer first: without one, the bridge script itself
	// refused the call (it saw no trusted input in the page).
	want(2, "https://docs.example/clicked ok")
	pollJS(t, `document.body.dataset.click || ""`, "ok")

	// The click is used up: a forged call right after it opens nothing.
	forge(1002, "https://docs.example/forged-2")
	want(3, "https://docs.example/forged-2 "+string(bridge.CodeNoUserGesture))

	pollFor(t, "the clicked URL opened", func() bool { return len(opened()) >= 1 })
	if got := opened(); !slices.Equal(got, []string{"https://docs.example/clicked"}) {
		t.Errorf("opened %q, want only the clicked URL", got)
	}
}

// openRecorder is the window's bridge host with a record of every
// OpenExternal answer, as "url code" ("url ok" when it opened).
type openRecorder struct {
	bridge.Host
	mu  sync.Mutex // guards got
	got []string
}

func (r *openRecorder) OpenExternal(ctx context.Context, u string) error {
	err := r.Host.OpenExternal(ctx, u)
	code := "ok"
	if err != nil {
		code = err.Error()
		var be *bridge.Error
		if errors.As(err, &be) {
			code = string(be.Code)
		}
	}
	r.mu.Lock()
	r.got = append(r.got, u+" "+code)
	r.mu.Unlock()
	return err
}

func (r *openRecorder) answers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// clickMiniapp clicks the middle of the Miniapp's view the way a user's
// click arrives: through the X server (XTest, by xdotool), so GTK sees a
// button press with send_event unset.
func clickMiniapp(t *testing.T) {
	t.Helper()
	x, y, err := screenCentre(t, host.ViewMiniapp)
	if err != nil {
		t.Fatal(err)
	}
	// No --sync: xdotool 3.20160805 then waits 15 s for the pointer to
	// leave where it is when it is already at x,y. The move and the click
	// go on one connection, which the X server handles in order.
	out, err := exec.Command("xdotool", "mousemove", strconv.Itoa(x), strconv.Itoa(y), "click", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("xdotool (scripts/deps.sh installs it): %v: %s", err, out)
	}
}

// replyView is the window as the bridge's View, counting the scripts
// (replies, events) it has handed to the engine for the page.
type replyView struct {
	*host.Window
	mu     sync.Mutex // guards n
	n      int
	notify chan struct{}
}

func (v *replyView) Deliver(deliver func(now bridge.Document) string) {
	v.Window.Deliver(deliver)
	// Dispatch runs in order: this runs once the script above has been
	// handed to WebKit (whose messages to the page's process keep their
	// order) or withheld. The UI thread must not block: notify has room
	// for one wake-up, which is all a waiter needs.
	v.Dispatch(func() {
		v.mu.Lock()
		v.n++
		v.mu.Unlock()
		select {
		case v.notify <- struct{}{}:
		default:
		}
	})
}

// waitReplies waits until n scripts have been delivered.
func (v *replyView) waitReplies(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		v.mu.Lock()
		got := v.n
		v.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-v.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for bridge reply %d (%d delivered)", n, got)
		}
	}
}
