package redact_test

import (
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/redact"
)

// TestText: every URL quoted in a line of text (an error, a log
// line, a console message) loses its code, state and tokens as the log's
// own entries do, and the rest of the line is kept byte for byte.
func TestText(t *testing.T) {
	fp := redact.Fingerprint
	cases := []struct{ name, in, want string }{
		{"no URL", "event load-finished", "event load-finished"},
		{"URL without secrets", "loading http://127.0.0.1:8701/?page=2#top now", "loading http://127.0.0.1:8701/?page=2#top now"},
		{"bare URL", "http://app.example/cb?code=C0DE&state=ST4TE&iss=x",
			"http://app.example/cb?code=" + fp("C0DE") + "&state=withheld&iss=x"},
		{"Go error", `Get "http://app.example/cb?code=C0DE": EOF`, `Get "http://app.example/cb?code=` + fp("C0DE") + `": EOF`},
		{"slog quoted", `err="Get \"http://app.example/cb?state=ST4TE\": EOF"`, `err="Get \"http://app.example/cb?state=withheld\": EOF"`},
		{"fragment", "at <https://app.example/#access_token=T0KEN&x=1>", "at <https://app.example/#access_token=" + fp("T0KEN") + "&x=1>"},
		{"two URLs and a tab", "a?code=1\thttps://b.example/?id_token=2 end", "a?code=" + fp("1") + "\thttps://b.example/?id_token=" + fp("2") + " end"},
		{"client secret", "post https://s.example/token?client_secret=hunter2", "post https://s.example/token?client_secret=" + redact.Withheld},
		{"multi-line", "TypeError\n  at http://app.example/cb?code=C0DE:1:2", "TypeError\n  at http://app.example/cb?code=" + fp("C0DE:1:2")},
		// JSON quoted in text, whole, cut off or inside slog's quoted string.
		{"JSON members", `sent {"user":"ana","secret":"hunter2","api_key": "hunter2", "n":1}`,
			`sent {"user":"ana","secret":"withheld","api_key": "withheld", "n":1}`},
		{"a token member", `{"access_token":"T0KEN","token_type":"Bearer"}`, `{"access_token":"` + fp("T0KEN") + `","token_type":"Bearer"}`},
		{"cut off", `{"password":"hunter2`, `{"password":"withheld`},
		{"slog quoted", `msg="body {\"client_secret\":\"hunter2\",\"x\":1}"`, `msg="body {\"client_secret\":\"withheld\",\"x\":1}"`},
		{"an object value", `{"private_key":{"kty":"EC","d":"hunter2"},"x":1}`, `{"private_key":"withheld","x":1}`},
		{"a JWK's d", `jwk {"kty":"EC","crv":"P-256","x":"eA","d":"hunter2"}`, `jwk {"kty":"EC","crv":"P-256","x":"eA","d":"withheld"}`},
		{"d elsewhere", `{"d":"2026-12-01"}`, `{"d":"2026-12-01"}`},
		{"a DSN in JSON", `{"dsn":"postgres://app:hunter2@db.example/app"}`, `{"dsn":"postgres://app:withheld@db.example/app"}`},
		{"a DSN in escaped JSON", `{"dsn":"postgres:\/\/app:hunter2@db.example\/app"}`, `{"dsn":"postgres:\/\/app:withheld@db.example\/app"}`},
		{"a bare parameter", "login with passwd=hunter2 now", "login with passwd=withheld now"},
		{"an environment line", "MINIAPP_HOST_SECRET=hunter2", "MINIAPP_HOST_SECRET=withheld"},
		{"a userinfo password", "GET https://qa:hunter2@app.example/ failed", "GET https://qa:withheld@app.example/ failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := redact.Text(c.in)
			if got != c.want {
				t.Errorf("Text(%q)\n = %q\nwant %q", c.in, got, c.want)
			}
			for _, secret := range []string{"C0DE", "ST4TE", "T0KEN", "hunter2"} {
				if strings.Contains(got, secret) {
					t.Errorf("%q shows %s", got, secret)
				}
			}
		})
	}
}

// TestWriter: a log written through it never shows a code.
func TestWriter(t *testing.T) {
	var b strings.Builder
	w := redact.Writer(&b)
	line := "open: loading http://app.example/cb?code=C0DE\n"
	n, err := w.Write([]byte(line))
	if err != nil || n != len(line) {
		t.Fatalf("Write: %d, %v; want %d, nil", n, err, len(line))
	}
	if want := "open: loading http://app.example/cb?code=" + redact.Fingerprint("C0DE") + "\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}
