package dashboard

import (
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

// FuzzCheckRedirectURI: whatever is accepted has no fragment and is https,
// or http on a loopback host.
func FuzzCheckRedirectURI(f *testing.F) {
	for _, s := range []string{"https://a.example/cb", "http://127.0.0.1/cb", "http://localhost:1/x#y", "HTTP://LOCALHOST/", "https://a\\b"} {
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
	})
}
