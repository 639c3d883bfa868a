//go:build linux && cgo

package webkitgtk

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"

	"github.com/miniapp-host/miniapp-host/bridge"
)

// TestController drives a confidential sign-in through the automation
// channel's commands, as a QA script would.
func TestController(t *testing.T) {
	e := testEnv(t)
	clearCookies(t)
	ctl := testWin.Controller(func(context.Context, bridge.OpenCommand) error { return errors.New("not in this test") })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	code := func(err error) bridge.Code {
		var be *bridge.Error
		if errors.As(err, &be) {
			return be.Code
		}
		return ""
	}

	rec := mount(t, publicApp(t, e, nil))
	if err := ctl.ApproveConsent(ctx, bridge.ApproveCommand{}); code(err) != host.CodeNoConsent {
		t.Errorf("approve without a consent screen: %v, want %s", err, host.CodeNoConsent)
	}
	if err := ctl.Navigate(ctx, bridge.NavigateCommand{URL: "not a url"}); code(err) != bridge.CodeInvalidParams {
		t.Errorf("navigate to a bad URL: %v", err)
	}
	if err := ctl.Navigate(ctx, bridge.NavigateCommand{View: "other", URL: e.Public.Origin}); code(err) != bridge.CodeInvalidParams {
		t.Errorf("unknown view: %v", err)
	}
	out, err := ctl.Eval(ctx, bridge.EvalCommand{Script: `document.title`})
	if err != nil || string(out) != `"Demo public Miniapp"` {
		t.Errorf("eval: %s %v", out, err)
	}

	testWin.Eval(`window.miniapp.authorize({authorization_details: [{type: "bank_account", actions: ["read"], locations: [` +
		jsString(e.Svc.URL+"/api") + `], subject: {type: "profile"}, selection: {min: 1, max: 1}}]}).then(function (r) {
		document.body.dataset.details = JSON.stringify(r.authorization_details); }, function (err) { document.body.dataset.details = err.code; })`)
	rec.Wait(t, "consent shown", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	shot, err := ctl.Screenshot(ctx, bridge.ScreenshotCommand{})
	if err != nil || shot.Format != "png" || shot.Width < 100 || len(shot.Data) < 1000 {
		t.Errorf("screenshot: %d×%d %d bytes, %v", shot.Width, shot.Height, len(shot.Data), err)
	}
	// The whole window: the PNG has the window's size, the launcher
	// beside the Miniapp's page with the consent over it.
	win, err := ctl.Screenshot(ctx, bridge.ScreenshotCommand{Area: bridge.ScreenshotWindow})
	size := make(chan [2]int, 1)
	testEng.Dispatch(func() { w, h := testEng.WindowSize(); size <- [2]int{w, h} })
	ws := <-size
	if err != nil || win.Format != "png" || win.Width != ws[0] || win.Height != ws[1] || win.Width*win.Height <= shot.Width*shot.Height {
		t.Errorf("window screenshot: %d×%d (%v), the window is %d×%d, its Miniapp view shot %d×%d", win.Width, win.Height, err,
			ws[0], ws[1], shot.Width, shot.Height)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(win.Data)); err != nil || cfg.Width != ws[0] || cfg.Height != ws[1] {
		t.Errorf("the window screenshot's PNG is %d×%d (%v), want %d×%d", cfg.Width, cfg.Height, err, ws[0], ws[1])
	}
	if err := ctl.ApproveConsent(ctx, bridge.ApproveCommand{Account: "5d4c3b2a-1908-4e7f-8d6c-5b4a39281706"}); code(err) != bridge.CodeInvalidParams {
		t.Errorf("approve with another subject's account: %v, want invalid_params", err)
	}
	const account = "0b7e9d3c-8a21-4f5e-a6b7-c8d9e0f1a2b3"
	if err := ctl.ApproveConsent(ctx, bridge.ApproveCommand{Account: account}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	pollJS(t, `(document.body.dataset.details || "").indexOf(`+jsString(account)+`) >= 0 ? "granted" : (document.body.dataset.details || "")`, "granted")
	if out, err := ctl.Eval(ctx, bridge.EvalCommand{Script: `document.body.dataset.details`}); err != nil || !strings.Contains(string(out), account) {
		t.Errorf("granted details %s (%v) do not name the chosen account", out, err)
	}
}
