package origin

import (
	"errors"
	"testing"

	"golang.org/x/net/idna"
)

// TestEmptyPunycodeLabel covers ACE labels that decode to nothing or to
// ASCII only. x/net/idna turns "xn--" into an empty label, so without the
// check https://xn--.example/ became https://.example/, another host. UTS #46
// (revision 31 on), ICU and web-platform-tests refuse all of these.
func TestEmptyPunycodeLabel(t *testing.T) {
	refused := []string{
		"https://xn--.example/",
		"https://a.xn--/",
		"https://xn--.xn--.example/",
		"https://xn--/",
		"https://XN--.example/",
		"https://Xn--.example/",
		"https://xn--./",
		"https://a.xn--./",
		"https://ｘｎ－－.example/",         // full-width letters and hyphens map to "xn--"
		"https://x%C2%ADn--.example/",   // a percent-encoded soft hyphen is ignored by mapping
		"https://xn--\u00ad.example/",   // so is a raw one after the prefix
		"https://xn--.bücher.example/",  // an IDN host takes the code point by code point path
		"https://bücher.xn--/",          //
		"https://bücher.xn--.example./", //
		"https://bücher．xn--．example/",  // full-width dots separate labels too
		"https://xn--abc-.example/",     // decodes to "abc", ASCII only
		"https://xn--ss-.example/",      // decodes to "ss"
		"https://xn---.example/",        // "-" is no punycode
		"https://xn--a/",                // invalid punycode (WPT toascii.json)
	}
	for _, raw := range refused {
		t.Run(raw, func(t *testing.T) {
			u, err := ParseURL(raw)
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeHost {
				t.Fatalf("ParseURL = %v, %v; want a %s error", u, err, CodeHost)
			}
			if o, err := OfString(raw); err == nil {
				t.Errorf("OfString = %s, want an error", o)
			}
			base := mustURL(t, "https://app.example/")
			if u, err := ResolveReference(base, raw); err == nil {
				t.Errorf("ResolveReference = %s, want an error", u)
			}
		})
	}

	// Empty labels that are not ACE labels stay as a browser keeps them,
	// and labels that only contain "xn--" elsewhere are plain labels.
	kept := []struct{ raw, want string }{
		{"https://a..b/", "https://a..b"},
		{"https://x..xn--zca/", "https://x..xn--zca"},
		{"https://xn--zca.xn--zca/", "https://xn--zca.xn--zca"},
		{"https://a.example./", "https://a.example."},
		{"https://bücher..example./", "https://xn--bcher-kva..example."},
		{"https://bücher。。example./", "https://xn--bcher-kva..example."},
		{"https://a.\u00ad.b/", "https://a..b"},
		{"https://axn--.example/", "https://axn--.example"},
		{"https://xn-.example/", "https://xn-.example"},
		{"https://xn-n--.example/", "https://xn-n--.example"},
	}
	for _, tt := range kept {
		t.Run(tt.raw, func(t *testing.T) {
			o, err := OfString(tt.raw)
			if err != nil {
				t.Fatalf("OfString: %v", err)
			}
			if o.String() != tt.want {
				t.Errorf("origin = %s, want %s", o, tt.want)
			}
		})
	}
	if _, err := Parse("https://xn--.example"); err == nil {
		t.Error("Parse accepted https://xn--.example")
	}
}

// TestIDNATablesPinned pins the IDNA mapping this package gets from
// x/net/idna. Its tables follow the Go toolchain (Unicode 15.0 below go1.27,
// 17.0 from it on), and a host's mapping decides which origin a URL has: a
// toolchain or x/net upgrade that breaks this test changes origin decisions
// and must be reviewed against what browsers do (web-platform-tests
// toascii.json, IdnaTestV2.txt) before the expectations are updated.
func TestIDNATablesPinned(t *testing.T) {
	if idna.UnicodeVersion != "15.0.0" {
		t.Errorf("x/net/idna has Unicode %s tables, this test pins 15.0.0: review the mappings below, then the U+1E9E special case in parseHost", idna.UnicodeVersion)
	}
	// What x/net/idna alone makes of each host.
	tables := []struct{ in, want string }{
		// Unicode 15.0 maps ẞ to "ss"; UTS #46 for 15.1 on maps it to ß.
		{"ẞ.example", "ss.example"},
		{"faß.example", "xn--fa-hia.example"}, // deviation kept (non-transitional)
		{"ς.example", "xn--3xa.example"},      // deviation kept
		{"ＡＢＣ.example", "abc.example"},
		{"ⅸ.example", "ix.example"},
		{"ﬀ.example", "ff.example"},
		{"℡.example", "tel.example"},
		{"①.example", "1.example"},
		{"a\u00adb.example", "ab.example"},
		{"аррӏе.com", "xn--80ak6aa92e.com"},
		{"www.foo。bar.com", "www.foo.bar.com"},
	}
	for _, tt := range tables {
		got, err := idnaProfile.ToASCII(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("idnaProfile.ToASCII(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	// What this package makes of them: the browser's host.
	hosts := []struct{ in, want string }{
		{"https://ẞ.example/", "https://xn--zca.example"},
		{"https://maẞe.example/", "https://xn--mae-6ka.example"},
		{"https://faß.example/", "https://xn--fa-hia.example"},
		{"https://ＡＢＣ.example/", "https://abc.example"},
	}
	for _, tt := range hosts {
		o, err := OfString(tt.in)
		if err != nil || o.String() != tt.want {
			t.Errorf("OfString(%q) = %s, %v; want %s", tt.in, o, err, tt.want)
		}
	}
}
