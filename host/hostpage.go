package host

import (
	"fmt"
	"strings"

	"github.com/miniapp-host/miniapp-host/assets"
)

// hostPage is the host view's one document: assets/host/consent.html with
// its stylesheet and script inlined, because a page loaded with load_html
// and no base URI has no origin to load them from.
func hostPage() (string, error) {
	read := func(name string) (string, error) {
		b, err := assets.FS.ReadFile("host/" + name)
		if err != nil {
			return "", fmt.Errorf("host: page: %w", err)
		}
		return string(b), nil
	}
	html, err := read("consent.html")
	if err != nil {
		return "", err
	}
	css, err := read("consent.css")
	if err != nil {
		return "", err
	}
	js, err := read("consent.js")
	if err != nil {
		return "", err
	}
	if strings.Count(html, "/*CSS*/") != 1 || strings.Count(html, "/*JS*/") != 1 {
		return "", fmt.Errorf("host: page: consent.html needs one /*CSS*/ and one /*JS*/ placeholder")
	}
	// "</" cannot end the inlined blocks early: the assets are ours, and
	// this check keeps it so.
	if strings.Contains(css, "</") || strings.Contains(js, "</script") {
		return "", fmt.Errorf("host: page: an inlined asset contains a closing tag")
	}
	html = strings.Replace(html, "/*CSS*/", css, 1)
	return strings.Replace(html, "/*JS*/", js, 1), nil
}
