package host

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/miniapp-host/miniapp-host/origin"
)

// Action is what the host does with one navigation of the Miniapp's view.
type Action int

const (
	// Block refuses the navigation; the view stays where it is.
	Block Action = iota
	// Allow lets the view load it (a new-window action loads in the same
	// view: the host never opens a second window for a Miniapp).
	Allow
	// Consent refuses the navigation and runs the host's consent flow for
	// the authorization request it carried.
	Consent
	// External refuses the navigation and hands the URL to the system
	// browser.
	External
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Consent:
		return "consent"
	case External:
		return "external"
	default:
		return "block"
	}
}

// Trigger says what started a navigation, as WebKit reports it.
type Trigger string

// Triggers. WebKit cannot tell a script navigation, a meta refresh, an
// iframe src or a server redirect apart from each other: they are all
// "other" (redirects carry Navigation.Redirect).
const (
	TriggerLink       Trigger = "link"
	TriggerForm       Trigger = "form"
	TriggerBackFwd    Trigger = "back-forward"
	TriggerReload     Trigger = "reload"
	TriggerResubmit   Trigger = "form-resubmit"
	TriggerOther      Trigger = "other"
	TriggerWindowOpen Trigger = "window-open"
)

// Navigation is one navigation the view asked for.
type Navigation struct {
	URL         string  // as WebKit reports it
	Method      string  // GET, POST
	Trigger     Trigger // what started it
	Redirect    bool    // the answer of a server redirect
	UserGesture bool    // started by a click or key (or by the host's Eval)
	NewWindow   bool    // target=_blank or window.open
	Frame       string  // target frame name, when WebKit knows it
}

// Policy decides every navigation of the Miniapp's view through the one
// origin policy: towards the service's authorization endpoint it is
// consent, inside the client's allowed origins it is allowed, http(s)
// elsewhere on a user gesture goes to the system browser, anything else is
// blocked. There is no main-frame flag on a WebKit navigation decision, so
// subframes are decided by the same rules.
type Policy struct {
	// Authorize is the service's authorization endpoint. Required.
	Authorize *url.URL
	// Allowed is the client's allowed_origins, as the dashboard lists them.
	Allowed []string
}

// Validate reports whether the policy can decide anything.
func (p *Policy) Validate() error {
	if p.Authorize == nil || origin.Of(p.Authorize).IsOpaque() {
		return fmt.Errorf("host: policy needs the http(s) authorization endpoint of the service")
	}
	return nil
}

// Rules of the policy, as events name them.
const (
	RuleUnparsable     = "unparsable"                   // the URL does not parse as a browser would
	RuleAuthorize      = "authorization-endpoint"       // towards the service's authorization endpoint
	RuleAboutFrame     = "about-document"               // about:blank or about:srcdoc, made by the page
	RuleNoOrigin       = "opaque-origin"                // a scheme without a network origin
	RuleAllowedOrigin  = "allowed-origin"               // inside the client's allowed_origins
	RuleExternal       = "external-on-gesture"          // http(s) elsewhere, followed on a user gesture
	RuleNotAllowed     = "not-allowed"                  // http(s) elsewhere, without a gesture or by redirect
	RuleNoNewWindow    = "no-new-window"                // about: documents never open a window
	RuleAuthorizeAlias = "authorization-endpoint-alias" // the endpoint by another spelling of the service's server
	RuleOtherServer    = "other-authorization-server"   // an authorization request to a server that is not the service
	// Rules of the window rather than of a Miniapp's policy.
	RuleNoMiniapp    = "no-miniapp"    // no Miniapp is mounted (resolving, or rejected): the view loads nothing
	RuleHostDocument = "host-document" // the host's own document in the Miniapp's view (a rejection shown to WebDriver)
)

// DescribeRule says in a sentence what a rule of the navigation policy
// (or of the window) decided, for the host's notice of a blocked
// navigation; "" for a name it does not know.
func DescribeRule(rule string) string {
	switch rule {
	case RuleUnparsable:
		return "the URL does not parse as a browser would, or its path cannot be read on the service's origin"
	case RuleAuthorize:
		return "the service's authorization endpoint: the host shows its own consent screen"
	case RuleAboutFrame:
		return "an about:blank or about:srcdoc document the page made itself"
	case RuleNoOrigin:
		return "a scheme without a network origin (data:, javascript:, file:, another origin's blob:)"
	case RuleAllowedOrigin:
		return "inside the client's allowed_origins"
	case RuleExternal:
		return "outside the client's allowed_origins, followed on a user gesture: opened in the system browser"
	case RuleNotAllowed:
		return "outside the client's allowed_origins, and not a link the user followed (a script, a redirect or a frame)"
	case RuleNoNewWindow:
		return "an about: document never opens a window"
	case RuleAuthorizeAlias:
		return "the service's authorization endpoint under another name of its server; only the service's own spelling starts a consent"
	case RuleOtherServer:
		return "an authorization request to a server that is not the service this host signs in with"
	case RuleNoMiniapp:
		return "no Miniapp is mounted in the view"
	case RuleHostDocument:
		return "the host's own document"
	}
	return ""
}

// Decide returns the action for n and the canonical URL it concerns: nil
// when the URL does not parse, and also when a browser loads it but Go's
// url.URL cannot carry it (a "%" that starts no escape, as in
// https://app.example/#/sale/50%), which only Allow and Block can have.
func (p *Policy) Decide(n Navigation) (Action, *url.URL) {
	a, _, u := p.DecideRule(n)
	return a, u
}

// DecideRule is Decide with the name of the rule that decided.
func (p *Policy) DecideRule(n Navigation) (Action, string, *url.URL) {
	// The origin is what a browser gives the URL (origin.OfString), which
	// exists for every URL a browser loads; the canonical url.URL is
	// needed only to start a consent or to hand the URL on.
	o, err := origin.OfString(n.URL)
	if err != nil {
		return Block, RuleUnparsable, nil
	}
	u, err := origin.ParseURL(n.URL)
	if err != nil {
		switch {
		case o.IsOpaque():
			return Block, RuleNoOrigin, nil
		case o.Equal(origin.Of(p.Authorize)):
			// Without its path the host cannot tell the endpoint from
			// the service's other pages: nothing there loads.
			return Block, RuleUnparsable, nil
		case origin.InList(o, p.Allowed):
			return Allow, RuleAllowedOrigin, nil
		}
		return Block, RuleUnparsable, nil
	}
	if p.IsAuthorize(u) {
		return Consent, RuleAuthorize, u
	}
	if p.reachesEndpoint(u) {
		// The endpoint under another name of its server (localhost for
		// 127.0.0.1, a trailing dot): the service would answer it, so it
		// is never loaded nor handed to the system browser; consent runs
		// only for the service's own spelling, which the client
		// registered.
		return Block, RuleAuthorizeAlias, u
	}
	// about:blank and about:srcdoc documents are made by the page itself
	// and load nothing; they inherit the origin of their creator, so they
	// are allowed in frames but never as a new window.
	if u.Scheme == "about" && (u.Opaque == "blank" || u.Opaque == "srcdoc") {
		if n.NewWindow {
			return Block, RuleNoNewWindow, u
		}
		return Allow, RuleAboutFrame, u
	}
	if o.IsOpaque() {
		return Block, RuleNoOrigin, u
	}
	if origin.InList(o, p.Allowed) {
		return Allow, RuleAllowedOrigin, u
	}
	if isAuthorizationRequest(u) {
		// A sign-in with another server than the one the host knows (a
		// Miniapp of another service, or a host started with the wrong
		// --service): neither the view nor the system browser may take
		// it, and the host says so (docs/host.md, "Blocked navigations").
		return Block, RuleOtherServer, u
	}
	if (u.Scheme == "http" || u.Scheme == "https") && n.UserGesture && !n.Redirect {
		return External, RuleExternal, u
	}
	return Block, RuleNotAllowed, u
}

// isAuthorizationRequest reports whether an http(s) URL looks like an
// authorization request to some server: its last path segment is
// "authorize" (/authorize, /oauth/authorize, /oauth2/v1/authorize), or its
// query carries both parameters RFC 6749 section 4.1.1 requires of one,
// response_type and client_id (as at Keycloak's
// /protocol/openid-connect/auth).
func isAuthorizationRequest(u *url.URL) bool {
	if u.Scheme != "http" && u.Scheme != "https" {
		return false
	}
	if strings.EqualFold(path.Base(path.Clean("/"+u.Path)), "authorize") {
		return true
	}
	q := u.Query()
	return q.Has("response_type") && q.Has("client_id")
}

// IsAuthorize reports whether u targets the service's authorization
// endpoint: an http(s) URL (isRequest) of the same origin, and a decoded
// path equal to the endpoint's or below it. The decoded path is compared
// because servers route on it (/%61uthorize reaches /authorize).
func (p *Policy) IsAuthorize(u *url.URL) bool {
	return isRequest(u) && origin.Of(u).Equal(origin.Of(p.Authorize)) && p.endpointPath(u)
}

// reachesEndpoint reports whether u targets the endpoint's path on the
// service's server under any spelling (origin.SameServer).
func (p *Policy) reachesEndpoint(u *url.URL) bool {
	return isRequest(u) && origin.SameServer(origin.Of(u), origin.Of(p.Authorize)) && p.endpointPath(u)
}

// isRequest reports whether u is a request a server could receive: an
// http(s) URL with a hierarchical path. Only such a URL is ever a request
// to the authorization endpoint, whatever text it carries: a javascript:
// URL is a script (any navigation it starts is decided on its own), a
// data: URL a document, and a blob: URL, though it has the origin of the
// URL inside it (blob:http://service/oauth/authorize?client_id=...), names
// an object in the page's memory that no request fetches. Their opaque
// paths would otherwise read as the path "/" and match an endpoint served
// at the root, and their queries would be read as the sign-in's.
func isRequest(u *url.URL) bool {
	return u != nil && (u.Scheme == "http" || u.Scheme == "https") && u.Opaque == ""
}

func (p *Policy) endpointPath(u *url.URL) bool {
	want := path.Clean("/" + p.Authorize.Path)
	got := path.Clean("/" + u.Path)
	return got == want || strings.HasPrefix(got, want+"/")
}

// FilterRules is the content-blocker list (WebKit's format) that stops
// every request of the Miniapp's view that is not a navigation, and so not
// decided by DecideRule, towards the authorization endpoint: fetch, XHR,
// WebSocket, beacons, subresources, and redirects towards it. The patterns
// have no disjunction, so there is a rule per scheme that reaches the
// service's server (http and ws, or https and wss: RFC 6455 section 3)
// and per spelling of its host (origin.SameServer: a trailing dot, and for
// a loopback service localhost, 127.0.0.0/8 and [::1]; the browser's URL
// parser has already made numeric and upper-case hosts canonical). For
// each, a second rule blocks percent-escapes in paths on that server,
// because the patterns cannot match the escaped spellings of the
// endpoint's path and servers decode them.
func (p *Policy) FilterRules() string {
	o := origin.Of(p.Authorize)
	port := ""
	if o.Port != 0 {
		port = ":" + strconv.Itoa(o.Port)
	}
	schemes := []string{"http", "ws"}
	if o.Scheme == "https" {
		schemes = []string{"https", "wss"}
	}
	hosts := []string{regexp.QuoteMeta(strings.TrimSuffix(o.Host, ".")) + `\.?`}
	if o.IsLoopback() {
		hosts = []string{`localhost\.?`, `127\.[0-9]+\.[0-9]+\.[0-9]+`, `\[::1\]`}
	}
	ep := regexp.QuoteMeta(path.Clean("/" + p.Authorize.Path))
	// Every resource type but "popup": a blocked popup would fail inside
	// the web process before the view's create signal, and the host wants
	// window.open(authorize) to reach create and become a consent.
	types := `["document","image","style-sheet","script","font","raw","svg-document","media","ping","fetch","websocket","other"]`
	var rules []string
	for _, scheme := range schemes {
		for _, h := range hosts {
			// Userinfo (ws://user@host/) is kept in the URL the rules see.
			base := "^" + scheme + "://([^/?#@]*@)?" + h + port
			for _, pattern := range []string{base + ep, base + "/[^?#]*%"} {
				rules = append(rules, fmt.Sprintf(`{"trigger":{"url-filter":%q,"resource-type":%s},"action":{"type":"block"}}`, pattern, types))
			}
		}
	}
	return "[" + strings.Join(rules, ",") + "]"
}

func parseCanonical(raw string) (*url.URL, error) {
	u, err := origin.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	return u, nil
}

func sameOriginAs(u *url.URL, o origin.Origin) bool { return origin.Of(u).Equal(o) }
