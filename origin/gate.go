package origin

import (
	"fmt"
	"mime"
	"net/http"
	"net/netip"
	"strings"
)

// The loopback gate. The servers this program runs for its user on the
// loopback interface (the launcher and its API, the automation channel,
// the WebDriver front, a developer's folder under `dev`, and the
// dashboard of a development server) can open Miniapps, approve consent,
// start programs or read files. Any web page the user visits can send
// requests to loopback ports: simple requests (a form, a text/plain
// fetch) need no CORS preflight, and DNS rebinding makes a page's own name
// resolve to 127.0.0.1 (docs/security.md, "Other pages in the user's
// browser"). [Gate.Check] is the one gate all of them run before any
// route, with these rules, in this order:
//
//  1. Remote address: the connection comes from a loopback address
//     (127.0.0.0/8, ::1, or either as an IPv4-mapped address): the server
//     listens on loopback ([CheckLoopbackAddr]), and this says so again
//     for each request.
//  2. Host: the Host header, read as a browser reads a URL's host
//     ([Parse] of "http://" and the header), names a loopback host
//     ([Origin.IsLoopback]): "localhost" in any case, an address of
//     127.0.0.0/8 in any form a browser reads (127.1, 0x7f.0.0.1), or
//     [::1], with any valid port or none. Refused: a missing or empty
//     Host, "localhost." and sub-domains of localhost (other origins in a
//     browser), [::ffff:127.0.0.1], any other name (a DNS-rebound page
//     names its own host), and anything with a path, user name, query or
//     whitespace. The port is not compared with the server's: a browser
//     sends the port of the URL it connects to, so a page reaches this
//     server only under this server's port; the name is what a rebound
//     page cannot fake.
//  3. Origin: a request that may change state (every method but GET,
//     HEAD, OPTIONS and TRACE, RFC 9110 §9.2.1), or every request when
//     [Gate.Reads] is set, carries no Origin header (a program, not a
//     browser: browsers add it to every cross-origin request and every
//     non-GET one) or exactly one, naming one of [Gate.Pages] as whole
//     origins ([Origin.Equal]); "null" names none.
//  4. Content-Type, when [Gate.JSON] is set: a request that may change
//     state (the methods of rule 3) and has a body, and every POST,
//     carries exactly one Content-Type, application/json (well-formed
//     parameters such as charset allowed). A page cannot send that to
//     another origin without a CORS preflight, which these servers never
//     allow; POST is the one method that changes state which a page may
//     send without a preflight (Fetch Standard, "CORS-safelisted method"),
//     so a POST needs it even without a body, while a body-less DELETE
//     (WebDriver's Delete Session) needs none. A page cannot send a GET
//     with a body at all.
//
// Rules 1 and 2 are off with [Gate.AnyHost], for the dashboard when its
// own origin is not on loopback (a deployment behind a reverse proxy,
// docs/deploy.md); rules 3 and 4 still apply.

// Gate is the loopback gate of one server (the rules above). The zero
// Gate applies the loopback rules and lets no page change state.
type Gate struct {
	// Pages are the origins whose pages may send the requests the Origin
	// rule checks: the launcher's own page, the playground for the
	// automation channel, the dashboard's own and configured origins.
	// None: no page may.
	Pages []Origin
	// Reads applies the Origin rule to every request, reads included: a
	// WebSocket handshake is a GET that CORS does not guard (RFC 6455
	// §10.2), and a WebDriver server is for programs only.
	Reads bool
	// JSON applies the Content-Type rule, for a server whose requests
	// carry JSON bodies.
	JSON bool
	// AnyHost turns the remote-address and Host rules off, for a server
	// reached under a name of its own (the dashboard of a deployment).
	AnyHost bool
}

// GateRule names the rule a request broke.
type GateRule string

// The rules of the gate, in the order they are checked.
const (
	RuleRemote      GateRule = "remote address"
	RuleHost        GateRule = "Host"
	RuleOrigin      GateRule = "Origin"
	RuleContentType GateRule = "Content-Type"
)

// Refusal is a request the gate refuses: the rule it broke and what the
// request sent there (the remote address, or the header's values joined
// with ", ").
type Refusal struct {
	Rule  GateRule
	Value string
	// pages is the gate's Pages, for the message.
	pages []Origin
}

// Error says which rule refused the request, what it sent and why.
func (r *Refusal) Error() string {
	switch r.Rule {
	case RuleRemote:
		return fmt.Sprintf("the connection comes from %s, which is not a loopback address: this server is for this machine's own programs and pages", r.Value)
	case RuleHost:
		return fmt.Sprintf("the Host header %q is not a loopback name (127.0.0.1, [::1], localhost): a page on a DNS name rebound to 127.0.0.1 sends its own", r.Value)
	case RuleOrigin:
		if len(r.pages) == 0 {
			return fmt.Sprintf("the request has an Origin header (%q): it comes from a web page, and no page may send it here", r.Value)
		}
		names := make([]string, len(r.pages))
		for i, p := range r.pages {
			names[i] = p.String()
		}
		return fmt.Sprintf("the request's Origin (%q) is not a page that may send it here (%s); programs send no Origin", r.Value, strings.Join(names, ", "))
	}
	return fmt.Sprintf("the body's Content-Type is %q: send Content-Type: application/json (a page's simple request is text/plain, form data or untyped)", r.Value)
}

// Check applies the gate's rules to r and returns the first it breaks, or
// nil when r passes.
func (g *Gate) Check(r *http.Request) *Refusal {
	if !g.AnyHost {
		if !loopbackRemote(r.RemoteAddr) {
			return &Refusal{Rule: RuleRemote, Value: r.RemoteAddr}
		}
		if !LoopbackHost(r.Host) {
			return &Refusal{Rule: RuleHost, Value: r.Host}
		}
	}
	if g.Reads || stateChanging(r.Method) {
		if vs := r.Header.Values("Origin"); len(vs) > 0 && (len(vs) > 1 || !g.allowed(vs[0])) {
			return &Refusal{Rule: RuleOrigin, Value: strings.Join(vs, ", "), pages: g.Pages}
		}
	}
	body := r.ContentLength != 0 || len(r.TransferEncoding) > 0
	if g.JSON && (r.Method == http.MethodPost || body && stateChanging(r.Method)) {
		ct := r.Header.Values("Content-Type")
		if len(ct) == 1 {
			if mt, _, err := mime.ParseMediaType(ct[0]); err == nil && mt == "application/json" {
				return nil
			}
		}
		return &Refusal{Rule: RuleContentType, Value: strings.Join(ct, ", ")}
	}
	return nil
}

// allowed reports whether raw, an Origin header, names one of g.Pages.
func (g *Gate) allowed(raw string) bool {
	o, err := Parse(raw)
	if err != nil {
		return false
	}
	for _, p := range g.Pages {
		if p.Equal(o) {
			return true
		}
	}
	return false
}

// LoopbackHost reports whether a Host header (host, or host:port) names a
// loopback host by the gate's Host rule.
func LoopbackHost(host string) bool {
	if host == "" {
		return false
	}
	o, err := Parse("http://" + host)
	return err == nil && o.IsLoopback()
}

// loopbackRemote reports whether a request's RemoteAddr (ip:port) is a
// loopback address; an IPv4 peer of a dual-stack socket is an IPv4-mapped
// IPv6 address.
func loopbackRemote(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// stateChanging reports whether a request's method may change state
// (RFC 9110 §9.2.1: every method but the safe ones).
func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}
