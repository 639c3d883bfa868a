package resolver

import (
	"net/url"

	"github.com/miniapp-host/miniapp-host/origin"
)

// Manifest is a Miniapp manifest (docs/service.md §2.9) that passed the schema.
type Manifest struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	ShortName       string `json:"short_name,omitempty"`
	Description     string `json:"description,omitempty"`
	Icons           []Icon `json:"icons,omitempty"`
	StartURL        string `json:"start_url"`
	Scope           string `json:"scope,omitempty"`
	Display         string `json:"display,omitempty"`
	ThemeColor      string `json:"theme_color,omitempty"`
	BackgroundColor string `json:"background_color,omitempty"`
	OAuth           OAuth  `json:"oauth"`
}

// Icon is a Web App Manifest image resource.
type Icon struct {
	Src     string `json:"src"`
	Sizes   string `json:"sizes,omitempty"`
	Type    string `json:"type,omitempty"`
	Purpose string `json:"purpose,omitempty"`
}

// OAuth is the manifest's oauth block (docs/service.md §2.9).
type OAuth struct {
	ClientID string `json:"client_id"`
	// AuthURL is the page on the Miniapp's origin that the host visits first
	// for a confidential client; empty when not declared.
	AuthURL string `json:"auth_url,omitempty"`
}

// Client types, as the dashboard API spells client_type (docs/service.md §2.10).
const (
	ClientConfidential = "confidential"
	ClientPublic       = "public"
)

// ClientConfig is the public configuration of an OAuth client (docs/service.md §2.10,
// 4.2).
type ClientConfig struct {
	RedirectURIs   []string `json:"redirect_uris"`
	AllowedOrigins []string `json:"allowed_origins"`
	ClientType     string   `json:"client_type"`
}

// Confidential reports whether the client is confidential (has a secret,
// keeps PKCE on its backend, needs oauth.auth_url).
func (c *ClientConfig) Confidential() bool { return c.ClientType == ClientConfidential }

// Miniapp is a resolved Miniapp: everything the host needs to open it.
type Miniapp struct {
	Manifest    *Manifest
	ManifestURL *url.URL // where the manifest was served from
	Client      *ClientConfig
	Origin      origin.Origin // the Miniapp's (and manifest's) origin
	StartURL    *url.URL      // start_url resolved against ManifestURL, canonical
	AuthURL     *url.URL      // oauth.auth_url resolved, for a confidential client; nil for a public one
	LoadURL     *url.URL      // what the host loads first: AuthURL when confidential, else StartURL
	Report      *Report
}
