package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/miniapp-host/miniapp-host/redact"
)

const playground = "http://127.0.0.1:8440"

// memController is an in-memory Controller: views with a URL and a
// consent screen that can be answered once.
type memController struct {
	mu       sync.Mutex // guards below
	views    map[string]*memControlledView
	last     string
	decision string
}

type memControlledView struct {
	url      string
	consent  bool // a consent screen is up
	accounts []string
	closed   bool
}

func newMemController() *memController {
	return &memController{views: map[string]*memControlledView{}}
}

func (c *memController) view(id string) (*memControlledView, error) {
	if id == "" {
		id = c.last
	}
	v, ok := c.views[id]
	if !ok || v.closed {
		return nil, Errorf("no_view", "no open view %s", quote(id))
	}
	return v, nil
}

func (c *memController) Open(_ context.Context, cmd OpenCommand) (OpenResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !strings.HasPrefix(cmd.Origin, "https://") {
		return OpenResult{}, errors.New("resolver: manifest: 404 Not Found")
	}
	id := fmt.Sprintf("view-%d", len(c.views)+1)
	c.views[id] = &memControlledView{url: cmd.Origin + "/", consent: true, accounts: []string{"acc-1", "acc-2"}}
	c.last = id
	return OpenResult{View: id}, nil
}

func (c *memController) ApproveConsent(_ context.Context, cmd ApproveCommand) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.view(cmd.View)
	if err != nil {
		return err
	}
	if !v.consent {
		return Errorf("no_consent", "no consent screen is shown")
	}
	if cmd.Account != "" && cmd.Account != v.accounts[0] && cmd.Account != v.accounts[1] {
		return Errorf("no_account", "the screen offers no account %s", quote(cmd.Account))
	}
	v.consent = false
	c.decision = "approved " + cmd.Account
	return nil
}

func (c *memController) DenyConsent(_ context.Context, cmd ViewCommand) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.view(cmd.View)
	if err != nil {
		return err
	}
	if !v.consent {
		return Errorf("no_consent", "no consent screen is shown")
	}
	v.consent = false
	c.decision = "denied"
	return nil
}

func (c *memController) Navigate(_ context.Context, cmd NavigateCommand) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.view(cmd.View)
	if err != nil {
		return err
	}
	v.url = cmd.URL
	return nil
}

func (c *memController) Eval(_ context.Context, cmd EvalCommand) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.view(cmd.View)
	if err != nil {
		return nil, err
	}
	switch cmd.Script {
	case "location.href":
		return json.Marshal(v.url)
	case "undefined":
		return nil, nil
	}
	return nil, Errorf("eval_error", "ReferenceError: %s", cmd.Script)
}

func (c *memController) Screenshot(_ context.Context, cmd ScreenshotCommand) (Screenshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.view(cmd.View); err != nil {
		return Screenshot{}, err
	}
	if cmd.Area == ScreenshotWindow {
		return Screenshot{Format: "png", Width: 2, Height: 1, Data: []byte("\x89PNG\r\n")}, nil
	}
	return Screenshot{Format: "png", Width: 1, Height: 1, Data: []byte("\x89PNG\r\n")}, nil
}

func (c *memController) Close(_ context.Context, cmd ViewCommand) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.view(cmd.View)
	if err != nil {
		return err
	}
	v.closed = true
	return nil
}

// startAutomation runs a server on loopback for one test.
func startAutomation(t *testing.T, buffer int) (*Automation, *Bus) {
	t.Helper()
	bus := NewBus(func() time.Time { return time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC) })
	a, err := NewAutomation(AutomationConfig{
		Bus: bus, Controller: newMemController(), AllowedOrigins: []string{playground},
		Buffer: buffer, WriteTimeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, bus
}

// dial connects with the token in the subprotocol list, as documented.
func dial(t *testing.T, a *Automation, header http.Header) *websocket.Conn {
	t.Helper()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Sec-WebSocket-Protocol", AutomationProtocol+", "+TokenProtocolPrefix+a.Token())
	conn, resp, err := websocket.DefaultDialer.Dial(a.URL(), header)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != AutomationProtocol {
		t.Fatalf("server selected subprotocol %q, want %q (never the token)", got, AutomationProtocol)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestAutomationGate(t *testing.T) {
	a, _ := startAutomation(t, 0)
	good := AutomationProtocol + ", " + TokenProtocolPrefix + a.Token()
	tests := []struct {
		name   string
		url    string
		header http.Header
		status int
		code   Code
	}{
		{"no token", "", http.Header{"Sec-Websocket-Protocol": {AutomationProtocol}}, 401, CodeBadToken},
		{"wrong token", "", http.Header{"Sec-Websocket-Protocol": {AutomationProtocol + ", token.AAAA" + a.Token()[4:]}}, 401, CodeBadToken},
		{"token as query", "?token=" + a.Token(), http.Header{"Sec-Websocket-Protocol": {AutomationProtocol}}, 401, CodeBadToken},
		{"no protocol", "", http.Header{"Sec-Websocket-Protocol": {TokenProtocolPrefix + a.Token()}}, 400, CodeBadProtocol},
		{"foreign origin", "", http.Header{"Sec-Websocket-Protocol": {good}, "Origin": {"https://evil.example"}}, 403, CodeBadOrigin},
		{"playground on another port", "", http.Header{"Sec-Websocket-Protocol": {good}, "Origin": {"http://127.0.0.1:8441"}}, 403, CodeBadOrigin},
		{"null origin", "", http.Header{"Sec-Websocket-Protocol": {good}, "Origin": {"null"}}, 403, CodeBadOrigin},
		{"two origins", "", http.Header{"Sec-Websocket-Protocol": {good}, "Origin": {playground, "https://evil.example"}}, 403, CodeBadOrigin},
		{"rebound host name", "", http.Header{"Sec-Websocket-Protocol": {good}, "Host": {"evil.example"}}, 403, CodeBadHost},
		{"playground origin", "", http.Header{"Sec-Websocket-Protocol": {good}, "Origin": {playground}}, 101, ""},
		{"no origin (a program)", "", http.Header{"Sec-Websocket-Protocol": {good}}, 101, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := websocket.Dialer{}
			h := tt.header.Clone()
			// gorilla sends the Host of the URL; rewrite it by dialling
			// the address but naming another host.
			if host := h.Get("Host"); host != "" {
				h.Del("Host")
				req := strings.Replace(a.URL(), "127.0.0.1", host, 1)
				addr := strings.TrimPrefix(strings.TrimSuffix(a.URL(), AutomationPath), "ws://")
				d.NetDialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, addr)
				}
				conn, resp, err := d.Dial(req, h)
				checkHandshake(t, conn, resp, err, tt.status, tt.code)
				return
			}
			conn, resp, err := d.Dial(a.URL()+tt.url, h)
			checkHandshake(t, conn, resp, err, tt.status, tt.code)
		})
	}
	t.Run("another path", func(t *testing.T) {
		resp, err := http.Get("http://" + strings.TrimPrefix(strings.Replace(a.URL(), AutomationPath, "/", 1), "ws://"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

func checkHandshake(t *testing.T, conn *websocket.Conn, resp *http.Response, err error, status int, code Code) {
	t.Helper()
	if status == http.StatusSwitchingProtocols {
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conn.Close()
		return
	}
	if err == nil {
		conn.Close()
		t.Fatal("connected, want a refusal")
	}
	if resp == nil {
		t.Fatalf("no response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	var e struct {
		Error replyError `json:"error"`
	}
	if resp.StatusCode != status || json.Unmarshal(body, &e) != nil || e.Error.Code != code {
		t.Fatalf("status %d body %s, want %d with code %s", resp.StatusCode, body, status, code)
	}
}

// envelope is an event as a client receives it.
type envelope struct {
	Type string          `json:"type"`
	Seq  uint64          `json:"seq"`
	Time string          `json:"time"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

func TestAutomationEventsInOrder(t *testing.T) {
	// Room for the whole burst: this test is about order, not about
	// dropping (TestAutomationSlowClient).
	a, bus := startAutomation(t, 1024)
	clients := []*websocket.Conn{dial(t, a, nil), dial(t, a, http.Header{"Origin": {playground}})}
	events := []Event{
		ResolveStageEvent{Origin: "https://app.example", ID: "app", Stage: "manifest", OK: true},
		NavigationEvent{URL: "https://as.example/authorize?x", Decision: NavigationConsent, Rule: "authorization-endpoint"},
		ConsentShownEvent{ClientID: "c1", Scopes: []string{"openid"}, Accounts: []string{"acc-1"}},
		ConsentDecidedEvent{Decision: ConsentApproved, Account: "acc-1"},
		CodeIssuedEvent{ClientID: "c1", RedirectURI: "https://app.example/cb", Fingerprint: redact.Fingerprint("code")},
		TokenIssuedEvent{ClientID: "c1", TokenType: "Bearer", Scope: "openid", Fingerprint: redact.Fingerprint("at")},
		CookiesSyncedEvent{Origin: "https://app.example", Names: []string{"session"}},
		BridgeCallEvent{Method: "authorize", Decision: DecisionAllowed},
	}
	const rounds = 50
	for i := 0; i < rounds; i++ {
		for _, e := range events {
			bus.Publish(e)
		}
	}
	for n, c := range clients {
		for i := 0; i < rounds*len(events); i++ {
			var env envelope
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if err := c.ReadJSON(&env); err != nil {
				t.Fatalf("client %d, event %d: %v", n, i, err)
			}
			want := events[i%len(events)]
			wantData, _ := json.Marshal(want)
			if env.Type != "event" || env.Seq != uint64(i+1) || env.Kind != want.Kind() ||
				env.Time != "2026-11-22T18:00:00Z" || string(env.Data) != string(wantData) {
				t.Fatalf("client %d, event %d: %+v (data %s), want seq %d %s %s", n, i, env, env.Data, i+1, want.Kind(), wantData)
			}
		}
	}
}

func TestAutomationCommands(t *testing.T) {
	a, _ := startAutomation(t, 0)
	c := dial(t, a, nil)
	tests := []struct {
		name string
		send string
		want string // the whole reply
	}{
		{"open", `{"id":1,"command":"open","params":{"origin":"https://app.example","id":"app"}}`,
			`{"type":"reply","id":1,"ok":true,"result":{"view":"view-1"}}`},
		{"open failing", `{"id":2,"command":"open","params":{"origin":"http://down.example","id":"app"}}`,
			`{"type":"reply","id":2,"ok":false,"error":{"code":"command_failed","message":"resolver: manifest: 404 Not Found"}}`},
		{"approve with an unknown account", `{"id":3,"command":"consent.approve","params":{"account":"acc-9"}}`,
			`{"type":"reply","id":3,"ok":false,"error":{"code":"no_account","message":"the screen offers no account \"acc-9\""}}`},
		{"approve", `{"id":4,"command":"consent.approve","params":{"view":"view-1","account":"acc-2"}}`,
			`{"type":"reply","id":4,"ok":true}`},
		{"deny after approval", `{"id":5,"command":"consent.deny"}`,
			`{"type":"reply","id":5,"ok":false,"error":{"code":"no_consent","message":"no consent screen is shown"}}`},
		{"navigate", `{"id":6,"command":"navigate","params":{"url":"https://app.example/next"}}`,
			`{"type":"reply","id":6,"ok":true}`},
		{"eval", `{"id":7,"command":"eval","params":{"script":"location.href"}}`,
			`{"type":"reply","id":7,"ok":true,"result":"https://app.example/next"}`},
		{"eval undefined", `{"id":8,"command":"eval","params":{"script":"undefined"}}`,
			`{"type":"reply","id":8,"ok":true,"result":null}`},
		{"screenshot", `{"id":9,"command":"screenshot","params":{}}`,
			`{"type":"reply","id":9,"ok":true,"result":{"format":"png","width":1,"height":1,"data":"iVBORw0K"}}`},
		{"screenshot of the window", `{"id":91,"command":"screenshot","params":{"area":"window"}}`,
			`{"type":"reply","id":91,"ok":true,"result":{"format":"png","width":2,"height":1,"data":"iVBORw0K"}}`},
		{"screenshot of another area", `{"id":92,"command":"screenshot","params":{"area":"screen"}}`,
			`{"type":"reply","id":92,"ok":false,"error":{"code":"invalid_params","message":"area: \"screen\" is not one of \"view\" (the Miniapp's view, the default), \"device\" (the device in its frame) and \"window\" (the whole window)"}}`},
		{"close", `{"id":10,"command":"close","params":{"view":"view-1"}}`, `{"type":"reply","id":10,"ok":true}`},
		{"closed view", `{"id":11,"command":"eval","params":{"script":"location.href"}}`,
			`{"type":"reply","id":11,"ok":false,"error":{"code":"no_view","message":"no open view \"view-1\""}}`},
		{"unknown command", `{"id":12,"command":"rm -rf"}`,
			`{"type":"reply","id":12,"ok":false,"error":{"code":"unknown_command","message":"no command \"rm -rf\""}}`},
		{"missing param", `{"id":13,"command":"navigate","params":{}}`,
			`{"type":"reply","id":13,"ok":false,"error":{"code":"invalid_params","message":"url is required"}}`},
		{"unknown param", `{"id":14,"command":"consent.deny","params":{"reason":"x"}}`,
			`{"type":"reply","id":14,"ok":false,"error":{"code":"invalid_params","message":"unknown field \"reason\""}}`},
		{"param of the wrong type", `{"id":15,"command":"eval","params":{"script":42}}`,
			`{"type":"reply","id":15,"ok":false,"error":{"code":"invalid_params","message":"script must be a string"}}`},
		{"not JSON", `open app`,
			`{"type":"reply","id":0,"ok":false,"error":{"code":"invalid_message","message":"not valid JSON: invalid character 'o' looking for a value at byte 0"}}`},
		{"no id", `{"command":"close"}`,
			`{"type":"reply","id":0,"ok":false,"error":{"code":"invalid_message","message":"id is missing"}}`},
		{"unknown member", `{"id":16,"command":"close","view":"view-1"}`,
			`{"type":"reply","id":16,"ok":false,"error":{"code":"invalid_message","message":"unknown field \"view\""}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.WriteMessage(websocket.TextMessage, []byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, got, err := c.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("reply\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestAutomationSlowClient(t *testing.T) {
	const buffer = 4
	a, bus := startAutomation(t, buffer)
	slow := dial(t, a, nil) // never reads until the end
	payload := strings.Repeat("x", 1024)
	const total = 20000 // 20 MB: more than loopback socket buffers hold

	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		for i := 0; i < total; i++ {
			bus.Publish(NavigationEvent{URL: "https://app.example/" + payload, Decision: NavigationAllowed, Rule: "same-origin"})
		}
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("%d events published in %v", total, d)
	case <-time.After(20 * time.Second):
		// A blocking Publish would wait for the 5-minute write timeout.
		t.Fatal("Publish blocked on a client that does not read")
	}
	deadline := time.Now().Add(5 * time.Second)
	for bus.Subscribers() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow client was not dropped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The client finds the events it was sent in order, then a close
	// frame saying why.
	var got uint64
	for {
		slow.SetReadDeadline(time.Now().Add(5 * time.Second))
		var env envelope
		err := slow.ReadJSON(&env)
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
				t.Fatalf("after %d events: %v, want close 1008", got, err)
			}
			break
		}
		got++
		if env.Seq != got {
			t.Fatalf("event %d has seq %d", got, env.Seq)
		}
	}
	if got >= total {
		t.Fatalf("the slow client got all %d events", got)
	}
	// The server still serves others.
	fresh := dial(t, a, nil)
	bus.Publish(BridgeCallEvent{Method: "ready", Decision: DecisionAllowed})
	var env envelope
	fresh.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := fresh.ReadJSON(&env); err != nil || env.Seq != total+1 {
		t.Fatalf("fresh client: %+v, %v", env, err)
	}
}

func TestNewAutomation(t *testing.T) {
	ctl := newMemController()
	tests := []struct {
		name string
		cfg  AutomationConfig
	}{
		{"no bus", AutomationConfig{Controller: ctl}},
		{"no controller", AutomationConfig{Bus: NewBus(nil)}},
		{"all interfaces", AutomationConfig{Bus: NewBus(nil), Controller: ctl, Addr: "0.0.0.0:0"}},
		{"public address", AutomationConfig{Bus: NewBus(nil), Controller: ctl, Addr: "192.0.2.1:9000"}},
		{"allowed origin with a path", AutomationConfig{Bus: NewBus(nil), Controller: ctl, AllowedOrigins: []string{"http://127.0.0.1:8440/app"}}},
		{"short random", AutomationConfig{Bus: NewBus(nil), Controller: ctl, Rand: strings.NewReader("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewAutomation(tt.cfg); err == nil || !strings.HasPrefix(err.Error(), "bridge: ") {
				t.Fatalf("err %v", err)
			}
		})
	}
	t.Run("fresh 256-bit tokens", func(t *testing.T) {
		a, _ := NewAutomation(AutomationConfig{Bus: NewBus(nil), Controller: ctl})
		b, _ := NewAutomation(AutomationConfig{Bus: NewBus(nil), Controller: ctl})
		if a.Token() == b.Token() || len(a.Token()) != 43 {
			t.Fatalf("tokens %q %q", a.Token(), b.Token())
		}
	})
}

func TestAutomationClose(t *testing.T) {
	a, bus := startAutomation(t, 0)
	c := dial(t, a, nil)
	url := a.URL()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.ReadMessage(); err == nil {
		t.Fatal("the client is still connected after Close")
	}
	if bus.Subscribers() != 0 {
		t.Fatalf("%d subscriptions left after Close", bus.Subscribers())
	}
	h := http.Header{"Sec-Websocket-Protocol": {AutomationProtocol + ", " + TokenProtocolPrefix + a.Token()}}
	if conn, _, err := websocket.DefaultDialer.Dial(url, h); err == nil {
		conn.Close()
		t.Fatal("connected after Close")
	}
}

// TestAutomationTooLarge: docs/automation.md promises a too_large reply for
// a command over 1 MiB, and the connection stays usable; a command of
// exactly 1 MiB is read.
func TestAutomationTooLarge(t *testing.T) {
	a, _ := startAutomation(t, 0)
	c := dial(t, a, nil)
	roundTrip := func(msg string) string {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after a %d-byte command: %v", len(msg), err)
		}
		return string(got)
	}
	if got := roundTrip(`{"id":1,"command":"open","params":{"origin":"https://app.example","id":"app"}}`); !strings.Contains(got, `"ok":true`) {
		t.Fatalf("open: %s", got)
	}
	navigate := func(id, size int) string {
		head := fmt.Sprintf(`{"id":%d,"command":"navigate","params":{"url":"https://app.example/`, id)
		tail := `"}}`
		return head + strings.Repeat("a", size-len(head)-len(tail)) + tail
	}
	if got := roundTrip(navigate(2, maxCommandSize)); got != `{"type":"reply","id":2,"ok":true}` {
		t.Fatalf("a command of exactly 1 MiB: %.200s", got)
	}
	want := `{"type":"reply","id":0,"ok":false,"error":{"code":"too_large","message":"command of more than 1048576 bytes"}}`
	if got := roundTrip(navigate(3, maxCommandSize+1)); got != want {
		t.Fatalf("a command of 1 MiB + 1 byte\n got %.300s\nwant %s", got, want)
	}
	// Much larger, in several frames: still a reply, and the rest of the
	// message is discarded rather than held in memory.
	w, err := c.NextWriter(websocket.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 5 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, got, err := c.ReadMessage(); err != nil || string(got) != want {
		t.Fatalf("a 5 MiB command: %s, %v", got, err)
	}
	if got := roundTrip(`{"id":4,"command":"eval","params":{"script":"location.href"}}`); !strings.Contains(got, `"ok":true`) {
		t.Fatalf("the connection is not usable after too_large: %s", got)
	}
}
