package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/playground"
)

// A QA check that a broken Miniapp is rejected, against a real playground
// (here without a window; `miniapp-host playground` prints the URL and
// token to connect with). With a window, Open returns the view and the
// test goes on with WaitFor(client.Kind("consent.shown")), Approve and
// Eval.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := playground.Start(ctx, playground.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	entries, err := p.Miniapps(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var broken playground.Entry
	for _, e := range entries {
		if e.ID == playground.BrokenUnknownMember {
			broken = e
		}
	}

	c, err := client.Dial(ctx, p.AutomationURL(), p.AutomationToken())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	_, err = c.Open(ctx, broken.Origin, broken.ID)
	var refused *client.Error
	if errors.As(err, &refused) {
		fmt.Println("open refused:", refused.Code)
	}
	// The stage that failed, from the events the launch published.
	ev, err := c.WaitFor(ctx, func(e client.Event) bool {
		var st bridge.ResolveStageEvent
		return e.Kind == "resolve.stage" && e.Decode(&st) == nil && !st.OK
	})
	if err != nil {
		log.Fatal(err)
	}
	var st bridge.ResolveStageEvent
	if err := ev.Decode(&st); err != nil {
		log.Fatal(err)
	}
	fmt.Println("failed stage:", st.Stage, st.Code)
	// Output:
	// open refused: command_failed
	// failed stage: schema schema-additional-properties
}
