package bridge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// networkController is a memController whose host sets network
// conditions: it records the commands it got.
type networkController struct {
	*memController
	mu   sync.Mutex // guards cmds
	cmds []NetworkCommand
}

func (c *networkController) SetNetwork(_ context.Context, cmd NetworkCommand) (NetworkResult, error) {
	c.mu.Lock()
	c.cmds = append(c.cmds, cmd)
	c.mu.Unlock()
	// Mocks: the length of the text it got, which says it got it whole.
	return NetworkResult{Throttle: cmd.Throttle, Mocks: len(cmd.Mocks)}, nil
}

// TestAutomationNetwork: network.set and network.clear reach a host that
// sets network conditions, their params as strict as every command's
// (mocks an array, no unknown member; clear takes none), and a host
// without them says so rather than failing.
func TestAutomationNetwork(t *testing.T) {
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
	nc := &networkController{memController: newMemController()}
	for _, tt := range []struct {
		name string
		ctl  Controller
		send string
		want string
	}{
		{"set", nc, `{"id":1,"command":"network.set","params":{"throttle":"slow-3g","mocks":[{"url":"http://a/*"}]}}`,
			`{"type":"reply","id":1,"ok":true,"result":{"throttle":"slow-3g","mocks":22}}`},
		{"clear", nc, `{"id":2,"command":"network.clear"}`, `{"type":"reply","id":2,"ok":true,"result":{"throttle":"","mocks":0}}`},
		{"mocks not an array", nc, `{"id":3,"command":"network.set","params":{"mocks":{"url":"http://a/*"}}}`,
			`{"type":"reply","id":3,"ok":false,"error":{"code":"invalid_params","message":"mocks must be an array of mock rules"}}`},
		{"unknown param", nc, `{"id":4,"command":"network.set","params":{"throtle":"slow-3g"}}`,
			`{"type":"reply","id":4,"ok":false,"error":{"code":"invalid_params","message":"unknown field \"throtle\""}}`},
		{"throttle not a string", nc, `{"id":5,"command":"network.set","params":{"throttle":3}}`,
			`{"type":"reply","id":5,"ok":false,"error":{"code":"invalid_params","message":"throttle must be a string"}}`},
		{"clear takes no throttle", nc, `{"id":6,"command":"network.clear","params":{"throttle":"offline"}}`,
			`{"type":"reply","id":6,"ok":false,"error":{"code":"invalid_params","message":"unknown field \"throttle\""}}`},
		{"no network", newMemController(), `{"id":7,"command":"network.set"}`,
			`{"type":"reply","id":7,"ok":false,"error":{"code":"unknown_command","message":"this host sets no network conditions (command \"network.set\")"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ask(t, tt.ctl, tt.send); got != tt.want {
				t.Fatalf("reply\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if len(nc.cmds) != 2 || nc.cmds[0].Throttle != "slow-3g" || string(nc.cmds[0].Mocks) != `[{"url":"http://a/*"}]` || nc.cmds[1].Throttle != "" || nc.cmds[1].Mocks != nil {
		t.Errorf("the host got %+v", nc.cmds)
	}
}
