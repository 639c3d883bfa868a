package devclient

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestRoute: every control maps to its dashboard route and body, and
// every param it cannot take is refused naming the member.
func TestRoute(t *testing.T) {
	for _, x := range []struct {
		control, params, method, path, body string
	}{
		{FaultAdd, `{"endpoint":"token"}`, "POST", "/api/dev/faults", `{"endpoint":"token"}`},
		{FaultList, ``, "GET", "/api/dev/faults", `null`},
		{FaultList, `null`, "GET", "/api/dev/faults", `null`},
		{FaultClear, `{}`, "DELETE", "/api/dev/faults", `null`},
		{FaultClear, `{"id":"flt a/b"}`, "DELETE", "/api/dev/faults/flt%20a%2Fb", `null`},
		{FaultClear, `{"client_id":"c&d"}`, "DELETE", "/api/dev/faults?client_id=c%26d", `null`},
		{ClockShow, `{}`, "GET", "/api/dev/clock", `null`},
		{ClockAdvance, `{"duration":"61s"}`, "POST", "/api/dev/clock", `{"advance":"61s"}`},
		{ClockSet, `{"time":"2027-01-01T00:00:00Z"}`, "POST", "/api/dev/clock", `{"set":"2027-01-01T00:00:00Z"}`},
		{ClockReset, ``, "POST", "/api/dev/clock", `{"reset":true}`},
		{FixtureApply, `{"fixture":{"version":1}}`, "POST", "/api/dev/fixtures", `{"version":1}`},
		{FixtureReset, `{"x":1}`, "POST", "/api/dev/fixtures/reset", `{"x":1}`},
		{Explain, `{"q":1}`, "POST", "/api/dev/explain", `{"q":1}`},
	} {
		r, err := route(x.control, json.RawMessage(x.params))
		if err != nil {
			t.Errorf("%s %s: %v", x.control, x.params, err)
			continue
		}
		var body []byte
		if raw, ok := r.body.(json.RawMessage); ok && raw == nil {
			body = []byte("null")
		} else if body, err = json.Marshal(r.body); err != nil {
			t.Fatal(err)
		}
		if r.method != x.method || r.path != x.path || string(body) != x.body {
			t.Errorf("%s %s: got %s %s %s, want %s %s %s", x.control, x.params, r.method, r.path, body, x.method, x.path, x.body)
		}
	}
	for _, x := range []struct{ control, params, field, want string }{
		{"nope", `{}`, "", "no such control; the controls are fault.add"},
		{ClockSet, `"x"`, "", "params must be a JSON object"},
		{FaultList, `{"a":1}`, "a", "this control takes no params"},
		{ClockShow, `{"a":1}`, "a", "this control takes no params"},
		{ClockReset, `{"a":1}`, "a", "this control takes no params"},
		{FaultClear, `{"a":1}`, "a", "not a param of this control; it takes id, client_id"},
		{FaultClear, `{"id":1}`, "id", "must be a string"},
		{FaultClear, `{"client_id":1}`, "client_id", "must be a string"},
		{FaultClear, `{"id":"a","client_id":"b"}`, "", "not both"},
		{ClockAdvance, `{"d":"1s"}`, "d", "it takes duration"},
		{ClockAdvance, `{"duration":""}`, "duration", `is required, such as "61s"`},
		{ClockSet, `{}`, "time", `is required, such as "2027-01-01T00:00:00Z"`},
		{ClockSet, `{"time":1}`, "time", "must be a string"},
		{FixtureApply, `{"f":1}`, "f", "it takes fixture"},
		{FixtureApply, `{}`, "fixture", "is required: the fixture file's object"},
	} {
		_, err := route(x.control, json.RawMessage(x.params))
		var pe *ParamsError
		if !errors.As(err, &pe) || pe.Control != x.control || pe.Field != x.field || !strings.Contains(pe.Message, x.want) {
			t.Errorf("%s %s: want a ParamsError at %q saying %q, got %v", x.control, x.params, x.field, x.want, err)
		}
	}
}
