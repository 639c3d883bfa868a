package webdriverfront

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/miniapp-host/miniapp-host/device"
)

// OptionsCapability is the front's own capability: how the session's host
// shows its Miniapp (docs/webdriver.md, "Devices"), the members of
// `miniapp-host open`'s device flags: {device, landscape, theme, locale,
// zoom, start, profile}.
const OptionsCapability = "miniapp-host:options"

// optionArgs turns alwaysMatch's miniapp-host:options, if any, into open's
// flags, and returns the device's viewport (the desktop's is zero). It is
// removed from always: the driver has no use for it. A refusal names the
// member and how to fix it.
func optionArgs(always map[string]any) (args []string, v device.Viewport, refusal string) {
	raw, present := always[OptionsCapability]
	if !present {
		return nil, device.Viewport{}, ""
	}
	delete(always, OptionsCapability)
	opts, ok := raw.(map[string]any)
	if !ok {
		return nil, v, fmt.Sprintf(`%s must be an object: {"device": "iphone-15", "landscape": true, "theme": "dark", "locale": "de-CH", "zoom": 1, "start": "/path?q", "profile": NAME}`, OptionsCapability)
	}
	var o device.Options
	for k, val := range opts {
		more, msg := optionArg(k, val, &o)
		if msg != "" {
			return nil, v, msg
		}
		args = append(args, more...)
	}
	em, err := o.Emulation()
	if err != nil {
		return nil, v, fmt.Sprintf("%s: %s", OptionsCapability, strings.TrimPrefix(err.Error(), "device: "))
	}
	return args, em.Viewport(), ""
}

// optionArg turns the option k of miniapp-host:options into open's flags,
// noting the device's options in o.
func optionArg(k string, val any, o *device.Options) (args []string, refusal string) {
	switch k {
	case "device", "theme", "locale", "start", "profile":
		return stringOption(k, val, o)
	case "landscape":
		b, ok := val.(bool)
		if !ok {
			return nil, fmt.Sprintf("%s.landscape must be true or false", OptionsCapability)
		}
		o.Landscape = b
		if b {
			return []string{"--landscape"}, ""
		}
		return nil, ""
	case "zoom":
		n, ok := val.(json.Number)
		z, err := n.Float64()
		if !ok || err != nil || z < 0.25 || z > 2 {
			return nil, fmt.Sprintf("%s.zoom %v: a number from 0.25 to 2 (leave it out to fit the device into the window)", OptionsCapability, val)
		}
		return []string{"--zoom", strconv.FormatFloat(z, 'f', -1, 64)}, ""
	}
	return nil, fmt.Sprintf("%s.%s is not an option: give device, landscape, theme, locale, zoom, start or profile", OptionsCapability, k)
}

// stringOption reads an option whose value is a string, the flag of the
// same name: start is a path on the Miniapp's origin.
func stringOption(k string, val any, o *device.Options) (args []string, refusal string) {
	s, ok := val.(string)
	if !ok {
		return nil, fmt.Sprintf("%s.%s must be a string", OptionsCapability, k)
	}
	switch k {
	case "device":
		o.Device = s
	case "theme":
		o.Theme = s
	case "locale":
		o.Locale = s
	case "start":
		if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
			return nil, fmt.Sprintf("%s.start %q: write a path on the Miniapp's origin, /path?query", OptionsCapability, s)
		}
	}
	return []string{"--" + k, s}, ""
}

// windowRect answers Get Window Rect for a session shown as a device: the
// device's viewport, as the page lays out (W3C WebDriver §11.8.1; x and y
// are the window's, 0 in a window of its own).
func (s *session) windowRect(w http.ResponseWriter) {
	writeValue(w, map[string]int{"x": 0, "y": 0, "width": s.viewport.Width, "height": s.viewport.Height})
}
