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
		{"https://127.0.0.1:9000/jwks.json", false, "is not public"},
		{"https://10.0.0.7/jwks.json", false, "is not public"},
		{"https://[fd00::1]/jwks.json", false, "is not public"},
		{"https://169.254.169.254/latest", false, "is not public"},
		{"https://intranet/jwks.json", false, "is not public"},
		{"https://127.1/jwks.json", false, `write the host as "127.0.0.1"`},
		{"https://0177.0.0.1/jwks.json", false, `write the host as "127.0.0.1"`},
		{"https://2130706433/jwks.json", false, `write the host as "127.0.0.1"`},
		{"https://localhost./jwks.json", false, "loopback name"},
		{"https://keys.localhost/jwks.json", false, "loopback name"},
		{"https://100.100.100.200/latest", false, "shared address space"},
		{"https://198.18.0.1/jwks.json", false, "benchmarking"},
		{"https://192.0.0.170/jwks.json", false, "IETF protocol assignments"},
		{"https://[::ffff:7f00:1]/jwks.json", false, "carries 127.0.0.1: loopback"},
		{"https://[::a9fe:a9fe]/jwks.json", false, "IPv4-compatible"},
		{"https://[64:ff9b::a9fe:a9fe]/jwks.json", false, "carries 169.254.169.254: link-local"},
		{"https://[2002:7f00:1::]/jwks.json", false, "carries 127.0.0.1: loopback"},
		{"https://[fec0::1]/jwks.json", false, "site-local"},
		{"https://printer.local/jwks.json", false, "local network"},
		{"https://KEYS.example/jwks.json", false, ""},
		{"https://keys.example:443/jwks.json", false, `write the host as "keys.example"`},
		{"https://8.8.8.8/jwks.json", false, ""},
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
