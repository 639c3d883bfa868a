package host

import (
	"strings"

	"github.com/miniapp-host/miniapp-host/redact"
)

// String is the event as `miniapp-host open -v` and `playground -v` print
// it after "event ": its kind; for a navigation the action; the URL; for
// a navigation the rule that decided it, as "(rule NAME)"; the detail.
// Each part only when it is set:
//
//	navigation block http://127.0.0.1:8610/oauth/authorize?client_id=demo-public&state=3608bca1e44ea6c4 (rule other-authorization-server)
//	load-finished http://127.0.0.1:8701/
//	host-shown blocked
//
// A console message is ConsoleMessage.String. Every URL is redacted as the
// network log keeps URLs (redact.URL): the event's URL, and every URL
// quoted in the detail or in a console message's text (redact.Text),
// so that no line shows the code, state or token an authorization
// response carries. The console message's source and frame were redacted
// when it was read (ParseConsoleMessage).
func (e Event) String() string {
	if e.Kind == EventConsole && e.Console != nil {
		m := *e.Console
		m.Message = redact.Text(m.Message)
		return m.String()
	}
	parts := []string{string(e.Kind)}
	if e.Kind == EventNavigation {
		parts = append(parts, e.Action.String())
	}
	if e.URL != "" {
		parts = append(parts, redact.URL(e.URL))
	}
	if e.Rule != "" {
		parts = append(parts, "(rule "+e.Rule+")")
	}
	if e.Detail != "" {
		parts = append(parts, redact.Text(e.Detail))
	}
	return strings.Join(parts, " ")
}
