package host

import (
	"html/template"
	"strings"

	"github.com/miniapp-host/miniapp-host/assets"
)

// webdriverRejection is the rejection screen as a document of the
// Miniapp's view, for a window a WebDriver session drives
// (Options.WebDriver): a session sees that view only, never the host's
// (docs/webdriver.md, "A rejected Miniapp"). html/template escapes the
// title and text, which carry what a manifest's author wrote.
var webdriverRejection = template.Must(template.ParseFS(assets.FS, "host/webdriver-rejection.html"))

// webdriverRejectionPage renders the rejection screen for the Miniapp's
// view.
func webdriverRejectionPage(title, text string) (string, error) {
	var b strings.Builder
	err := webdriverRejection.Execute(&b, struct{ Title, Text string }{title, text})
	return b.String(), err
}
