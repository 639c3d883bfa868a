package device

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/text/language"
)

// Theme is the colour scheme the page is shown in: its
// prefers-color-scheme and the host's theme colours.
type Theme string

// Themes.
const (
	Light Theme = "light"
	Dark  Theme = "dark"
)

// ParseTheme reads a theme; "" is light.
func ParseTheme(s string) (Theme, error) {
	switch Theme(strings.ToLower(strings.TrimSpace(s))) {
	case "", Light:
		return Light, nil
	case Dark:
		return Dark, nil
	}
	return "", fmt.Errorf("device: theme %q: use light or dark", s)
}

// Colours are the host's theme colours the page may style itself with
// (window.miniapp.theme, docs/bridge.md "Theme"), as #rrggbb, in the
// manner of Telegram's themeParams.
type Colours struct {
	Background          string `json:"bg_color"`
	SecondaryBackground string `json:"secondary_bg_color"`
	Text                string `json:"text_color"`
	Hint                string `json:"hint_color"`
	Link                string `json:"link_color"`
	Button              string `json:"button_color"`
	ButtonText          string `json:"button_text_color"`
}

// ColoursOf are the host's colours in theme t.
func ColoursOf(t Theme) Colours {
	if t == Dark {
		return Colours{Background: "#17181c", SecondaryBackground: "#232429", Text: "#f2f2f5", Hint: "#9a9ca6",
			Link: "#7ab4ff", Button: "#3d8bfd", ButtonText: "#ffffff"}
	}
	return Colours{Background: "#ffffff", SecondaryBackground: "#f1f2f6", Text: "#17181c", Hint: "#6b6e78",
		Link: "#1a66d9", Button: "#1a66d9", ButtonText: "#ffffff"}
}

// ParseLocale reads a BCP 47 language tag (RFC 5646) and returns it in
// its canonical form; "" means the engine's own languages.
func ParseLocale(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	// The underscore of POSIX locales (de_CH.UTF-8) is the usual slip.
	hint := "a BCP 47 language tag such as en-US, de-CH or zh-Hant-TW"
	if strings.ContainsAny(s, "_.") {
		return "", fmt.Errorf("device: locale %q is a POSIX locale name, not a BCP 47 tag: write it as %s", s, strings.ReplaceAll(strings.Split(s, ".")[0], "_", "-"))
	}
	t, err := language.Parse(s)
	if err != nil {
		return "", fmt.Errorf("device: locale %q is not a BCP 47 language tag (%v): use %s", s, err, hint)
	}
	if b, _ := t.Base(); b.String() == "und" || strings.HasPrefix(t.String(), "und") {
		return "", fmt.Errorf("device: locale %q names no language: use %s", s, hint)
	}
	return t.String(), nil
}

// Emulation is how a launch shows its Miniapp: a device in an
// orientation, with a theme and a locale. The zero value is the desktop,
// light, in the engine's own languages.
type Emulation struct {
	Device    Device `json:"device"`
	Landscape bool   `json:"landscape"`
	Theme     Theme  `json:"theme"`
	// Locale is a canonical BCP 47 tag; "" keeps the engine's languages.
	Locale string `json:"locale,omitempty"`
}

// Options are an emulation as a user writes it: on the command line,
// in a launch profile, through the automation channel and the WebDriver
// capability `miniapp-host:options`.
type Options struct {
	Device    string `json:"device,omitempty"`
	Landscape bool   `json:"landscape,omitempty"`
	Theme     string `json:"theme,omitempty"`
	Locale    string `json:"locale,omitempty"`
}

// Emulation checks o and returns its emulation; the error names the field
// and how to fix it.
func (o Options) Emulation() (Emulation, error) {
	d, err := Lookup(o.Device)
	if err != nil {
		return Emulation{}, err
	}
	t, err := ParseTheme(o.Theme)
	if err != nil {
		return Emulation{}, err
	}
	loc, err := ParseLocale(o.Locale)
	if err != nil {
		return Emulation{}, err
	}
	return Emulation{Device: d, Landscape: o.Landscape && d.Width > 0, Theme: t, Locale: loc}, nil
}

// Options are e as a user would write it.
func (e Emulation) Options() Options {
	return Options{Device: e.Device.Name, Landscape: e.Landscape, Theme: string(e.theme()), Locale: e.Locale}
}

func (e Emulation) theme() Theme {
	if e.Theme == "" {
		return Light
	}
	return e.Theme
}

// Viewport is what the page is told of its screen (window.miniapp.viewport,
// docs/bridge.md "Viewport"): the CSS viewport, its orientation and its
// safe-area insets. Width 0 is the desktop's, whose size is the view's.
type Viewport struct {
	Device      string  `json:"device"`
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	Orientation string  `json:"orientation"`
	DPR         float64 `json:"device_pixel_ratio"`
	Insets      Insets  `json:"safe_area_insets"`
	Touch       bool    `json:"touch"`
}

// Viewport is the viewport of e.
func (e Emulation) Viewport() Viewport {
	d := e.Device
	v := Viewport{Device: d.Name, Width: d.Width, Height: d.Height, Orientation: "portrait", DPR: d.DPR, Insets: d.SafeArea.Portrait, Touch: d.Touch}
	if v.Device == "" {
		v.Device = Desktop
	}
	if e.Landscape && d.Width > 0 {
		v.Width, v.Height, v.Orientation, v.Insets = d.Height, d.Width, "landscape", d.SafeArea.Landscape
	}
	if v.Width == 0 {
		v.Orientation = ""
	}
	return v
}

// Languages are the page's preferred languages (navigator.languages,
// Accept-Language): the locale, then its base language when it has a
// region or script; none when no locale is set.
func (e Emulation) Languages() []string {
	if e.Locale == "" {
		return nil
	}
	langs := []string{e.Locale}
	if t, err := language.Parse(e.Locale); err == nil {
		if b, _ := t.Base(); b.String() != e.Locale {
			langs = append(langs, b.String())
		}
	}
	return langs
}

// PageTheme is what the page is told of the host's theme
// (window.miniapp.theme).
type PageTheme struct {
	// Theme is the colour scheme, as the themechanged event has always
	// named it.
	Theme   Theme   `json:"theme"`
	Colours Colours `json:"colors"`
}

// PageTheme is e's theme as the page sees it.
func (e Emulation) PageTheme() PageTheme {
	return PageTheme{Theme: e.theme(), Colours: ColoursOf(e.theme())}
}

// SameLayout reports whether changing from e to f only re-lays the view
// (size, insets, theme, locale): a change of user agent needs the page
// loaded again, as a real browser sends it with every request.
func (e Emulation) SameLayout(f Emulation) bool { return e.Device.UserAgent == f.Device.UserAgent }

// ProcessLanguages are the languages of the process's environment as
// BCP 47 tags, the first one the most preferred: LANGUAGE (a colon
// separated list), else LC_ALL, LC_MESSAGES or LANG, as gettext reads
// them; "C" and "POSIX" (no language) are en-US. A view without a locale
// gets these (WebKitGTK keeps the languages it was last given, so "none"
// must be said as a list).
func ProcessLanguages(getenv func(string) string) []string {
	var names []string
	if l := getenv("LANGUAGE"); l != "" {
		names = strings.Split(l, ":")
	}
	for _, v := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if l := getenv(v); l != "" {
			names = append(names, l)
			break
		}
	}
	var out []string
	for _, n := range names {
		n, _, _ = strings.Cut(n, ".")
		n, _, _ = strings.Cut(n, "@")
		if n == "" || n == "C" || n == "POSIX" {
			continue
		}
		tag, err := ParseLocale(strings.ReplaceAll(n, "_", "-"))
		if err == nil && tag != "" && !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	if len(out) == 0 {
		return []string{"en-US"}
	}
	return out
}
