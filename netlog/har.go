package netlog

import (
	"cmp"
	"net/url"
	"strings"
)

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/). Members the
// spec does not define start with an underscore, as it asks.

// HAR is a HAR document.
type HAR struct {
	Log HARLog `json:"log"`
}

// HARLog is the document's log object.
type HARLog struct {
	Version string     `json:"version"`
	Creator HARCreator `json:"creator"`
	Entries []HAREntry `json:"entries"`
	Comment string     `json:"comment,omitempty"`
	// TraceID is the flow's trace id (FlowSummary.TraceID).
	TraceID string `json:"_trace_id,omitempty"`
}

// HARCreator names the program that wrote the document.
type HARCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// HAREntry is one exchange.
type HAREntry struct {
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         HARRequest  `json:"request"`
	Response        HARResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         HARTimings  `json:"timings"`
	Comment         string      `json:"comment,omitempty"`
	// The log's own members.
	Flow      string     `json:"_flow"`
	Launch    string     `json:"_launch"`
	Source    string     `json:"_source"`
	Kind      string     `json:"_kind"`
	Error     string     `json:"_error,omitempty"`
	Note      string     `json:"_note,omitempty"`
	Authorize *Authorize `json:"_authorize,omitempty"`
	Curl      string     `json:"_curl"`
	// Injected is Entry.Injected: a fault's or a mock rule's answer.
	Injected string `json:"_injected,omitempty"`
}

// HARNameValue is a header or a query parameter.
type HARNameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HARCookie is a cookie; its value is redacted.
type HARCookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Path     string `json:"path,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Expires  string `json:"expires,omitempty"`
	HTTPOnly bool   `json:"httpOnly"`
	Secure   bool   `json:"secure"`
	SameSite string `json:"_sameSite,omitempty"`
	MaxAge   *int   `json:"_maxAge,omitempty"`
}

// HARRequest is an entry's request.
type HARRequest struct {
	Method      string         `json:"method"`
	URL         string         `json:"url"`
	HTTPVersion string         `json:"httpVersion"`
	Cookies     []HARCookie    `json:"cookies"`
	Headers     []HARNameValue `json:"headers"`
	QueryString []HARNameValue `json:"queryString"`
	PostData    *HARPostData   `json:"postData,omitempty"`
	HeadersSize int            `json:"headersSize"`
	BodySize    int64          `json:"bodySize"`
}

// HARPostData is a request's body.
type HARPostData struct {
	MimeType string         `json:"mimeType"`
	Params   []HARNameValue `json:"params"`
	Text     string         `json:"text"`
	Comment  string         `json:"comment,omitempty"`
}

// HARResponse is an entry's response.
type HARResponse struct {
	Status      int            `json:"status"`
	StatusText  string         `json:"statusText"`
	HTTPVersion string         `json:"httpVersion"`
	Cookies     []HARCookie    `json:"cookies"`
	Headers     []HARNameValue `json:"headers"`
	Content     HARContent     `json:"content"`
	RedirectURL string         `json:"redirectURL"`
	HeadersSize int            `json:"headersSize"`
	BodySize    int64          `json:"bodySize"`
	Comment     string         `json:"comment,omitempty"`
}

// HARContent is a response's body.
type HARContent struct {
	Size     int64  `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
	Comment  string `json:"comment,omitempty"`
}

// HARTimings split the entry's time; -1 is "does not apply".
type HARTimings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
	SSL     float64 `json:"ssl"`
}

// harTime is HAR's date format: ISO 8601 with milliseconds and the zone.
const harTime = "2006-01-02T15:04:05.000Z07:00"

// HAR exports the flow id as a HAR 1.2 document.
func (l *Log) HAR(id string) (*HAR, bool) {
	x, ok := l.Flow(id)
	if !ok {
		return nil, false
	}
	h := &HAR{Log: HARLog{Version: "1.2", Creator: HARCreator{Name: l.cfg.Creator, Version: l.cfg.Version},
		Entries: make([]HAREntry, 0, len(x.Entries)),
		Comment: "flow " + x.ID + " of " + x.Origin + " (" + x.MiniappID + "), client " + x.ClientID + ", " + x.Outcome +
			"; secrets are redacted (docs/host.md, \"Network log\")", TraceID: x.TraceID}}
	for _, e := range x.Entries {
		h.Log.Entries = append(h.Log.Entries, harEntry(e))
	}
	return h, true
}

func harEntry(e Entry) HAREntry {
	he := HAREntry{StartedDateTime: e.Started.Format(harTime), Time: e.DurationMS, Flow: e.Flow, Launch: e.Launch,
		Source: e.Source, Kind: e.Kind, Error: e.Error, Note: e.Note, Authorize: e.Authorize, Curl: e.Curl, Injected: e.Injected,
		Timings: HARTimings{Blocked: -1, DNS: -1, Connect: -1, SSL: -1, Send: e.Timings.Send, Wait: e.Timings.Wait, Receive: e.Timings.Receive}}
	r := e.Request
	he.Request = HARRequest{Method: r.Method, URL: r.URL, HTTPVersion: "HTTP/1.1", Cookies: harCookies(r.Cookies),
		Headers: harHeaders(r.Headers), QueryString: harQuery(r.URL), HeadersSize: -1, BodySize: 0}
	if r.Body != nil {
		he.Request.BodySize = r.Body.Size
		he.Request.PostData = &HARPostData{MimeType: r.Body.MimeType, Params: []HARNameValue{}, Text: r.Body.Text, Comment: r.Body.Comment}
	}
	if e.Response == nil {
		// No response: HAR has no place for that but status 0, as
		// browsers export a blocked request.
		he.Response = HARResponse{StatusText: "", HTTPVersion: "", Cookies: []HARCookie{}, Headers: []HARNameValue{},
			Content: HARContent{Size: 0, MimeType: ""}, HeadersSize: -1, BodySize: -1, Comment: cmp.Or(e.Error, e.Note)}
		return he
	}
	p := e.Response
	he.Response = HARResponse{Status: p.Status, StatusText: p.StatusText, HTTPVersion: p.HTTPVersion, Cookies: harCookies(p.Cookies),
		Headers: harHeaders(p.Headers), RedirectURL: p.RedirectURL, HeadersSize: -1, BodySize: -1,
		Content: HARContent{Size: -1}}
	if p.Body != nil {
		he.Response.BodySize = p.Body.Size
		he.Response.Content = HARContent{Size: p.Body.Size, MimeType: p.Body.MimeType, Text: p.Body.Text, Comment: p.Body.Comment}
	} else {
		he.Response.Content.Size = 0
		he.Response.BodySize = 0
	}
	if he.Response.Content.MimeType == "" {
		for _, h := range p.Headers {
			if strings.EqualFold(h.Name, "Content-Type") {
				he.Response.Content.MimeType = h.Value
			}
		}
	}
	return he
}

func harHeaders(hs []Header) []HARNameValue {
	out := make([]HARNameValue, 0, len(hs))
	for _, h := range hs {
		out = append(out, HARNameValue(h))
	}
	return out
}

func harCookies(cs []Cookie) []HARCookie {
	out := make([]HARCookie, 0, len(cs))
	for _, c := range cs {
		hc := HARCookie{Name: c.Name, Value: c.Value, Path: c.Path, Domain: c.Domain, HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: c.SameSite,
			MaxAge: c.MaxAge}
		if c.Expires != nil {
			hc.Expires = c.Expires.Format(harTime)
		}
		out = append(out, hc)
	}
	return out
}

// harQuery lists the (already redacted) URL's query parameters.
func harQuery(raw string) []HARNameValue {
	out := []HARNameValue{}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		if p == "" {
			continue
		}
		n, v, _ := strings.Cut(p, "=")
		if dn, err := url.QueryUnescape(n); err == nil {
			n = dn
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			v = dv
		}
		out = append(out, HARNameValue{Name: n, Value: v})
	}
	return out
}
