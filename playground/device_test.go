package playground

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/launchprofile"
)

// deviceOpener is an opener whose window shows devices: it records the
// device.set commands it gets.
type deviceOpener struct {
	opener
	dmu     sync.Mutex
	devices []bridge.DeviceCommand
}

func (o *deviceOpener) CurrentDevice() bridge.DeviceCommand {
	o.dmu.Lock()
	defer o.dmu.Unlock()
	if len(o.devices) == 0 {
		return bridge.DeviceCommand{Device: "galaxy-s24", Theme: "dark"}
	}
	return o.devices[len(o.devices)-1]
}

func (o *deviceOpener) SetDevice(_ context.Context, cmd bridge.DeviceCommand) (bridge.DeviceResult, error) {
	o.dmu.Lock()
	defer o.dmu.Unlock()
	o.devices = append(o.devices, cmd)
	return bridge.DeviceResult{Viewport: []byte(`{"device":"` + cmd.Device + `"}`)}, nil
}

// TestLaunchProfilesAPI: a profiles file the user edited by hand, with a
// good profile and a bad one, is listed with the bad one's field named; a
// profile saved through the API keeps the bad one in the file; launching a
// profile sets its device first, then hands the window its start path and
// subject; a profile that names no seeded subject or a folder no dev runs
// is refused with its reason; device.set with a bad field is refused naming
// it.
func TestLaunchProfilesAPI(t *testing.T) {
	file := filepath.Join(t.TempDir(), "profiles.json")
	o := &deviceOpener{}
	p := start(t, Config{Opener: o, Profiles: file})
	demo := entry(t, p, DemoPublicID)
	hand := `{"profiles": [
  {"name": "pay-iphone", "origin": "` + demo.Origin + `", "id": "demo-public", "start": "/?tab=pay", "subject": "sub_benjamin",
   "device": "iphone-15", "landscape": true, "theme": "dark", "locale": "de-CH"},
  {"name": "broken", "origin": "` + demo.Origin + `", "id": "demo-public", "device": "iphone-99"},
  {"name": "nobody", "origin": "` + demo.Origin + `", "id": "demo-public", "subject": "sub_nobody"},
  {"name": "folder", "dir": "my-app"}
]}`
	if err := os.WriteFile(file, []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	var list struct {
		File     string
		Profiles []launchprofile.Profile
		Problems []string
	}
	call(t, p, "GET", "/api/profiles", nil, &list)
	if list.File != file || len(list.Profiles) != 3 || len(list.Problems) != 1 ||
		!strings.Contains(list.Problems[0], `launch profile broken: device: unknown device "iphone-99"`) {
		t.Fatalf("profiles %+v", list)
	}

	var res LaunchResult
	if st := call(t, p, "POST", "/api/profiles/pay-iphone/launch", struct{}{}, &res); st != http.StatusOK || !res.Window.Opened {
		t.Fatalf("launch pay-iphone: %d %+v", st, res.Window)
	}
	o.mu.Lock()
	m := o.mounts[len(o.mounts)-1]
	o.mu.Unlock()
	if m.Start != "/?tab=pay" || m.Subject != "sub_benjamin" || m.Miniapp.Manifest.ID != "demo-public" {
		t.Errorf("mounted with start %q, subject %q", m.Start, m.Subject)
	}
	o.dmu.Lock()
	got := o.devices
	o.dmu.Unlock()
	if len(got) != 1 || got[0] != (bridge.DeviceCommand{Device: "iphone-15", Landscape: true, Theme: "dark", Locale: "de-CH"}) {
		t.Errorf("device commands %+v", got)
	}
	if p.Subject() == "sub_benjamin" {
		t.Error("a profile's subject changed the switcher's: it is the launch's only")
	}

	var out struct {
		Error struct{ Code, Message string }
	}
	for name, want := range map[string]string{
		"nobody":  `subject: no seeded subject "sub_nobody"`,
		"folder":  "start it with `miniapp-host dev --profile folder`",
		"broken":  `unknown device "iphone-99"`,
		"missing": `launch profile "missing": no such profile`,
	} {
		if st := call(t, p, "POST", "/api/profiles/"+name+"/launch", struct{}{}, &out); st != http.StatusBadRequest || !strings.Contains(out.Error.Message, want) {
			t.Errorf("launch %s: %d %q, want %q", name, st, out.Error.Message, want)
		}
	}

	save := launchprofile.Profile{Name: "pixel", Origin: demo.Origin, ID: "demo-public", Device: "pixel-8"}
	if st := call(t, p, "POST", "/api/profiles", save, nil); st != http.StatusOK {
		t.Fatalf("save: %d", st)
	}
	if st := call(t, p, "POST", "/api/profiles", launchprofile.Profile{Name: "bad", Origin: demo.Origin, ID: "x", Locale: "en_US"}, &out); st != http.StatusBadRequest ||
		!strings.Contains(out.Error.Message, "launch profile bad: locale") {
		t.Errorf("save a bad profile: %d %q", st, out.Error.Message)
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), `"iphone-99"`) || !strings.Contains(string(b), `"pixel-8"`) {
		t.Errorf("after a save the file is\n%s", b)
	}
	if st := call(t, p, "DELETE", "/api/profiles/pixel", struct{}{}, nil); st != http.StatusOK {
		t.Errorf("delete: %d", st)
	}

	if st := call(t, p, "POST", "/api/device", bridge.DeviceCommand{Device: "pixel-8", Landscape: true}, nil); st != http.StatusOK {
		t.Errorf("device: %d", st)
	}
	// Without a window that shows devices: no_window.
	q := start(t, Config{Opener: &opener{}, Profiles: file})
	if st := call(t, q, "POST", "/api/device", bridge.DeviceCommand{Device: "pixel-8"}, &out); st != http.StatusConflict || out.Error.Code != "no_window" {
		t.Errorf("device without one: %d %q", st, out.Error.Code)
	}
}

// TestDeviceBarAndProfilesInChromium drives the launcher as a developer
// would, in headless Chromium: the device bar sends the device chosen to
// the window, a launch is saved as a profile from the form and listed, the
// profile launches with its device, and a profile that cannot be used is
// listed with its reason.
func TestDeviceBarAndProfilesInChromium(t *testing.T) {
	ctx := browser(t)
	file := filepath.Join(t.TempDir(), "profiles.json")
	os.WriteFile(file, []byte(`{"profiles": [{"name": "old", "origin": "http://127.0.0.1:1", "id": "x", "locale": "de_CH"}]}`), 0o600)
	o := &deviceOpener{}
	p := start(t, Config{Opener: o, Profiles: file})
	closeFirst(t, ctx)
	viewport(t, ctx, 640, 860) // beside the device
	openLauncher(t, ctx, p)
	poll(t, ctx, "the devices", `document.querySelectorAll("#device option").length >= 8`)
	// The bar says what the window shows at first (here the opener's).
	poll(t, ctx, "the window's device in the bar", `document.getElementById("device").value === "galaxy-s24" && document.getElementById("device-theme").value === "dark"`)
	poll(t, ctx, "the bad profile's reason", `document.getElementById("profile-problems").textContent.includes("launch profile old: locale")`)

	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#device-locale`), "fr-CA")); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, ctx, `(() => { const s = document.getElementById("device"); s.value = "pixel-8"; s.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`)
	poll(t, ctx, "the device's answer", `document.getElementById("device-status").textContent.startsWith("Device: pixel-8")`)
	o.dmu.Lock()
	got := o.devices[len(o.devices)-1]
	o.dmu.Unlock()
	if got.Device != "pixel-8" || got.Locale != "fr-CA" {
		t.Errorf("the window got %+v", got)
	}

	click(t, ctx, `#list-demo li[data-id="demo-public"] button.launch`)
	poll(t, ctx, "the launch", `document.querySelector('#launches > li[data-id="demo-public"][data-outcome="accepted"]') !== null`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#profile-form input[name=name]`), "pixel-fr"),
		chromedp.SetValue(chromedp.CSS(`#profile-form input[name=start]`), "/?from=profile"),
		chromedp.Click(chromedp.CSS(`#profile-form button`)),
	); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the saved profile", `document.querySelector('#profiles li[data-name="pixel-fr"]') !== null`)
	f, err := launchprofile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := f.Get("pixel-fr")
	if err != nil || saved.Device != "pixel-8" || saved.Locale != "fr-CA" || saved.Start != "/?from=profile" || saved.ID != "demo-public" {
		t.Errorf("saved %+v, %v", saved, err)
	}
	if len(f.Problems) != 1 {
		t.Errorf("the bad profile was not kept: %v", f.Problems)
	}
	o.mu.Lock()
	before := len(o.mounts)
	o.mu.Unlock()
	click(t, ctx, `#profiles li[data-name="pixel-fr"] button`)
	pollFor := func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.mounts) > before && o.mounts[len(o.mounts)-1].Start == "/?from=profile"
	}
	poll(t, ctx, "the profile's launch report", `document.querySelectorAll('#launches > li[data-id="demo-public"]').length >= 2`)
	if !pollFor() {
		t.Error("the profile's launch did not reach the window with its start path")
	}
}
