package host

import (
	"errors"
	"net/url"
	"testing"

	"github.com/miniapp-host/miniapp-host/bridge"
)

// TestReadResponseRedirectURI: an authorization response is read only at
// the registered redirect_uri, compared exactly once both URLs are in the
// canonical form a browser loads.
func TestReadResponseRedirectURI(t *testing.T) {
	h := &bridgeHost{cfg: BridgeConfig{RedirectURI: "http://127.0.0.1:8701/cb", Issuer: "http://127.0.0.1:8600"}}
	const q = "?code=abc&state=s1&iss=http%3A%2F%2F127.0.0.1%3A8600"
	cases := []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8701/cb" + q, true},
		// The same URL once canonical: a browser loads /cb for these.
		{"http://127.0.0.1:8701/cb/../cb" + q, true},
		{"http://127.0.0.1:8701/x/%2e%2e/cb" + q, true},
		{"HTTP://127.0.0.1:8701/cb" + q, true},
		{"http://127.0.0.1:8701/cb#frag" + q, false}, // the query is in the fragment
		// Other resources: a cleaned or case-folded comparison would take them.
		{"http://127.0.0.1:8701/cb/" + q, false},
		{"http://127.0.0.1:8701/CB" + q, false},
		{"http://127.0.0.1:8701/cb%2F" + q, false},
		{"http://127.0.0.1:8701/cb/./" + q, false},
		{"http://127.0.0.1:8701/%63b" + q, false},
		{"http://127.0.0.1:8701/cbx" + q, false},
		{"http://127.0.0.1:8701/cb/../admin" + q, false},
		// Other origins.
		{"http://localhost:8701/cb" + q, false},
		{"http://127.0.0.1:8702/cb" + q, false},
		{"https://127.0.0.1:8701/cb" + q, false},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			r, err := url.Parse(c.url)
			if err != nil {
				t.Fatal(err)
			}
			code, err := h.readResponse(r, "s1")
			if c.ok && (err != nil || code != "abc") {
				t.Errorf("readResponse = %q, %v; want the code", code, err)
			}
			if !c.ok && err == nil {
				t.Errorf("readResponse = %q; want a refusal", code)
			}
		})
	}
	// A denial at the right place is the bridge's access_denied.
	r, _ := url.Parse("http://127.0.0.1:8701/cb?error=access_denied&state=s1&iss=http%3A%2F%2F127.0.0.1%3A8600")
	var be *bridge.Error
	if _, err := h.readResponse(r, "s1"); !errors.As(err, &be) || be.Code != bridge.CodeAccessDenied {
		t.Errorf("denial: %v, want access_denied", err)
	}
}
