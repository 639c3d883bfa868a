package bridge

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/miniapp-host/miniapp-host/redact"
)

// inspectingController is a memController whose host has a web inspector.
type inspectingController struct {
	*memController
	mu    sync.Mutex // guards shown
	shown []string   // the views whose inspector was shown
}

func (c *inspectingController) ShowDevTools(_ context.Context, cmd ViewCommand) error {
	if cmd.View != "" && cmd.View != "main" {
		return Errorf(CodeInvalidParams, "no view %s", quote(cmd.View))
	}
	c.mu.Lock()
	c.shown = append(c.shown, cmd.View)
	c.mu.Unlock()
	return nil
}

// TestAutomationDevTools: devtools.show reaches a host with an inspector,
// with its params as strict as every command's, and a host without one
// says it has none rather than failing.
func TestAutomationDevTools(t *testing.T) {
	ask := func(t *testing.T, ctl Controller, send string) string {
		t.Helper()
		a, err := NewAutomation(AutomationConfig{Bus: NewBus(nil), Controller: ctl})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Listen(); err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		c := dial(t, a, nil)
		if err := c.WriteMessage(websocket.TextMessage, []byte(send)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(time.Minute))
		_, got, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	ic := &inspectingController{memController: newMemController()}
	tests := []struct {
		name string
		ctl  Controller
		send string
		want string
	}{
		{"shown", ic, `{"id":1,"command":"devtools.show","params":{"view":"main"}}`, `{"type":"reply","id":1,"ok":true}`},
		{"no params", ic, `{"id":2,"command":"devtools.show"}`, `{"type":"reply","id":2,"ok":true}`},
		{"unknown param", ic, `{"id":3,"command":"devtools.show","params":{"frame":"x"}}`,
			`{"type":"reply","id":3,"ok":false,"error":{"code":"invalid_params","message":"unknown field \"frame\""}}`},
		{"the host's error", ic, `{"id":4,"command":"devtools.show","params":{"view":"other"}}`,
			`{"type":"reply","id":4,"ok":false,"error":{"code":"invalid_params","message":"no view \"other\""}}`},
		{"no inspector", newMemController(), `{"id":5,"command":"devtools.show"}`,
			`{"type":"reply","id":5,"ok":false,"error":{"code":"unknown_command","message":"this host has no web inspector (command \"devtools.show\")"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ask(t, tt.ctl, tt.send); got != tt.want {
				t.Fatalf("reply\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if len(ic.shown) != 2 || ic.shown[0] != "main" || ic.shown[1] != "" {
		t.Errorf("inspector shown for views %q, want [main \"\"]", ic.shown)
	}
}

// TestConsoleEventRedacted: a page at its redirect_uri has the code in its
// URL, and its console messages name that URL as their frame and source;
// on the channel the code is a fingerprint and the line and column stay.
func TestConsoleEventRedacted(t *testing.T) {
	bus := NewBus(nil)
	s := bus.Subscribe(1)
	bus.Publish(ConsoleEvent{Type: "console", Level: "error", Message: "boom",
		Source: "https://app.example/cb?code=abc:12:5", Frame: "https://app.example/cb?code=abc", MainFrame: true})
	var env struct {
		Kind string          `json:"kind"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(<-s.C(), &env); err != nil {
		t.Fatal(err)
	}
	fp := redact.Fingerprint("abc")
	want := `{"type":"console","level":"error","message":"boom","source":"https://app.example/cb?code=` + fp +
		`:12:5","frame":"https://app.example/cb?code=` + fp + `","main_frame":true}`
	if env.Kind != "console" || string(env.Data) != want {
		t.Fatalf("event %s %s\nwant console %s", env.Kind, env.Data, want)
	}
}
