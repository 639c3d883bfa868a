package redact

import "testing"

// TestURL: the value of every secret parameter of a URL, in whatever
// spelling, is a fingerprint (what the server issued) or withheld (what a
// client or a person chose); everything else is kept byte for byte.
func TestURL(t *testing.T) {
	fp := Fingerprint
	tests := []struct{ in, want string }{
		{"https://app.example/", "https://app.example/"},
		{"https://app.example/path?x=1&y=2#top", "https://app.example/path?x=1&y=2#top"},
		{"https://app.example/cb?code=abc", "https://app.example/cb?code=" + fp("abc")},
		// The server's codes and tokens get a fingerprint; what a client made
		// up (state, verifier) or a person chose (secret, password) is
		// withheld, since a guess could be checked against a fingerprint.
		{"https://app.example/cb?state=s1&code=abc&iss=x", "https://app.example/cb?state=withheld&code=" + fp("abc") + "&iss=x"},
		// Values are fingerprinted as the server reads them, percent-decoded.
		{"https://app.example/cb?code=a%2Bb", "https://app.example/cb?code=" + fp("a+b")},
		{"https://app.example/cb?code=a+b", "https://app.example/cb?code=" + fp("a b")},
		{"https://app.example/cb?code=%zz", "https://app.example/cb?code=" + fp("%zz")},
		// Names as a server might read them.
		{"https://app.example/cb?%63ode=abc", "https://app.example/cb?%63ode=" + fp("abc")},
		{"https://app.example/cb?CODE=abc", "https://app.example/cb?CODE=" + fp("abc")},
		{"https://app.example/cb?a=1;code=abc", "https://app.example/cb?a=1;code=" + fp("abc")},
		// Every name of the list, in the fragment too (implicit flow).
		{"https://app.example/cb#access_token=at&token_type=Bearer&id_token=it&state=s",
			"https://app.example/cb#access_token=" + fp("at") + "&token_type=Bearer&id_token=" + fp("it") + "&state=withheld"},
		{"https://as.example/token?refresh_token=rt&client_secret=cs&code_verifier=cv",
			"https://as.example/token?refresh_token=" + fp("rt") + "&client_secret=withheld&code_verifier=withheld"},
		{"https://as.example/t?password=hunter2&client_assertion=eyJ&assertion=x&token=t&DPoP=p",
			"https://as.example/t?password=withheld&client_assertion=withheld&assertion=withheld&token=" + fp("t") + "&DPoP=withheld"},
		// A single-page app's fragment route.
		{"https://app.example/#/cb?code=abc&state=s", "https://app.example/#/cb?code=" + fp("abc") + "&state=withheld"},
		// Whatever the spelling of the URL: a scheme in any case, spaces
		// around it, a relative URL, a header's syntax, a bare parameter.
		{"HTTP://127.0.0.1:19556/cb?code=abc&state=s", "HTTP://127.0.0.1:19556/cb?code=" + fp("abc") + "&state=withheld"},
		{"  https://app.example/cb?code=abc ", "  https://app.example/cb?code=" + fp("abc ")},
		{"/cb?code=abc", "/cb?code=" + fp("abc")},
		{"cb?code=abc", "cb?code=" + fp("abc")},
		{"0; url=/cb?code=abc", "0; url=/cb?code=" + fp("abc")},
		{`</cb?code=abc>; rel="next"`, "</cb?code=" + fp("abc>") + `; rel="next"`},
		{"code=abc&state=s", "code=" + fp("abc") + "&state=withheld"},
		{"https://app.example/cb?code[]=abc", "https://app.example/cb?code[]=" + fp("abc")},
		// A URL percent-encoded in another's parameter: decoded, redacted.
		{"https://as.example/a?redirect_uri=https%3A%2F%2Fapp.example%2Fcb%3Fcode%3Dabc",
			"https://as.example/a?redirect_uri=https://app.example/cb?code=" + fp("abc")},
		{"https://as.example/a?r=https%253A%252F%252Fa.example%252Fcb%253Fstate%253Ds",
			"https://as.example/a?r=https://a.example/cb?state=withheld"},
		// Only the values of those names; an empty value stays empty.
		{"https://app.example/cb?code=&codes=abc&xcode=abc&code", "https://app.example/cb?code=&codes=abc&xcode=abc&code"},
		// A value that contains "=" or "?" is one value; a name hidden
		// in another parameter's value is found.
		{"https://app.example/cb?code=a=b&x=1", "https://app.example/cb?code=" + fp("a=b") + "&x=1"},
		{"https://app.example/cb?code=a?b&x=1", "https://app.example/cb?code=" + fp("a?b") + "&x=1"},
		{"https://app.example/cb?x=1?code=abc", "https://app.example/cb?x=1?code=" + fp("abc")},
		{"https://app.example/cb?x=1#code=abc", "https://app.example/cb?x=1#code=" + fp("abc")},
		// Not a URL at all: still redacted, never an error.
		{"::?code=abc", "::?code=" + fp("abc")},
		{"", ""},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("redact.URL(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestSource: a console message's url:line:col keeps its line and column,
// and the code in the URL's last parameter does not take them into its
// fingerprint.
func TestSource(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "",
		"https://app.example/a.js:3:9":         "https://app.example/a.js:3:9",
		"https://app.example/cb?code=abc:12:5": "https://app.example/cb?code=" + Fingerprint("abc") + ":12:5",
		"https://app.example/a.js?code=x":      "https://app.example/a.js?code=" + Fingerprint("x"),
		"https://app.example/a.js?code=x:3":    "https://app.example/a.js?code=" + Fingerprint("x:3"),
	} {
		if got := Source(in); got != want {
			t.Errorf("Source(%q) = %q, want %q", in, got, want)
		}
	}
}
