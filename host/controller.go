package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/devclient"
)

// CodeNoConsent is the automation error of consent.approve and
// consent.deny when no consent screen is shown.
const CodeNoConsent bridge.Code = "no_consent"

// CodeConsentRefused is the automation error of consent.approve when the
// consent screen refuses approval: one of its checks failed, and only
// consent.deny is taken; or its per-entry choices break a rule between
// entries, name a maximum outside the requested limits or leave nothing to
// grant (docs/native-consent.md, "2. Post the decision"), and other
// choices are.
const CodeConsentRefused bridge.Code = "consent_refused"

// controller carries out the automation channel's commands on the window
// (bridge.Controller). The window has one view; its name is "main", and ""
// means it too.
type controller struct {
	w       *Window
	open    func(ctx context.Context, cmd bridge.OpenCommand) error
	service *devclient.Client // the development controls; nil without an operator key
}

// Controller returns the window's bridge.Controller. open resolves and
// mounts a Miniapp for the open command.
func (w *Window) Controller(open func(ctx context.Context, cmd bridge.OpenCommand) error) bridge.Controller {
	return w.controllerFor(nil, open)
}

func (w *Window) controllerFor(service *devclient.Client, open func(ctx context.Context, cmd bridge.OpenCommand) error) bridge.Controller {
	return &controller{w: w, open: open, service: service}
}

// ServiceControl implements bridge.ServiceController with the operator key
// the host was given; without one, the controls are unknown commands.
func (c *controller) ServiceControl(ctx context.Context, control string, params json.RawMessage) (json.RawMessage, error) {
	if c.service == nil {
		return nil, bridge.Errorf(bridge.CodeUnknownCommand, "this host was started without the service's operator key: give open MINIAPP_HOST_OPERATOR_KEY for the development controls (command %q)", control)
	}
	return bridge.ServiceControls{Client: c.service}.ServiceControl(ctx, control, params)
}

// MainView is the name of the window's one Miniapp view on the automation
// channel; "" means it too.
const MainView = "main"

func checkView(v string) error {
	if v != "" && v != MainView {
		return bridge.Errorf(bridge.CodeInvalidParams, "no view %q; this host has one view, %q", v, MainView)
	}
	return nil
}

// Open implements bridge.Controller.
func (c *controller) Open(ctx context.Context, cmd bridge.OpenCommand) (bridge.OpenResult, error) {
	if cmd.Profile != "" {
		return bridge.OpenResult{}, bridge.Errorf(bridge.CodeInvalidParams,
			"launch profiles are the playground's; this window opens by origin and id (or start it with miniapp-host open --profile %s)", cmd.Profile)
	}
	if err := c.open(ctx, cmd); err != nil {
		return bridge.OpenResult{}, err
	}
	return bridge.OpenResult{View: MainView}, nil
}

// consentOnScreen reports whether a consent screen waits for a decision.
func (c *controller) consentOnScreen() bool {
	if !c.w.flows.waiting() {
		return false
	}
	return c.w.hv.isVisible()
}

// press decides the consent on screen through the host page's own
// hostPress, which applies the screen's rules (a failed check refuses
// approval; so do per-entry choices that break a rule between entries;
// Approve is not armed at once) but not the pointer rule: the channel's
// token is the caller's proof of intent. choices, when not nil, are the
// per-entry decisions to make first. It waits out the arming delay the
// page names.
func (c *controller) press(ctx context.Context, account, action string, choices *bridge.ConsentChoices) error {
	if !c.consentOnScreen() {
		return bridge.Errorf(CodeNoConsent, "no consent screen is shown")
	}
	a, _ := json.Marshal(account)
	b, _ := json.Marshal(action)
	ch := []byte("null")
	if choices != nil {
		ch, _ = json.Marshal(choices)
	}
	for {
		out, err := c.w.EvalHost(ctx, `window.hostPress(`+string(b)+`, `+string(a)+`, `+string(ch)+`)`)
		if err != nil {
			return err
		}
		var answer string
		if err := json.Unmarshal([]byte(out), &answer); err != nil {
			return fmt.Errorf("host: consent screen: %s", out)
		}
		switch {
		case answer == "ok":
			return nil
		case answer == "no-account":
			return bridge.Errorf(bridge.CodeInvalidParams, "account %q is not offered on the consent screen", account)
		case answer == "disabled":
			return bridge.Errorf(CodeConsentRefused, "the consent screen refuses %s: a check failed", action)
		case strings.HasPrefix(answer, "refused "):
			// docs/native-consent.md, "2. Post the decision": the rest
			// must keep the catalog's rules between entries.
			return bridge.Errorf(CodeConsentRefused, "the consent screen refuses %s with these choices: %s", action, strings.TrimPrefix(answer, "refused "))
		case strings.HasPrefix(answer, "invalid "):
			return bridge.Errorf(bridge.CodeInvalidParams, "%s", strings.TrimPrefix(answer, "invalid "))
		case answer == "no-consent":
			return bridge.Errorf(CodeNoConsent, "no consent screen is shown")
		case strings.HasPrefix(answer, "wait "):
			ms, err := strconv.Atoi(strings.TrimPrefix(answer, "wait "))
			if err != nil {
				return fmt.Errorf("host: consent screen: %s", out)
			}
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		default:
			return fmt.Errorf("host: consent screen: %s", out)
		}
	}
}

// ApproveConsent implements bridge.Controller.
func (c *controller) ApproveConsent(ctx context.Context, cmd bridge.ApproveCommand) error {
	err := checkView(cmd.View)
	if err == nil {
		err = c.press(ctx, cmd.Account, "approve", cmd.Choices)
	}
	if err != nil {
		ev := bridge.ConsentRefusedEvent{Action: "approve", Account: cmd.Account}
		if ch := cmd.Choices; ch != nil {
			ev.DeclinedScopes, ev.DeclinedDetails, ev.LoweredMaximums = ch.DeclinedScopes, ch.DeclinedDetails, ch.LoweredMaximums
		}
		c.refused(ev, err)
	}
	return err
}

// refused reports a consent command the host refused (its *bridge.Error:
// no screen, a failed check, choices that break a rule, an account not
// offered) as a consent.refused event and in the event line, so that the
// inspector shows it beside the screen it was meant for. A command that
// did not finish for another reason (its context ended) is no refusal.
func (c *controller) refused(ev bridge.ConsentRefusedEvent, err error) {
	var be *bridge.Error
	if !errors.As(err, &be) {
		return
	}
	ev.Code, ev.Message = be.Code, be.Message
	ev.Flow = c.w.flows.runningID()
	c.w.emit(Event{Kind: EventConsentRefused, Detail: ev.Action + ": " + string(ev.Code) + ": " + ev.Message})
	c.w.publish(ev)
}

// DenyConsent implements bridge.Controller.
func (c *controller) DenyConsent(ctx context.Context, cmd bridge.ViewCommand) error {
	err := checkView(cmd.View)
	if err == nil {
		err = c.press(ctx, "", "deny", nil)
	}
	if err != nil {
		c.refused(bridge.ConsentRefusedEvent{Action: "deny"}, err)
	}
	return err
}

// Navigate implements bridge.Controller: the policy decides the URL as any
// other navigation.
func (c *controller) Navigate(_ context.Context, cmd bridge.NavigateCommand) error {
	if err := checkView(cmd.View); err != nil {
		return err
	}
	if _, err := parseCanonical(cmd.URL); err != nil {
		return bridge.Errorf(bridge.CodeInvalidParams, "url: %v", err)
	}
	c.w.Navigate(cmd.URL)
	return nil
}

// Eval implements bridge.Controller.
func (c *controller) Eval(ctx context.Context, cmd bridge.EvalCommand) (json.RawMessage, error) {
	if err := checkView(cmd.View); err != nil {
		return nil, err
	}
	out, err := c.w.EvalAwait(ctx, cmd.Script)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(out), nil
}

// Screenshot implements bridge.Controller: what the Miniapp's view shows,
// the host's view when it is over the Miniapp; or, with area "window", the
// whole window as it is composed (tabs, the page shown, the host's view).
func (c *controller) Screenshot(ctx context.Context, cmd bridge.ScreenshotCommand) (bridge.Screenshot, error) {
	if err := checkView(cmd.View); err != nil {
		return bridge.Screenshot{}, err
	}
	dir, err := os.MkdirTemp("", "miniapp-host-shot-")
	if err != nil {
		return bridge.Screenshot{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "shot.png")
	host := c.w.hv.isVisible()
	switch {
	case cmd.Area == bridge.ScreenshotWindow:
		err = c.w.SnapshotWindow(ctx, path)
	case cmd.Area == bridge.ScreenshotDevice:
		err = c.w.SnapshotDevice(ctx, path)
	case host:
		err = c.w.Snapshot(ctx, path)
	default:
		err = c.w.SnapshotMiniapp(ctx, path)
	}
	if err != nil {
		return bridge.Screenshot{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return bridge.Screenshot{}, err
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return bridge.Screenshot{}, fmt.Errorf("host: screenshot: %w", err)
	}
	return bridge.Screenshot{Format: "png", Width: cfg.Width, Height: cfg.Height, Data: data}, nil
}

// Close implements bridge.Controller: it closes the window.
func (c *controller) Close(_ context.Context, cmd bridge.ViewCommand) error {
	if err := checkView(cmd.View); err != nil {
		return err
	}
	c.w.Terminate()
	return nil
}
