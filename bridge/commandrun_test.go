package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// callLog is a Controller that records each call as "Method {command}".
type callLog struct{ calls []string }

func (l *callLog) note(method string, cmd any) {
	b, _ := json.Marshal(cmd)
	l.calls = append(l.calls, method+" "+string(b))
}

func (l *callLog) Open(_ context.Context, cmd OpenCommand) (OpenResult, error) {
	l.note("Open", cmd)
	return OpenResult{}, nil
}

func (l *callLog) ApproveConsent(_ context.Context, cmd ApproveCommand) error {
	l.note("ApproveConsent", cmd)
	return nil
}

func (l *callLog) DenyConsent(_ context.Context, cmd ViewCommand) error {
	l.note("DenyConsent", cmd)
	return nil
}

func (l *callLog) Navigate(_ context.Context, cmd NavigateCommand) error {
	l.note("Navigate", cmd)
	return nil
}

func (l *callLog) Eval(_ context.Context, cmd EvalCommand) (json.RawMessage, error) {
	l.note("Eval", cmd)
	if cmd.Script == "undefined" {
		return nil, nil
	}
	return json.RawMessage(`{"v":1}`), nil
}

func (l *callLog) Screenshot(_ context.Context, cmd ScreenshotCommand) (Screenshot, error) {
	l.note("Screenshot", cmd)
	return Screenshot{}, nil
}

func (l *callLog) Close(_ context.Context, cmd ViewCommand) error {
	l.note("Close", cmd)
	return nil
}

// fullLog has every optional ability besides.
type fullLog struct{ callLog }

func (l *fullLog) ShowDevTools(_ context.Context, cmd ViewCommand) error {
	l.note("ShowDevTools", cmd)
	return nil
}

func (l *fullLog) SetDevice(_ context.Context, cmd DeviceCommand) (DeviceResult, error) {
	l.note("SetDevice", cmd)
	return DeviceResult{}, nil
}

func (l *fullLog) SetNetwork(_ context.Context, cmd NetworkCommand) (NetworkResult, error) {
	l.note("SetNetwork", cmd)
	return NetworkResult{}, nil
}

func (l *fullLog) ServiceControl(_ context.Context, control string, params json.RawMessage) (json.RawMessage, error) {
	l.calls = append(l.calls, "ServiceControl "+control+" "+string(params))
	return json.RawMessage(`{}`), nil
}

// TestCommandRun: each command reaches its Controller method with its
// params, a host without an optional ability answers unknown_command
// naming it, and params a command cannot take are invalid_params naming
// the member (docs/automation.md, "Commands").
func TestCommandRun(t *testing.T) {
	for _, tc := range []struct {
		plain bool // a Controller without the optional abilities
		raw   string
		call  string // the call recorded, or
		code  Code   // the refusal, with
		msg   string // a part of its message
	}{
		{raw: `{"id":1,"command":"open","params":{"origin":"http://127.0.0.1:1","id":"a"}}`, call: `Open {"origin":"http://127.0.0.1:1","id":"a"}`},
		{raw: `{"id":1,"command":"open","params":{"profile":"p"}}`, call: `Open {"profile":"p"}`},
		{raw: `{"id":1,"command":"open","params":{"profile":"p","origin":"x"}}`, code: CodeInvalidParams, msg: "not both"},
		{raw: `{"id":1,"command":"open","params":{"id":"a"}}`, code: CodeInvalidParams, msg: "origin is required"},
		{raw: `{"id":1,"command":"open","params":{"origin":"http://127.0.0.1:1"}}`, code: CodeInvalidParams, msg: "id is required"},
		{raw: `{"id":1,"command":"open","params":{"origin":"o","id":1}}`, code: CodeInvalidParams, msg: "id"},
		{raw: `{"id":1,"command":"open","params":{"origin":"o","id":"a","dashboard":2}}`, code: CodeInvalidParams, msg: "dashboard"},
		{raw: `{"id":1,"command":"open","params":{"x":1}}`, code: CodeInvalidParams, msg: "x"},
		{raw: `{"id":1,"command":"consent.approve","params":{"view":"v","account":"acc"}}`, call: `ApproveConsent {"view":"v","account":"acc"}`},
		{raw: `{"id":1,"command":"consent.approve","params":{"account":3}}`, code: CodeInvalidParams, msg: "account"},
		{raw: `{"id":1,"command":"consent.deny","params":{"view":"v"}}`, call: `DenyConsent {"view":"v"}`},
		{raw: `{"id":1,"command":"consent.deny","params":{"account":"a"}}`, code: CodeInvalidParams, msg: "account"},
		{raw: `{"id":1,"command":"close"}`, call: `Close {}`},
		{raw: `{"id":1,"command":"screenshot","params":{"area":"window"}}`, call: `Screenshot {"area":"window"}`},
		{raw: `{"id":1,"command":"screenshot","params":{"area":"moon"}}`, code: CodeInvalidParams, msg: `area: "moon" is not one of`},
		{raw: `{"id":1,"command":"navigate","params":{"url":"http://127.0.0.1:1/a"}}`, call: `Navigate {"url":"http://127.0.0.1:1/a"}`},
		{raw: `{"id":1,"command":"navigate","params":{}}`, code: CodeInvalidParams, msg: "url is required"},
		{raw: `{"id":1,"command":"eval","params":{"script":"1"}}`, call: `Eval {"script":"1"}`},
		{raw: `{"id":1,"command":"eval","params":{"view":1,"script":"1"}}`, code: CodeInvalidParams, msg: "view"},
		{raw: `{"id":1,"command":"devtools.show","params":{"view":"v"}}`, call: `ShowDevTools {"view":"v"}`},
		{plain: true, raw: `{"id":1,"command":"devtools.show"}`, code: CodeUnknownCommand, msg: "no web inspector"},
		{raw: `{"id":1,"command":"device.set","params":{"device":"pixel-8"}}`, call: `SetDevice {"device":"pixel-8"}`},
		{raw: `{"id":1,"command":"device.set","params":{"nope":1}}`, code: CodeInvalidParams, msg: "nope"},
		{plain: true, raw: `{"id":1,"command":"device.set"}`, code: CodeUnknownCommand, msg: "shows no devices"},
		{raw: `{"id":1,"command":"network.set","params":{"throttle":"offline","mocks":[]}}`, call: `SetNetwork {"throttle":"offline","mocks":[]}`},
		{raw: `{"id":1,"command":"network.set","params":{"mocks":{}}}`, code: CodeInvalidParams, msg: "mocks must be an array"},
		{raw: `{"id":1,"command":"network.clear","params":{"throttle":"offline"}}`, code: CodeInvalidParams, msg: "throttle"},
		{plain: true, raw: `{"id":1,"command":"network.clear"}`, code: CodeUnknownCommand, msg: "no network conditions"},
		{raw: `{"id":1,"command":"clock.advance","params":{"duration":"61s"}}`, call: `ServiceControl clock.advance {"duration":"61s"}`},
		{plain: true, raw: `{"id":1,"command":"clock.show"}`, code: CodeUnknownCommand, msg: "operator key"},
		{raw: `{"id":1,"command":"fly"}`, code: CodeUnknownCommand, msg: `no command "fly"`},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			c, derr := decodeCommand([]byte(tc.raw))
			if derr != nil {
				t.Fatal(derr)
			}
			full := &fullLog{}
			var ctl Controller = full
			if tc.plain {
				ctl = &full.callLog
			}
			_, err := c.run(context.Background(), ctl)
			var be *Error
			switch {
			case tc.call != "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.call != "":
				if fmt.Sprint(full.calls) != "["+tc.call+"]" {
					t.Fatalf("calls %q, want %q", full.calls, tc.call)
				}
			case !errors.As(err, &be) || be.Code != tc.code || !strings.Contains(be.Message, tc.msg):
				t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.msg)
			case len(full.calls) != 0:
				t.Fatalf("a refused command called %q", full.calls)
			}
		})
	}
}

// TestEvalUndefined: a script whose completion value is undefined
// answers null.
func TestEvalUndefined(t *testing.T) {
	c, _ := decodeCommand([]byte(`{"id":1,"command":"eval","params":{"script":"undefined"}}`))
	v, err := c.run(context.Background(), &callLog{})
	if err != nil || string(v.(json.RawMessage)) != "null" {
		t.Fatalf("got %v %v, want null", v, err)
	}
}
