package dashboard

import (
	"strings"
	"testing"
)

// TestCheckJWKSURI: a jwks_uri is https on a public host; loopback and
// private hosts (and http on loopback) only in development (local); each
// refusal names the rule and the fix.
func TestCheckJWKSURI(t *testing.T) {
	for _, tc := range []struct {
		uri   string
		local bool
		want  string // "" accepted
	}{
		{"https://keys.example/jwks.json", false, ""},
		{"https://keys.example/jwks.json", true, ""},
		{"http://127.0.0.1:9000/jwks.json", true, ""},
		{"https://127.0.0.1:9000/jwks.json", true, ""},
		{"http://127.0.0.1:9000/jwks.json", false, "fetches loopback and private hosts only in development"},
		{"https://127.0.0.1:9000/jwks.json", false, "loopback, private or a single label"},
		{"https://10.0.0.7/jwks.json", false, "loopback, private or a single label"},
		{"https://[fd00::1]/jwks.json", false, "loopback, private or a single label"},
		{"https://169.254.169.254/latest", false, "loopback, private or a single label"},
		{"https://intranet/jwks.json", false, "loopback, private or a single label"},
		{"http://keys.example/jwks.json", true, "plain http"},
		{"ftp://keys.example/jwks.json", false, "use https"},
		{"https://user:pw@keys.example/jwks.json", false, "no user name or password"},
		{"https://keys.example/jwks.json#k", false, "no fragment"},
		{"/jwks.json", false, "not an absolute URL"},
		{"", false, "is empty"},
		{"https://keys.example/" + strings.Repeat("a", maxJWKSURI), false, "at most 2048"},
	} {
		err := checkJWKSURI(tc.uri, tc.local)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q (local %v): refused: %v", tc.uri, tc.local, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Message, tc.want) || err.Field != "/jwks_uri"):
			t.Errorf("%q (local %v): want a refusal at /jwks_uri containing %q, got %v", tc.uri, tc.local, tc.want, err)
		}
	}
}
