package resolver

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/miniapp-host/miniapp-host/origin"
)

// Defaults of Config (docs/resolve.md).
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxBytes     = 256 << 10
	DefaultMaxRedirects = 3
)

// ManifestPath is where a Miniapp serves its manifest, on its own origin
// (docs/service.md §4.3).
const ManifestPath = "/miniapp.webmanifest"

// Config configures a Resolver. Every zero value is usable and documented.
type Config struct {
	// Dashboard is the dashboard's URL ({dashboard_url}, docs/service.md §4.2), such as
	// "https://dashboard.example" or "http://127.0.0.1:8601". A path is kept
	// as a prefix of /api/oauth/clients/. It must be https, or http on
	// loopback unless Insecure. Empty: Resolve fails with a configuration
	// error; offline checks (Check) do not need it.
	Dashboard string

	// HTTPClient sends every request. Nil: a client of the Resolver's own
	// with keep-alive. Its CheckRedirect is replaced, because the Resolver
	// follows redirects itself (same origin only).
	HTTPClient *http.Client

	// Timeout bounds each download (manifest, client configuration) from the
	// first byte sent to the last byte read, redirects included. Zero: 10 s.
	Timeout time.Duration

	// MaxBytes caps each response body; the cap is enforced while reading.
	// Zero: 256 KiB.
	MaxBytes int64

	// MaxRedirects is how many same-origin redirects a download follows.
	// Zero: 3. Negative: none.
	MaxRedirects int

	// Insecure allows http origins (Miniapp and dashboard) on hosts that are
	// not loopback. For tests against lab machines only.
	Insecure bool

	// Now is the clock used for HTTP cache freshness. Nil: time.Now.
	Now func() time.Time
}

// withDefaults returns c with its zero values replaced by the defaults, and
// checks what can be checked without the network.
func (c Config) withDefaults() (Config, *url.URL, error) {
	if c.Timeout < 0 || c.MaxBytes < 0 {
		return c, nil, fmt.Errorf("resolver: Timeout and MaxBytes must not be negative")
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	switch {
	case c.MaxRedirects == 0:
		c.MaxRedirects = DefaultMaxRedirects
	case c.MaxRedirects < 0:
		c.MaxRedirects = 0
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Dashboard == "" {
		return c, nil, nil
	}
	u, err := origin.ParseURL(c.Dashboard)
	if err != nil {
		return c, nil, fmt.Errorf("resolver: dashboard URL: %w", err)
	}
	o := origin.Of(u)
	switch {
	case o.Scheme != "http" && o.Scheme != "https":
		return c, nil, fmt.Errorf("resolver: dashboard URL %q is not http or https", c.Dashboard)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return c, nil, fmt.Errorf("resolver: dashboard URL %q has a user name, query or fragment", c.Dashboard)
	case !o.IsPotentiallyTrustworthy() && !c.Insecure:
		return c, nil, fmt.Errorf("resolver: dashboard %s is plain http on a host that is not loopback; use https (or Insecure for tests)", o)
	}
	return c, u, nil
}
