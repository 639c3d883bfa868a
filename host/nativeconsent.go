package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/jsonhttp"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// NativeConsent is the [ConsentService] of the reference authorization
// server's native-consent API (docs/native-consent.md): POST
// {Endpoint} with the caught authorization URL and the subject, then POST
// {Endpoint}/{id}/decision. The host authenticates with its own client
// credential (HTTP Basic).
type NativeConsent struct {
	// Endpoint is the API's collection URL (oauth.Server.NativeEndpoint).
	Endpoint string
	// ClientID and ClientSecret are the host's own credential.
	ClientID, ClientSecret string
	// HTTP is the client; http.DefaultClient when nil.
	HTTP *http.Client
}

// NativeError is an error answer of the native-consent API.
type NativeError struct {
	Status      int
	Code        string `json:"error"`
	Description string `json:"error_description"`
	RedirectURL string `json:"redirect_url"`
}

// codeHTTPError is the Code of an answer that is no OAuth error (a proxy's
// page, a body that is not JSON): the host's failure, not the server's
// refusal.
const codeHTTPError = "http_error"

func (e *NativeError) Error() string {
	return fmt.Sprintf("host: native consent: %d %s: %s", e.Status, e.Code, e.Description)
}

// Begin implements ConsentService.
func (n *NativeConsent) Begin(ctx context.Context, authorize *url.URL, subject string) (*ConsentScreen, error) {
	var out struct {
		RequestID string           `json:"request_id"`
		Consent   json.RawMessage  `json:"consent"`
		Request   *consent.Request `json:"request"`
	}
	body := map[string]string{"authorization_url": authorize.String(), "subject": subject}
	err := n.post(ctx, spanNativeBegin, n.Endpoint, body, &out)
	if ne, ok := err.(*NativeError); ok && ne.RedirectURL != "" {
		// An error the client must receive at its verified redirect_uri
		// (RFC 6749 4.1.2.1): delivered like any authorization response.
		u, perr := origin.ParseURL(ne.RedirectURL)
		if perr != nil {
			return nil, fmt.Errorf("host: native consent: redirect_url: %w", perr)
		}
		return &ConsentScreen{Redirect: u}, nil
	}
	if err != nil {
		return nil, err
	}
	if out.RequestID == "" || len(out.Consent) == 0 {
		return nil, fmt.Errorf("host: native consent: answer without request_id or consent")
	}
	return &ConsentScreen{RequestID: out.RequestID, Model: out.Consent, Request: out.Request}, nil
}

// Decide implements ConsentService.
func (n *NativeConsent) Decide(ctx context.Context, requestID string, d consent.Decision) (*url.URL, error) {
	var out struct {
		RedirectURL string `json:"redirect_url"`
	}
	if err := n.post(ctx, spanNativeDecide, n.Endpoint+"/"+url.PathEscape(requestID)+"/decision", d, &out); err != nil {
		return nil, err
	}
	u, err := origin.ParseURL(out.RedirectURL)
	if err != nil {
		return nil, fmt.Errorf("host: native consent: redirect_url: %w", err)
	}
	return u, nil
}

// post sends one call, a client span named name under ctx's span whose
// W3C traceparent (https://www.w3.org/TR/trace-context/) the request
// carries, so that the service's spans of the call are its children.
func (n *NativeConsent) post(ctx context.Context, name, endpoint string, in, out any) (err error) {
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerScope).Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", http.MethodPost)))
	defer func() { endSpan(span, err) }()
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("host: native consent: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("host: native consent: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	telemetry.Inject(ctx, req.Header)
	req.SetBasicAuth(url.QueryEscape(n.ClientID), url.QueryEscape(n.ClientSecret))
	// A flow's calls are recorded in its network log (netlog.Into).
	a, err := jsonhttp.Do(netlog.Client(n.HTTP), req, 4<<20)
	if err != nil {
		return fmt.Errorf("host: native consent: %w", err)
	}
	span.SetAttributes(attribute.Int("http.response.status_code", a.Status))
	if !a.OK() {
		ne := &NativeError{Status: a.Status}
		if json.Unmarshal(a.Body, ne) != nil || ne.Code == "" {
			ne.Code, ne.Description = codeHTTPError, string(bytes.TrimSpace(a.Body))
		}
		return ne
	}
	if err := a.Decode(out); err != nil {
		return fmt.Errorf("host: native consent: %w", err)
	}
	return nil
}
