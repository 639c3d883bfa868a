//go:build linux && cgo

package webkitgtk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/playground"
)

// TestAutomationClientSignsIn is what a QA suite in Go does with package
// automation/client against the playground's window: open the
// confidential demo, wait for the consent screen, approve it, and find the
// Miniapp signed in, all through the automation channel.
func TestAutomationClientSignsIn(t *testing.T) {
	pw := playground.NewWindow(testWin, "qa")
	bus := bridge.NewBus(nil)
	testBus.forwardTo(t, bus)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p, err := playground.Start(ctx, playground.Config{Opener: pw, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("playground: close: %v", err)
		}
		testWin.ShowPage(host.PageMiniapp)
	})
	c, err := client.Dial(ctx, p.AutomationURL(), p.AutomationToken())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var refused *client.Error
	if err := c.Approve(ctx, "", ""); !errors.As(err, &refused) || refused.Code != host.CodeNoConsent {
		t.Fatalf("approve with no consent screen: %v, want code %s", err, host.CodeNoConsent)
	}
	view, err := c.Open(ctx, entryOrigin(t, p, playground.DemoConfidentialID), playground.DemoConfidentialID)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.WaitFor(ctx, client.Kind("consent.shown"))
	if err != nil {
		t.Fatal(err)
	}
	var shown bridge.ConsentShownEvent
	if err := ev.Decode(&shown); err != nil || shown.ClientID != playground.DemoConfidentialID {
		t.Fatalf("consent.shown %+v %v", shown, err)
	}
	// A client that connects while the screen is shown learns of it.
	late, err := client.Dial(ctx, p.AutomationURL(), p.AutomationToken())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	ev, err = late.WaitFor(ctx, client.Kind("consent.shown"))
	if err != nil || !ev.Replayed {
		t.Fatalf("a client connected during the consent: %+v %v, want the replayed consent.shown", ev, err)
	}
	if err := c.Approve(ctx, view, ""); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"consent.decided", "code.issued", "cookies.synced"} {
		if _, err := c.WaitFor(ctx, client.Kind(k)); err != nil {
			t.Fatalf("waiting for %s: %v", k, err)
		}
	}
	// The signed-in page replaces the callback's: ask until it has.
	for {
		v, err := c.Eval(ctx, view, `document.body ? document.body.dataset.signedIn || "" : ""`)
		if err != nil {
			t.Fatal(err)
		}
		if string(v) == `"true"` {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the Miniapp never showed itself signed in (last: %s)", v)
		}
	}
	shot, err := c.Screenshot(ctx, view)
	if err != nil || shot.Format != "png" || len(shot.Data) == 0 {
		t.Fatalf("screenshot: %v (%s, %d bytes)", err, shot.Format, len(shot.Data))
	}
	// The whole window, through the channel: of the window's size.
	win, err := c.ScreenshotWindow(ctx)
	size := make(chan [2]int, 1)
	testEng.Dispatch(func() { w, h := testEng.WindowSize(); size <- [2]int{w, h} })
	if ws := <-size; err != nil || win.Format != "png" || win.Width != ws[0] || win.Height != ws[1] {
		t.Errorf("window screenshot: %v, %d×%d, the window is %d×%d", err, win.Width, win.Height, ws[0], ws[1])
	}
}
