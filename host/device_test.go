package host_test

import (
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/device"
	"github.com/miniapp-host/miniapp-host/host"
)

// TestSetDeviceInTheCore: what the core asks of the engine for a device
// (the size, the user agent, the languages, the colour scheme, the
// safe-area style sheet), the device script in the Miniapp's user script,
// the device.changed event, and a device.set whose fields are wrong
// refused as invalid_params naming the field, with the device kept.
func TestSetDeviceInTheCore(t *testing.T) {
	e := world(t)
	c := newCore(t, host.Options{})
	if err := c.w.Mount(t.Context(), confidentialApp(t, e)); err != nil {
		t.Fatal(err)
	}
	res, err := c.w.SetDeviceCommand(t.Context(), bridge.DeviceCommand{Device: "iphone-15", Landscape: true, Theme: "dark", Locale: "de-ch"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reloaded || !strings.Contains(string(res.Viewport), `"width":852`) {
		t.Errorf("device.set result %s, reloaded %v", res.Viewport, res.Reloaded)
	}
	d := c.eng.Device()
	preset, _ := device.Lookup("iphone-15")
	if d.Width != 852 || d.Height != 393 || !d.Bezel || !d.Dark || d.UserAgent != preset.UserAgent ||
		strings.Join(d.Languages, ",") != "de-CH,de" || !strings.Contains(d.StyleSheet, "--miniapp-safe-area-inset-left:59px") {
		t.Errorf("engine device %+v", d)
	}
	if !strings.Contains(c.eng.Script(), `"state":{"height":393,"touch":true,"width":852}`) {
		t.Errorf("the Miniapp's script has no device script of the landscape iPhone:\n%.300s", c.eng.Script())
	}
	var changed *bridge.DeviceChangedEvent
	for _, ev := range c.bus.all() {
		if dc, ok := ev.(bridge.DeviceChangedEvent); ok {
			changed = &dc
		}
	}
	if changed == nil || changed.Device != "iphone-15" || changed.Orientation != "landscape" || changed.Theme != "dark" || !changed.Reloaded {
		t.Errorf("device.changed %+v", changed)
	}

	for _, tc := range []struct {
		cmd  bridge.DeviceCommand
		want string
	}{
		{bridge.DeviceCommand{Device: "iphone-99"}, `unknown device "iphone-99"`},
		{bridge.DeviceCommand{Device: "390x"}, "is not WIDTHxHEIGHT@DPR"},
		{bridge.DeviceCommand{Theme: "blue"}, `theme "blue": use light or dark`},
		{bridge.DeviceCommand{Locale: "en_US"}, "is a POSIX locale name, not a BCP 47 tag: write it as en-US"},
		{bridge.DeviceCommand{Zoom: 9}, "device zoom 9: use 0.25 to 2"},
	} {
		_, err := c.w.SetDeviceCommand(t.Context(), tc.cmd)
		var be *bridge.Error
		if !asBridgeError(err, &be) || be.Code != bridge.CodeInvalidParams || !strings.Contains(be.Message, tc.want) {
			t.Errorf("%+v: %v, want invalid_params %q", tc.cmd, err, tc.want)
		}
	}
	if got := c.w.Device(); got.Device.Name != "iphone-15" || !got.Landscape {
		t.Errorf("a refused device.set changed the device to %+v", got)
	}
	// The same user agent: in place.
	if res, err := c.w.SetDeviceCommand(t.Context(), bridge.DeviceCommand{Device: "iphone-15"}); err != nil || res.Reloaded {
		t.Errorf("turning the phone: %+v, %v; want no reload", res, err)
	}
}

func asBridgeError(err error, into **bridge.Error) bool {
	be, ok := err.(*bridge.Error)
	if ok {
		*into = be
	}
	return ok
}
