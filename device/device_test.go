package device

import (
	"errors"
	"strings"
	"testing"
)

// TestPresets: the devices a user picks from are at least the eight kinds
// the launcher offers, each complete, and each found by its name.
func TestPresets(t *testing.T) {
	ps := Presets()
	if len(ps) < 8 {
		t.Fatalf("%d presets, want at least 8", len(ps))
	}
	kinds := map[string]int{}
	for _, d := range ps {
		kinds[d.Kind]++
		got, err := Lookup(strings.ToUpper(d.Name))
		if err != nil || got.Name != d.Name {
			t.Errorf("Lookup(%q) = %v, %v", d.Name, got.Name, err)
		}
		if d.Kind == "desktop" {
			continue
		}
		if d.Width < MinSize || d.Height <= d.Width || d.DPR < 1 || d.UserAgent == "" || !d.Touch || d.Title == "" {
			t.Errorf("preset %+v is incomplete or not portrait", d)
		}
	}
	if kinds["phone"] < 6 || kinds["tablet"] < 1 || kinds["desktop"] != 1 {
		t.Errorf("kinds %v", kinds)
	}
}

func TestLookupCustom(t *testing.T) {
	for _, tc := range []struct {
		spec, name string
		w, h       int
		dpr        float64
	}{
		{"390x844@3", "390x844@3", 390, 844, 3},
		{"844x390@3", "390x844@3", 390, 844, 3},
		{"400x800", "400x800@1", 400, 800, 1},
		{"412x915@2.625", "412x915@2.625", 412, 915, 2.625},
	} {
		d, err := Lookup(tc.spec)
		if err != nil || d.Name != tc.name || d.Width != tc.w || d.Height != tc.h || d.DPR != tc.dpr {
			t.Errorf("Lookup(%q) = %+v, %v", tc.spec, d, err)
		}
	}
}

// TestLookupRefusals: each mistake is named with how to write it right.
func TestLookupRefusals(t *testing.T) {
	for spec, want := range map[string]string{
		"iphone-99":  "unknown device \"iphone-99\": use one of iphone-se",
		"390x":       "is not WIDTHxHEIGHT@DPR: write it as e.g. 390x844@3",
		"390x844@":   "is not WIDTHxHEIGHT@DPR",
		"10x844@3":   "width and height must be 200 to 4096 CSS pixels",
		"390x844@9":  "the device pixel ratio must be 0.5 to 5",
		"390x99999":  "width and height must be 200 to 4096",
		"390x844844": "is not WIDTHxHEIGHT@DPR",
		"\x1b[31mx":  "unknown device",
	} {
		_, err := Lookup(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%q) = %v, want %q", spec, err, want)
		}
	}
	if _, err := Lookup("nokia"); !errors.Is(err, ErrUnknown) {
		t.Errorf("an unknown name: %v is not ErrUnknown", err)
	}
}

func TestParseLocale(t *testing.T) {
	for in, want := range map[string]string{"": "", "de-CH": "de-CH", "EN-us": "en-US", "zh-hant-tw": "zh-Hant-TW", "fr": "fr"} {
		if got, err := ParseLocale(in); err != nil || got != want {
			t.Errorf("ParseLocale(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"de_CH.UTF-8":  "is a POSIX locale name, not a BCP 47 tag: write it as de-CH",
		"english":      "is not a BCP 47 language tag",
		"12-34":        "is not a BCP 47 language tag",
		"und":          "names no language",
		"de-CH-x-abc!": "is not a BCP 47 language tag",
	} {
		if _, err := ParseLocale(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLocale(%q) = %v, want %q", in, err, want)
		}
	}
}

// TestViewport: landscape turns the size and takes the landscape insets;
// the desktop has no size and no orientation.
func TestViewport(t *testing.T) {
	e, err := Options{Device: "iphone-15", Landscape: true, Theme: "dark", Locale: "pt-br"}.Emulation()
	if err != nil {
		t.Fatal(err)
	}
	v := e.Viewport()
	if v.Width != 852 || v.Height != 393 || v.Orientation != "landscape" || v.Insets.Left != 59 || v.Insets.Right != 59 || v.Insets.Top != 0 {
		t.Errorf("landscape viewport %+v", v)
	}
	if got := e.Languages(); len(got) != 2 || got[0] != "pt-BR" || got[1] != "pt" {
		t.Errorf("languages %v", got)
	}
	if e.PageTheme().Theme != Dark || e.PageTheme().Colours.Background == ColoursOf(Light).Background {
		t.Errorf("theme %+v", e.PageTheme())
	}
	if o := e.Options(); o != (Options{Device: "iphone-15", Landscape: true, Theme: "dark", Locale: "pt-BR"}) {
		t.Errorf("options round trip %+v", o)
	}
	d, _ := Options{Landscape: true}.Emulation()
	if v := d.Viewport(); v.Device != Desktop || v.Width != 0 || v.Orientation != "" || d.Landscape {
		t.Errorf("desktop viewport %+v", v)
	}
	if _, err := (Options{Theme: "sepia"}).Emulation(); err == nil || !strings.Contains(err.Error(), "use light or dark") {
		t.Errorf("theme sepia: %v", err)
	}
}

// FuzzLookup: any text is a device or an error, never a panic, and a device
// is within the limits.
func FuzzLookup(f *testing.F) {
	for _, s := range []string{"iphone-15", "390x844@3", "1x1@0", "99999x1@1", "390x844@2.5.5", "", "x@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Lookup(s)
		if err != nil {
			return
		}
		if d.Kind != "desktop" && (d.Width < MinSize || d.Height > MaxSize || d.Width > d.Height || d.DPR < 0.5 || d.DPR > 5) {
			t.Fatalf("Lookup(%q) = %+v", s, d)
		}
	})
}

// FuzzParseLocale: any text is a canonical tag or an error; a tag read
// again is itself.
func FuzzParseLocale(f *testing.F) {
	for _, s := range []string{"de-CH", "en_US.UTF-8", "zh-Hant-TW", "x-private", "i-klingon", "und"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tag, err := ParseLocale(s)
		if err != nil || tag == "" {
			return
		}
		again, err := ParseLocale(tag)
		if err != nil || again != tag {
			t.Fatalf("ParseLocale(%q) = %q, then %q, %v", s, tag, again, err)
		}
	})
}

func TestProcessLanguages(t *testing.T) {
	for env, want := range map[string]string{
		"":                          "en-US",
		"LANG=C.UTF-8":              "en-US",
		"LANG=de_CH.UTF-8":          "de-CH",
		"LC_ALL=fr_CA@euro LANG=en": "fr-CA",
		"LANGUAGE=pt_BR:pt LANG=C":  "pt-BR pt",
		"LANGUAGE=xx_!! LANG=sv_SE": "sv-SE",
		"LC_MESSAGES=ja_JP.EUC-JP":  "ja-JP",
	} {
		vars := map[string]string{}
		for _, kv := range strings.Fields(env) {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		if got := strings.Join(ProcessLanguages(func(k string) string { return vars[k] }), " "); got != want {
			t.Errorf("%q: %q, want %q", env, got, want)
		}
	}
}
