// Package devclient is the Go client of a development server's controls
// (docs/dashboard.md, "Development controls"): the faults, the clock, the
// fixtures and explain, each named by one control name that the automation
// channel (docs/automation.md), the WebDriver front's extension commands
// (docs/webdriver.md) and the npm helper share, and mapped here, once, to
// its dashboard route.
package devclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// The controls, by name.
const (
	FaultAdd     = "fault.add"
	FaultList    = "fault.list"
	FaultClear   = "fault.clear"
	ClockShow    = "clock.show"
	ClockAdvance = "clock.advance"
	ClockSet     = "clock.set"
	ClockReset   = "clock.reset"
	FixtureApply = "fixture.apply"
	FixtureReset = "fixture.reset"
	Explain      = "explain"
)

// Controls lists every control name, in the order the documentation gives.
var Controls = []string{FaultAdd, FaultList, FaultClear, ClockShow, ClockAdvance, ClockSet, ClockReset,
	FixtureApply, FixtureReset, Explain}

// Known reports whether name is a control.
func Known(name string) bool { return slices.Contains(Controls, name) }

// Client calls a development server's controls with the operator
// credential.
type Client struct {
	// Dashboard is {dashboard_url}, such as "http://127.0.0.1:8601".
	Dashboard string
	// Key is the operator credential.
	Key string
	// HTTP sends the requests; nil means a client with a 30 s timeout
	// (a delay fault is the caller's to wait for, not the control's).
	HTTP *http.Client
}

// ParamsError is params that the control cannot take, before anything is
// sent: the member, and what to send instead.
type ParamsError struct {
	Control, Field, Message string
}

func (e *ParamsError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Control, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", e.Control, e.Field, e.Message)
}

// ServiceError is the service's refusal of a control: the dashboard API's
// error object (docs/dashboard.md, "Errors").
type ServiceError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message,omitempty"`
}

func (e *ServiceError) Error() string {
	msg := fmt.Sprintf("the service refused it: %d %s", e.Status, e.Code)
	if e.Field != "" {
		msg += " at " + e.Field
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Code == "development_only" {
		msg += " (this server has no development controls: its issuer is not on loopback)"
	}
	return msg
}

// request is the route a control's params become.
type request struct {
	method, path string
	body         any // nil for none
}

// route maps control and its params (a JSON object, or empty for none) to
// its dashboard route.
func route(control string, params json.RawMessage) (request, error) {
	p := controlParams{control: control, raw: params, fields: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(params)) > 0 && string(bytes.TrimSpace(params)) != "null" {
		if err := json.Unmarshal(params, &p.fields); err != nil {
			return request{}, &ParamsError{Control: control, Message: "params must be a JSON object"}
		}
	}
	r, ok := routes[control]
	if !ok {
		return request{}, &ParamsError{Control: control, Message: "no such control; the controls are " + strings.Join(Controls, ", ")}
	}
	return r(p)
}

// routes maps each control to the reading of its params into a route.
var routes = map[string]func(controlParams) (request, error){
	FaultAdd:     func(p controlParams) (request, error) { return request{"POST", "/api/dev/faults", p.raw}, nil },
	FaultList:    func(p controlParams) (request, error) { return request{"GET", "/api/dev/faults", nil}, p.only() },
	FaultClear:   faultClearRoute,
	ClockShow:    func(p controlParams) (request, error) { return request{"GET", "/api/dev/clock", nil}, p.only() },
	ClockAdvance: clockAdvanceRoute,
	ClockSet:     clockSetRoute,
	ClockReset: func(p controlParams) (request, error) {
		return request{"POST", "/api/dev/clock", map[string]bool{"reset": true}}, p.only()
	},
	FixtureApply: fixtureApplyRoute,
	FixtureReset: func(p controlParams) (request, error) { return request{"POST", "/api/dev/fixtures/reset", p.raw}, nil },
	Explain:      func(p controlParams) (request, error) { return request{"POST", "/api/dev/explain", p.raw}, nil },
}

// controlParams is a control's params: as given, and by member.
type controlParams struct {
	control string
	raw     json.RawMessage
	fields  map[string]json.RawMessage
}

// only refuses a member not among names.
func (p controlParams) only(names ...string) error {
	for k := range p.fields {
		if !slices.Contains(names, k) {
			if len(names) == 0 {
				return &ParamsError{Control: p.control, Field: k, Message: "this control takes no params"}
			}
			return &ParamsError{Control: p.control, Field: k, Message: "not a param of this control; it takes " + strings.Join(names, ", ")}
		}
	}
	return nil
}

// str reads an optional string member.
func (p controlParams) str(name string) (string, bool, error) {
	raw, ok := p.fields[name]
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, &ParamsError{Control: p.control, Field: name, Message: "must be a string"}
	}
	return s, true, nil
}

// required reads a string member that must be present and non-empty.
func (p controlParams) required(name, example string) (string, error) {
	s, ok, err := p.str(name)
	if err == nil && (!ok || s == "") {
		err = &ParamsError{Control: p.control, Field: name, Message: "is required, such as " + example}
	}
	return s, err
}

// faultClearRoute removes one fault (id), a client's (client_id) or all.
func faultClearRoute(p controlParams) (request, error) {
	if err := p.only("id", "client_id"); err != nil {
		return request{}, err
	}
	id, hasID, err := p.str("id")
	if err != nil {
		return request{}, err
	}
	client, hasClient, err := p.str("client_id")
	if err != nil {
		return request{}, err
	}
	switch {
	case hasID && hasClient:
		return request{}, &ParamsError{Control: p.control, Message: "give id (one fault) or client_id (a client's faults), not both"}
	case hasID:
		return request{"DELETE", "/api/dev/faults/" + url.PathEscape(id), nil}, nil
	case hasClient:
		return request{"DELETE", "/api/dev/faults?" + url.Values{"client_id": {client}}.Encode(), nil}, nil
	}
	return request{"DELETE", "/api/dev/faults", nil}, nil
}

// clockAdvanceRoute moves the clock on by a duration.
func clockAdvanceRoute(p controlParams) (request, error) {
	if err := p.only("duration"); err != nil {
		return request{}, err
	}
	d, err := p.required("duration", `"61s"`)
	return request{"POST", "/api/dev/clock", map[string]string{"advance": d}}, err
}

// clockSetRoute sets the clock to a time.
func clockSetRoute(p controlParams) (request, error) {
	if err := p.only("time"); err != nil {
		return request{}, err
	}
	t, err := p.required("time", `"2027-01-01T00:00:00Z"`)
	return request{"POST", "/api/dev/clock", map[string]string{"set": t}}, err
}

// fixtureApplyRoute applies the fixture file's object.
func fixtureApplyRoute(p controlParams) (request, error) {
	if err := p.only("fixture"); err != nil {
		return request{}, err
	}
	f, ok := p.fields["fixture"]
	if !ok {
		return request{}, &ParamsError{Control: p.control, Field: "fixture", Message: "is required: the fixture file's object (docs/dashboard.md, \"Fixtures\")"}
	}
	return request{"POST", "/api/dev/fixtures", f}, nil
}

// maxAnswer caps an answer read.
const maxAnswer = 4 << 20

// Do runs control with params (a JSON object; nil for none) and returns
// the service's JSON answer. Params the control cannot take are a
// *ParamsError, the service's refusal a *ServiceError; anything else is a
// failure to reach the service.
func (c *Client) Do(ctx context.Context, control string, params json.RawMessage) (json.RawMessage, error) {
	req, err := route(control, params)
	if err != nil {
		return nil, err
	}
	if c.Dashboard == "" || c.Key == "" {
		return nil, errors.New("devclient: the dashboard URL and the operator key are both needed for the development controls")
	}
	var body io.Reader = http.NoBody
	if req.body != nil {
		var b []byte
		if raw, ok := req.body.(json.RawMessage); ok {
			b = raw
		} else if b, err = json.Marshal(req.body); err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, strings.TrimSuffix(c.Dashboard, "/")+req.path, body)
	if err != nil {
		return nil, fmt.Errorf("devclient: %w", err)
	}
	// The dashboard's gate wants JSON on every request that changes state.
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+c.Key)
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	a, err := jsonhttp.Do(hc, hr, maxAnswer)
	if err != nil {
		return nil, fmt.Errorf("devclient: %w", err)
	}
	if a.Status >= 300 {
		se := &ServiceError{}
		if json.Unmarshal(a.Body, se) != nil || se.Code == "" {
			return nil, fmt.Errorf("devclient: %s %s: %s", req.method, req.path, a.StatusText)
		}
		se.Status = a.Status
		return nil, se
	}
	if len(bytes.TrimSpace(a.Body)) == 0 {
		return json.RawMessage("null"), nil
	}
	var raw json.RawMessage
	if err := a.Decode(&raw); err != nil {
		return nil, fmt.Errorf("devclient: %w", err)
	}
	return raw, nil
}
