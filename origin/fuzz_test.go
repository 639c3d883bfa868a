package origin

import (
	"errors"
	"testing"
)

func addSeeds(f *testing.F) {
	f.Helper()
	for _, c := range loadBrowserCases(f) {
		f.Add(c.Input)
	}
	for _, s := range []string{"https://a.example", "http://[::1]:0", "https://a.example.", "blob:blob:https://a/", "http://%2e%2e/", "file:////x",
		"https://xn--.example/", "https://ｘｎ--.bücher.example./", "https://ẞ.example/", "https://app.example/#/sale/50%", "https://us%er@a/"} {
		f.Add(s)
	}
}

// FuzzParseURL checks that ParseURL never panics and that its output is a
// fixed point: the canonical URL re-parses to itself with the same origin.
func FuzzParseURL(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, raw string) {
		o, oerr := OfString(raw)
		if oerr == nil && !o.IsOpaque() {
			// An origin serializes to a URL with the same origin.
			if again, err := OfString(o.String()); err != nil || !again.Equal(o) {
				t.Fatalf("origin %s (from %q) re-parses to %s, %v", o, raw, again, err)
			}
		}
		u, err := ParseURL(raw)
		if err != nil {
			// ParseURL refuses more than a browser only where url.URL
			// cannot carry the URL; OfString must refuse nothing else.
			var e *Error
			if oerr == nil && (!errors.As(err, &e) || e.Code != CodePercent) {
				t.Fatalf("ParseURL(%q) refuses (%v) but OfString gives %s", raw, err, o)
			}
			return
		}
		if oerr != nil || o.String() != Of(u).String() {
			t.Fatalf("OfString(%q) = %s, %v; Of(ParseURL) = %s", raw, o, oerr, Of(u))
		}
		s := u.String()
		again, err := ParseURL(s)
		if err != nil {
			t.Fatalf("canonical %q (from %q) does not re-parse: %v", s, raw, err)
		}
		if again.String() != s {
			t.Fatalf("canonical %q (from %q) re-parses to %q", s, raw, again.String())
		}
		o1, o2 := Of(u), Of(again)
		if o1.String() != o2.String() {
			t.Fatalf("origin changed on re-parse: %s vs %s", o1, o2)
		}
		if !o1.IsOpaque() && !o1.Equal(o2) {
			t.Fatalf("origin %s not equal to itself after re-parse", o1)
		}
		base, _ := ParseURL("https://app.example/dir/page")
		if r, err := ResolveReference(base, raw); err == nil {
			if again, err := ParseURL(r.String()); err != nil || again.String() != r.String() {
				t.Fatalf("resolved %q (from %q) is not canonical: %v %v", r, raw, again, err)
			}
		}
	})
}

// FuzzParse checks that Parse never panics, that an accepted origin
// serializes to a string Parse accepts again as an equal origin, and that
// an accepted origin is never opaque.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := Parse(raw)
		if err != nil {
			return
		}
		if o.IsOpaque() {
			t.Fatalf("Parse(%q) returned an opaque origin", raw)
		}
		again, err := Parse(o.String())
		if err != nil {
			t.Fatalf("Parse(%q) = %s, which does not re-parse: %v", raw, o, err)
		}
		if !again.Equal(o) || again != o {
			t.Fatalf("Parse(%q) = %#v, re-parse %#v", raw, o, again)
		}
		if !InList(o, []string{o.String()}) {
			t.Fatalf("%s is not in a list of itself", o)
		}
	})
}
