package playground

import (
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/devclient"
)

// TestClockNoteInChromium: while the service's development clock is off
// real time, the flow inspector says so above its timeline, with the
// offset, whoever moved the clock (here the dashboard API, as the CLI
// does); the change is an event of the timeline, and the note goes when
// the clock is back.
func TestClockNoteInChromium(t *testing.T) {
	ctx := browser(t)
	p := start(t, Config{})
	closeFirst(t, ctx)
	viewport(t, ctx, 1280, 800)
	openLauncher(t, ctx, p)
	poll(t, ctx, "the automation channel", `document.getElementById("channel").dataset.state === "open"`)
	if hidden := eval[bool](t, ctx, `document.getElementById("service-clock").hidden`); !hidden {
		t.Fatal("the clock note is shown while the clock is at real time")
	}
	dc := &devclient.Client{Dashboard: p.Services().Dashboard, Key: p.OperatorKey()}
	if _, err := dc.Do(t.Context(), devclient.ClockAdvance, []byte(`{"duration":"11m"}`)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the clock note", `!document.getElementById("service-clock").hidden`)
	if note := eval[string](t, ctx, `document.getElementById("service-clock").textContent`); !strings.Contains(note, "+11m0s (injected)") {
		t.Errorf("the clock note says %q, want the offset +11m0s marked injected", note)
	}
	poll(t, ctx, "the clock's event, a warning", `(() => {
		const li = document.querySelector('#timeline li[data-kind="service.clock"]');
		return li !== null && li.dataset.level === "warn" && li.querySelector(".ev-summary").textContent.includes("11m0s off real time");
	})()`)
	if _, err := dc.Do(t.Context(), devclient.ClockReset, nil); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the clock note gone", `document.getElementById("service-clock").hidden`)
}
