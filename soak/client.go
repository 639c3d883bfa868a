package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	automation "github.com/miniapp-host/miniapp-host/automation/client"
)

// Event is one event of the automation channel (docs/automation.md).
type Event = automation.Event

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

// client is the soak's automation connection: package automation/client
// (which keeps every event, so the host never finds it too slow) with the
// soak's deadline on every command and every wait, and its answers sorted
// into the soak's outcomes.
type client struct {
	c       *automation.Client
	timeout time.Duration
}

func dial(ctx context.Context, url, token string, timeout time.Duration) (*client, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := automation.Dial(dctx, url, token)
	if err != nil {
		return nil, fmt.Errorf("soak: automation handshake: %w", err)
	}
	return &client{c: c, timeout: timeout}, nil
}

func (c *client) close() { _ = c.c.Close() }

// mark is the position after the last event received: waitEvent from a
// mark sees only the events that came after it.
func (c *client) mark() int64 { return c.c.Last() }

// waitEvent waits for the first event after from that match accepts,
// until the deadline; it returns the event and the position after it.
func (c *client) waitEvent(ctx context.Context, from int64, timeout time.Duration, accept func(Event) bool) (Event, int64, bool) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ev, err := c.c.WaitAfter(wctx, from, accept)
	if err != nil {
		return Event{}, from, false
	}
	return ev, ev.Seq, true
}

// do sends one command and waits for its reply. A reply with ok false is a
// *CommandError; no reply within the client's timeout is a *FreezeError;
// the connection ending first is errClosed. The caller's ctx ending stops
// the wait too (ctx.Err()).
func (c *client) do(ctx context.Context, name string, params any) (json.RawMessage, error) {
	sent := time.Now()
	dctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var res json.RawMessage
	err := c.c.Do(dctx, name, params, &res)
	var refused *automation.Error
	var noReply *automation.NoReplyError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &refused):
		return nil, &CommandError{Code: string(refused.Code), Message: refused.Message}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &noReply):
		return nil, &FreezeError{Command: name, ID: noReply.ID, Sent: sent, Waited: c.timeout}
	case errors.Is(err, automation.ErrClosed):
		return nil, errClosed
	}
	return nil, fmt.Errorf("%w: %v", errClosed, err)
}
