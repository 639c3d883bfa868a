package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/playground"
	"github.com/miniapp-host/miniapp-host/resolver"
)

func startPlayground(t *testing.T) *playground.Playground {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := playground.Start(ctx, playground.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClientErrors: each way a session goes wrong is an error that says
// which: a wrong token at connection, a command the host refuses (with
// the channel's code), an event that never comes (the caller's deadline),
// and a host that went away (every waiter and command ends at once).
func TestClientErrors(t *testing.T) {
	p := startPlayground(t)
	closed := false
	defer func() {
		if !closed {
			p.Close()
		}
	}()
	ctx := t.Context()

	if _, err := client.Dial(ctx, p.AutomationURL(), "not-the-token"); err == nil || !strings.Contains(err.Error(), string(bridge.CodeBadToken)) {
		t.Errorf("wrong token: %v, want %s", err, bridge.CodeBadToken)
	}

	c, err := client.Dial(ctx, p.AutomationURL(), p.AutomationToken())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var refused *client.Error
	if _, err := c.Open(ctx, "ftp://example.com", "x"); !errors.As(err, &refused) || refused.Code != bridge.CodeCommandFailed ||
		refused.Command != "open" || !strings.Contains(refused.Message, "origin-invalid") {
		t.Errorf("open of an ftp origin: %v, want a %s error of open naming origin-invalid", err, bridge.CodeCommandFailed)
	}
	if err := c.Do(ctx, "no.such.command", nil, nil); !errors.As(err, &refused) || refused.Code != bridge.CodeUnknownCommand {
		t.Errorf("unknown command: %v, want %s", err, bridge.CodeUnknownCommand)
	}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = c.WaitFor(short, client.Kind("consent.shown"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting for an event that does not come: %v, want the deadline", err)
	}

	// The host goes away while a waiter waits: it ends with ErrClosed.
	var wg sync.WaitGroup
	var waitErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, waitErr = c.WaitFor(ctx, client.Kind("consent.shown"))
	}()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	wg.Wait()
	if !errors.Is(waitErr, client.ErrClosed) {
		t.Errorf("waiter when the host closed: %v, want ErrClosed", waitErr)
	}
	if _, err := c.Eval(ctx, "", "1"); !errors.Is(err, client.ErrClosed) {
		t.Errorf("command after the host closed: %v, want ErrClosed", err)
	}
	if !errors.Is(c.Err(), client.ErrClosed) {
		t.Errorf("Err: %v", c.Err())
	}
}

// TestWaitForSeesEarlierEvents: an event that arrived before WaitFor was
// called is found, and each event is returned once.
func TestWaitForSeesEarlierEvents(t *testing.T) {
	p := startPlayground(t)
	defer p.Close()
	ctx := t.Context()
	c, err := client.Dial(ctx, p.AutomationURL(), p.AutomationToken())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	entries, err := p.Miniapps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var demo playground.Entry
	for _, e := range entries {
		if e.ID == playground.DemoPublicID {
			demo = e
		}
	}
	// Without a window the open is refused, after its stages were
	// published: all of them are here before WaitFor is called.
	if _, err := c.Open(ctx, demo.Origin, demo.ID); err == nil {
		t.Fatal("open without a window succeeded")
	}
	var stages []string
	n := len(resolver.Stages())
	for range n {
		ev, err := c.WaitFor(ctx, client.Kind("resolve.stage"))
		if err != nil {
			t.Fatal(err)
		}
		var st bridge.ResolveStageEvent
		if err := ev.Decode(&st); err != nil || !st.OK {
			t.Fatalf("stage %+v %v", st, err)
		}
		stages = append(stages, st.Stage)
	}
	if len(stages) != n || stages[0] == stages[1] {
		t.Errorf("stages %v: each event must be returned once", stages)
	}
	if k := len(c.Events()); k < n {
		t.Errorf("Events kept %d, want at least %d", k, n)
	}
}
