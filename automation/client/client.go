// Package client drives Miniapp Host through its automation channel
// (docs/automation.md): it connects with the URL and token the host
// prints, sends typed commands and waits for events, so that Go tests
// never write WebSocket code of their own.
//
//	c, err := client.Dial(ctx, url, token)
//	view, err := c.Open(ctx, origin, id)
//	shown, err := c.WaitFor(ctx, client.Kind("consent.shown"))
//	err = c.Approve(ctx, view, "")
//	_, err = c.WaitFor(ctx, client.Kind("cookies.synced"))
//
// Events are kept from the moment the connection is made, so an event
// that arrives before WaitFor is called is not missed: WaitFor looks at
// every event after the last one it returned.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/devclient"
	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// Event is one event of the channel. Decode its Data into the matching
// type of package bridge (bridge.ConsentShownEvent for "consent.shown",
// and so on), or into a map for kinds without one.
type Event struct {
	Seq  int64           `json:"seq"`
	Time time.Time       `json:"time"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
	// Replayed marks the host's state sent on connection: the consent
	// screen on screen, published before this client connected.
	Replayed bool `json:"replayed"`
}

// Decode unmarshals the event's data into v.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("automation: event %d (%s): %w", e.Seq, e.Kind, err)
	}
	return nil
}

// Kind matches events of one kind.
func Kind(kind string) func(Event) bool { return func(e Event) bool { return e.Kind == kind } }

// Error is a command's refusal or failure, with the channel's code
// (docs/automation.md, "Errors"): compare Code with bridge.CodeBusy,
// bridge.CodeCommandFailed and the like.
type Error struct {
	Command string
	Code    bridge.Code
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("automation: %s: %s: %s", e.Command, e.Code, e.Message)
}

// NoReplyError is a command whose context ended before its reply came:
// ID is the command's id on the wire, to find it in the host's log. It
// unwraps to the context's error.
type NoReplyError struct {
	Command string
	ID      int64
	Err     error
}

func (e *NoReplyError) Error() string {
	return fmt.Sprintf("automation: %s (id %d): no reply: %v", e.Command, e.ID, e.Err)
}

func (e *NoReplyError) Unwrap() error { return e.Err }

// ErrClosed is returned once the connection has ended; Err says why.
var ErrClosed = errors.New("automation: the connection is closed")

// MaxKept is how many events a client keeps for WaitFor; older ones are
// dropped first (a test runs a few hundred).
const MaxKept = 10_000

// Client is one connection to the automation channel. Its methods are
// safe for concurrent use.
type Client struct {
	conn *websocket.Conn
	wmu  sync.Mutex // serializes writes

	mu      sync.Mutex // guards below
	nextID  int64
	replies map[int64]chan reply
	events  []Event // kept, oldest first
	cursor  int64   // WaitFor looks after this seq
	changed chan struct{}
	err     error // why the connection ended; nil while open

	done chan struct{}
}

type reply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    bridge.Code `json:"code"`
		Message string      `json:"message"`
	} `json:"error"`
}

// Dial connects to url (ws://127.0.0.1:<port>/automation) with token, both
// as the host printed them.
func Dial(ctx context.Context, url, token string) (*Client, error) {
	return DialVia(ctx, url, token, nil)
}

// DialVia is Dial with the connection to url's host made by dial (nil:
// the network's own), e.g. into a WebDriver session's private network.
func DialVia(ctx context.Context, url, token string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*Client, error) {
	h := http.Header{"Sec-WebSocket-Protocol": {bridge.AutomationProtocol + ", " + bridge.TokenProtocolPrefix + token}}
	d := *websocket.DefaultDialer
	d.NetDialContext = dial
	conn, resp, err := d.DialContext(ctx, url, h)
	if err != nil {
		if resp != nil {
			// The handshake's refusal names its code (docs/automation.md).
			var body struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if a, rerr := jsonhttp.Read(resp, 64<<10); rerr == nil && a.Decode(&body) == nil && body.Error.Code != "" {
				err = fmt.Errorf("%s: %s", body.Error.Code, body.Error.Message)
			}
		}
		return nil, fmt.Errorf("automation: connect to %s: %w", url, err)
	}
	c := &Client{conn: conn, replies: map[int64]chan reply{}, changed: make(chan struct{}), done: make(chan struct{})}
	go c.read()
	return c, nil
}

// read receives every message until the connection ends.
func (c *Client) read() {
	defer close(c.done)
	for {
		_, raw, err := c.conn.ReadMessage()
		if err != nil {
			c.end(err)
			return
		}
		var m struct {
			Type string `json:"type"`
			ID   int64  `json:"id"`
			Event
			reply
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			c.end(fmt.Errorf("automation: the host sent what is not JSON: %w", err))
			return
		}
		c.mu.Lock()
		switch m.Type {
		case "event":
			c.events = append(c.events, m.Event)
			if len(c.events) > MaxKept {
				c.events = append(c.events[:0:0], c.events[len(c.events)-MaxKept:]...)
			}
			close(c.changed)
			c.changed = make(chan struct{})
		case "reply":
			if ch, ok := c.replies[m.ID]; ok {
				delete(c.replies, m.ID)
				ch <- m.reply
			}
		}
		c.mu.Unlock()
	}
}

func (c *Client) end(err error) {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		err = fmt.Errorf("%w: the host closed it (%d %s)", ErrClosed, ce.Code, ce.Text)
	} else {
		err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	for id, ch := range c.replies {
		delete(c.replies, id)
		close(ch)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// Err is why the connection ended, or nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection.
func (c *Client) Close() error {
	c.wmu.Lock()
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.wmu.Unlock()
	err := c.conn.Close()
	<-c.done
	return err
}

// Do sends a command with params and waits for its reply; result, when not
// nil, receives the reply's result. The typed methods below use it; it is
// exported for commands a newer host may add.
func (c *Client) Do(ctx context.Context, command string, params, result any) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	ch := make(chan reply, 1)
	c.replies[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.replies, id)
		c.mu.Unlock()
	}
	msg := map[string]any{"id": id, "command": command}
	if params != nil {
		msg["params"] = params
	}
	c.wmu.Lock()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.conn.SetWriteDeadline(dl)
	} else {
		_ = c.conn.SetWriteDeadline(time.Time{})
	}
	err := c.conn.WriteJSON(msg)
	c.wmu.Unlock()
	if err != nil {
		forget()
		return fmt.Errorf("automation: %s: %w", command, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return c.Err()
		}
		if !r.OK {
			e := &Error{Command: command}
			if r.Error != nil {
				e.Code, e.Message = r.Error.Code, r.Error.Message
			}
			return e
		}
		if result != nil && len(r.Result) > 0 {
			if err := json.Unmarshal(r.Result, result); err != nil {
				return fmt.Errorf("automation: %s: the result: %w", command, err)
			}
		}
		return nil
	case <-ctx.Done():
		forget()
		return &NoReplyError{Command: command, ID: id, Err: ctx.Err()}
	}
}

// Open resolves and mounts a Miniapp, as `miniapp-host open --origin
// --id` does, and returns its view. A rejected Miniapp is an *Error with
// code command_failed whose message carries the resolver's reasons.
func (c *Client) Open(ctx context.Context, origin, id string) (view string, err error) {
	var res bridge.OpenResult
	err = c.Do(ctx, bridge.CommandOpen, bridge.OpenCommand{Origin: origin, ID: id}, &res)
	return res.View, err
}

// OpenProfile launches a saved launch profile and returns its view: the
// playground's (docs/playground.md, "Launch profiles").
func (c *Client) OpenProfile(ctx context.Context, name string) (view string, err error) {
	var res bridge.OpenResult
	err = c.Do(ctx, bridge.CommandOpen, bridge.OpenCommand{Profile: name}, &res)
	return res.View, err
}

// SetDevice shows the Miniapp as cmd's device (docs/playground.md,
// "Devices"): the page's viewport now and whether it loaded again.
func (c *Client) SetDevice(ctx context.Context, cmd bridge.DeviceCommand) (bridge.DeviceResult, error) {
	var res bridge.DeviceResult
	err := c.Do(ctx, bridge.CommandDeviceSet, cmd, &res)
	return res, err
}

// SetNetwork makes the Miniapp view's network conditions throttle (as
// `--network` takes it: "slow-3g", "fast-3g", "offline",
// "300ms/400/400"; "" for none) and mocks (the mock rules of a rules
// file's "rules", any value that marshals to that JSON array; nil for
// none), replacing the ones it had (docs/automation.md, network.set). A
// bad throttle or rule is an *Error with code invalid_params naming the
// field.
func (c *Client) SetNetwork(ctx context.Context, throttle string, mocks any) (bridge.NetworkResult, error) {
	cmd := bridge.NetworkCommand{Throttle: throttle}
	if mocks != nil {
		b, err := json.Marshal(mocks)
		if err != nil {
			return bridge.NetworkResult{}, fmt.Errorf("automation: mocks: %w", err)
		}
		cmd.Mocks = b
	}
	var res bridge.NetworkResult
	err := c.Do(ctx, bridge.CommandNetworkSet, cmd, &res)
	return res, err
}

// ClearNetwork takes the Miniapp view's network conditions away: no
// throttle, no mock rule.
func (c *Client) ClearNetwork(ctx context.Context) error {
	return c.Do(ctx, bridge.CommandNetworkClear, struct{}{}, nil)
}

// ScreenshotDevice returns a PNG of the device in its frame.
func (c *Client) ScreenshotDevice(ctx context.Context) (bridge.Screenshot, error) {
	var res bridge.Screenshot
	err := c.Do(ctx, bridge.CommandScreenshot, bridge.ScreenshotCommand{Area: bridge.ScreenshotDevice}, &res)
	return res, err
}

// Approve approves the consent screen shown in view ("" for the view
// opened last) with account, one of the consent.shown event's accounts
// ("" keeps the screen's default).
func (c *Client) Approve(ctx context.Context, view, account string) error {
	return c.Do(ctx, bridge.CommandConsentApprove, bridge.ApproveCommand{View: view, Account: account}, nil)
}

// ApproveWith approves the consent screen shown in view with per-entry
// decisions (docs/automation.md, "Commands"): the entries choices declines
// are not granted, and its lowered maximums bound the automatic charges.
// A rest that breaks a rule between entries is refused (consent_refused).
func (c *Client) ApproveWith(ctx context.Context, view, account string, choices bridge.ConsentChoices) error {
	return c.Do(ctx, bridge.CommandConsentApprove, bridge.ApproveCommand{View: view, Account: account, Choices: &choices}, nil)
}

// Deny denies the consent screen shown in view.
func (c *Client) Deny(ctx context.Context, view string) error {
	return c.Do(ctx, bridge.CommandConsentDeny, bridge.ViewCommand{View: view}, nil)
}

// Navigate sends view to url, through the host's navigation policy.
func (c *Client) Navigate(ctx context.Context, view, url string) error {
	return c.Do(ctx, bridge.CommandNavigate, bridge.NavigateCommand{View: view, URL: url}, nil)
}

// Eval evaluates script in view's main frame and returns its completion
// value as JSON ("null" for undefined).
func (c *Client) Eval(ctx context.Context, view, script string) (json.RawMessage, error) {
	var res json.RawMessage
	err := c.Do(ctx, bridge.CommandEval, bridge.EvalCommand{View: view, Script: script}, &res)
	return res, err
}

// Screenshot returns a PNG of view.
func (c *Client) Screenshot(ctx context.Context, view string) (bridge.Screenshot, error) {
	var res bridge.Screenshot
	err := c.Do(ctx, bridge.CommandScreenshot, bridge.ScreenshotCommand{View: view}, &res)
	return res, err
}

// ScreenshotWindow returns a PNG of the whole window, as it is composed
// (its tabs, the page shown, the host's consent view over it).
func (c *Client) ScreenshotWindow(ctx context.Context) (bridge.Screenshot, error) {
	var res bridge.Screenshot
	err := c.Do(ctx, bridge.CommandScreenshot, bridge.ScreenshotCommand{Area: bridge.ScreenshotWindow}, &res)
	return res, err
}

// CloseView closes view.
func (c *Client) CloseView(ctx context.Context, view string) error {
	return c.Do(ctx, bridge.CommandClose, bridge.ViewCommand{View: view}, nil)
}

// WaitFor returns the first event after the last one WaitFor returned
// (or since the connection was made) that match accepts, waiting for it
// until ctx ends or the connection does.
func (c *Client) WaitFor(ctx context.Context, match func(Event) bool) (Event, error) {
	return c.wait(ctx, -1, match)
}

// Last is the seq of the last event received (0 before any): WaitAfter
// from it sees only what comes next.
func (c *Client) Last() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) == 0 {
		return 0
	}
	return c.events[len(c.events)-1].Seq
}

// WaitAfter returns the first event with a seq above after that match
// accepts, waiting for it until ctx ends or the connection does. Unlike
// WaitFor it keeps no cursor: callers that follow several threads of
// events each keep their own position (the returned event's Seq).
func (c *Client) WaitAfter(ctx context.Context, after int64, match func(Event) bool) (Event, error) {
	return c.wait(ctx, after, match)
}

// wait finds the first matching event after seq after, or after the
// cursor (which it then moves) when after is negative.
func (c *Client) wait(ctx context.Context, after int64, match func(Event) bool) (Event, error) {
	for {
		c.mu.Lock()
		from := after
		if from < 0 {
			from = c.cursor
		}
		for _, e := range c.events {
			if e.Seq > from && match(e) {
				if after < 0 {
					c.cursor = e.Seq
				}
				c.mu.Unlock()
				return e, nil
			}
		}
		changed, err := c.changed, c.err
		c.mu.Unlock()
		if err != nil {
			return Event{}, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("automation: waiting for an event: %w", ctx.Err())
		}
	}
}

// Events returns the events kept so far, oldest first.
func (c *Client) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// Service runs a development control of the service the host signs in
// with (docs/automation.md, "The service's development controls"):
// control is one of package devclient's names ("fault.add",
// "clock.advance", "fixture.reset", "explain", ...), params its params
// (nil for none), and the service's JSON answer is decoded into result
// (nil to drop it). The service's refusal is an *Error with code
// service_refused.
func (c *Client) Service(ctx context.Context, control string, params, result any) error {
	if params == nil {
		params = struct{}{}
	}
	return c.Do(ctx, control, params, result)
}

// AdvanceClock moves the development server's clock forward by d.
func (c *Client) AdvanceClock(ctx context.Context, d time.Duration) error {
	return c.Service(ctx, devclient.ClockAdvance, map[string]string{"duration": d.String()}, nil)
}

// ResetClock puts the development server's clock back at real time.
func (c *Client) ResetClock(ctx context.Context) error {
	return c.Service(ctx, devclient.ClockReset, nil, nil)
}

// AddFault adds a fault at one of the service's endpoints; fault is the
// body of POST /api/dev/faults (docs/dashboard.md, "Faults"). The answer,
// the fault with its id, is decoded into result (nil to drop it).
func (c *Client) AddFault(ctx context.Context, fault, result any) error {
	return c.Service(ctx, devclient.FaultAdd, fault, result)
}

// ClearFaults removes every fault of clientID ("" for every fault).
func (c *Client) ClearFaults(ctx context.Context, clientID string) error {
	params := map[string]string{}
	if clientID != "" {
		params["client_id"] = clientID
	}
	return c.Service(ctx, devclient.FaultClear, params, nil)
}

// ResetConsent forgets every decision of subject and/or clientID
// (docs/dashboard.md, "Fixtures"), so the next sign-in shows the consent
// screen again.
func (c *Client) ResetConsent(ctx context.Context, subject, clientID string) error {
	params := map[string]string{}
	if subject != "" {
		params["subject"] = subject
	}
	if clientID != "" {
		params["client_id"] = clientID
	}
	return c.Service(ctx, devclient.FixtureReset, params, nil)
}
