package bridge

import (
	"fmt"
	"strings"
	"testing"
)

// TestMalformed sends messages no bridge script would send, as the view's
// own main frame (the key is right wherever the message has one), and
// expects never a panic and never a host call; an error reply when the
// message is a JSON object with the key, and nothing at all otherwise (id
// -1 below), since nothing else can be attributed to the bridge script.
func TestMalformed(t *testing.T) {
	const key = "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b"
	k := `"key":"` + key + `"`
	tests := []struct {
		name string
		msg  string
		id   int64 // the id the error reply must carry; -1 for no reply
		code Code
	}{
		{"empty", ``, -1, CodeInvalidMessage},
		{"not JSON", `hello`, -1, CodeInvalidMessage},
		{"truncated", `{"v":1,"id":1,` + k, -1, CodeInvalidMessage},
		{"array", `[1,2]`, -1, CodeInvalidMessage},
		{"string", `"ready"`, -1, CodeInvalidMessage},
		{"null", `null`, -1, CodeInvalidMessage},
		{"trailing data", `{"v":1,"id":1,` + k + `,"method":"ready"} {}`, -1, CodeInvalidMessage},
		{"too large", `{"v":1,"id":1,` + k + `,"method":"ready","params":{"x":"` + strings.Repeat("a", MaxMessageSize) + `"}}`, -1, CodeTooLarge},
		{"duplicate method", `{"v":1,"id":2,` + k + `,"method":"ready","method":"close"}`, -1, CodeInvalidMessage},
		{"key of another case", `{"v":1,"id":2,"KEY":"` + key + `","method":"ready"}`, -1, CodeSubframe},
		{"method of another case", `{"v":1,"id":2,` + k + `,"Method":"close"}`, 2, CodeInvalidMessage},
		{"unknown field", `{"v":1,"id":2,` + k + `,"method":"ready","extra":true}`, 2, CodeInvalidMessage},
		{"id missing", `{"v":1,` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"id string", `{"v":1,"id":"2",` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"id zero", `{"v":1,"id":0,` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"id negative", `{"v":1,"id":-3,` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"id fraction", `{"v":1,"id":2.5,` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"id exponent", `{"v":1,"id":2e0,` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"id above 2^53", `{"v":1,"id":9007199254740992,` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"id beyond int64", `{"v":1,"id":99999999999999999999999,` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"id null", `{"v":1,"id":null,` + k + `,"method":"ready"}`, 0, CodeInvalidMessage},
		{"v missing", `{"id":2,` + k + `,"method":"ready"}`, 2, CodeInvalidMessage},
		{"v string", `{"v":"1","id":2,` + k + `,"method":"ready"}`, 2, CodeInvalidMessage},
		{"v 2", `{"v":2,"id":2,` + k + `,"method":"ready"}`, 2, CodeUnsupportedVersion},
		{"method missing", `{"v":1,"id":2,` + k + `}`, 2, CodeInvalidMessage},
		{"method number", `{"v":1,"id":2,` + k + `,"method":7}`, 2, CodeInvalidMessage},
		{"method null", `{"v":1,"id":2,` + k + `,"method":null}`, 2, CodeInvalidMessage},
		{"method empty", `{"v":1,"id":2,` + k + `,"method":""}`, 2, CodeUnknownMethod},
		{"method with NUL", `{"v":1,"id":2,` + k + `,"method":"ready\u0000"}`, 2, CodeUnknownMethod},
		{"params array", `{"v":1,"id":2,` + k + `,"method":"ready","params":[]}`, 2, CodeInvalidMessage},
		{"params null", `{"v":1,"id":2,` + k + `,"method":"ready","params":null}`, 2, CodeInvalidMessage},
		{"params duplicate", `{"v":1,"id":2,` + k + `,"method":"authorize","params":{"scope":"a","scope":"b"}}`, 2, CodeInvalidMessage},
		{"params field of another case", `{"v":1,"id":2,` + k + `,"method":"authorize","params":{"Scope":"openid"}}`, 2, CodeInvalidParams},
		{"key number", `{"v":1,"id":2,"key":1,"method":"ready"}`, -1, CodeSubframe},
		{"nesting deeper than encoding/json reads", `{"v":1,"id":2,` + k + `,"method":"ready","params":{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`, -1, CodeInvalidMessage},
		{"deep nesting in details", `{"v":1,"id":2,` + k + `,"method":"authorize","params":{"authorization_details":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}}`, 2, CodeInvalidParams},
		{"invalid UTF-8", "{\"v\":1,\"id\":2," + k + ",\"method\":\"re\xffady\"}", 2, CodeUnknownMethod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			if fx.d.key != key {
				t.Fatalf("fixture key %q", fx.d.key)
			}
			fx.d.Receive(fx.view.frame(), tt.msg)
			if tt.id < 0 {
				fx.view.none(t)
				fx.refusedEvent(t, 1, map[Code]int{tt.code: 1})
				return
			}
			refusedWith(t, fx.view.next(t), tt.id, tt.code)
			fx.view.none(t)
			if ev := fx.event(t); ev.Decision != DecisionRefused || ev.Code != tt.code {
				t.Errorf("event %+v", ev)
			}
		})
	}
}

// TestMessagesSayWhatIsWrong: a message refused for its JSON says which
// field and which rule, so that the page's developer can fix it; the
// authorization_details a page sends are read by the rules the
// authorization server reads them with (a member named twice at any
// depth, a number longer than 32 characters, nesting deeper than 32
// levels), and refused here with the place named rather than by the
// server later.
func TestMessagesSayWhatIsWrong(t *testing.T) {
	const key = "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b"
	head := `{"v":1,"id":3,"key":"` + key + `",`
	tests := []struct {
		name, msg string
		code      Code
		message   string
	}{
		{"params field twice", head + `"method":"authorize","params":{"scope":"a","scope":"b"}}`, CodeInvalidMessage, `params: duplicate field "scope"`},
		{"detail member twice", head + `"method":"authorize","params":{"authorization_details":[{"type":"bank_account","type":"x"}]}}`,
			CodeInvalidParams, `authorization_details[0].type is given twice in one object; keep one`},
		{"nested detail member twice", head + `"method":"authorize","params":{"authorization_details":[{"type":"bank_account"},{"type":"t","subject":{"type":"a","type":"b"}}]}}`,
			CodeInvalidParams, `authorization_details[1].subject.type is given twice in one object; keep one`},
		{"detail number too long", head + `"method":"authorize","params":{"authorization_details":[{"type":"t","max":1.0000000000000000000000000000000001}]}}`,
			CodeInvalidParams, `authorization_details[0].max: number longer than 32 characters`},
		{"details nested too deep", head + `"method":"authorize","params":{"authorization_details":[{"type":"t","a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}]}}`,
			CodeInvalidParams, `authorization_details[0].a` + strings.Repeat("[0]", 30) + `: nesting deeper than 32 levels`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			fx.d.Receive(fx.view.frame(), tt.msg)
			r := fx.view.next(t)
			refusedWith(t, r, 3, tt.code)
			if r.Error.Message != tt.message {
				t.Fatalf("message %q, want %q", r.Error.Message, tt.message)
			}
		})
	}
}

// FuzzDecode feeds arbitrary bytes to the page and automation decoders and
// to the dispatcher. None may panic, and what the decoder accepts must be
// a well-formed request.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"v":1,"id":1,"key":"k","method":"ready"}`,
		`{"v":1,"id":2,"key":"k","method":"authorize","params":{"scope":"openid","authorization_details":[{"type":"bank_account"}],"org_id":"o"}}`,
		`{"v":1,"id":3,"key":"k","method":"openExternal","params":{"url":"https://a.example/","gesture":true}}`,
		`{"id":1,"command":"open","params":{"origin":"https://a.example","id":"x"}}`,
		`{"id":1,"command":"eval","params":{"script":"1+1"}}`,
		`{"v":1,"id":1,"id":2}`, `[]`, `{}`, `{"a":{"b":[1,{"c":null}]}}`, "\xff", `{"v":1e400}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	fx := newFixture(f, 0)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decodeRequest(raw)
		if err == nil {
			if req.id < 1 || req.id > maxSafeInteger || !req.object {
				t.Fatalf("accepted %q as id %d", raw, req.id)
			}
			if len(raw) > MaxMessageSize {
				t.Fatalf("accepted %d bytes", len(raw))
			}
		} else if err.Code == "" || err.Message == "" {
			t.Fatalf("error without code or message: %+v", err)
		}
		if _, err := decodeCommand(raw); err != nil && err.Code == "" {
			t.Fatalf("command error without code: %+v", err)
		}
		if req.params != nil {
			parseAuthorize(req.params)
			parseOpenExternal(req.params)
		}
		// Through the dispatcher, with the right key spliced in when the
		// input has a key, so the gated paths are reached too.
		msg := strings.Replace(string(raw), `"key":"k"`, fmt.Sprintf(`"key":%q`, fx.d.key), 1)
		fx.d.Receive(fx.view.frame(), msg)
		drain(fx)
	})
}

// drain empties the fixture's outputs without waiting for calls that are
// still running, so a long fuzz run does not fill them.
func drain(fx *fixture) {
	for {
		select {
		case <-fx.view.delivered:
		case _, ok := <-fx.events.C():
			if !ok {
				panic("the fuzz fixture's event subscription was dropped")
			}
		case <-fx.host.started:
			fx.host.consent <- true
		default:
			return
		}
	}
}
