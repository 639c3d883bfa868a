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
		switch k {
		case "device", "theme", "locale", "start", "profile":
			s, ok := val.(string)
			if !ok {
				return nil, v, fmt.Sprintf("%s.%s must be a string", OptionsCapability, k)
			}
			args = append(args, "--"+k, s)
			switch k {
			case "device":
				o.Device = s
			case "theme":
				o.Theme = s
			case "locale":
				o.Locale = s
			case "start":
				if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
					return nil, v, fmt.Sprintf("%s.start %q: write a path on the Miniapp's origin, /path?query", OptionsCapability, s)
				}
			}
		case "landscape":
			b, ok := val.(bool)
			if !ok {
				return nil, v, fmt.Sprintf("%s.landscape must be true or false", OptionsCapability)
			}
			o.Landscape = b
			if b {
				args = append(args, "--landscape")
			}
		case "zoom":
			n, ok := val.(json.Number)
			z, err := n.Float64()
			if !ok || err != nil || z < 0.25 || z > 2 {
				return nil, v, fmt.Sprintf("%s.zoom %v: a number from 0.25 to 2 (leave it out to fit the device into the window)", OptionsCapability, val)
			}
			args = append(args, "--zoom", strconv.FormatFloat(z, 'f', -1, 64))
		default:
			return nil, v, fmt.Sprintf("%s.%s is not an option: give device, landscape, theme, locale, zoom, start or profile", OptionsCapability, k)
		}
	}
	em, err := o.Emulation()
	if err != nil {
		return nil, v, fmt.Sprintf("%s: %s", OptionsCapability, strings.TrimPrefix(err.Error(), "device: "))
	}
	return args, em.Viewport(), ""
}

// windowRect answers Get Window Rect for a session shown as a device: the
// device's viewport, as the page lays out (W3C WebDriver §11.8.1; x and y
// are the window's, 0 in a window of its own).
func (s *session) windowRect(w http.ResponseWriter) {
	writeValue(w, map[string]int{"x": 0, "y": 0, "width": s.viewport.Width, "height": s.viewport.Height})
}
