package host

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/consent"
)

// ConsentService is the service's native-consent API as the host uses it:
// the host hands over the authorization request it caught, shows the
// screen the service returns, and sends back the subject's decision.
type ConsentService interface {
	// Begin validates the caught authorization request for subject and
	// returns the consent screen, or a final redirect when the service
	// answers the request at once (an error it may redirect).
	Begin(ctx context.Context, authorize *url.URL, subject string) (*ConsentScreen, error)
	// Decide records the decision and returns the authorization response:
	// redirect_uri with code, state and iss, or with error=access_denied.
	Decide(ctx context.Context, requestID string, d consent.Decision) (*url.URL, error)
}

// ConsentScreen is what Begin returns.
type ConsentScreen struct {
	RequestID string
	// Model is the consent model (consent.Model as JSON), rendered by the
	// host's consent view as it is (assets/host/consent.js).
	Model json.RawMessage
	// Redirect, when set, is a final authorization response that needs no
	// screen (for example an invalid request the service redirects).
	Redirect *url.URL
}

// Bridge is the Miniapp's bridge dispatcher (*bridge.Dispatcher): the host
// injects its script into the top frame, hands it every message with what
// the host knows of the calling frame, and tells it when a new document
// commits, and closes it when another Miniapp is mounted. It reaches the
// page back through the window (bridge.View).
type Bridge interface {
	Script() string
	Receive(f bridge.Frame, msg string)
	Navigated(doc bridge.Document)
	Close()
}
