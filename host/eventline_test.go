package host_test

import (
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/redact"
)

// TestEventString: the -v line of each kind of event, with every rule
// named and every URL redacted, in the URL, in the detail and in a console
// message's text.
func TestEventString(t *testing.T) {
	fp := redact.Fingerprint
	for _, c := range []struct {
		ev   host.Event
		want string
	}{
		{host.Event{Kind: host.EventNavigation, Action: host.Block, Rule: host.RuleOtherServer,
			URL: "http://127.0.0.1:8610/oauth/authorize?client_id=demo-public&state=ST4TE"},
			"navigation block http://127.0.0.1:8610/oauth/authorize?client_id=demo-public&state=withheld (rule other-authorization-server)"},
		{host.Event{Kind: host.EventNavigation, Action: host.Allow, Rule: host.RuleAllowedOrigin, URL: "http://127.0.0.1:8701/callback?code=C0DE&state=ST4TE&iss=x"},
			"navigation allow http://127.0.0.1:8701/callback?code=" + fp("C0DE") + "&state=withheld" + "&iss=x (rule allowed-origin)"},
		// A URL's userinfo password (RFC 3986 section 3.2.1) is withheld.
		{host.Event{Kind: host.EventNavigation, Action: host.Block, Rule: host.RuleOtherServer, URL: "https://qa:PASSW0RD@app.example/cb?x=1"},
			"navigation block https://qa:withheld@app.example/cb?x=1 (rule other-authorization-server)"},
		{host.Event{Kind: host.EventError, Detail: `host: Get "postgres://app:PASSW0RD@db.example/app": EOF`},
			`error host: Get "postgres://app:withheld@db.example/app": EOF`},
		{host.Event{Kind: host.EventLoadFinished, URL: "http://127.0.0.1:8701/"}, "load-finished http://127.0.0.1:8701/"},
		{host.Event{Kind: host.EventHostShown, Detail: "blocked"}, "host-shown blocked"},
		{host.Event{Kind: host.EventCallback, URL: "http://127.0.0.1:8702/callback?code=C0DE", Detail: "302, 1 cookies"},
			"callback http://127.0.0.1:8702/callback?code=" + fp("C0DE") + " 302, 1 cookies"},
		{host.Event{Kind: host.EventError, Detail: `host: callback: Get "http://127.0.0.1:8702/callback?code=C0DE&state=ST4TE": EOF`},
			`error host: callback: Get "http://127.0.0.1:8702/callback?code=` + fp("C0DE") + "&state=withheld" + `": EOF`},
		{host.Event{Kind: host.EventConsole, Console: &host.ConsoleMessage{Type: host.ConsoleCall, Level: host.ConsoleLog,
			Message: "at http://127.0.0.1:8701/callback?code=C0DE", Source: "http://127.0.0.1:8701/app.js:2:16", MainFrame: true}},
			"console log: at http://127.0.0.1:8701/callback?code=" + fp("C0DE") + " (http://127.0.0.1:8701/app.js:2:16)"},
	} {
		got := c.ev.String()
		if got != c.want {
			t.Errorf("%s event:\n got %s\nwant %s", c.ev.Kind, got, c.want)
		}
		for _, secret := range []string{"C0DE", "ST4TE", "PASSW0RD"} {
			if strings.Contains(got, secret) {
				t.Errorf("%q shows %s", got, secret)
			}
		}
	}
}
