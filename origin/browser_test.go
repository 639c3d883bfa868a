package origin

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// browserCase is one row of testdata/origin/browser.json: what a WHATWG
// browser makes of input resolved against base.
type browserCase struct {
	Src     string `json:"src"`
	Input   string `json:"input"`
	Base    string `json:"base"`
	Href    string `json:"href"`
	Origin  string `json:"origin"`
	Failure bool   `json:"failure"`
	Ours    *struct {
		Href    string `json:"href"`
		Failure bool   `json:"failure"`
		// OriginFailure is set when OfString refuses the URL too: the
		// deviation is in the host, and refusing it is the fail-closed side.
		OriginFailure bool   `json:"originFailure"`
		Why           string `json:"why"`
	} `json:"ours"`
}

func loadBrowserCases(t testing.TB) []browserCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "origin", "browser.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []browserCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 100 {
		t.Fatalf("browser.json has %d cases, want at least 100", len(doc.Cases))
	}
	return doc.Cases
}

// resolveLikeBrowser parses input against base the way the URL constructor
// new URL(input, base) does.
func resolveLikeBrowser(c browserCase) (*url.URL, error) {
	base, err := ParseURL(c.Base)
	if err != nil {
		return nil, err
	}
	return ResolveReference(base, c.Input)
}

// TestBrowserDifferential checks ParseURL, ResolveReference and Of against
// the browser table. Documented deviations must still give the browser's
// origin, so no origin decision ever differs from the webview's.
func TestBrowserDifferential(t *testing.T) {
	for _, c := range loadBrowserCases(t) {
		t.Run(c.Input+" | "+c.Base, func(t *testing.T) {
			wantHref, wantFail := c.Href, c.Failure
			if c.Ours != nil {
				if c.Ours.Why == "" {
					t.Fatal("a deviation must say why")
				}
				wantHref, wantFail = c.Ours.Href, c.Ours.Failure
			}
			u, err := resolveLikeBrowser(c)
			if wantFail {
				if err == nil {
					t.Fatalf("got %q, want failure", u)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %q", err, wantHref)
			}
			if got := u.String(); got != wantHref {
				t.Errorf("href = %q, want %q", got, wantHref)
			}
			if got := Of(u).String(); got != c.Origin {
				t.Errorf("origin = %q, want %q", got, c.Origin)
			}
			// The canonical URL re-parses to itself.
			again, err := ParseURL(u.String())
			if err != nil || again.String() != u.String() {
				t.Errorf("re-parse of %q = %v, %v", u, again, err)
			}
		})
	}
}

// TestParseURLAbsoluteMatchesResolve checks that ParseURL alone agrees with
// resolution against about:blank for every absolute input of the table.
func TestParseURLAbsoluteMatchesResolve(t *testing.T) {
	for _, c := range loadBrowserCases(t) {
		if c.Base != "about:blank" {
			continue
		}
		t.Run(c.Input, func(t *testing.T) {
			u1, err1 := ParseURL(c.Input)
			u2, err2 := resolveLikeBrowser(c)
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("ParseURL err %v, resolve err %v", err1, err2)
			}
			if err1 == nil && u1.String() != u2.String() {
				t.Errorf("ParseURL %q, resolve %q", u1, u2)
			}
		})
	}
}

// TestOfStringDifferential checks OfString against the browser's origin for
// every absolute input of the table, deviations of ParseURL included: the
// origin is computed from the parse, so a URL that url.URL cannot carry
// still gets the origin the webview gives it.
func TestOfStringDifferential(t *testing.T) {
	for _, c := range loadBrowserCases(t) {
		if c.Base != "about:blank" {
			continue
		}
		t.Run(c.Input, func(t *testing.T) {
			o, err := OfString(c.Input)
			if c.Failure || (c.Ours != nil && c.Ours.OriginFailure) {
				if err == nil {
					t.Fatalf("got origin %s, want failure", o)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want origin %s", err, c.Origin)
			}
			if got := o.String(); got != c.Origin {
				t.Errorf("origin = %q, want %q", got, c.Origin)
			}
			if u, err := ParseURL(c.Input); err == nil && Of(u).String() != o.String() {
				t.Errorf("Of(ParseURL) = %s, OfString = %s", Of(u), o)
			}
		})
	}
}
