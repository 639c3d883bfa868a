package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// The demo Miniapps' ids (docs/playground.md).
const (
	demoPublic       = "demo-public"
	demoConfidential = "demo-confidential"
)

// Scripts evaluated in the Miniapp's main frame.
const (
	// scriptGarbage builds and drops arrays of objects and long strings:
	// garbage-collector pressure in the web process. Its result is small.
	scriptGarbage = `(function () {
  var n = 0;
  for (var k = 0; k < 20; k++) {
    var a = [];
    for (var i = 0; i < 20000; i++) a.push({k: k, i: i, s: "v" + i});
    n += a.length;
  }
  var parts = [];
  for (var j = 0; j < 200; j++) parts.push("x".repeat(10000) + j);
  return n + parts.join("").length;
})()`
	// largeCount is the length of scriptLarge's result.
	largeCount = 4000
	// scriptLarge's RESULT is large: the UI process deserialises it into
	// its own JavaScriptCore heap (jsc_value_to_json).
	scriptLarge = `Array.from({length: 4000}, function (_, i) {
  return {i: i, name: "item-" + i, even: i % 2 === 0, tags: ["soak", "r" + (i % 7)]};
})`
	// bridgeCalls is how many getContext calls one bridge loop makes.
	bridgeCalls = 40
)

// scriptBridgeLoop starts bridgeCalls calls of miniapp.getContext, one
// after the other, and returns at once; each call is a bridge.call event.
func scriptBridgeLoop(tag string) string {
	return fmt.Sprintf(`(function () {
  if (!window.miniapp || !window.miniapp.inHost) return "no-bridge";
  var st = window.__soakBridge = {tag: %q, ok: 0, failed: 0, done: false};
  (async function () {
    for (var i = 0; i < %d; i++) {
      try { var c = await window.miniapp.getContext(); if (c && c.id) st.ok++; else st.failed++; }
      catch (e) { st.failed++; }
    }
    st.done = true;
  })();
  return "started";
})()`, tag, bridgeCalls)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// runRound is one round of use: a subject is picked in the launcher, the
// confidential demo is launched and its consent decided, then the public
// demo, with the load steps (scripts, bridge calls, navigations,
// screenshots) on each. It returns errStop after a freeze or a loss, or
// ctx's error; a check that does not hold is recorded and the round goes
// on.
func (d *driver) runRound(ctx context.Context) error {
	subject := d.p.subjects[d.round%len(d.p.subjects)]
	if err := d.api(ctx, "api subject", "/api/subject", map[string]string{"subject": subject}); err != nil {
		if errors.Is(err, errStop) || ctx.Err() != nil {
			return err
		}
		d.check("subject %s: %v", subject, err)
	}
	steps := []func(context.Context, string) error{d.device, d.service, d.confidential, d.public}
	for _, step := range steps {
		if d.over() {
			return nil
		}
		if err := step(ctx, subject); err != nil {
			return err
		}
	}
	return nil
}

// stop reports whether err ends the round (a freeze, a loss, ctx's end);
// other errors (an error answer) are recorded as checks by the caller.
func stop(ctx context.Context, err error) bool {
	return errors.Is(err, errStop) || ctx.Err() != nil
}

// confidential launches the confidential demo (its load_url goes to the
// service, which the host catches and shows its consent screen for),
// decides the consent, and loads it with scripts.
func (d *driver) confidential(ctx context.Context, subject string) error {
	origin := d.p.demos[demoConfidential]
	if d.round%5 == 4 {
		// Reset storage, as the launcher's button does: the next launch
		// starts signed out.
		err := d.api(ctx, "api reset", "/api/reset", map[string]string{"origin": origin, "id": demoConfidential})
		if stop(ctx, err) {
			return err
		}
		if err != nil {
			d.check("reset storage: %v", err)
		}
	}
	mark := d.c.mark()
	if _, err := d.cmd(ctx, "open "+demoConfidential, "open", map[string]string{"origin": origin, "id": demoConfidential}); err != nil {
		if stop(ctx, err) {
			return err
		}
		d.check("open %s: %v", demoConfidential, err)
		return nil
	}
	decision, err := d.consent(ctx, mark, subject, demoConfidential)
	if err != nil {
		return err
	}
	want := `document.body.dataset.signedIn === "true"`
	if decision == "denied" {
		want = `document.body.dataset.error !== ""`
	}
	if decision != "" {
		if err := d.waitPage(ctx, "confidential after "+decision, origin, "/", want); err != nil {
			return err
		}
	}
	return d.load(ctx, origin, "confidential")
}

// public launches the public demo, calls its bridge in a loop, signs in
// through the bridge (authorize: the host's consent screen), navigates
// inside its origin, and loads it with scripts.
func (d *driver) public(ctx context.Context, subject string) error {
	origin := d.p.demos[demoPublic]
	if _, err := d.cmd(ctx, "open "+demoPublic, "open", map[string]string{"origin": origin, "id": demoPublic}); err != nil {
		if stop(ctx, err) {
			return err
		}
		d.check("open %s: %v", demoPublic, err)
		return nil
	}
	if err := d.waitPage(ctx, "public start page", origin, "/", `!!document.getElementById("bridge-signin") && !!window.miniapp`); err != nil {
		return err
	}
	if err := d.bridgeLoop(ctx); err != nil {
		return err
	}
	if d.over() {
		return nil
	}
	// Sign in through the bridge: authorize shows the host's consent.
	mark := d.c.mark()
	if _, err := d.eval(ctx, "eval (bridge sign-in click)", `document.getElementById("bridge-signin").click(); "clicked"`); err != nil {
		if stop(ctx, err) {
			return err
		}
		d.check("bridge sign-in click: %v", err)
	} else {
		decision, err := d.consent(ctx, mark, subject, demoPublic)
		if err != nil {
			return err
		}
		want := map[string]string{"approved": "signed-in", "denied": "denied"}[decision]
		if want != "" {
			if err := d.waitPage(ctx, "public after "+decision, origin, "/", `document.body.dataset.state === `+jsString(want)); err != nil {
				return err
			}
		}
	}
	if d.over() {
		return nil
	}
	// Navigations inside the Miniapp's origin.
	if err := d.navigate(ctx, origin, fmt.Sprintf("/callback?state=soak-%d&error=access_denied", d.round), "/callback",
		`document.body.dataset.state !== undefined`); err != nil {
		return err
	}
	if err := d.navigate(ctx, origin, "/", "/", `!!document.getElementById("bridge-signin")`); err != nil {
		return err
	}
	return d.load(ctx, origin, "public")
}

// load is the heavy part of a round on the Miniapp on screen: a
// screenshot, garbage in the web process, large results in the host.
func (d *driver) load(ctx context.Context, origin, which string) error {
	steps := []func() error{
		func() error { return d.screenshot(ctx) },
		func() error { return d.garbage(ctx) },
		func() error { return d.large(ctx) },
		func() error { return d.garbage(ctx) },
		func() error { return d.large(ctx) },
		func() error { return d.large(ctx) },
		func() error { return d.navigate(ctx, origin, "/", "/", "true") },
		func() error { return d.large(ctx) },
		func() error { return d.screenshot(ctx) },
	}
	if d.cfg.NoAlloc {
		steps = []func() error{
			func() error { return d.screenshot(ctx) },
			func() error { return d.navigate(ctx, origin, "/", "/", "true") },
			func() error { return d.screenshot(ctx) },
		}
	}
	for _, s := range steps {
		if d.over() {
			return nil
		}
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// consent waits (from mark) for the consent screen of a launch and decides
// it: "approved" or "denied" on the screen, "remembered" when the service
// approved without one (the subject consented before), "" when neither
// came (a check). The last subject always denies, so that screens keep
// coming all run long; the others deny a few times, then approve.
func (d *driver) consent(ctx context.Context, mark int64, subject, client string) (string, error) {
	ev, next, ok := d.c.waitEvent(ctx, mark, d.cfg.CommandTimeout, func(e Event) bool {
		return e.Kind == "consent.shown" || e.Kind == "consent.decided"
	})
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if !ok {
		d.check("%s: no consent.shown nor consent.decided within %s of the launch", client, d.cfg.CommandTimeout)
		return "", nil
	}
	if ev.Kind == "consent.decided" {
		d.rep.Remembered++
		return "remembered", nil
	}
	var shown struct {
		Accounts []string `json:"accounts"`
	}
	_ = json.Unmarshal(ev.Data, &shown)
	si := 0
	for i, s := range d.p.subjects {
		if s == subject {
			si = i
		}
	}
	key := subject + "|" + client
	approve := si < len(d.p.subjects)-1 && d.denials[key] >= si+1
	var err error
	if approve {
		params := map[string]string{}
		if n := len(shown.Accounts); n > 0 {
			params["account"] = shown.Accounts[n-1]
		}
		_, err = d.cmd(ctx, "consent.approve ("+client+")", "consent.approve", params)
	} else {
		_, err = d.cmd(ctx, "consent.deny ("+client+")", "consent.deny", nil)
	}
	if stop(ctx, err) {
		return "", err
	}
	if err != nil {
		d.check("%s consent decision: %v", client, err)
		return "", nil
	}
	dec, _, ok := d.c.waitEvent(ctx, next, d.cfg.CommandTimeout, func(e Event) bool { return e.Kind == "consent.decided" })
	if !ok {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		d.check("%s: no consent.decided within %s of the decision", client, d.cfg.CommandTimeout)
		return "", nil
	}
	var decided struct {
		Decision string `json:"decision"`
	}
	_ = json.Unmarshal(dec.Data, &decided)
	if approve {
		d.rep.Approved++
		if decided.Decision != "approved" {
			d.check("%s: approved, but consent.decided says %q", client, decided.Decision)
		}
		return "approved", nil
	}
	d.rep.Denied++
	d.denials[key]++
	if decided.Decision != "denied" {
		d.check("%s: denied, but consent.decided says %q", client, decided.Decision)
	}
	return "denied", nil
}

// eval runs a script in the Miniapp's main frame.
func (d *driver) eval(ctx context.Context, what, script string) (json.RawMessage, error) {
	return d.cmd(ctx, what, "eval", map[string]string{"script": script})
}

// waitPage evaluates, until it is true or the command timeout passes, that
// the Miniapp's document is origin+path, loaded, and cond holds. Each try
// is a command (answered or a freeze); the page not getting there is a
// check.
func (d *driver) waitPage(ctx context.Context, what, origin, path, cond string) error {
	script := fmt.Sprintf(`(function () { try { return location.origin === %s && location.pathname === %s && document.readyState === "complete" && !!(%s); } catch (e) { return false; } })()`,
		jsString(origin), jsString(path), cond)
	deadline := time.Now().Add(d.cfg.CommandTimeout)
	for {
		res, err := d.eval(ctx, "eval (wait for "+what+")", script)
		if stop(ctx, err) {
			return err
		}
		if err == nil && string(res) == "true" {
			return nil
		}
		if time.Now().After(deadline) {
			d.check("%s: the page did not get there within %s (last answer %s, %v)", what, d.cfg.CommandTimeout, res, err)
			return nil
		}
		// The page is still loading: ask again shortly (pacing, not a
		// condition: the answer decides).
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// navigate loads origin+path in the Miniapp's view through the navigation
// policy, waits for the navigation event that allows it, then for the
// page (pathname wantPath, cond).
func (d *driver) navigate(ctx context.Context, origin, path, wantPath, cond string) error {
	mark := d.c.mark()
	u := origin + path
	if _, err := d.cmd(ctx, "navigate", "navigate", map[string]string{"url": u}); err != nil {
		if stop(ctx, err) {
			return err
		}
		d.check("navigate %s: %v", path, err)
		return nil
	}
	ev, _, ok := d.c.waitEvent(ctx, mark, d.cfg.CommandTimeout, func(e Event) bool {
		if e.Kind != "navigation" {
			return false
		}
		var n struct{ URL string }
		_ = json.Unmarshal(e.Data, &n)
		return strings.HasPrefix(n.URL, origin+wantPath)
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !ok {
		d.check("navigate %s: no navigation event within %s", path, d.cfg.CommandTimeout)
		return nil
	}
	var n struct{ Decision, Rule string }
	_ = json.Unmarshal(ev.Data, &n)
	if n.Decision != "allowed" {
		d.check("navigate %s: the policy said %s (%s)", path, n.Decision, n.Rule)
		return nil
	}
	return d.waitPage(ctx, "navigation to "+wantPath, origin, wantPath, cond)
}

// bridgeLoop calls miniapp.getContext bridgeCalls times in the page and
// waits for as many allowed bridge.call events.
func (d *driver) bridgeLoop(ctx context.Context) error {
	mark := d.c.mark()
	res, err := d.eval(ctx, "eval (bridge loop)", scriptBridgeLoop(fmt.Sprint(d.round)))
	if stop(ctx, err) {
		return err
	}
	if err != nil || string(res) != `"started"` {
		d.check("bridge loop: %s %v", res, err)
		return nil
	}
	from := mark
	for i := 0; i < bridgeCalls; i++ {
		var ok bool
		_, from, ok = d.c.waitEvent(ctx, from, d.cfg.CommandTimeout, func(e Event) bool {
			return e.Kind == "bridge.call" && strings.Contains(string(e.Data), `"getContext"`)
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !ok {
			d.check("bridge loop: %d of %d bridge.call events within %s", i, bridgeCalls, d.cfg.CommandTimeout)
			return nil
		}
	}
	return d.waitPage(ctx, "bridge loop done", d.p.demos[demoPublic], "/",
		fmt.Sprintf(`window.__soakBridge && window.__soakBridge.done && window.__soakBridge.ok === %d`, bridgeCalls))
}

func (d *driver) garbage(ctx context.Context) error {
	res, err := d.eval(ctx, "eval (garbage)", scriptGarbage)
	if stop(ctx, err) {
		return err
	}
	var n float64
	if err != nil || json.Unmarshal(res, &n) != nil || n <= 0 {
		d.check("garbage script: %.40s %v", res, err)
	}
	return nil
}

func (d *driver) large(ctx context.Context) error {
	res, err := d.eval(ctx, "eval (large result)", scriptLarge)
	if stop(ctx, err) {
		return err
	}
	var items []json.RawMessage
	if err != nil || json.Unmarshal(res, &items) != nil || len(items) != largeCount {
		d.check("large result: %d items (%d bytes), %v", len(items), len(res), err)
	}
	return nil
}

// service uses the service's development controls as a QA engineer does
// between tests (docs/automation.md, "The service's development
// controls"): the clock moved and put back, a fault added for a client no
// round signs in with and cleared, and in every third round the subject's
// decisions forgotten, so that the next consents are asked on the screen
// again. Each answer must say what was asked.
func (d *driver) service(ctx context.Context, subject string) error {
	type state struct {
		Offset string `json:"offset"`
	}
	var st state
	res, err := d.cmd(ctx, "clock.advance", "clock.advance", map[string]string{"duration": "1s"})
	if stop(ctx, err) {
		return err
	}
	if err != nil || json.Unmarshal(res, &st) != nil || st.Offset != "1s" {
		d.check("clock.advance 1s: %s, %v", res, err)
	}
	res, err = d.cmd(ctx, "clock.reset", "clock.reset", nil)
	if stop(ctx, err) {
		return err
	}
	if err != nil || json.Unmarshal(res, &st) != nil || st.Offset != "0s" {
		d.check("clock.reset: %s, %v", res, err)
	}
	var fault struct {
		ID string `json:"id"`
	}
	res, err = d.cmd(ctx, "fault.add", "fault.add", map[string]any{"endpoint": "token", "client_id": "soak-no-such-client",
		"error": "temporarily_unavailable", "times": 1})
	if stop(ctx, err) {
		return err
	}
	if err != nil || json.Unmarshal(res, &fault) != nil || fault.ID == "" {
		d.check("fault.add: %s, %v", res, err)
	} else {
		res, err = d.cmd(ctx, "fault.clear", "fault.clear", map[string]string{"id": fault.ID})
		if stop(ctx, err) {
			return err
		}
		if err != nil {
			d.check("fault.clear %s: %s, %v", fault.ID, res, err)
		}
	}
	if d.round%3 == 0 {
		res, err = d.cmd(ctx, "fixture.reset "+subject, "fixture.reset", map[string]string{"subject": subject})
		if stop(ctx, err) {
			return err
		}
		if err != nil {
			d.check("fixture.reset %s: %s, %v", subject, res, err)
		}
	}
	return nil
}

// soakDevices are the devices the rounds turn through, as a developer
// switches device, orientation and theme while the window stays open
// (docs/playground.md, "Devices"); the desktop among them.
var soakDevices = []string{"iphone-15", "pixel-8", "desktop", "galaxy-a14", "ipad-air", "390x844@3"}

// device shows the Miniapps of this round as the next device, turned in
// every other round, dark in every third; the answer must say the device's
// viewport.
func (d *driver) device(ctx context.Context, _ string) error {
	name := soakDevices[d.round%len(soakDevices)]
	theme := "light"
	if d.round%3 == 2 {
		theme = "dark"
	}
	res, err := d.cmd(ctx, "device.set "+name, "device.set", map[string]any{"device": name, "landscape": d.round%2 == 1, "theme": theme})
	if stop(ctx, err) {
		return err
	}
	var out struct {
		Viewport struct {
			Device string
			Width  int
		}
	}
	if err != nil || json.Unmarshal(res, &out) != nil || out.Viewport.Device != name || (name != "desktop") != (out.Viewport.Width > 0) {
		d.check("device.set %s: %s, %v", name, res, err)
	}
	return nil
}

func (d *driver) screenshot(ctx context.Context) error {
	res, err := d.cmd(ctx, "screenshot", "screenshot", nil)
	if stop(ctx, err) {
		return err
	}
	var shot struct {
		Format        string
		Width, Height int
		Data          []byte
	}
	if err != nil || json.Unmarshal(res, &shot) != nil || shot.Format != "png" || shot.Width == 0 || len(shot.Data) == 0 {
		d.check("screenshot: %s %dx%d, %d bytes, %v", shot.Format, shot.Width, shot.Height, len(shot.Data), err)
	}
	return nil
}

// api calls the launcher's API (docs/playground.md, "The API") with the
// automation token, as the launcher page does. It counts as a command: an
// answer must come within the command timeout.
func (d *driver) api(ctx context.Context, what, path string, body any) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(d.p.launcher, "/")+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.p.token)
	req.Header.Set("Content-Type", "application/json")
	d.rep.Sent++
	sent := time.Now()
	resp, err := d.http.Do(req)
	var ne net.Error
	switch {
	case err != nil && ctx.Err() != nil:
		d.rep.Sent--
		return ctx.Err()
	case errors.As(err, &ne) && ne.Timeout():
		f := Freeze{Minute: sent.Sub(d.start).Minutes(), Command: what, Waited: d.cfg.CommandTimeout}
		d.rep.Freezes = append(d.rep.Freezes, f)
		d.logf("FREEZE: %s sent at minute %.1f got no answer in %s", what, f.Minute, d.cfg.CommandTimeout)
		return errStop
	case err != nil:
		d.lost(fmt.Sprintf("%s: %v (minute %.1f)", what, err, d.minute()))
		return errStop
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
	d.rep.Answered++
	if took := time.Since(sent); took > d.rep.Latency[what] {
		d.rep.Latency[what] = took
	}
	if resp.StatusCode != http.StatusOK {
		d.rep.Errors[what+": "+resp.Status]++
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(out))
	}
	return nil
}
