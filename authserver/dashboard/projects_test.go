package dashboard

import (
	"net/url"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/origin"
)

// TestCheckRedirectURI: absolute https, or http on loopback only; never a
// fragment or userinfo.
func TestCheckRedirectURI(t *testing.T) {
	for _, tc := range []struct {
		uri string
		ok  bool
	}{
		{"https://app.example/cb", true},
		{"https://app.example/cb?x=1", true},
		{"http://127.0.0.1:5000/cb", true},
		{"http://localhost:5000/cb", true},
		{"http://[::1]:5000/cb", true},
		{"http://app.example/cb", false},
		{"http://localhost.evil.example/cb", false},
		{"https://app.example/cb#frag", false},
		{"https://user:pw@app.example/cb", false},
		{"/cb", false},
		{"javascript:alert(1)", false},
		{"com.example.app:/cb", false},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			if err := checkRedirectURI(tc.uri); (err == nil) != tc.ok {
				t.Fatalf("checkRedirectURI = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestCheckRedirectURIParsersAgree: what a browser (the WHATWG parser of
// package origin) and Go's net/url would read differently is refused, with
// an error that says why and how to write it.
func TestCheckRedirectURIParsersAgree(t *testing.T) {
	for _, tc := range []struct{ uri, says string }{
		{`http://127.0.0.1\@evil.example/cb`, "backslash"},
		{`http:/\127.0.0.1/cb`, "backslash"},
		{`https://app.example\cb`, "backslash"},
		{"http://2130706433/cb", `numeric IPv4 form (decimal, hexadecimal, octal or shortened) that a browser reads as 127.0.0.1; write "http://127.0.0.1/cb"`},
		{"http://0x7f.1/cb", "numeric IPv4 form"},
		{"http://0177.0.0.1/cb", "numeric IPv4 form"},
		{"http://127.1/cb", "numeric IPv4 form"},
		{"http://user@127.0.0.1/cb", "userinfo"},
		{"https://app.example@evil.example/cb", "userinfo"},
		{"HTTP://127.0.0.1:19556/cb", `write "http://127.0.0.1:19556/cb"`},
		{"https://APP.example/cb", `reads the host "APP.example" as "app.example"`},
		{"https://exa%6Dple.com/cb", `a browser reads "https://example.com/cb"`},
		{"https://app.example:443/cb", `reads the port "443" as the scheme's default`},
		{"http://127.0.0.1:0080/cb", `reads the port "0080" as the scheme's default, written without a port; write "http://127.0.0.1/cb"`},
		{"http://127.0.0.1:08080/cb", `reads the port "08080" as "8080"`},
		{"https://app.example", `write "https://app.example/"`},
		{"https://app.example/a/../cb", `write "https://app.example/cb"`},
		{"https://app.example/%2e%2e/cb", `write "https://app.example/cb"`},
		{" https://app.example/cb", "no spaces or control characters"},
		{"https://app.example/c\tb", "no spaces or control characters"},
		{"https://app.example/cb?a=<b>", `write "https://app.example/cb?a=%3Cb%3E"`},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			err := checkRedirectURI(tc.uri)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("checkRedirectURI = %v, want an error saying %q", err, tc.says)
			}
		})
	}
}

// FuzzCheckRedirectURI: whatever is accepted has no fragment and is https,
// or http on a loopback host.
func FuzzCheckRedirectURI(f *testing.F) {
	for _, s := range []string{"https://a.example/cb", "http://127.0.0.1/cb", "http://localhost:1/x#y", "HTTP://LOCALHOST/", "https://a\\b",
		"http://2130706433/cb", "http://127.0.0.1:8080/cb?x=%41", "https://xn--80ak6aa92e.com/cb", "https://a.example/%7Ecb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if checkRedirectURI(raw) != nil {
			return
		}
		u, err := origin.ParseURL(raw)
		if err != nil || strings.Contains(raw, "#") {
			t.Fatalf("accepted %q", raw)
		}
		if o := origin.Of(u); o.Scheme != "https" && !(o.Scheme == "http" && o.IsLoopback()) {
			t.Fatalf("accepted %q with origin %s", raw, o)
		}
		// Accepted means canonical, and read alike by both parsers.
		g, err := url.Parse(raw)
		if err != nil || u.String() != raw || g.Scheme != u.Scheme || g.Host != u.Host || g.EscapedPath() != u.EscapedPath() ||
			g.RawQuery != u.RawQuery || g.User != nil || u.User != nil {
			t.Fatalf("accepted %q: a browser reads %q, Go %v (%v)", raw, u, g, err)
		}
		if g.Scheme != strings.ToLower(g.Scheme) || g.Host != strings.ToLower(g.Host) {
			t.Fatalf("accepted %q with upper case in its scheme or host", raw)
		}
	})
}
