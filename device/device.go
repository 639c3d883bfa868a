// Package device is the playground's device simulator as data: the preset
// phones, tablets and the desktop a Miniapp can be shown as, a custom size
// (WxH@DPR), and an Emulation (a device in an orientation, with a theme and
// a locale) turned into what the page is shown: its viewport, safe-area
// insets, user agent, touch, colour scheme and languages
// (docs/playground.md, "Devices").
//
// It decides nothing about how an engine carries an emulation out: package
// host applies it to a launch, and its engine (host/webkitgtk) sizes the
// view, sets the user agent and the languages. What WebKitGTK cannot
// emulate per view is said in docs/playground.md, with what was measured.
package device

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Insets are safe-area insets in CSS pixels: the parts of the screen a
// notch, a status bar, rounded corners or a home indicator cover.
type Insets struct {
	Top    int `json:"top"`
	Right  int `json:"right"`
	Bottom int `json:"bottom"`
	Left   int `json:"left"`
}

// SafeArea are a device's insets in each orientation. Landscape is the
// device turned a quarter counter-clockwise (the notch on the left), as
// iOS reports landscape-left.
type SafeArea struct {
	Portrait  Insets `json:"portrait"`
	Landscape Insets `json:"landscape"`
}

// Device is one device the page can be shown as. Width and Height are the
// CSS viewport in portrait (the browser's layout viewport with
// width=device-width); a device with Width 0 is the desktop, whose view
// fills the space it is given.
type Device struct {
	// Name is what --device and the automation channel take.
	Name string `json:"name"`
	// Title is what the launcher shows.
	Title string `json:"title"`
	// Kind is "phone", "tablet" or "desktop".
	Kind   string `json:"kind"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	// DPR is the device pixel ratio the real device has (docs/playground.md
	// says what WebKitGTK shows the page).
	DPR float64 `json:"device_pixel_ratio"`
	// UserAgent is the device's browser's user agent; "" keeps the
	// engine's own.
	UserAgent string   `json:"user_agent"`
	Touch     bool     `json:"touch"`
	SafeArea  SafeArea `json:"safe_area"`
}

// Desktop is the name of the device that is no device: the view fills its
// space with the engine's own user agent, as before devices existed.
const Desktop = "desktop"

const (
	uaIOS17    = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaIPad     = "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaPixel8   = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
	uaGalaxy   = "Mozilla/5.0 (Linux; Android 14; SM-S921B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
	uaGalaxyA  = "Mozilla/5.0 (Linux; Android 13; SM-A145F) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
	uaGeneric  = "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
	uaCustom   = uaGeneric
	notchedTop = 59 // iPhone 14 Pro and later: the Dynamic Island's status bar
)

// presets are the devices of `miniapp-host devices`. Sizes and insets are
// what each device's browser reports (CSS pixels: innerWidth at
// width=device-width, env(safe-area-inset-*) with viewport-fit=cover).
var presets = []Device{
	{Name: "iphone-se", Title: "iPhone SE (3rd generation)", Kind: "phone", Width: 375, Height: 667, DPR: 2, UserAgent: uaIOS17, Touch: true,
		SafeArea: SafeArea{Portrait: Insets{Top: 20}, Landscape: Insets{}}},
	{Name: "iphone-15", Title: "iPhone 15", Kind: "phone", Width: 393, Height: 852, DPR: 3, UserAgent: uaIOS17, Touch: true,
		SafeArea: SafeArea{Portrait: Insets{Top: notchedTop, Bottom: 34}, Landscape: Insets{Right: notchedTop, Bottom: 21, Left: notchedTop}}},
	{Name: "iphone-15-pro-max", Title: "iPhone 15 Pro Max", Kind: "phone", Width: 430, Height: 932, DPR: 3, UserAgent: uaIOS17, Touch: true,
		SafeArea: SafeArea{Portrait: Insets{Top: notchedTop, Bottom: 34}, Landscape: Insets{Right: notchedTop, Bottom: 21, Left: notchedTop}}},
	{Name: "pixel-8", Title: "Google Pixel 8", Kind: "phone", Width: 412, Height: 915, DPR: 2.625, UserAgent: uaPixel8, Touch: true,
		SafeArea: SafeArea{Portrait: Insets{Top: 24}, Landscape: Insets{Left: 24}}},
	{Name: "galaxy-s24", Title: "Samsung Galaxy S24", Kind: "phone", Width: 360, Height: 780, DPR: 3, UserAgent: uaGalaxy, Touch: true,
		SafeArea: SafeArea{Portrait: Insets{Top: 24}, Landscape: Insets{Left: 24}}},
	{Name: "galaxy-a14", Title: "Samsung Galaxy A14 (small Android)", Kind: "phone", Width: 360, Height: 640, DPR: 2, UserAgent: uaGalaxyA, Touch: true,
		SafeArea: SafeArea{Portrait: Insets{Top: 24}, Landscape: Insets{Left: 24}}},
	{Name: "ipad-air", Title: "iPad Air (5th generation)", Kind: "tablet", Width: 820, Height: 1180, DPR: 2, UserAgent: uaIPad, Touch: true,
		SafeArea: SafeArea{Portrait: Insets{Top: 24, Bottom: 20}, Landscape: Insets{Top: 24, Bottom: 20}}},
	{Name: Desktop, Title: "Desktop (the view fills its space)", Kind: "desktop"},
}

// Presets are the preset devices, in the order `devices` lists them.
func Presets() []Device { return slices.Clone(presets) }

// customRE is WxH@DPR: a custom device, e.g. 390x844@3 (@DPR optional).
var customRE = regexp.MustCompile(`^([0-9]{1,5})x([0-9]{1,5})(?:@([0-9]+(?:\.[0-9]+)?))?$`)

// Limits of a custom device's size, in CSS pixels.
const (
	MinSize = 200
	MaxSize = 4096
)

// ErrUnknown is wrapped by Lookup's error for a name that is no preset
// and no WxH@DPR.
var ErrUnknown = errors.New("unknown device")

// Lookup returns the preset named spec, or a custom device when spec is
// WxH@DPR (a phone with touch and no insets; the DPR defaults to 1). ""
// is the desktop.
func Lookup(spec string) (Device, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		spec = Desktop
	}
	for _, d := range presets {
		if strings.EqualFold(d.Name, spec) {
			return d, nil
		}
	}
	m := customRE.FindStringSubmatch(strings.ToLower(spec))
	if m == nil {
		if strings.ContainsAny(spec, "x@") && strings.IndexFunc(spec[:1], isDigit) == 0 {
			return Device{}, fmt.Errorf("device: %q is not WIDTHxHEIGHT@DPR: write it as e.g. 390x844@3 (sizes in CSS pixels, the ratio optional)", spec)
		}
		return Device{}, fmt.Errorf("device: %w %q: use one of %s, or a size WIDTHxHEIGHT@DPR such as 390x844@3 (`miniapp-host devices` lists them)",
			ErrUnknown, spec, strings.Join(Names(), ", "))
	}
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	dpr := 1.0
	if m[3] != "" {
		dpr, _ = strconv.ParseFloat(m[3], 64)
	}
	switch {
	case w < MinSize || h < MinSize || w > MaxSize || h > MaxSize:
		return Device{}, fmt.Errorf("device: %q: width and height must be %d to %d CSS pixels", spec, MinSize, MaxSize)
	case dpr < 0.5 || dpr > 5 || math.IsNaN(dpr):
		return Device{}, fmt.Errorf("device: %q: the device pixel ratio must be 0.5 to 5", spec)
	}
	// A device's size is its portrait one, the narrow side first: 844x390
	// is the same phone as 390x844, which --landscape turns.
	w, h = min(w, h), max(w, h)
	return Device{Name: fmt.Sprintf("%dx%d@%s", w, h, strconv.FormatFloat(dpr, 'f', -1, 64)), Title: "Custom device",
		Kind: "phone", Width: w, Height: h, DPR: dpr, UserAgent: uaCustom, Touch: true}, nil
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// Names are the presets' names.
func Names() []string {
	names := make([]string, len(presets))
	for i, d := range presets {
		names[i] = d.Name
	}
	return names
}
