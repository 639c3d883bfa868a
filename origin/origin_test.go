package origin

import (
	"errors"
	"net/url"
	"testing"
)

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := ParseURL(raw)
	if err != nil {
		t.Fatalf("ParseURL(%q): %v", raw, err)
	}
	return u
}

// TestSecurityTricks covers every URL trick of docs/security.md ("URL tricks") as the
// resolver meets it: a member of a manifest served at manifestURL, resolved
// and then checked against the manifest's origin and allowed_origins.
func TestSecurityTricks(t *testing.T) {
	const manifestURL = "https://app.example/app/miniapp.webmanifest"
	allowed := []string{"https://app.example", "http://127.0.0.1", "https://example.com", "https://a.example", "https://xn--80ak6aa92e.com"}
	tests := []struct {
		name       string
		ref        string
		wantOrigin string // "" when resolution must fail
		wantPath   string // checked when not empty
		sameOrigin bool   // same origin as the manifest
		inList     bool
	}{
		{"backslash after slash", "/\\evil.example", "https://evil.example", "/", false, false},
		{"two backslashes", "\\\\evil.example", "https://evil.example", "/", false, false},
		{"backslash then slash", "\\/evil.example/app", "https://evil.example", "/app", false, false},
		{"protocol-relative", "//evil.example/app", "https://evil.example", "/app", false, false},
		{"three slashes", "https:///evil.example", "https://evil.example", "", false, false},
		{"userinfo looks like the host", "https://app.example@evil.example/", "https://evil.example", "", false, false},
		{"userinfo with password", "https://app.example:443@evil.example/", "https://evil.example", "", false, false},
		{"decimal IPv4", "http://2130706433/", "http://127.0.0.1", "", false, true},
		{"hex and short IPv4", "http://0x7f.1/", "http://127.0.0.1", "", false, true},
		{"octal IPv4", "http://0177.0.0.1/", "http://127.0.0.1", "", false, true},
		{"percent-encoded host", "https://exa%6Dple.com", "https://example.com", "", false, true},
		{"case and default port", "HTTPS://A.EXAMPLE:443", "https://a.example", "", false, true},
		{"case and default port of the manifest", "HTTPS://APP.EXAMPLE:443/start", "https://app.example", "/start", true, true},
		{"trailing dot is another origin", "https://app.example./start", "https://app.example.", "", false, false},
		{"IDN homograph", "https://аррӏе.com", "https://xn--80ak6aa92e.com", "", false, true},
		{"percent-encoded dot segments", "https://app.example/app/%2e%2e/admin", "https://app.example", "/admin", true, true},
		{"mixed-case dot segment", "/app/%2E./admin", "https://app.example", "/admin", true, true},
		{"relative dot segments", "../../admin", "https://app.example", "/admin", true, true},
		{"javascript", "javascript:alert(1)", "null", "", false, false},
		{"javascript with tab", "java\tscript:alert(1)", "null", "", false, false},
		{"javascript with newline", "java\nscript:alert(1)", "null", "", false, false},
		{"data", "data:text/html,<script>alert(1)</script>", "null", "", false, false},
		{"blob of another origin", "blob:https://evil.example/x", "https://evil.example", "", false, false},
		{"blob of the manifest origin", "blob:https://app.example/x", "https://app.example", "", true, true},
		{"file", "file:///etc/passwd", "null", "", false, false},
		{"about:blank", "about:blank", "null", "", false, false},
		{"intent", "intent://app.example#Intent;scheme=https;end", "null", "", false, false},
		{"host prefix", "https://app.example.evil/", "https://app.example.evil", "", false, false},
		{"host prefix, other TLD", "https://app.example.community/", "https://app.example.community", "", false, false},
		{"path prefix stays same origin", "/app-evil/", "https://app.example", "/app-evil/", true, true},
		{"other scheme", "http://app.example/", "http://app.example", "", false, false},
		{"other port", "https://app.example:8443/", "https://app.example:8443", "", false, false},
		{"tab inside host", "https://app.exa\tmple/", "https://app.example", "", true, true},
		{"space in host", "https://app example/", "", "", false, false},
		{"bad IPv4", "http://127.0.0.256/", "", "", false, false},
	}
	base := mustURL(t, manifestURL)
	manifestOrigin := Of(base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := ResolveReference(base, tt.ref)
			if tt.wantOrigin == "" {
				if err == nil {
					t.Fatalf("ResolveReference(%q) = %q, want an error", tt.ref, u)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveReference(%q): %v", tt.ref, err)
			}
			o := Of(u)
			if got := o.String(); got != tt.wantOrigin {
				t.Errorf("origin = %q, want %q", got, tt.wantOrigin)
			}
			if tt.wantPath != "" && u.Path != tt.wantPath {
				t.Errorf("path = %q, want %q", u.Path, tt.wantPath)
			}
			if got := o.Equal(manifestOrigin); got != tt.sameOrigin {
				t.Errorf("same origin as manifest = %v, want %v", got, tt.sameOrigin)
			}
			if got := InList(o, allowed); got != tt.inList {
				t.Errorf("InList = %v, want %v", got, tt.inList)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		raw      string
		want     string
		wantCode string
	}{
		{"https://a.example", "https://a.example", ""},
		{"https://a.example/", "https://a.example", ""},
		{"HTTPS://A.EXAMPLE:443", "https://a.example", ""},
		{"https://a.example:8443", "https://a.example:8443", ""},
		{"https://a.example.", "https://a.example.", ""},
		{"http://localhost:8080", "http://localhost:8080", ""},
		{"http://[::1]:8080", "http://[::1]:8080", ""},
		{"http://2130706433", "http://127.0.0.1", ""},
		{"https://exa%6Dple.com", "https://example.com", ""},
		{"https://аррӏе.com", "https://xn--80ak6aa92e.com", ""},
		{"https://a.example/app", "", CodePath},
		{"https://a.example//", "", CodePath},
		{"https://a.example/.", "", CodePath},
		{"https://a.example?", "", CodeQuery},
		{"https://a.example/?x=1", "", CodeQuery},
		{"https://a.example#", "", CodeFragment},
		{"https://a.example#top", "", CodeFragment},
		{"https://user@a.example", "", CodeUserinfo},
		{"https://a.example@evil.example", "", CodeUserinfo},
		{"https://:@a.example", "", CodeUserinfo},
		{"https:a.example", "", CodeForm},
		{"https:/a.example", "", CodeForm},
		{"https:///a.example", "", CodeForm},
		{"https:\\\\a.example", "", CodeForm},
		{" https://a.example", "", CodeWhitespace},
		{"https://a.exa\tmple", "", CodeWhitespace},
		{"https://a.example\n", "", CodeWhitespace},
		{"ftp://a.example", "", CodeScheme},
		{"wss://a.example", "", CodeScheme},
		{"javascript:alert(1)", "", CodeScheme},
		{"null", "", CodeNotAbsolute},
		{"a.example", "", CodeNotAbsolute},
		{"*.example", "", CodeNotAbsolute},
		{"https://*.example", "", CodeWildcard},
		{"https://a.*", "", CodeWildcard},
		{"https://", "", CodeHost},
		{"https://a.example:99999", "", CodePort},
		{"https://a.example:x", "", CodePort},
		{"https://1.2.3.4.5", "", CodeIPv4},
		{"https://[::1", "", CodeIPv6},
		{"https://[fe80::1%25eth0]", "", CodeIPv6},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			o, err := Parse(tt.raw)
			if tt.wantCode != "" {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("Parse(%q) = %v, %v; want error %s", tt.raw, o, err, tt.wantCode)
				}
				if e.Code != tt.wantCode {
					t.Errorf("code = %s, want %s (%v)", e.Code, tt.wantCode, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.raw, err)
			}
			if got := o.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if again := MustParse(o.String()); !again.Equal(o) {
				t.Errorf("Parse(String()) = %v, not equal to %v", again, o)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b Origin
		want bool
	}{
		{MustParse("https://a.example"), MustParse("https://a.example:443"), true},
		{MustParse("https://a.example"), Origin{Scheme: "https", Host: "a.example", Port: 443}, true},
		{MustParse("https://a.example"), MustParse("http://a.example"), false},
		{MustParse("https://a.example"), MustParse("https://a.example:444"), false},
		{MustParse("https://a.example"), MustParse("https://a.example."), false},
		{MustParse("https://a.example"), MustParse("https://b.example"), false},
		{mustOrigin(t, "http://f:0/"), mustOrigin(t, "http://f/"), false},
		{mustOrigin(t, "http://f:0/"), mustOrigin(t, "http://f:00/"), true},
		{Origin{}, Origin{}, false},
		{mustOrigin(t, "data:,x"), mustOrigin(t, "data:,x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.a.String()+" vs "+tt.b.String(), func(t *testing.T) {
			if got := tt.a.Equal(tt.b); got != tt.want {
				t.Errorf("Equal = %v, want %v", got, tt.want)
			}
			if got := tt.b.Equal(tt.a); got != tt.want {
				t.Errorf("Equal is not symmetric")
			}
		})
	}
}

func mustOrigin(t *testing.T, raw string) Origin {
	t.Helper()
	o, err := OfString(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestInList(t *testing.T) {
	list := []string{"https://app.example", "http://localhost:8080/", "https://*.wild.example", "https://path.example/app", "app2.example", "not a url", ""}
	tests := []struct {
		origin string
		want   bool
	}{
		{"https://app.example", true},
		{"HTTPS://APP.EXAMPLE:443", true},
		{"http://localhost:8080", true},
		{"http://localhost", false},
		{"http://localhost:8081", false},
		{"https://app.example.evil", false},
		{"https://app.example.community", false},
		{"https://evil.app.example", false},
		{"http://app.example", false},
		{"https://app.example:8443", false},
		{"https://app.example.", false},
		{"https://x.wild.example", false},
		{"https://path.example", false},
		{"https://app2.example", false},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			if got := InList(MustParse(tt.origin), list); got != tt.want {
				t.Errorf("InList(%s) = %v, want %v", tt.origin, got, tt.want)
			}
		})
	}
	t.Run("opaque", func(t *testing.T) {
		if InList(Origin{}, []string{"null", ""}) {
			t.Error("an opaque origin is in no list")
		}
	})
}

func TestLoopbackAndTrustworthy(t *testing.T) {
	tests := []struct {
		url                  string
		loopback, trustworth bool
	}{
		{"http://localhost:8080/", true, true},
		{"http://LOCALHOST/", true, true},
		{"http://127.0.0.1/", true, true},
		{"http://127.255.0.9:9/", true, true},
		{"http://2130706433/", true, true},
		{"http://[::1]/", true, true},
		{"https://a.example/", false, true},
		{"wss://a.example/", false, true},
		{"http://a.example/", false, false},
		{"http://localhost./", false, false},
		{"http://a.localhost/", false, false},
		{"http://128.0.0.1/", false, false},
		{"http://[::ffff:127.0.0.1]/", false, false},
		{"http://0.0.0.0/", false, false},
		{"ftp://127.0.0.1/", true, false},
		{"data:,x", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			o := mustOrigin(t, tt.url)
			if got := o.IsLoopback(); got != tt.loopback {
				t.Errorf("IsLoopback = %v, want %v", got, tt.loopback)
			}
			if got := o.IsPotentiallyTrustworthy(); got != tt.trustworth {
				t.Errorf("IsPotentiallyTrustworthy = %v, want %v", got, tt.trustworth)
			}
		})
	}
}

func TestOfNonCanonicalURL(t *testing.T) {
	// A url.URL built by net/url still gets the browser's origin.
	tests := []struct{ raw, want string }{
		{"HTTPS://A.EXAMPLE:443/x", "https://a.example"},
		{"http://0x7f.1/", "http://127.0.0.1"},
		{"https://XN--80AK6AA92E.com/", "https://xn--80ak6aa92e.com"},
		{"http://0177.0.0.1:80/", "http://127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			u, err := url.Parse(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := Of(u).String(); got != tt.want {
				t.Errorf("Of = %q, want %q", got, tt.want)
			}
		})
	}
	if !Of(nil).IsOpaque() {
		t.Error("Of(nil) must be opaque")
	}
	if !SameOrigin(mustURL(t, "https://a.example/x"), mustURL(t, "HTTPS://a.example:443/y")) {
		t.Error("SameOrigin of two URLs on https://a.example")
	}
}

func TestResolveReferenceErrors(t *testing.T) {
	tests := []struct {
		base, ref, code string
	}{
		{"about:blank", "/x", CodeRelative},
		{"data:,x", "x", CodeRelative},
		{"https://a.example/", "https://a.example/%zz", CodePercent},
		{"https://a.example/", "//", CodeHost},
	}
	for _, tt := range tests {
		t.Run(tt.base+" "+tt.ref, func(t *testing.T) {
			_, err := ResolveReference(mustURL(t, tt.base), tt.ref)
			var e *Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("err = %v, want code %s", err, tt.code)
			}
			if e.Input != tt.ref {
				t.Errorf("error names input %q, want %q", e.Input, tt.ref)
			}
		})
	}
	if _, err := ResolveReference(nil, "x"); err == nil {
		t.Error("nil base must fail")
	}
}

// TestOfStringStrayPercent covers URLs a browser accepts but Go's url.URL
// cannot carry: OfString must still give the browser's origin, or a page at
// such a URL is refused by every bridge call. ParseURL refuses them, as the
// package documentation says.
func TestOfStringStrayPercent(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"https://app.example/#/sale/50%", "https://app.example"},
		{"https://app.example/#/sale/50%/", "https://app.example"},
		{"https://app.example/#%zz", "https://app.example"},
		{"https://us%er@app.example/", "https://app.example"},
		{"https://user:pa%ss@app.example:8443/", "https://app.example:8443"},
		{"https://app.example/50%", "https://app.example"},
		{"https://app.example/foo/%2e%2", "https://app.example"},
		{"https://app.example/a%?q=%#%", "https://app.example"},
		{"HTTPS://APP.EXAMPLE:443/%#%", "https://app.example"},
		{"blob:https://app.example/50%", "https://app.example"},
		{"blob:https://evil.example/#50%", "https://evil.example"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			o, err := OfString(tt.raw)
			if err != nil {
				t.Fatalf("OfString: %v", err)
			}
			if o.String() != tt.want {
				t.Errorf("origin = %s, want %s", o, tt.want)
			}
			if want := MustParse(tt.want); !o.Equal(want) || !InList(o, []string{tt.want}) {
				t.Errorf("origin %#v is not equal to %#v", o, want)
			}
			if u, err := ParseURL(tt.raw); err == nil {
				// blob: keeps its path opaque, which url.URL carries.
				if got := Of(u); !got.Equal(o) {
					t.Errorf("Of(ParseURL) = %s, OfString = %s", got, o)
				}
			} else if e := (*Error)(nil); !errors.As(err, &e) || e.Code != CodePercent {
				t.Errorf("ParseURL error %v, want code %s", err, CodePercent)
			}
		})
	}
	// A stray % does not make an opaque origin a tuple one, nor a bad host
	// a good one.
	for _, raw := range []string{"data:,50%", "javascript:50%", "about:blank#50%"} {
		if o, err := OfString(raw); err != nil || !o.IsOpaque() {
			t.Errorf("OfString(%q) = %s, %v; want an opaque origin", raw, o, err)
		}
	}
	for _, raw := range []string{"https://exa%zzmple/#50%", "https://xn--.example/#50%", "/#50%"} {
		if o, err := OfString(raw); err == nil {
			t.Errorf("OfString(%q) = %s, want an error", raw, o)
		}
	}
}

func TestSameServer(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:8600", "ws://127.0.0.1:8600", true},
		{"http://127.0.0.1:8600", "http://localhost:8600", true},
		{"http://127.0.0.1:8600", "ws://[::1]:8600", true},
		{"http://127.0.0.1:8600", "http://localhost.:8600", true},
		{"https://auth.example", "wss://auth.example", true},
		{"https://auth.example", "https://auth.example.", true},
		{"https://auth.example", "wss://auth.example:443", true},
		{"http://127.0.0.1:8600", "http://127.0.0.1:8601", false},
		{"http://127.0.0.1:8600", "https://127.0.0.1:8600", false},
		{"http://127.0.0.1:8600", "wss://127.0.0.1:8600", false},
		{"https://auth.example", "https://auth.example.evil", false},
		{"https://auth.example", "https://localhost", false},
		{"https://auth.example", "http://auth.example", false},
	}
	for _, c := range cases {
		a, err := OfString(c.a + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, err := OfString(c.b + "/")
		if err != nil {
			t.Fatal(err)
		}
		if got := SameServer(a, b); got != c.want {
			t.Errorf("SameServer(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := SameServer(b, a); got != c.want {
			t.Errorf("SameServer(%s, %s) = %v, want %v (not symmetric)", c.b, c.a, got, c.want)
		}
	}
}

// TestCheckLoopbackAddr: only loopback listen addresses pass.
func TestCheckLoopbackAddr(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "127.9.9.9:80": true, "[::1]:8080": true, "localhost:8700": true,
		"0.0.0.0:8700": false, "192.168.1.2:80": false, "example.com:80": false, "127.0.0.1": false, "": false} {
		if err := CheckLoopbackAddr(addr); (err == nil) != ok {
			t.Errorf("CheckLoopbackAddr(%q) = %v, want ok %v", addr, err, ok)
		}
	}
}
