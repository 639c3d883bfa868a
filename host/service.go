package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// Service is the authorization service as its discovery document
// describes it (RFC 8414, OIDC Discovery).
type Service struct {
	Issuer    string `json:"issuer"`
	Authorize string `json:"authorization_endpoint"`
	Token     string `json:"token_endpoint"`
	// Native is the native-consent API of the reference server.
	Native string `json:"native_consent_endpoint"`
	// Grant is GET {base_url}/authorization (docs/service.md §4.1).
	Grant string `json:"grant_endpoint"`
}

// BaseURL is {base_url}, the resource a scope request names (docs/service.md §2.1),
// read off the grant endpoint, which docs/service.md §4.1 places at
// {base_url}/authorization.
func (s *Service) BaseURL() string { return strings.TrimSuffix(s.Grant, "/authorization") }

// Discover reads the service's metadata at issuer and checks it as strict
// clients do: the issuer it names is the one asked for (RFC 8414 section
// 3.3), and the endpoints the host needs are there. It reads the RFC 8414
// document, {issuer}/.well-known/oauth-authorization-server with the
// well-known segment before the issuer's path (section 3.1), and, when
// that is not found, OpenID Connect Discovery's
// {issuer}/.well-known/openid-configuration.
func Discover(ctx context.Context, client *http.Client, issuer string) (*Service, error) {
	issuer = strings.TrimSuffix(issuer, "/")
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("host: discovery: the issuer %q is not an absolute http(s) URL without query or fragment (RFC 8414 section 2)", issuer)
	}
	if client == nil {
		client = http.DefaultClient
	}
	rfc8414 := u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + u.EscapedPath()
	s, status, err := readMetadata(ctx, client, rfc8414)
	if status == http.StatusNotFound {
		s, _, err = readMetadata(ctx, client, issuer+"/.well-known/openid-configuration")
	}
	if err != nil {
		return nil, err
	}
	switch {
	case s.Issuer != issuer:
		return nil, fmt.Errorf("host: discovery: the document names issuer %q, not %q", s.Issuer, issuer)
	case s.Authorize == "" || s.Token == "" || s.Native == "":
		return nil, fmt.Errorf("host: discovery: %s lacks authorization_endpoint, token_endpoint or native_consent_endpoint", issuer)
	}
	return s, nil
}

// readMetadata GETs one metadata document; the status is that of the
// answer, 0 when there was none.
func readMetadata(ctx context.Context, client *http.Client, at string) (*Service, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, at, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("host: discovery: %w", err)
	}
	a, err := jsonhttp.Do(client, req, 1<<20)
	if err != nil {
		status := 0 // no answer
		if je := (*jsonhttp.Error)(nil); errors.As(err, &je) {
			status = je.Status
		}
		return nil, status, fmt.Errorf("host: discovery: %w", err)
	}
	if a.Status != http.StatusOK {
		return nil, a.Status, fmt.Errorf("host: discovery: %s answered %s", at, a.StatusText)
	}
	var s Service
	if err := a.Decode(&s); err != nil {
		return nil, a.Status, fmt.Errorf("host: discovery: %w", err)
	}
	return &s, a.Status, nil
}

// ServiceIssuer asks the dashboard at dashboard ({dashboard_url}) which
// authorization server its clients are registered with: GET
// {dashboard_url}/api/service, {"issuer": ...} (docs/dashboard.md, "The
// service"). The issuer is only a name here: Discover then reads the
// server's own metadata and checks that it names the same issuer.
func ServiceIssuer(ctx context.Context, client *http.Client, dashboard string) (string, error) {
	at := strings.TrimSuffix(dashboard, "/") + "/api/service"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, at, nil)
	if err != nil {
		return "", fmt.Errorf("host: the dashboard %q: %w", dashboard, err)
	}
	if client == nil {
		client = http.DefaultClient
	}
	a, err := jsonhttp.Do(client, req, 64<<10)
	if err != nil {
		return "", fmt.Errorf("host: asking the dashboard which authorization server it serves (GET %s): %w; "+
			"check --dashboard, or give the service's issuer with --service", at, err)
	}
	var body struct {
		Issuer  string `json:"issuer"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	dec := a.Decode(&body)
	switch {
	case a.Status == http.StatusNotFound:
		why := "it has no such route"
		if body.Code != "" {
			why = body.Code
		}
		return "", fmt.Errorf("host: the dashboard at %s does not name its authorization server (GET %s answered %s: %s); "+
			"give the service's issuer with --service", dashboard, at, a.StatusText, why)
	case a.Status != http.StatusOK:
		return "", fmt.Errorf("host: asking the dashboard which authorization server it serves: GET %s answered %s", at, a.StatusText)
	case dec != nil:
		return "", fmt.Errorf("host: GET %s: the answer is not the JSON object {\"issuer\": ...}: %w", at, dec)
	}
	u, err := url.Parse(body.Issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("host: GET %s names the issuer %q, which is not an absolute http(s) URL (RFC 8414 section 2)", at, body.Issuer)
	}
	return body.Issuer, nil
}

// DiscoverService finds the service a Miniapp of the dashboard signs in
// with: the issuer given (`open --service`), which wins, or else the one
// the dashboard names (ServiceIssuer); then its metadata (Discover).
func DiscoverService(ctx context.Context, client *http.Client, issuer, dashboard string) (*Service, error) {
	if issuer == "" {
		var err error
		if issuer, err = ServiceIssuer(ctx, client, dashboard); err != nil {
			return nil, err
		}
	}
	return Discover(ctx, client, issuer)
}
