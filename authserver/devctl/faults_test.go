package devctl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFaultSpecParse: every refusal of a fault's specification names its
// member and rule, and every accepted effect lands in the view and the
// effect (docs/dashboard.md, "Development controls").
func TestFaultSpecParse(t *testing.T) {
	long := strings.Repeat("x", maxDescLen+1)
	bad := []struct {
		body, code, field, want string
	}{
		{`{}`, CodeMissingField, "/endpoint", "name the endpoint"},
		{`{"endpoint": "tokn", "client_id": "c", "drop": true}`, CodeInvalidField, "/endpoint", `"tokn" is no endpoint`},
		{`{"endpoint": "token"}`, CodeMissingField, "/client_id", "name the client_id"},
		{`{"endpoint": "token", "client_id": "c", "subject": "", "drop": true}`, CodeInvalidField, "/subject", "subject is empty"},
		{`{"endpoint": "token", "client_id": "c", "times": 0, "drop": true}`, CodeInvalidField, "/times", "1 to 1000000"},
		{`{"endpoint": "token", "client_id": "c"}`, CodeInvalidBody, "", "exactly one effect"},
		{`{"endpoint": "token", "client_id": "c", "drop": true, "status": 500}`, CodeInvalidBody, "", "exactly one effect"},
		{`{"endpoint": "token", "client_id": "c", "drop": true, "error_description": "x"}`, CodeInvalidField, "/error_description", "with error only"},
		{`{"endpoint": "token", "client_id": "c", "drop": true, "retry_after": 1}`, CodeInvalidField, "/retry_after", "with status only"},
		{`{"endpoint": "token", "client_id": "c", "error": "access_denied"}`, CodeInvalidField, "/error", "invalid_grant"},
		{`{"endpoint": "token", "client_id": "c", "error": "server_error", "error_description": "` + long + `"}`, CodeInvalidField, "/error_description", "at most 500"},
		{`{"endpoint": "token", "client_id": "c", "error": "server_error", "error_description": "a\\\\b"}`, CodeInvalidField, "/error_description", "at byte 1"},
		{`{"endpoint": "token", "client_id": "c", "status": 399}`, CodeInvalidField, "/status", "400 to 599"},
		{`{"endpoint": "token", "client_id": "c", "status": 503, "retry_after": 86401}`, CodeInvalidField, "/retry_after", "1 to 86400"},
		{`{"endpoint": "token", "client_id": "c", "delay": "soon"}`, CodeInvalidField, "/delay", "not a duration"},
		{`{"endpoint": "token", "client_id": "c", "delay": "11m"}`, CodeInvalidField, "/delay", "at most 10m0s"},
		{`{"endpoint": "token", "client_id": "c", "drop": false}`, CodeInvalidField, "/drop", `"drop": true`},
	}
	for _, tc := range bad {
		var s faultSpec
		if err := json.Unmarshal([]byte(tc.body), &s); err != nil {
			t.Fatal(err)
		}
		_, err := s.parse()
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: got %v, want a refusal", tc.body, err)
			continue
		}
		if e.Code != tc.code || e.Field != tc.field || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: got %s %s %q, want %s %s containing %q", tc.body, e.Code, e.Field, e.Message, tc.code, tc.field, tc.want)
		}
	}

	good := []struct {
		body   string
		view   FaultView
		effect func(f *fault) bool
		times  int
	}{
		{`{"endpoint": "token", "client_id": "c", "subject": "sub_ana", "times": 2, "error": "server_error", "error_description": "down"}`,
			FaultView{Endpoint: "token", ClientID: "c", Subject: "sub_ana", Times: 2, Error: "server_error", ErrorDescription: "down"},
			func(f *fault) bool { return f.effect.Error == "server_error" && f.effect.Description == "down" }, 2},
		{`{"endpoint": "token", "client_id": "c", "status": 503, "retry_after": 7}`,
			FaultView{Endpoint: "token", ClientID: "c", Status: 503, RetryAfter: 7},
			func(f *fault) bool { return f.effect.Status == 503 && f.effect.RetryAfter == 7 }, -1},
		{`{"endpoint": "token", "client_id": "c", "delay": "1500ms"}`,
			FaultView{Endpoint: "token", ClientID: "c", Delay: "1.5s"},
			func(f *fault) bool { return f.effect.Delay == 1500*time.Millisecond }, -1},
		{`{"endpoint": "token", "client_id": "c", "drop": true}`,
			FaultView{Endpoint: "token", ClientID: "c", Drop: true},
			func(f *fault) bool { return f.effect.Drop }, -1},
	}
	for _, tc := range good {
		var s faultSpec
		if err := json.Unmarshal([]byte(tc.body), &s); err != nil {
			t.Fatal(err)
		}
		f, err := s.parse()
		if err != nil {
			t.Errorf("%s: refused: %v", tc.body, err)
			continue
		}
		if f.view != tc.view || !tc.effect(f) || f.remaining != tc.times {
			t.Errorf("%s: got view %+v effect %+v remaining %d", tc.body, f.view, f.effect, f.remaining)
		}
	}
}
