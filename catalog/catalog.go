package catalog

import (
	"fmt"
	"strings"

	"github.com/miniapp-host/miniapp-host/origin"
)

// Endpoints are the addresses that docs/service.md writes as placeholders
// ({base_url}, {signing_base_url}, {invoicing_base_url}); the origins
// ({signing_origin}, {invoicing_origin}) are derived from them.
type Endpoints struct {
	// BaseURL is the service's own resource address ({base_url}), the value
	// of `resource` in a scope request and of `locations` in banking details.
	BaseURL string
	// SigningBaseURL is the signing provider's resource address.
	SigningBaseURL string
	// InvoicingBaseURL is the invoicing provider's resource address.
	InvoicingBaseURL string
}

// Validate reports the first endpoint that is not an absolute http(s) URL
// without query, fragment or userinfo.
func (e Endpoints) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"base_url", e.BaseURL},
		{"signing_base_url", e.SigningBaseURL},
		{"invoicing_base_url", e.InvoicingBaseURL},
	} {
		if _, err := originOf(f.v); err != nil {
			return fmt.Errorf("catalog: endpoint %s: %w", f.name, err)
		}
	}
	return nil
}

// SigningOrigin is {signing_origin}: the origin of SigningBaseURL.
func (e Endpoints) SigningOrigin() string { o, _ := originOf(e.SigningBaseURL); return o }

// InvoicingOrigin is {invoicing_origin}: the origin of InvoicingBaseURL.
func (e Endpoints) InvoicingOrigin() string { o, _ := originOf(e.InvoicingBaseURL); return o }

// originOf checks that raw is an absolute http(s) URL without userinfo,
// query or fragment, and returns the ASCII serialization of its origin, as
// the one origin policy (package origin) computes it. The resource address
// itself is kept as configured: `locations` and `resource` compare with it
// exactly (docs/service.md §2.2 rule 2).
func originOf(raw string) (string, error) {
	u, err := origin.ParseURL(raw)
	if err != nil {
		return "", err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q is not an http(s) URL", raw)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#"):
		return "", fmt.Errorf("%q must not carry userinfo, query or fragment", raw)
	}
	return origin.Of(u).String(), nil
}

// Provider names the owner of a permission (docs/service.md §1, "Providers in the catalog").
type Provider string

// The three providers of the catalog. A Resource Server approved by the
// operator is a provider too, named "rs:" followed by its id.
const (
	Banking   Provider = "banking"
	Signing   Provider = "signing"
	Invoicing Provider = "invoicing"
)

// Scope is one of the 12 catalog scopes (docs/service.md §2.1), or a scope of an
// approved Resource Server (docs/service.md §5.8).
type Scope struct {
	Name    string
	Meaning string
	// Provider owns the scope; Resource is the `resource` a request for it
	// must name ({base_url} for the 12 catalog scopes).
	Provider Provider
	Resource string
}

// Action is one value of a type's `actions` enumeration with its meaning.
type Action struct {
	Name    string
	Meaning string
}

// Type is one authorization_details type (docs/service.md §2.3 to §2.5).
type Type struct {
	// Name is the value of the detail's `type` member, with placeholders
	// filled in, for example "https://bank.example/authorization-details/company-identity".
	Name string
	// Key is a short stable name independent of the endpoints
	// ("bank_account", "automatic-charge", "company-key", ...); it names the
	// schema file under assets/schemas/catalog.
	Key string
	// Meaning is what the type grants, for the consent screen.
	Meaning string
	// Provider owns the type; Resource is its resource address, the only
	// value allowed in `locations`.
	Provider Provider
	Resource string
	// CompanyScoped types need `org_id` on the request (docs/service.md §2.2 rule 3).
	CompanyScoped bool
	// Actions is the enumeration of `actions`, in the order of docs/service.md.
	Actions []Action
}

// Action returns the named action of the type.
func (t *Type) Action(name string) (Action, bool) {
	for _, a := range t.Actions {
		if a.Name == name {
			return a, true
		}
	}
	return Action{}, false
}
