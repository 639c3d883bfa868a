// Package netshape shapes the network of a Miniapp's view
// (docs/playground.md, "Network conditions and mocks"): throttling
// (latency and bandwidth both ways), offline, and mock rules that answer a
// request by method and URL pattern with a status, headers, a body and a
// delay. The host starts one [Proxy], a SOCKS5 proxy, per window on
// 127.0.0.1 and points the Miniapp views' web contexts, and no other view,
// at it; the host's own requests (native consent, the confidential
// callback, the token request) are made by the host process and never pass
// through it.
package netshape

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/strictjson"
)

// Throttle is a network condition: offline, or a latency added to each
// request and bandwidths of each direction. The zero value is no
// throttling.
type Throttle struct {
	// Name is the preset's name ("slow-3g"), or "" for custom figures.
	Name string
	// Offline refuses every connection, as DevTools' "Offline" does: the
	// page sees a network error.
	Offline bool
	// Latency is added once to each request (before its answer), and to
	// each tunnel before it opens.
	Latency time.Duration
	// Down and Up are the bandwidths towards the page and from it, in
	// bytes per second; 0 does not limit.
	Down, Up int64
}

// IsZero reports whether t changes nothing.
func (t Throttle) IsZero() bool { return !t.Offline && t.Latency == 0 && t.Down == 0 && t.Up == 0 }

// Presets are Chrome DevTools' network presets, with its figures
// (devtools-frontend, front_end/core/sdk/NetworkManager.ts:
// Slow3GConditions, "3G", download and upload 500*1000/8*.8 bytes/s,
// latency 400*5 ms; Slow4GConditions, called "Fast 3G" before May 2024,
// download 1.6*1000*1000/8*.9, upload 750*1000/8*.9 bytes/s, latency
// 150*3.75 ms; OfflineConditions).
var Presets = map[string]Throttle{
	"offline": {Name: "offline", Offline: true},
	"slow-3g": {Name: "slow-3g", Latency: 2000 * time.Millisecond, Down: 50000, Up: 50000},
	"fast-3g": {Name: "fast-3g", Latency: 562500 * time.Microsecond, Down: 180000, Up: 84375},
}

// String is t as ParseThrottle reads it: the preset's name, or
// LATENCY/DOWN/UP with the bandwidths in kbit/s; "" for none.
func (t Throttle) String() string {
	switch {
	case t.Name != "":
		return t.Name
	case t.IsZero():
		return ""
	case t.Offline:
		return "offline"
	}
	kbit := func(b int64) string { return strconv.FormatFloat(float64(b)*8/1000, 'f', -1, 64) }
	return t.Latency.String() + "/" + kbit(t.Down) + "/" + kbit(t.Up)
}

// maxLatency bounds a latency or a mock's delay: a longer one is a typo.
const maxLatency = 10 * time.Minute

// ParseThrottle reads a network condition as `--network` takes it: a
// preset (offline, slow-3g, fast-3g), "none" or "" for no throttling, or
// LATENCY/DOWN/UP: a Go duration ("300ms") and two bandwidths in kbit/s
// (1 kbit/s = 1000 bit/s, as DevTools counts), 0 for unlimited.
func ParseThrottle(s string) (Throttle, error) {
	if s == "" || s == "none" {
		return Throttle{}, nil
	}
	if p, ok := Presets[s]; ok {
		return p, nil
	}
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return Throttle{}, fmt.Errorf("network %q: use offline, slow-3g, fast-3g, none, or LATENCY/DOWN/UP (e.g. 300ms/400/400: a latency, then kbit/s down and up, 0 for unlimited)", s)
	}
	lat, err := time.ParseDuration(parts[0])
	if err != nil || lat < 0 || lat > maxLatency {
		return Throttle{}, fmt.Errorf("network %q: the latency %q is not a duration from 0 to 10m (write e.g. 300ms or 2s)", s, parts[0])
	}
	t := Throttle{Latency: lat}
	for i, dst := range []*int64{&t.Down, &t.Up} {
		what := [...]string{"download", "upload"}[i]
		k, err := strconv.ParseFloat(parts[i+1], 64)
		if err != nil || k < 0 || k > 10e6 || k != k {
			return Throttle{}, fmt.Errorf("network %q: the %s bandwidth %q is not a number of kbit/s from 0 (unlimited) to 10000000", s, what, parts[i+1])
		}
		*dst = int64(k * 1000 / 8)
		if k > 0 && *dst == 0 {
			*dst = 1
		}
	}
	return t, nil
}

// MarshalText implements encoding.TextMarshaler: JSON carries t as its
// String.
func (t Throttle) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseThrottle.
func (t *Throttle) UnmarshalText(b []byte) error {
	v, err := ParseThrottle(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Conditions are a launch's network conditions: a throttle and mock rules,
// the first rule that matches a request answering it.
type Conditions struct {
	Throttle Throttle `json:"throttle"`
	Mocks    []Rule   `json:"mocks,omitempty"`
}

// IsZero reports whether c changes nothing.
func (c Conditions) IsZero() bool { return c.Throttle.IsZero() && len(c.Mocks) == 0 }

// Rule is one mock rule: a request whose method and URL match is answered
// by the host with Status, Headers and Body after Delay, and never sent.
type Rule struct {
	// Method is the request's method ("GET"); "" or "*" matches any.
	Method string `json:"method,omitempty"`
	// URL is a pattern of the request's whole URL, query included: "*"
	// matches any run of characters, everything else itself. It is an
	// http:// URL: an https request reaches the host's proxy as a tunnel
	// to a host and port, its URL unseen.
	URL string `json:"url"`
	// Status is the answer's status; 200 when 0.
	Status int `json:"status,omitempty"`
	// Headers are the answer's headers.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the answer's body, as text.
	Body string `json:"body,omitempty"`
	// Delay is how long the host waits before it answers, a Go duration
	// ("250ms").
	Delay string `json:"delay,omitempty"`

	re    *regexp.Regexp
	delay time.Duration
}

// RuleError is what is wrong with a rule: which one (from 0), which field
// (a JSON pointer into the rules file), the rule and the fix.
type RuleError struct {
	Pointer string
	Msg     string
}

func (e *RuleError) Error() string { return "mock rules: " + e.Pointer + ": " + e.Msg }

// maxRules and maxRuleBody bound a rules file.
const (
	maxRules    = 1000
	maxRuleBody = 1 << 20
	// MaxFile bounds a rules file (--mock FILE).
	MaxFile = 4 << 20
)

var (
	methodRE = regexp.MustCompile(`^[A-Z][A-Z-]{0,31}$`)
	tokenRE  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
)

// ruleMembers names a rule's members, for the unknown-member error.
const ruleMembers = "method, url, status, headers, body, delay"

// ParseRulesFile reads a rules file: {"rules": [RULE, ...]}, strict JSON
// (package strictjson: no member twice, no unknown member).
func ParseRulesFile(data []byte) ([]Rule, error) {
	var doc struct {
		Rules *json.RawMessage `json:"rules"`
	}
	if err := strictjson.Unmarshal(data, &doc, strictjson.Limits{}); err != nil {
		var se *strictjson.SyntaxError
		if errors.As(err, &se) && se.Pointer != "" {
			return nil, &RuleError{Pointer: se.Pointer, Msg: se.Error()}
		}
		return nil, &RuleError{Pointer: "/", Msg: fmt.Sprintf("%v: a rules file is {\"rules\": [{\"method\": \"GET\", \"url\": \"http://127.0.0.1:*/api/*\", \"status\": 503}]}", err)}
	}
	if doc.Rules == nil {
		return nil, &RuleError{Pointer: "/rules", Msg: "missing: a rules file is {\"rules\": [...]}"}
	}
	return parseRules(*doc.Rules, "/rules")
}

// ParseRules reads a JSON array of rules (the automation channel's
// network.set mocks).
func ParseRules(data []byte) ([]Rule, error) { return parseRules(data, "/mocks") }

func parseRules(data []byte, at string) ([]Rule, error) {
	var raws []json.RawMessage
	if err := strictjson.Unmarshal(data, &raws, strictjson.Limits{}); err != nil {
		var se *strictjson.SyntaxError
		if errors.As(err, &se) && se.Pointer != "" {
			return nil, &RuleError{Pointer: at + se.Pointer, Msg: se.Error()}
		}
		return nil, &RuleError{Pointer: at, Msg: fmt.Sprintf("%v: give an array of rules", err)}
	}
	if len(raws) > maxRules {
		return nil, &RuleError{Pointer: at, Msg: fmt.Sprintf("%d rules: at most %d", len(raws), maxRules)}
	}
	out := make([]Rule, 0, len(raws))
	for i, raw := range raws {
		ptr := fmt.Sprintf("%s/%d", at, i)
		var r Rule
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			if err := strictjson.Unmarshal(raw, &r, strictjson.Limits{}); err != nil {
				msg := err.Error()
				if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
					return nil, &RuleError{Pointer: ptr + "/" + strings.Trim(name, `"`), Msg: "unknown member: a rule's members are " + ruleMembers}
				}
				return nil, &RuleError{Pointer: ptr, Msg: msg + " (a rule's members are " + ruleMembers + ")"}
			}
		} else {
			return nil, &RuleError{Pointer: ptr, Msg: "a rule is an object: {\"method\": \"GET\", \"url\": \"http://127.0.0.1:*/api/*\", \"status\": 503}"}
		}
		if err := r.compile(ptr); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// compile checks r and readies its pattern and delay; at is its pointer.
func (r *Rule) compile(at string) error {
	bad := func(field, msg string) error { return &RuleError{Pointer: at + "/" + field, Msg: msg} }
	if r.Method == "*" {
		r.Method = ""
	}
	if r.Method != "" && !methodRE.MatchString(r.Method) {
		return bad("method", fmt.Sprintf("%q is not an HTTP method: write it in capitals (GET, POST), or leave it out (or \"*\") for any", r.Method))
	}
	if err := checkPattern(r.URL); err != nil {
		return bad("url", err.Error())
	}
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	if r.Status < 200 || r.Status > 599 {
		return bad("status", fmt.Sprintf("%d is not a status a mock can answer: use 200 to 599", r.Status))
	}
	for name, v := range r.Headers {
		if !tokenRE.MatchString(name) {
			return bad("headers", fmt.Sprintf("%q is not a header name (RFC 9110 §5.1: a token)", name))
		}
		switch http.CanonicalHeaderKey(name) {
		case "Content-Length", "Transfer-Encoding", "Connection":
			return bad("headers/"+name, "the host sets it from the body: leave it out")
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return bad("headers/"+name, "a header value has no line break or NUL")
		}
	}
	if len(r.Body) > maxRuleBody {
		return bad("body", fmt.Sprintf("%d bytes: at most %d", len(r.Body), maxRuleBody))
	}
	if r.Delay != "" {
		d, err := time.ParseDuration(r.Delay)
		if err != nil || d < 0 || d > maxLatency {
			return bad("delay", fmt.Sprintf("%q is not a duration from 0 to 10m: write e.g. 250ms or 2s", r.Delay))
		}
		r.delay = d
	}
	var re strings.Builder
	re.WriteString("^")
	for i, part := range strings.Split(r.URL, "*") {
		if i > 0 {
			re.WriteString(".*")
		}
		re.WriteString(regexp.QuoteMeta(part))
	}
	re.WriteString("$")
	r.re = regexp.MustCompile(re.String())
	return nil
}

// checkPattern checks a rule's URL pattern.
func checkPattern(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("missing: give the URL the rule answers, \"*\" matching any run of characters (http://127.0.0.1:*/api/*)")
	case strings.HasPrefix(p, "https://"):
		return fmt.Errorf("%q: an https request reaches the host's proxy as a tunnel to a host and port, its URL unseen, so no rule can answer it; mock the Miniapp on http:// (the playground's and dev's are on http://127.0.0.1), or throttle it with --network", p)
	case !strings.HasPrefix(p, "http://"):
		return fmt.Errorf("%q does not start with http://: a rule matches a whole URL (http://127.0.0.1:*/api/*)", p)
	case len(p) > 2048:
		return fmt.Errorf("the pattern is %d characters long: at most 2048", len(p))
	case strings.ContainsAny(p, " \t\r\n\x00#"):
		return fmt.Errorf("%q has a space, a control character or a fragment (#): a request's URL has none of them", p)
	}
	return nil
}

// Matches reports whether r answers a request of method to u (a whole
// URL as the proxy saw it).
func (r *Rule) Matches(method, u string) bool {
	return (r.Method == "" || r.Method == method) && r.re != nil && r.re.MatchString(u)
}

// Compile checks rules made in Go (not read by ParseRules) and readies
// them; the error names the rule by its place.
func Compile(rules []Rule) error {
	for i := range rules {
		if err := rules[i].compile(fmt.Sprintf("/mocks/%d", i)); err != nil {
			return err
		}
	}
	return nil
}
