package oauth

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/miniapp-host/miniapp-host/redact"
)

// TestErrorDescription: each character RFC 6749 §5.2 forbids becomes its
// nearest allowed spelling, and a conforming message is left as it is.
func TestErrorDescription(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"the token has expired", "the token has expired"},
		{"plain is refused (RFC 9700 §2.1.1)", "plain is refused (RFC 9700 section 2.1.1)"},
		{"docs/service.md § 2.2", "docs/service.md section 2.2"},
		{`the Authorization header is not "Bearer" followed by a JWT`, "the Authorization header is not 'Bearer' followed by a JWT"},
		{`a\b`, "a/b"},
		{"Servicios Pacífico Ltda., Benjamín, ñandú", "Servicios Pacifico Ltda., Benjamin, nandu"},
		{"line\nbreak\ttab", "line break tab"},
		{"“quoted” – 1 … 2 → 3 ≤ 4 ≥ 5 × 6", "'quoted' - 1 ... 2 -> 3 <= 4 >= 5 x 6"},
		{"emoji 🙂 and 漢字", "emoji ? and ??"},
		{"bad utf-8 \xff", "bad utf-8 ?"},
		{"", ""},
	} {
		if got := errorDescription(tc.in); got != tc.want {
			t.Errorf("errorDescription(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestErrorConstructorsConform: every description the package's
// constructors are given passes through errorDescription on the way out,
// for every error code of the status table.
func TestErrorConstructorsConform(t *testing.T) {
	codes := []string{codeInvalidRequest, codeInvalidClient, codeInvalidGrant, codeUnauthorizedClient, codeUnsupportedGrantType,
		codeUnsupportedResponseType, codeInvalidScope, codeAccessDenied, codeServerError, codeTemporarilyUnavailable,
		codeInvalidTarget, codeInvalidAuthorizationDetails, codeConsentRequired, codeLoginRequired, codeRequestNotSupported,
		codeRequestURINotSupported, codeInvalidToken, codeInsufficientScope, codeUnsupportedTokenType, codeUnknownRequest,
		codeMissingToken, codeMalformedToken, codeExpiredToken, codeRevokedToken, codeMissingClientCredentials,
		codeInvalidClientCredentials, codeClientNotAllowed, codeInsufficientAuthorization, codeAmountOutsideLimits,
		codeInvalidCharge, codeUnknownConsent}
	for _, code := range codes {
		for _, desc := range []string{`"§" \ é`, "RFC 6749 §5.2", "\x00\x7f\u2028"} {
			if d := oauthErr(code, desc).describe(); !conformingDescription(d) {
				t.Errorf("%s: %q described as %q", code, desc, d)
			}
		}
	}
}

func conformingDescription(d string) bool {
	for i := 0; i < len(d); i++ {
		if !descriptionChar(d[i]) {
			return false
		}
	}
	return true
}

// FuzzErrorDescription: whatever the message, the description conforms to
// RFC 6749 §5.2, a conforming message is unchanged, and the result is
// stable (a second pass changes nothing).
func FuzzErrorDescription(f *testing.F) {
	for _, s := range []string{"ok", "RFC 6749 §3.1", `"q" \`, "Pacífico", "\xff\xfe", "a\u0301", "§", "§ §"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := errorDescription(in)
		if !conformingDescription(out) {
			t.Fatalf("errorDescription(%q) = %q does not conform", in, out)
		}
		if conformingDescription(in) && out != in {
			t.Fatalf("a conforming %q became %q", in, out)
		}
		if errorDescription(out) != out {
			t.Fatalf("not stable: %q -> %q -> %q", in, out, errorDescription(out))
		}
		// Every visible character is kept or replaced, never dropped (only
		// combining accents are): the text does not vanish.
		visible := strings.ContainsFunc(in, func(r rune) bool { return r > 0x20 && r < utf8.RuneSelf && r != 0x7f })
		if visible && out == "" {
			t.Fatalf("%q lost all its text", in)
		}
	})
}

// TestEcho: a value a refusal quotes is redacted by the redact package's
// rule, loses its control characters, is cut at maxEcho bytes on a
// character boundary, and fits RFC 6749 §5.2 once errorDescription has
// written it.
func TestEcho(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://app.example/cb", "'https://app.example/cb'"},
		{"", "'' (empty)"},
		{"a\x00b\x1bc\u0085d", "'abcd'"},
		{"https://app.example/cb?code=abc&state=xyz", "'https://app.example/cb?code=" + redact.Fingerprint("abc") + "&state=" + redact.Withheld + "'"},
		{"https://qa:hunter2hunter2@app.example/cb", "'https://qa:" + redact.Withheld + "@app.example/cb'"},
		{strings.Repeat("é", 150), "'" + strings.Repeat("é", 100) + "...'"},
	} {
		if got := echo(tc.in); got != tc.want {
			t.Errorf("echo(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if d := errorDescription(echo(tc.in)); !strings.Contains(tc.want, "é") && d != tc.want {
			t.Errorf("errorDescription(echo(%q)) = %q, want it unchanged", tc.in, d)
		}
	}
	if got := echoParam("state", "s3cr3t"); got != redact.Withheld {
		t.Errorf("echoParam(state) = %q, want %q", got, redact.Withheld)
	}
	vs := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	if got, want := echoList(vs), "'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', and 2 more"; got != want {
		t.Errorf("echoList = %q, want %q", got, want)
	}
}
