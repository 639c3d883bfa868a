package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// approveRecorder keeps the consent.approve it was given.
type approveRecorder struct {
	Controller
	got ApproveCommand
}

func (r *approveRecorder) ApproveConsent(_ context.Context, cmd ApproveCommand) error {
	r.got = cmd
	return nil
}

// TestApproveChoices: consent.approve takes per-entry decisions as the
// native-consent API names them; without them the screen's own are kept
// (the command as before), and a malformed one is refused naming it.
func TestApproveChoices(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		want         string // the choices as JSON, "null" for none; or the error
	}{
		{"none: the screen's choices", `{"account":"acc-1"}`, `null`},
		{"declines and a lowered maximum", `{"declined_scopes":["email"],"declined_details":[2],"lowered_maximums":[{"index":1,"maximum":"20000"}]}`,
			`{"declined_scopes":["email"],"declined_details":[2],"lowered_maximums":[{"index":1,"maximum":"20000"}]}`},
		{"an empty decline list grants everything", `{"declined_details":[]}`, `{"declined_scopes":[],"declined_details":[],"lowered_maximums":[]}`},
		{"a scope that is no string", `{"declined_scopes":[3]}`, "declined_scopes[0] must be a scope name"},
		{"a detail that is no index", `{"declined_details":["2"]}`, "declined_details[0] must be the index"},
		{"a negative index", `{"declined_details":[-1]}`, "declined_details[0] must be the index"},
		{"not an array", `{"declined_scopes":"email"}`, "declined_scopes must be an array"},
		{"a maximum as a number", `{"lowered_maximums":[{"index":1,"maximum":20000}]}`, "lowered_maximums[0].maximum must be an amount as a string"},
		{"a maximum without index", `{"lowered_maximums":[{"maximum":"1"}]}`, "lowered_maximums[0].index must be the index"},
		{"a maximum with another member", `{"lowered_maximums":[{"index":1,"maximum":"1","minimum":"1"}]}`, `lowered_maximums[0]: unknown field "minimum"`},
		{"an unknown member", `{"declined":["email"]}`, `unknown field "declined"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, perr := decodeCommand([]byte(`{"id":1,"command":"consent.approve","params":` + tc.params + `}`))
			if perr != nil {
				t.Fatal(perr)
			}
			rec := &approveRecorder{}
			_, err := c.run(context.Background(), rec)
			if strings.HasPrefix(tc.want, "{") || tc.want == "null" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				got, _ := json.Marshal(rec.got.Choices)
				if string(got) != tc.want {
					t.Fatalf("choices %s, want %s", got, tc.want)
				}
				return
			}
			if e, ok := err.(*Error); !ok || e.Code != CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("error %v, want invalid_params with %q", err, tc.want)
			}
		})
	}
	// The client's side of the wire: set choices are sent whole.
	js, _ := json.Marshal(ApproveCommand{Account: "a", Choices: &ConsentChoices{DeclinedScopes: []string{"email"}}})
	if string(js) != `{"account":"a","declined_scopes":["email"],"declined_details":[],"lowered_maximums":[]}` {
		t.Fatalf("ApproveCommand as params: %s", js)
	}
	if js, _ = json.Marshal(ApproveCommand{Account: "a"}); string(js) != `{"account":"a"}` {
		t.Fatalf("ApproveCommand without choices: %s", js)
	}
}
