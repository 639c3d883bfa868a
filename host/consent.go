package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

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
	// Request is the authorization request the screen is for, as the
	// service read it; nil when the service does not say. For a caught URL
	// with a request_uri it is the pushed request (RFC 9126 §4), which the
	// URL does not hold.
	Request *consent.Request
}

// requestURIPrefix begins the request_uri of a pushed authorization
// request (RFC 9126 §2.2).
const requestURIPrefix = "urn:ietf:params:oauth:request_uri:"

// CheckPushedReference checks the form of a caught authorization request
// that names a pushed one: client_id and request_uri, each once, and no
// other parameter (RFC 9126 §4: the request is the pushed one, which the
// client authenticated; the service takes it whole and ignores the rest,
// FAPI 2.0 Security Profile §5.3.2.2). A parameter beside them would be
// silently dropped, so the host refuses the mix rather than show a consent
// that is not for what the Miniapp's page put in the URL. A request
// without request_uri, or whose request_uri is not of the PAR form (a
// request object's URL, which the service refuses itself), passes.
func CheckPushedReference(q url.Values) error {
	uris, ok := q["request_uri"]
	if !ok {
		return nil
	}
	switch {
	case len(uris) != 1:
		return fmt.Errorf("host: the authorization request names request_uri %d times: send it once, with the value the PAR endpoint returned (RFC 9126 section 4)", len(uris))
	case !strings.HasPrefix(uris[0], requestURIPrefix):
		// A request object by reference (RFC 9101 §5.2), which the
		// service refuses with request_uri_not_supported at the verified
		// redirect_uri: left to it.
		return nil
	case len(q["client_id"]) != 1 || q.Get("client_id") == "":
		return errors.New("host: the authorization request has a request_uri but not exactly one client_id: send client_id beside it (RFC 9126 section 4)")
	}
	var extra []string
	for k := range q {
		if k != "client_id" && k != "request_uri" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return fmt.Errorf("host: the authorization request mixes request_uri with %s: with a pushed request, send only client_id and request_uri, "+
			"and push every other parameter to the PAR endpoint (RFC 9126 section 4)", strings.Join(extra, ", "))
	}
	return nil
}

// Bridge is the Miniapp's bridge dispatcher (*bridge.Dispatcher): the host
// injects its script into the top frame, hands it every message with what
// the host knows of the calling frame, and tells it when a new document
// commits, and closes it when another Miniapp is mounted. It reaches the
// page back through the window (bridge.View).
type Bridge interface {
	Script() string
	// SetPage tells the page its viewport and theme (bridge.Page).
	SetPage(p bridge.Page)
	Receive(f bridge.Frame, msg string)
	Navigated(doc bridge.Document)
	Close()
}
