package authserver

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/miniapp-host/miniapp-host/origin"
)

// AddressError is a public address of Config that Validate refuses. Field
// is the Config field ("Issuer", "DashboardURL", "SigningURL",
// "InvoicingURL"; a command line shows its own flag's name instead), Value
// is what was given and Rule says, in words, which rule it breaks.
type AddressError struct {
	Field string
	Value string
	Rule  string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("authserver: %s %q: %s", e.Field, e.Value, e.Rule)
}

// Validate reports the first public address of c that Start would refuse,
// as an *AddressError; empty addresses (derived from the listeners) pass.
func (c *Config) Validate() error {
	if c.Issuer != "" {
		if rule := issuerRule(c.Issuer); rule != "" {
			return &AddressError{Field: "Issuer", Value: c.Issuer, Rule: rule}
		}
	}
	for _, f := range []struct{ name, v string }{{"DashboardURL", c.DashboardURL}, {"SigningURL", c.SigningURL},
		{"InvoicingURL", c.InvoicingURL}} {
		if f.v == "" {
			continue
		}
		if _, rule := canonicalOrigin(f.v); rule != "" {
			return &AddressError{Field: f.name, Value: f.v, Rule: rule}
		}
	}
	return c.validateSettings()
}

// issuerPath is what an issuer's path may be: empty, or segments of
// unreserved characters (RFC 3986 §2.3), so that the path needs no
// percent-encoding and the routes below it are the paths clients send.
var issuerPath = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)*$`)

// issuerRule says why raw cannot be the issuer identifier, or "". The
// issuer is an absolute http or https URL without query or fragment (RFC
// 8414 §2, OpenID Connect Discovery 1.0 §3); https is what clients expect
// of a deployment, http serves loopback development. A path is allowed:
// every endpoint, {base_url} included, is the issuer followed by its own
// path, so the issuer does not end in "/". Because clients compare the
// issuer character for character (RFC 8414 §3.3, the iss of every token),
// it must be written canonically: a lower-case host, no default port, no
// "." or ".." segments.
func issuerRule(raw string) string {
	u, err := origin.ParseURL(raw)
	if err != nil {
		var oe *origin.Error
		if errors.As(err, &oe) {
			return "not an absolute http(s) URL: " + oe.Detail
		}
		return "not an absolute http(s) URL"
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("the issuer is an https (or http) URL, not %s (RFC 8414 §2)", u.Scheme)
	case u.User != nil:
		return "the issuer has no user name or password"
	case strings.Contains(raw, "?"):
		return "the issuer has no query (RFC 8414 §2)"
	case strings.Contains(raw, "#"):
		return "the issuer has no fragment (RFC 8414 §2)"
	case strings.HasSuffix(raw, "/"):
		return fmt.Sprintf("the issuer does not end in \"/\": the endpoints and {base_url} follow it with their own paths; write %q",
			strings.TrimRight(raw, "/"))
	case u.Port() == "0":
		return "port 0 is not an address clients can reach"
	case !issuerPath.MatchString(strings.TrimSuffix(u.EscapedPath(), "/")):
		return "the issuer's path holds only letters, digits and \"-._~\" between single slashes"
	}
	if canonical := strings.TrimSuffix(u.String(), "/"); canonical != raw {
		return fmt.Sprintf("clients compare the issuer character for character, so write it as %q (RFC 8414 §3.3)", canonical)
	}
	return ""
}

// canonicalOrigin returns the canonical form of a public origin (a
// lower-case host, no default port, no final "/"), or the rule raw breaks:
// an absolute http or https URL of the form scheme://host[:port], without
// user name, path, query or fragment. The dashboard's and the providers'
// public addresses are origins because their routes sit at fixed paths
// below them ({dashboard_url}/api/..., {signing_base_url} = the origin
// followed by ProviderPath).
func canonicalOrigin(raw string) (string, string) {
	o, err := origin.Parse(raw)
	if err != nil {
		var oe *origin.Error
		if !errors.As(err, &oe) {
			return "", err.Error()
		}
		if oe.Code == origin.CodePath {
			return "", oe.Detail + ": a public origin is scheme://host[:port], the paths below it are fixed"
		}
		return "", oe.Detail
	}
	if o.Port == -1 {
		return "", "port 0 is not an address clients can reach"
	}
	return o.String(), ""
}
