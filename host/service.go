package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Service is the authorization service as its discovery document
// describes it (RFC 8414, OIDC Discovery).
type Service struct {
	Issuer    string `json:"issuer"`
	Authorize string `json:"authorization_endpoint"`
	Token     string `json:"token_endpoint"`
	// Native is the native-consent API of the reference server.
	Native string `json:"native_consent_endpoint"`
	// Grant is GET {base_url}/authorization (spec 4.1).
	Grant string `json:"grant_endpoint"`
}

// BaseURL is {base_url}, the resource a scope request names (spec 2.1),
// read off the grant endpoint, which spec 4.1 places at
// {base_url}/authorization.
func (s *Service) BaseURL() string { return strings.TrimSuffix(s.Grant, "/authorization") }

// Discover reads the service's discovery document at issuer and checks it
// as strict clients do: the issuer it names is the one asked for, and the
// endpoints the host needs are there.
func Discover(ctx context.Context, client *http.Client, issuer string) (*Service, error) {
	issuer = strings.TrimSuffix(issuer, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, fmt.Errorf("host: discovery: %w", err)
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("host: discovery: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("host: discovery: %s answered %s", req.URL, resp.Status)
	}
	var s Service
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&s); err != nil {
		return nil, fmt.Errorf("host: discovery: %w", err)
	}
	switch {
	case s.Issuer != issuer:
		return nil, fmt.Errorf("host: discovery: the document names issuer %q, not %q", s.Issuer, issuer)
	case s.Authorize == "" || s.Token == "" || s.Native == "":
		return nil, fmt.Errorf("host: discovery: %s lacks authorization_endpoint, token_endpoint or native_consent_endpoint", issuer)
	}
	return &s, nil
}
