package devclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/devclient"
)

// startServer runs a development server (its issuer on loopback) on a
// fresh database and returns a client of its controls.
func startServer(t *testing.T) *devclient.Client {
	t.Helper()
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &devclient.Client{Dashboard: srv.URLs().Dashboard, Key: srv.OperatorKey()}
}

// TestClockControls: the clock's controls reach the server's clock and
// answer its state.
func TestClockControls(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	state := func(control, params string) map[string]any {
		t.Helper()
		var raw json.RawMessage
		if params != "" {
			raw = json.RawMessage(params)
		}
		b, err := c.Do(ctx, control, raw)
		if err != nil {
			t.Fatalf("%s %s: %v", control, params, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := state(devclient.ClockAdvance, `{"duration":"90s"}`); m["offset"] != "1m30s" {
		t.Fatalf("advance 90s: %v", m)
	}
	if m := state(devclient.ClockShow, ""); m["offset"] != "1m30s" {
		t.Fatalf("show after advance: %v", m)
	}
	if m := state(devclient.ClockSet, `{"time":"2030-01-01T00:00:00Z"}`); !strings.HasPrefix(m["now"].(string), "2030-01-01T00:00:0") {
		t.Fatalf("set: %v", m)
	}
	if m := state(devclient.ClockReset, "{}"); m["offset"] != "0s" {
		t.Fatalf("reset: %v", m)
	}
}

// TestRefusals: params a control cannot take are refused before anything
// is sent, naming the member; the service's own refusal keeps its code,
// field and message.
func TestRefusals(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	for _, x := range []struct{ control, params, field, want string }{
		{devclient.ClockAdvance, `{}`, "duration", "is required"},
		{devclient.ClockAdvance, `{"duration":61}`, "duration", "must be a string"},
		{devclient.ClockShow, `{"x":1}`, "x", "takes no params"},
		{devclient.FaultClear, `{"id":"flt_a","client_id":"c"}`, "", "not both"},
		{devclient.FixtureApply, `{}`, "fixture", "is required"},
		{"clock.rewind", `{}`, "", "no such control"},
		{devclient.ClockSet, `[1]`, "", "JSON object"},
	} {
		_, err := c.Do(ctx, x.control, json.RawMessage(x.params))
		var pe *devclient.ParamsError
		if !errors.As(err, &pe) || pe.Field != x.field || !strings.Contains(pe.Message, x.want) {
			t.Errorf("%s %s: want a ParamsError at %q saying %q, got %v", x.control, x.params, x.field, x.want, err)
		}
	}
	_, err := c.Do(ctx, devclient.ClockAdvance, json.RawMessage(`{"duration":"soon"}`))
	var se *devclient.ServiceError
	if !errors.As(err, &se) || se.Status != 400 || se.Field != "/advance" || !strings.Contains(se.Message, "not a duration") {
		t.Fatalf("a duration that is none: want the service's 400 at /advance, got %v", err)
	}
	bad := &devclient.Client{Dashboard: c.Dashboard, Key: "not-the-operator-key-but-long-enough-0123456789"}
	if _, err := bad.Do(ctx, devclient.ClockShow, nil); !errors.As(err, &se) || se.Code != "invalid_key" && se.Code != "operator_only" {
		t.Fatalf("a wrong key: want the service's refusal, got %v", err)
	}
}
