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
		// The names of the rule table beyond OAuth's: passwords, API keys,
		// private keys, whatever the separators and case.
		{"https://a.example/login?user=ana&passwd=hunter2&pwd=x&API-Key=k&x_api_key=k2&MINIAPP_HOST_SECRET=s&private_key=pk",
			"https://a.example/login?user=ana&passwd=withheld&pwd=withheld&API-Key=withheld&x_api_key=withheld&MINIAPP_HOST_SECRET=withheld&private_key=withheld"},
		{"accessToken=at&secret=s", "accessToken=" + fp("at") + "&secret=withheld"},
		// A userinfo password (RFC 3986 section 3.2.1) is withheld; the
		// user, and a userinfo without a password, are kept.
		{"https://qa:hunter2@app.example/cb", "https://qa:withheld@app.example/cb"},
		{"postgres://app:p%40ss@db.example:5432/app?sslmode=disable", "postgres://app:withheld@db.example:5432/app?sslmode=disable"},
		{"https://qa:p@ss@app.example/", "https://qa:withheld@app.example/"},
		{"//qa:pw@app.example", "//qa:withheld@app.example"},
		{"https://qa@app.example/ https://app.example:8080/@user", "https://qa@app.example/ https://app.example:8080/@user"},
		{"https://as.example/a?redirect_uri=https%3A%2F%2Fqa%3Apw%40app.example%2Fcb", "https://as.example/a?redirect_uri=https://qa:withheld@app.example/cb"},
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

// TestSecretMember: a JSON object's member is secret by the rule table's
// names, and a JWK's private members only in a JWK (it has "kty").
func TestSecretMember(t *testing.T) {
	jwk := map[string]any{"kty": "EC", "crv": "P-256", "x": "X", "y": "Y", "d": "D"}
	other := map[string]any{"d": "2026-12-01", "k": 3}
	for _, c := range []struct {
		obj            map[string]any
		name           string
		secret, chosen bool
	}{
		{jwk, "d", true, true}, {jwk, "x", false, false}, {jwk, "kty", false, false},
		{map[string]any{"kty": "RSA"}, "qi", true, true}, {map[string]any{"kty": "oct"}, "k", true, true},
		{other, "d", false, false}, {other, "k", false, false},
		{other, "secret", true, true}, {other, "api_key", true, true}, {other, "apiKey", true, true}, {other, "db_password", true, true},
		{other, "access_token", true, false}, {other, "client_secret_expires_at", false, false}, {other, "token_type", false, false},
	} {
		if s, ch := SecretMember(c.obj, c.name), ChosenSecretMember(c.obj, c.name); s != c.secret || ch != c.chosen {
			t.Errorf("member %q of %v: secret %t, withheld %t; want %t, %t", c.name, c.obj, s, ch, c.secret, c.chosen)
		}
	}
}
