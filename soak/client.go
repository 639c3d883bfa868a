package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Event is one event of the automation channel (docs/automation.md).
type Event struct {
	Seq  int64           `json:"seq"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// CommandError is a command's error reply: the host answered, with a code.
type CommandError struct {
	Code, Message string
}

func (e *CommandError) Error() string { return e.Code + ": " + e.Message }

// FreezeError is a command that got no answer within the deadline.
type FreezeError struct {
	Command string
	ID      int64
	Sent    time.Time
	Waited  time.Duration
}

func (e *FreezeError) Error() string {
	return fmt.Sprintf("%s (id %d) got no answer in %s", e.Command, e.ID, e.Waited)
}

// errClosed is the connection ending before a command's answer.
var errClosed = errors.New("soak: the automation connection closed")

type wireReply struct {
	ID     int64           `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// client is one automation connection: one reader goroutine keeps every
// event (so the host never finds it too slow) and hands replies to the
// command that waits for them.
type client struct {
	conn    *websocket.Conn
	timeout time.Duration

	wmu sync.Mutex // one writer at a time (gorilla)

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan wireReply
	events  []Event
	notify  chan struct{} // closed and replaced at every new event
	done    chan struct{} // closed when the reader ends
	readErr error
}

func dial(ctx context.Context, url, token string, timeout time.Duration) (*client, error) {
	d := websocket.Dialer{HandshakeTimeout: timeout,
		Subprotocols: []string{"miniapp-automation.v1", "token." + token}}
	conn, resp, err := d.DialContext(ctx, url, http.Header{})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("soak: automation handshake: %s: %w", resp.Status, err)
		}
		return nil, fmt.Errorf("soak: automation handshake: %w", err)
	}
	c := &client{conn: conn, timeout: timeout, pending: map[int64]chan wireReply{},
		notify: make(chan struct{}), done: make(chan struct{})}
	go c.read()
	return c, nil
}

func (c *client) read() {
	defer close(c.done)
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(data, &head) != nil {
			continue
		}
		switch head.Type {
		case "event":
			var ev Event
			if json.Unmarshal(data, &ev) != nil {
				continue
			}
			c.mu.Lock()
			c.events = append(c.events, ev)
			close(c.notify)
			c.notify = make(chan struct{})
			c.mu.Unlock()
		case "reply":
			var r wireReply
			if json.Unmarshal(data, &r) != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[r.ID]
			delete(c.pending, r.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
	}
}

func (c *client) close() {
	c.wmu.Lock()
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.conn.Close()
	<-c.done
}

// mark is the position after the last event received: waitEvent from a
// mark sees only the events that came after it.
func (c *client) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

// waitEvent waits for the first event at or after from that match accepts,
// until the deadline; it returns the event and the position after it.
func (c *client) waitEvent(ctx context.Context, from int, timeout time.Duration, accept func(Event) bool) (Event, int, bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		c.mu.Lock()
		for ; from < len(c.events); from++ {
			if accept(c.events[from]) {
				ev := c.events[from]
				c.mu.Unlock()
				return ev, from + 1, true
			}
		}
		notify := c.notify
		c.mu.Unlock()
		select {
		case <-notify:
		case <-c.done:
			return Event{}, from, false
		case <-t.C:
			return Event{}, from, false
		case <-ctx.Done():
			return Event{}, from, false
		}
	}
}

// do sends one command and waits for its reply. A reply with ok false is a
// *CommandError; no reply within the client's timeout is a *FreezeError;
// the connection ending first is errClosed. The caller's ctx ending stops
// the wait too (ctx.Err()).
func (c *client) do(ctx context.Context, name string, params any) (json.RawMessage, error) {
	ch := make(chan wireReply, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	msg, err := json.Marshal(struct {
		ID      int64  `json:"id"`
		Command string `json:"command"`
		Params  any    `json:"params,omitempty"`
	}{id, name, params})
	if err != nil {
		return nil, err
	}
	sent := time.Now()
	c.wmu.Lock()
	_ = c.conn.SetWriteDeadline(sent.Add(c.timeout))
	err = c.conn.WriteMessage(websocket.TextMessage, msg)
	c.wmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errClosed, err)
	}
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if !r.OK {
			ce := &CommandError{Code: "unknown"}
			if r.Error != nil {
				ce.Code, ce.Message = r.Error.Code, r.Error.Message
			}
			return nil, ce
		}
		return r.Result, nil
	case <-t.C:
		return nil, &FreezeError{Command: name, ID: id, Sent: sent, Waited: c.timeout}
	case <-c.done:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
