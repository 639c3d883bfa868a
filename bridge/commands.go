package bridge

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/miniapp-host/miniapp-host/devclient"
)

// Controller carries out automation commands (docs/automation.md,
// "Commands"). Package host implements it. View selects a Miniapp view by
// the id that Open returned; "" means the view opened last. An *Error
// returned by a method reaches the test driver with its code; any other
// error reaches it as command_failed with its text (the channel is
// authenticated and on loopback, and a test author needs the reason).
type Controller interface {
	// Open resolves and opens a Miniapp, as `miniapp-host open` does.
	Open(ctx context.Context, cmd OpenCommand) (OpenResult, error)
	// ApproveConsent approves the consent view on screen.
	ApproveConsent(ctx context.Context, cmd ApproveCommand) error
	// DenyConsent denies the consent view on screen.
	DenyConsent(ctx context.Context, cmd ViewCommand) error
	// Navigate loads a URL in the view, through the navigation policy.
	Navigate(ctx context.Context, cmd NavigateCommand) error
	// Eval evaluates a script in the view's main frame and returns its
	// completion value as JSON.
	Eval(ctx context.Context, cmd EvalCommand) (json.RawMessage, error)
	// Screenshot captures the view, or the whole window (cmd.Area).
	Screenshot(ctx context.Context, cmd ScreenshotCommand) (Screenshot, error)
	// Close closes the view.
	Close(ctx context.Context, cmd ViewCommand) error
}

// DevToolsController is the optional ability of a Controller to open the
// engine's web inspector on a Miniapp view (command devtools.show). A
// Controller without it answers devtools.show with unknown_command.
type DevToolsController interface {
	// ShowDevTools turns the view's developer extras on and shows its
	// web inspector. It never applies to the host's own views.
	ShowDevTools(ctx context.Context, cmd ViewCommand) error
}

// DeviceController is the optional ability of a Controller to show its
// Miniapp as another device (command device.set; docs/playground.md,
// "Devices"). A Controller without it answers device.set with
// unknown_command.
type DeviceController interface {
	// SetDevice shows the Miniapp as cmd says; an unknown device, a
	// malformed size or locale is an *Error with CodeInvalidParams.
	SetDevice(ctx context.Context, cmd DeviceCommand) (DeviceResult, error)
}

// DeviceCommand is the params of device.set: the device.Options of package
// device, and the zoom.
type DeviceCommand struct {
	View      string  `json:"view,omitempty"`
	Device    string  `json:"device,omitempty"`
	Landscape bool    `json:"landscape,omitempty"`
	Theme     string  `json:"theme,omitempty"`
	Locale    string  `json:"locale,omitempty"`
	Zoom      float64 `json:"zoom,omitempty"`
}

// DeviceResult is the result of device.set: the page's viewport now
// (window.miniapp.viewport's value), and whether the page was loaded
// again for it (a new user agent).
type DeviceResult struct {
	Viewport json.RawMessage `json:"viewport"`
	Reloaded bool            `json:"reloaded"`
}

// ServiceController is the optional ability of a Controller to run the
// development controls of the service it signs in with (the faults, the
// clock, the fixtures and explain of docs/dashboard.md, "Development
// controls"), each a command named as in package devclient ("fault.add",
// "clock.advance", ...). A Controller without it answers those commands
// with unknown_command.
type ServiceController interface {
	// ServiceControl runs control with params (a JSON object) and returns
	// the service's answer. The service's refusal is an *Error with
	// CodeServiceRefused whose message starts with the service's status,
	// code and field ("400 invalid_field at /advance: ...").
	ServiceControl(ctx context.Context, control string, params json.RawMessage) (json.RawMessage, error)
}

// NetworkController is the optional ability of a Controller to set the
// network conditions of the Miniapp's view (commands network.set and
// network.clear; docs/playground.md, "Network conditions and mocks"). A
// Controller without it answers them with unknown_command.
type NetworkController interface {
	// SetNetwork makes cmd the view's network conditions, replacing the
	// ones it had; a bad throttle or mock rule is an *Error with
	// CodeInvalidParams naming the field.
	SetNetwork(ctx context.Context, cmd NetworkCommand) (NetworkResult, error)
}

// NetworkCommand is the params of network.set (network.clear is one with
// neither field): Throttle as `--network` takes it ("slow-3g", "offline",
// "300ms/400/400"; "" for none), Mocks the JSON array of mock rules of a
// rules file's "rules" (nil for none).
type NetworkCommand struct {
	View     string          `json:"view,omitempty"`
	Throttle string          `json:"throttle,omitempty"`
	Mocks    json.RawMessage `json:"mocks,omitempty"`
}

// NetworkResult is the result of network.set and network.clear: the
// conditions now in force.
type NetworkResult struct {
	Throttle string `json:"throttle"`
	Mocks    int    `json:"mocks"`
}

// ConsentReporter is the optional ability of a Controller to say which
// consent screen is on screen now. A client that connects while one is
// shown gets its consent.shown event first, marked "replayed": the event
// was published before the client connected, and without it the client
// could not know a screen waits for consent.approve or consent.deny.
type ConsentReporter interface {
	// ConsentOnScreen returns the consent.shown event of the screen on
	// screen, if one is.
	ConsentOnScreen() (ConsentShownEvent, bool)
}

// Command names.
const (
	CommandOpen           = "open"
	CommandConsentApprove = "consent.approve"
	CommandConsentDeny    = "consent.deny"
	CommandNavigate       = "navigate"
	CommandEval           = "eval"
	CommandScreenshot     = "screenshot"
	CommandClose          = "close"
	CommandDevToolsShow   = "devtools.show"
	CommandDeviceSet      = "device.set"
	CommandNetworkSet     = "network.set"
	CommandNetworkClear   = "network.clear"
)

// OpenCommand is the params of open.
type OpenCommand struct {
	Origin    string `json:"origin,omitempty"`
	ID        string `json:"id,omitempty"`
	Dashboard string `json:"dashboard,omitempty"` // the dashboard URL; "" for the host's default
	// Profile launches a saved launch profile instead of origin and id
	// (the playground's; docs/playground.md, "Launch profiles").
	Profile string `json:"profile,omitempty"`
}

// OpenResult is the result of open.
type OpenResult struct {
	View string `json:"view"`
}

// ViewCommand is the params of commands that only name a view.
type ViewCommand struct {
	View string `json:"view,omitempty"`
}

// ApproveCommand is the params of consent.approve.
type ApproveCommand struct {
	View string `json:"view,omitempty"`
	// Account is the choice to make on the screen, one of the Accounts
	// of the consent.shown event; "" keeps the screen's default.
	Account string `json:"account,omitempty"`
	// Choices, when set, are the per-entry decisions to make on the
	// screen (docs/native-consent.md, "2. Post the decision"): what is
	// declined, and lowered maximums. Nil keeps the screen's own
	// (everything granted unless the subject changed it).
	Choices *ConsentChoices `json:"-"`
}

// ConsentChoices are per-entry decisions of consent.approve, named as the
// native-consent API names them: scopes by name, authorization_details
// objects by their index in the request (the entries of consent.shown).
type ConsentChoices struct {
	DeclinedScopes  []string         `json:"declined_scopes"`
	DeclinedDetails []int            `json:"declined_details"`
	LoweredMaximums []LoweredMaximum `json:"lowered_maximums"`
}

// LoweredMaximum is the maximum allowed for each charge of the automatic
// charge at Index, lower than requested (docs/service.md §2.4).
type LoweredMaximum struct {
	Index   int    `json:"index"`
	Maximum string `json:"maximum"`
}

// MarshalJSON writes the command as its params: the choices' members
// beside view and account, present only when Choices is set.
func (c ApproveCommand) MarshalJSON() ([]byte, error) {
	type plain struct {
		View    string `json:"view,omitempty"`
		Account string `json:"account,omitempty"`
	}
	p := plain{View: c.View, Account: c.Account}
	if c.Choices == nil {
		return json.Marshal(p)
	}
	// Every member of the choices is sent, empty or not: set choices
	// replace the screen's own.
	type withChoices struct {
		plain
		DeclinedScopes  []string         `json:"declined_scopes"`
		DeclinedDetails []int            `json:"declined_details"`
		LoweredMaximums []LoweredMaximum `json:"lowered_maximums"`
	}
	wc := withChoices{plain: p, DeclinedScopes: c.Choices.DeclinedScopes, DeclinedDetails: c.Choices.DeclinedDetails, LoweredMaximums: c.Choices.LoweredMaximums}
	if wc.DeclinedScopes == nil {
		wc.DeclinedScopes = []string{}
	}
	if wc.DeclinedDetails == nil {
		wc.DeclinedDetails = []int{}
	}
	if wc.LoweredMaximums == nil {
		wc.LoweredMaximums = []LoweredMaximum{}
	}
	return json.Marshal(wc)
}

// NavigateCommand is the params of navigate.
type NavigateCommand struct {
	View string `json:"view,omitempty"`
	URL  string `json:"url"`
}

// EvalCommand is the params of eval.
type EvalCommand struct {
	View   string `json:"view,omitempty"`
	Script string `json:"script"`
}

// Areas a screenshot covers.
const (
	// ScreenshotView is the Miniapp's view as it shows (with the host's
	// consent view when that is over it): the default.
	ScreenshotView = "view"
	// ScreenshotDevice is the device as the window shows it, in its
	// frame; ScreenshotView is the same page without the frame.
	ScreenshotDevice = "device"
	// ScreenshotWindow is the whole window as it is composed: its tabs,
	// the page shown (the launcher's or the Miniapp's) and any screen of
	// the host over it.
	ScreenshotWindow = "window"
)

// ScreenshotCommand is the params of screenshot.
type ScreenshotCommand struct {
	View string `json:"view,omitempty"`
	// Area is ScreenshotView ("" too) or ScreenshotWindow.
	Area string `json:"area,omitempty"`
}

// Screenshot is the result of screenshot. Data marshals as base64.
type Screenshot struct {
	Format string `json:"format"` // "png"
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Data   []byte `json:"data"`
}

// command is a decoded automation command.
type command struct {
	id     int64
	name   string
	params fields
}

// commandReply is a command's reply on the wire.
type commandReply struct {
	Type   string      `json:"type"` // "reply"
	ID     int64       `json:"id"`
	OK     bool        `json:"ok"`
	Result any         `json:"result,omitempty"`
	Error  *replyError `json:"error,omitempty"`
}

// maxCommandSize caps an incoming command; eval scripts are the largest.
const maxCommandSize = 1 << 20

// decodeCommand reads {"id":N,"command":"…","params":{…}}. On failure
// the returned command carries the id when it could be read.
func decodeCommand(raw []byte) (command, *Error) {
	var c command
	if len(raw) > maxCommandSize {
		return c, Errorf(CodeTooLarge, "command of %d bytes, the limit is %d", len(raw), maxCommandSize)
	}
	f, err := splitObject(raw)
	if err != nil {
		return c, Errorf(CodeInvalidMessage, "%v", err)
	}
	id, present, err := f.integer("id")
	switch {
	case err != nil:
		return c, Errorf(CodeInvalidMessage, "%v", err)
	case !present:
		return c, Errorf(CodeInvalidMessage, "id is missing")
	case id < 1 || id > maxSafeInteger:
		return c, Errorf(CodeInvalidMessage, "id must be from 1 to %d", int64(maxSafeInteger))
	}
	c.id = id
	if err := f.only("id", "command", "params"); err != nil {
		return c, Errorf(CodeInvalidMessage, "%v", err)
	}
	name, present, err := f.str("command")
	if err != nil || !present {
		return c, Errorf(CodeInvalidMessage, "command must be a string")
	}
	c.name = name
	if c.params, _, err = f.object("params"); err != nil {
		return c, Errorf(CodeInvalidMessage, "%v", err)
	}
	return c, nil
}

// commandHandler runs one command's params against ctl. Errors in params
// are the driver's (CodeInvalidParams); errors from ctl are the host's.
type commandHandler func(ctx context.Context, ctl Controller, name string, p fields) (any, error)

// commandHandlers maps each built-in command's name to its handler; the
// service's development controls (devclient.Known) are forwarded whole.
var commandHandlers = map[string]commandHandler{
	CommandOpen:           runOpen,
	CommandConsentApprove: runConsentApprove,
	CommandScreenshot:     runScreenshot,
	CommandConsentDeny:    runViewCommand,
	CommandClose:          runViewCommand,
	CommandDevToolsShow:   runDevToolsShow,
	CommandDeviceSet:      runDeviceSet,
	CommandNetworkSet:     runNetwork,
	CommandNetworkClear:   runNetwork,
	CommandNavigate:       runNavigate,
	CommandEval:           runEval,
}

// run executes a decoded command against ctl.
func (c command) run(ctx context.Context, ctl Controller) (any, error) {
	p := c.params
	if p == nil {
		p = fields{}
	}
	if h, ok := commandHandlers[c.name]; ok {
		return h(ctx, ctl, c.name, p)
	}
	if devclient.Known(c.name) {
		return runServiceControl(ctx, ctl, c.name, p)
	}
	return nil, Errorf(CodeUnknownCommand, "no command %s", quote(c.name))
}

// invalidParams wraps an error in the driver's params.
func invalidParams(err error) error { return Errorf(CodeInvalidParams, "%v", err) }

// view reads the optional "view" field.
func (f fields) view() (string, error) {
	v, _, err := f.str("view")
	return v, err
}

// runOpen runs open: a profile, or an origin and an id.
func runOpen(ctx context.Context, ctl Controller, _ string, p fields) (any, error) {
	if err := p.only("origin", "id", "dashboard", "profile"); err != nil {
		return nil, invalidParams(err)
	}
	var cmd OpenCommand
	var err error
	if cmd.Profile, _, err = p.str("profile"); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.Profile != "" {
		if _, given := p["origin"]; given {
			return nil, Errorf(CodeInvalidParams, "give a profile or an origin and an id, not both")
		}
	} else if cmd.Origin, err = p.required("origin"); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.ID, _, err = p.str("id"); err != nil || (cmd.Profile == "" && cmd.ID == "") {
		if err == nil {
			_, err = p.required("id")
		}
		return nil, invalidParams(err)
	}
	if cmd.Dashboard, _, err = p.str("dashboard"); err != nil {
		return nil, invalidParams(err)
	}
	return ctl.Open(ctx, cmd)
}

// runConsentApprove runs consent.approve with the user's choices.
func runConsentApprove(ctx context.Context, ctl Controller, _ string, p fields) (any, error) {
	if err := p.only("view", "account", "declined_scopes", "declined_details", "lowered_maximums"); err != nil {
		return nil, invalidParams(err)
	}
	var cmd ApproveCommand
	var err error
	if cmd.View, err = p.view(); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.Account, _, err = p.str("account"); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.Choices, err = p.choices(); err != nil {
		return nil, invalidParams(err)
	}
	return nil, ctl.ApproveConsent(ctx, cmd)
}

// runScreenshot runs screenshot of one of the three areas.
func runScreenshot(ctx context.Context, ctl Controller, _ string, p fields) (any, error) {
	if err := p.only("view", "area"); err != nil {
		return nil, invalidParams(err)
	}
	var cmd ScreenshotCommand
	var err error
	if cmd.View, err = p.view(); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.Area, _, err = p.str("area"); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.Area != "" && cmd.Area != ScreenshotView && cmd.Area != ScreenshotWindow && cmd.Area != ScreenshotDevice {
		return nil, Errorf(CodeInvalidParams, "area: %s is not one of %q (the Miniapp's view, the default), %q (the device in its frame) and %q (the whole window)",
			quote(cmd.Area), ScreenshotView, ScreenshotDevice, ScreenshotWindow)
	}
	return ctl.Screenshot(ctx, cmd)
}

// runViewCommand runs consent.deny and close, whose only param is the view.
func runViewCommand(ctx context.Context, ctl Controller, name string, p fields) (any, error) {
	if err := p.only("view"); err != nil {
		return nil, invalidParams(err)
	}
	v, err := p.view()
	if err != nil {
		return nil, invalidParams(err)
	}
	cmd := ViewCommand{View: v}
	if name == CommandConsentDeny {
		return nil, ctl.DenyConsent(ctx, cmd)
	}
	return nil, ctl.Close(ctx, cmd)
}

// runDevToolsShow runs devtools.show on a host with a web inspector.
func runDevToolsShow(ctx context.Context, ctl Controller, name string, p fields) (any, error) {
	dt, ok := ctl.(DevToolsController)
	if !ok {
		return nil, Errorf(CodeUnknownCommand, "this host has no web inspector (command %s)", quote(name))
	}
	if err := p.only("view"); err != nil {
		return nil, invalidParams(err)
	}
	v, err := p.view()
	if err != nil {
		return nil, invalidParams(err)
	}
	return nil, dt.ShowDevTools(ctx, ViewCommand{View: v})
}

// runDeviceSet runs device.set on a host that shows devices.
func runDeviceSet(ctx context.Context, ctl Controller, name string, p fields) (any, error) {
	dc, ok := ctl.(DeviceController)
	if !ok {
		return nil, Errorf(CodeUnknownCommand, "this host shows no devices (command %s)", quote(name))
	}
	cmd, err := deviceCommand(p)
	if err != nil {
		return nil, invalidParams(err)
	}
	return dc.SetDevice(ctx, cmd)
}

// runNetwork runs network.set and network.clear (which takes only the view).
func runNetwork(ctx context.Context, ctl Controller, name string, p fields) (any, error) {
	nc, ok := ctl.(NetworkController)
	if !ok {
		return nil, Errorf(CodeUnknownCommand, "this host sets no network conditions (command %s)", quote(name))
	}
	var cmd NetworkCommand
	var err error
	if name == CommandNetworkClear {
		err = p.only("view")
	} else {
		err = p.only("view", "throttle", "mocks")
	}
	if err != nil {
		return nil, invalidParams(err)
	}
	if cmd.View, err = p.view(); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.Throttle, _, err = p.str("throttle"); err != nil {
		return nil, invalidParams(err)
	}
	if raw, ok := p["mocks"]; ok {
		if len(raw) == 0 || raw[0] != '[' {
			return nil, Errorf(CodeInvalidParams, "mocks must be an array of mock rules")
		}
		cmd.Mocks = raw
	}
	return nc.SetNetwork(ctx, cmd)
}

// runNavigate runs navigate.
func runNavigate(ctx context.Context, ctl Controller, _ string, p fields) (any, error) {
	if err := p.only("view", "url"); err != nil {
		return nil, invalidParams(err)
	}
	var cmd NavigateCommand
	var err error
	if cmd.View, err = p.view(); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.URL, err = p.required("url"); err != nil {
		return nil, invalidParams(err)
	}
	return nil, ctl.Navigate(ctx, cmd)
}

// runEval runs eval; a completion value that is not JSON (undefined) is null.
func runEval(ctx context.Context, ctl Controller, _ string, p fields) (any, error) {
	if err := p.only("view", "script"); err != nil {
		return nil, invalidParams(err)
	}
	var cmd EvalCommand
	var err error
	if cmd.View, err = p.view(); err != nil {
		return nil, invalidParams(err)
	}
	if cmd.Script, err = p.required("script"); err != nil {
		return nil, invalidParams(err)
	}
	v, err := ctl.Eval(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if v == nil || !json.Valid(v) {
		// The completion value of a script may be undefined.
		return json.RawMessage("null"), nil
	}
	return v, nil
}

// runServiceControl forwards one of the service's development controls.
func runServiceControl(ctx context.Context, ctl Controller, name string, p fields) (any, error) {
	sc, ok := ctl.(ServiceController)
	if !ok {
		return nil, Errorf(CodeUnknownCommand, "this host runs no development controls (command %s): it needs the service's operator key (docs/automation.md, \"The service's development controls\")", quote(name))
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, invalidParams(err)
	}
	return sc.ServiceControl(ctx, name, params)
}

// required reads a string field that must be present and non-empty.
func (f fields) required(name string) (string, error) {
	s, present, err := f.str(name)
	if err != nil {
		return "", err
	}
	if !present || s == "" {
		return "", errors.New(name + " is required")
	}
	return s, nil
}

// deviceCommand reads device.set's params.
func deviceCommand(p fields) (DeviceCommand, error) {
	var cmd DeviceCommand
	if err := p.only("view", "device", "landscape", "theme", "locale", "zoom"); err != nil {
		return cmd, err
	}
	var err error
	for _, f := range []struct {
		name string
		dst  *string
	}{{"view", &cmd.View}, {"device", &cmd.Device}, {"theme", &cmd.Theme}, {"locale", &cmd.Locale}} {
		if *f.dst, _, err = p.str(f.name); err != nil {
			return cmd, err
		}
	}
	if cmd.Landscape, _, err = p.boolean("landscape"); err != nil {
		return cmd, err
	}
	if cmd.Zoom, _, err = p.number("zoom"); err != nil {
		return cmd, err
	}
	return cmd, nil
}
