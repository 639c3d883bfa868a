package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/miniapp-host/miniapp-host/assets"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/device"
)

// DeviceSettings are how the window shows its Miniapp (docs/playground.md,
// "Devices"): a device emulation and the zoom it is shown at. The zero
// value is the desktop, light, in the process's languages, fitted.
type DeviceSettings struct {
	device.Emulation
	// Zoom is the zoom the device is shown at, 0.25 to 2; 0 fits it into
	// the window, at most 1. The page lays out at the device's size at
	// any zoom.
	Zoom float64 `json:"zoom"`
}

func (s DeviceSettings) validate() error {
	if s.Zoom != 0 && (s.Zoom < 0.25 || s.Zoom > 2) {
		return fmt.Errorf("host: device zoom %g: use 0.25 to 2, or 0 to fit the device into the window", s.Zoom)
	}
	return nil
}

// devices is the window's device: what it shows its Miniapp as, and the
// device script's update function's name.
type devices struct {
	update string // random per window: the device script's update function

	mu  sync.Mutex // guards cur
	cur DeviceSettings
}

func newDevices() (*devices, error) {
	var k [8]byte
	if _, err := rand.Read(k[:]); err != nil {
		return nil, fmt.Errorf("host: device script: %w", err)
	}
	return &devices{update: "__miniappHostDevice" + hex.EncodeToString(k[:])}, nil
}

func (d *devices) get() DeviceSettings {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

// set makes s the device and says whether the page needs loading again
// for it (its user agent changed).
func (d *devices) set(s DeviceSettings) (reload bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	reload = !d.cur.SameLayout(s.Emulation)
	d.cur = s
	return reload
}

// scriptState is what the device script shows the page of s.
func scriptState(s DeviceSettings) map[string]any {
	v := s.Viewport()
	return map[string]any{"width": v.Width, "height": v.Height, "touch": v.Touch}
}

// script is the device script for s (assets/host/device.js).
func (d *devices) script(s DeviceSettings) (string, error) {
	js, err := assets.FS.ReadFile("host/device.js")
	if err != nil {
		return "", fmt.Errorf("host: device script: %w", err)
	}
	cfg, err := json.Marshal(map[string]any{"update": d.update, "state": scriptState(s)})
	if err != nil {
		return "", fmt.Errorf("host: device script: %w", err)
	}
	return "(" + strings.TrimSpace(stripComments(string(js))) + ")(" + string(cfg) + ");\n", nil
}

// stripComments drops the file's leading comment lines, so that the
// script is an expression.
func stripComments(js string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(js, "\n") {
		if b.Len() == 0 && strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// updateScript changes the device of the page shown, without a reload.
func (d *devices) updateScript(s DeviceSettings) string {
	name, _ := json.Marshal(d.update)
	state, _ := json.Marshal(scriptState(s))
	return "(function(){var f=window[" + string(name) + "];if(typeof f==='function')f(" + string(state) + ");})();"
}

// styleSheet publishes the safe-area insets as CSS variables on the root
// of every document of the view: WebKitGTK's env(safe-area-inset-*) is
// always 0 (docs/playground.md, "Devices").
func styleSheet(s DeviceSettings) string {
	in := s.Viewport().Insets
	return fmt.Sprintf(":root{--miniapp-safe-area-inset-top:%dpx;--miniapp-safe-area-inset-right:%dpx;"+
		"--miniapp-safe-area-inset-bottom:%dpx;--miniapp-safe-area-inset-left:%dpx}", in.Top, in.Right, in.Bottom, in.Left)
}

// engineDevice is what the engine carries out of s.
func engineDevice(s DeviceSettings) EngineDevice {
	v := s.Viewport()
	langs := s.Languages()
	if len(langs) == 0 {
		langs = device.ProcessLanguages(os.Getenv)
	}
	return EngineDevice{Width: v.Width, Height: v.Height, Zoom: s.Zoom, Bezel: v.Width > 0, UserAgent: s.Device.UserAgent,
		Languages: langs, Dark: s.PageTheme().Theme == device.Dark, StyleSheet: styleSheet(s)}
}

// pageFacts are what the bridge tells the page of s.
func pageFacts(s DeviceSettings) bridge.Page {
	v, _ := json.Marshal(s.Viewport())
	t, _ := json.Marshal(s.PageTheme())
	return bridge.Page{Viewport: v, Theme: t}
}

// Device is how the window shows its Miniapp now.
func (w *Window) Device() DeviceSettings { return w.dev.get() }

// SetDevice shows the Miniapp as s from now on: the view is laid out again
// in place, the page shown gets its new viewport and theme (the bridge's
// viewportchanged and themechanged, the safe-area variables, screen and
// touch), and only a new user agent loads the page again, as a browser
// sends it with every request. It returns once the engine has applied it,
// and says whether the page was loaded again.
func (w *Window) SetDevice(ctx context.Context, s DeviceSettings) (reloaded bool, err error) {
	if err := s.validate(); err != nil {
		return false, err
	}
	script, err := w.dev.script(s)
	if err != nil {
		return false, err
	}
	reload := w.dev.set(s)
	w.mu.Lock()
	app := w.app
	w.mu.Unlock()
	if app != nil && app.Bridge != nil {
		app.Bridge.SetPage(pageFacts(s))
	}
	var zoom float64
	err = awaitErr(ctx, w.eng, "device", func(done func(error)) {
		w.eng.SetDevice(engineDevice(s))
		if app != nil {
			w.eng.SetMiniappScript(w.miniappScript(script, app))
			if !reload {
				w.eng.Eval(ViewMiniapp, w.dev.updateScript(s), nil)
			}
		}
		zoom = s.Zoom
		done(nil)
	})
	if err != nil {
		return false, err
	}
	reloaded = reload && app != nil
	if reloaded {
		if err := w.reloadAndWait(ctx); err != nil {
			return false, err
		}
	}
	v := s.Viewport()
	w.publish(bridge.DeviceChangedEvent{Device: v.Device, Width: v.Width, Height: v.Height, Orientation: v.Orientation,
		Theme: string(s.PageTheme().Theme), Locale: s.Locale, Zoom: zoom, Reloaded: reloaded})
	return reloaded, nil
}

// miniappScript is the Miniapp view's user script for app: the device
// script, the transport, then the bridge script when app has one.
func (w *Window) miniappScript(device string, app *Miniapp) string {
	js := device + w.transportScript()
	if app.Bridge != nil {
		js += app.Bridge.Script()
	}
	return js
}

// reloadAndWait loads the Miniapp's page again and returns once the view
// has committed and finished loading a document after the reload began:
// the next script a caller runs is the new document's.
func (w *Window) reloadAndWait(ctx context.Context) error {
	loaded := make(chan struct{}, 1)
	var committed atomic.Bool
	remove := w.OnEvent(func(ev Event) {
		if ev.Kind == EventLoadCommitted {
			committed.Store(true)
		}
		if committed.Load() && ev.Kind == EventLoadFinished {
			select {
			case loaded <- struct{}{}:
			default:
			}
		}
	})
	defer remove()
	w.Dispatch(w.eng.Reload)
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("host: device: the page did not load again: %w", ctx.Err())
	}
}

var _ bridge.DeviceController = (*controller)(nil)

// SetDevice implements bridge.DeviceController: the automation channel's
// device.set.
func (c *controller) SetDevice(ctx context.Context, cmd bridge.DeviceCommand) (bridge.DeviceResult, error) {
	if err := checkView(cmd.View); err != nil {
		return bridge.DeviceResult{}, err
	}
	return c.w.SetDeviceCommand(ctx, cmd)
}

// SetDeviceCommand carries out a device.set command (the automation
// channel's, the launcher's): a device that does not exist, a malformed
// size, theme or locale is refused as invalid_params, naming the field.
func (w *Window) SetDeviceCommand(ctx context.Context, cmd bridge.DeviceCommand) (bridge.DeviceResult, error) {
	em, err := device.Options{Device: cmd.Device, Landscape: cmd.Landscape, Theme: cmd.Theme, Locale: cmd.Locale}.Emulation()
	if err != nil {
		return bridge.DeviceResult{}, bridge.Errorf(bridge.CodeInvalidParams, "%v", err)
	}
	s := DeviceSettings{Emulation: em, Zoom: cmd.Zoom}
	if err := s.validate(); err != nil {
		return bridge.DeviceResult{}, bridge.Errorf(bridge.CodeInvalidParams, "%v", err)
	}
	reloaded, err := w.SetDevice(ctx, s)
	if err != nil {
		return bridge.DeviceResult{}, err
	}
	v, _ := json.Marshal(em.Viewport())
	return bridge.DeviceResult{Viewport: v, Reloaded: reloaded}, nil
}
