package netlog

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/redact"
)

// Sources of entries: who made the request.
const (
	SourceHost    = "host"    // the host itself (native consent, callback, the bridge's token request)
	SourceView    = "view"    // the Miniapp's view (its pages, their fetches and subresources)
	SourceBackend = "backend" // a Miniapp's own server (the token exchange and grant read the playground sees)
)

// Kinds of entries: what the request is in the flow.
const (
	KindAuthorize     = "authorize"      // the caught authorization request; never sent
	KindPAR           = "par"            // a backend's pushed authorization request (RFC 9126 section 2), before the flow it starts
	KindNativeConsent = "native-consent" // POST {native} and POST {native}/{id}/decision (docs/native-consent.md)
	KindCallback      = "callback"       // the host's confidential callback to redirect_uri
	KindToken         = "token"          // a token request (RFC 6749 section 4.1.3)
	KindGrant         = "grant"          // GET {base_url}/authorization
	KindResource      = "resource"       // a request of the Miniapp's view
)

// Bounds of what one entry keeps.
const (
	maxHeaders     = 64
	maxHeaderValue = 4 << 10
	maxBody        = 16 << 10
)

// Header is one header line, its value redacted when secret.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Cookie is a cookie of a Cookie or Set-Cookie header: its name and flags,
// its value redacted.
type Cookie struct {
	Name     string     `json:"name"`
	Value    string     `json:"value"`
	Path     string     `json:"path,omitempty"`
	Domain   string     `json:"domain,omitempty"`
	Expires  *time.Time `json:"expires,omitempty"`
	MaxAge   *int       `json:"max_age,omitempty"` // seconds; 0 deletes
	HTTPOnly bool       `json:"http_only"`
	Secure   bool       `json:"secure"`
	SameSite string     `json:"same_site,omitempty"` // Lax, Strict, None; "" unspecified
}

// Body is what the log keeps of a request or response body.
type Body struct {
	MimeType string `json:"mime_type"`
	// Size is the body's length in bytes; -1 when unknown.
	Size int64 `json:"size"`
	// Text is the body with secrets redacted: JSON pretty-printed, a form
	// as sent. Empty when not kept; Comment then says why.
	Text    string `json:"text,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// Request is an entry's request.
type Request struct {
	Method  string   `json:"method"`
	URL     string   `json:"url"`
	Headers []Header `json:"headers"`
	Cookies []Cookie `json:"cookies"`
	Body    *Body    `json:"body,omitempty"`
}

// Response is an entry's response.
type Response struct {
	Status      int      `json:"status"`
	StatusText  string   `json:"status_text"`
	HTTPVersion string   `json:"http_version,omitempty"`
	Headers     []Header `json:"headers"`
	Cookies     []Cookie `json:"cookies"`
	Body        *Body    `json:"body,omitempty"`
	// RedirectURL is the Location of a redirect, redacted.
	RedirectURL string `json:"redirect_url,omitempty"`
}

// Timings split an entry's duration, in milliseconds, as HAR does: send
// (until the request was written), wait (until the first byte of the
// response), receive (until its last byte).
type Timings struct {
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// Param is one parameter of a URL's query, its value redacted when secret.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Authorize is the caught authorization request, decoded.
type Authorize struct {
	// Endpoint is the URL without its query.
	Endpoint string `json:"endpoint"`
	// Params are the query's parameters in order, decoded; secret ones
	// redacted (state, code_verifier... withheld, a code fingerprinted).
	Params []Param `json:"params"`
	// AuthorizationDetails is the authorization_details parameter
	// (RFC 9396) pretty-printed; AuthorizationDetailsError says why it
	// could not be read.
	AuthorizationDetails      string `json:"authorization_details,omitempty"`
	AuthorizationDetailsError string `json:"authorization_details_error,omitempty"`
	// Consent is the service's reading of the request through its
	// catalog: the consent model (consent.Model) the native-consent API
	// answered. ConsentError is the API's refusal instead.
	Consent      json.RawMessage `json:"consent,omitempty"`
	ConsentError string          `json:"consent_error,omitempty"`
	// Pushed is, for a request that names a pushed one (request_uri, RFC
	// 9126 section 4), the pushed request the service took for it: the
	// native-consent API's request member (docs/native-consent.md).
	Pushed json.RawMessage `json:"pushed,omitempty"`
}

// Entry is one exchange of a flow, as the log keeps it: nothing in it is
// a secret.
type Entry struct {
	// ID is unique in the log.
	ID     int    `json:"id"`
	Flow   string `json:"flow,omitempty"`
	Launch string `json:"launch,omitempty"`
	Source string `json:"source"`
	Kind   string `json:"kind"`
	// Started is when the request started; Duration how long it took to
	// its last byte (0 for the caught authorization request).
	Started    time.Time `json:"started"`
	DurationMS float64   `json:"duration_ms"`
	Timings    Timings   `json:"timings"`
	Request    Request   `json:"request"`
	// Response is nil when there was none: the caught authorization
	// request (never sent: Note says so), a request that failed (Error
	// says why).
	Response *Response `json:"response"`
	Error    string    `json:"error,omitempty"`
	// Note says what an entry that is no failure is when it has no
	// response: the caught authorization request. Error is for failures
	// only, which the inspector's "errors only" filter shows.
	Note      string     `json:"note,omitempty"`
	Authorize *Authorize `json:"authorize,omitempty"`
	// Curl is the request as a curl command line, redactions kept.
	Curl string `json:"curl"`
	// Injected says that the response was made up, not the endpoint's
	// own answer: for an answer a development fault made, the response's
	// HeaderInjected ("fault=flt_...; endpoint=token; effect=error",
	// docs/dashboard.md, "Faults"); for an answer of a mock rule of the
	// launch's network conditions, "mock" (docs/playground.md, "Network
	// conditions and mocks"); "" for a real answer.
	Injected string `json:"injected,omitempty"`
}

// InjectedMock marks an answer of a mock rule (Entry.Injected).
const InjectedMock = "mock"

// HeaderInjected marks an answer of the development server that a fault
// made, not the endpoint's own logic (docs/dashboard.md, "Faults").
const HeaderInjected = "Miniapp-Host-Injected"

// maxInjected bounds the HeaderInjected value an entry keeps.
const maxInjected = 256

// Exchange is an HTTP exchange as a recorder saw it, secrets and all. The
// log keeps only what Record makes of it.
type Exchange struct {
	Source, Kind string
	Method, URL  string
	// RequestHeader and ResponseHeader may be nil.
	RequestHeader  http.Header
	RequestBody    []byte // at most maxBody+1 bytes of it
	RequestSize    int64  // -1 when unknown
	Status         int    // 0: no response
	HTTPVersion    string
	ResponseHeader http.Header
	ResponseBody   []byte
	ResponseSize   int64
	// Started, Sent, FirstByte and Done are when the request started, was
	// written, the response's first byte came and its last; zero when
	// unknown.
	Started, Sent, FirstByte, Done time.Time
	Err                            string
	// Injected is Entry.Injected: "" for a real exchange.
	Injected string
}

// record makes the entry the log keeps of x.
func record(x Exchange) Entry {
	e := Entry{Source: x.Source, Kind: x.Kind, Started: x.Started, Error: redact.URL(x.Err), Injected: x.Injected}
	e.Request = Request{Method: strings.ToUpper(x.Method), URL: redact.URL(x.URL)}
	e.Request.Headers, e.Request.Cookies = redactHeaders(x.RequestHeader, false)
	e.Request.Body = redactBody(x.RequestHeader.Get("Content-Type"), x.RequestBody, x.RequestSize, len(x.RequestBody) > maxBody)
	if x.Status != 0 {
		r := &Response{Status: x.Status, StatusText: http.StatusText(x.Status), HTTPVersion: x.HTTPVersion}
		r.Headers, r.Cookies = redactHeaders(x.ResponseHeader, true)
		r.Body = redactBody(x.ResponseHeader.Get("Content-Type"), x.ResponseBody, x.ResponseSize, len(x.ResponseBody) > maxBody)
		if loc := x.ResponseHeader.Get("Location"); loc != "" && x.Status/100 == 3 {
			r.RedirectURL = redact.URL(loc)
		}
		e.Response = r
		if inj := x.ResponseHeader.Get(HeaderInjected); inj != "" {
			e.Injected = redact.URL(inj[:min(len(inj), maxInjected)])
		}
	}
	e.DurationMS, e.Timings = timings(x)
	if e.Request.Headers == nil {
		e.Request.Headers = []Header{}
	}
	if e.Request.Cookies == nil {
		e.Request.Cookies = []Cookie{}
	}
	if e.Response != nil {
		if e.Response.Headers == nil {
			e.Response.Headers = []Header{}
		}
		if e.Response.Cookies == nil {
			e.Response.Cookies = []Cookie{}
		}
	}
	e.Curl = curl(e.Request)
	return e
}

// timings splits the exchange's duration; an unknown step counts as wait.
func timings(x Exchange) (float64, Timings) {
	if x.Started.IsZero() || x.Done.IsZero() || x.Done.Before(x.Started) {
		return 0, Timings{}
	}
	ms := func(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }
	total := ms(x.Started, x.Done)
	var t Timings
	sent, first := x.Sent, x.FirstByte
	if sent.IsZero() || sent.Before(x.Started) || sent.After(x.Done) {
		sent = x.Started
	}
	if first.IsZero() || first.Before(sent) || first.After(x.Done) {
		first = x.Done
	}
	t.Send, t.Wait, t.Receive = ms(x.Started, sent), ms(sent, first), ms(first, x.Done)
	// The parts add up to the whole (HAR 1.2, entries.time).
	t.Receive = total - t.Send - t.Wait
	if t.Receive < 0 {
		t.Wait += t.Receive
		t.Receive = 0
	}
	return total, t
}

// authorizeEntry is the entry of a caught authorization request: decoded,
// never sent.
func authorizeEntry(u *url.URL, at time.Time) Entry {
	e := record(Exchange{Source: SourceView, Kind: KindAuthorize, Method: http.MethodGet, URL: u.String(), Started: at, Done: at})
	e.Note = "caught by the host's navigation policy: the service never received it; the host asked its native-consent API instead"
	a := &Authorize{Params: []Param{}}
	ep := *u
	ep.RawQuery, ep.ForceQuery, ep.Fragment, ep.RawFragment = "", false, "", ""
	a.Endpoint = redact.URL(ep.String())
	for _, p := range strings.Split(u.RawQuery, "&") {
		if p == "" {
			continue
		}
		name, value, _ := strings.Cut(p, "=")
		dn, err := url.QueryUnescape(name)
		if err != nil {
			dn = name
		}
		dv, err := url.QueryUnescape(value)
		if err != nil {
			dv = value
		}
		switch {
		case secretField(dn):
			dv = redact.Param(dn, dv)
		case dn != "authorization_details":
			// redirect_uri and any other value may hold a URL.
			dv = redact.URL(dv)
		}
		a.Params = append(a.Params, Param{Name: redact.URL(dn), Value: capString(dv, maxHeaderValue)})
		if dn == "authorization_details" && a.AuthorizationDetails == "" {
			text, ok := redactJSON([]byte(dv))
			switch {
			case !ok:
				a.AuthorizationDetailsError = "authorization_details is not valid JSON (RFC 9396 section 2 wants a JSON array)"
			case len(text) > maxBody:
				a.AuthorizationDetailsError = "authorization_details is longer than the log keeps"
			default:
				a.AuthorizationDetails = text
			}
		}
	}
	e.Authorize = a
	return e
}
