package playground

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// received keeps every byte the tab received: each answer's headers and
// body (a stream's as it comes, through Network.streamResourceContent),
// and every WebSocket frame.
type received struct {
	mu  sync.Mutex
	buf strings.Builder
	ids map[network.RequestID]string // request → URL
}

func (r *received) add(s string) {
	r.mu.Lock()
	r.buf.WriteString(s)
	r.buf.WriteByte('\n')
	r.mu.Unlock()
}

func (r *received) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// record starts recording what the tab receives; call it before the page
// loads.
func record(t *testing.T, ctx context.Context) *received {
	t.Helper()
	r := &received{ids: map[network.RequestID]string{}}
	// A listener must not run a command: each runs on a goroutine of its
	// own (chromedp.Listen).
	// The test waits for them at its end; events that come after it began
	// to wait start none.
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex // guards closed, and wg.Add against wg.Wait
		closed bool
	)
	t.Cleanup(func() {
		mu.Lock()
		closed = true
		mu.Unlock()
		wg.Wait()
	})
	run := func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventResponseReceived:
			h, _ := json.Marshal(e.Response.Headers)
			r.add(e.Response.URL + " " + string(h))
			r.mu.Lock()
			r.ids[e.RequestID] = e.Response.URL
			r.mu.Unlock()
			if strings.Contains(e.Response.URL, "/api/server-events/stream") {
				run(func() {
					if res, err := chromedp.Call(ctx, network.StreamResourceContent, network.StreamResourceContentParams{RequestID: e.RequestID}); err == nil {
						r.add(string(res.BufferedData))
					}
				})
			}
		case *network.EventDataReceived:
			if len(e.Data) > 0 {
				r.add(string(e.Data))
			}
		case *network.EventLoadingFinished:
			r.mu.Lock()
			u := r.ids[e.RequestID]
			r.mu.Unlock()
			if strings.Contains(u, "/api/server-events/stream") {
				return // streamed: its data came with dataReceived
			}
			run(func() {
				if res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: e.RequestID}); err == nil {
					r.add(string(res.Body))
				}
			})
		case *network.EventWebSocketFrameReceived:
			r.add(string(e.Response.PayloadData))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestServerEventsInChromium is the Server events pane beside the flow
// inspector (docs/playground.md, "Server events"), in Chromium, with the
// real servers and the host's core on the fake engine as the window: a
// sign-in in the window shows its server events live, in order; the client
// filter narrows the pane to the other client's; a row of the sign-in
// selects its flow in the inspector; a refusal opens to its rule, field,
// sent and expected; Pause holds new events and Resume draws them; and
// nothing the page received holds the operator key. It writes the pane
// beside the inspector to artifacts/playground/.
func TestServerEventsInChromium(t *testing.T) {
	ctx := browser(t)
	x := startWindowed(t)
	closeFirst(t, ctx)
	got := record(t, ctx)
	viewport(t, ctx, 640, 860)
	openLauncher(t, ctx, x.p)
	poll(t, ctx, "the channel and the live events", `document.getElementById("channel").dataset.state === "open" &&
		document.getElementById("sev-status").dataset.state === "live"`)

	// rows is what the pane shows: kind, client, subject, outcome.
	rows := `[...document.querySelectorAll("#sev-list > li")].map((li) => [li.dataset.kind, li.dataset.client, li.dataset.subject, li.dataset.outcome].join(" "))`
	x.confidentialFlow(t, 1, "approve")
	conf := apiFlows(t, x.p)[0]
	sub := x.p.Subject()
	pollOr(t, ctx, "the sign-in's server events, live, in order", `(() => {
		const want = ["signin.started", "signin.authenticated", "consent.shown", "consent.approved", "token.issued"];
		const got = [...document.querySelectorAll('#sev-list > li[data-client="`+DemoConfidentialID+`"]')].map((li) => li.dataset.kind)
			.filter((k, i, a) => i === 0 || a[i - 1] !== k);
		return JSON.stringify(got) === JSON.stringify(want);
	})()`, rows)
	if o := eval[string](t, ctx, `document.querySelector('#sev-list > li[data-client="`+DemoConfidentialID+`"][data-kind="token.issued"]').dataset.subject`); o != sub {
		t.Errorf("token.issued's subject is %q, want %s", o, sub)
	}

	t.Run("selects the flow", func(t *testing.T) {
		click(t, ctx, `#sev-list > li[data-client="`+DemoConfidentialID+`"][data-kind="token.issued"]`)
		poll(t, ctx, "the flow selected", `document.querySelectorAll('#timeline .flow[data-selected="true"]').length === 1`)
		if id := eval[string](t, ctx, `document.querySelector('#timeline .flow[data-selected="true"]').dataset.flow`); id != conf.ID {
			t.Errorf("the inspector selected flow %s, want the sign-in's %s", id, conf.ID)
		}
		if s := eval[string](t, ctx, `document.querySelector('#sev-list > li[data-kind="token.issued"] .sev-flow').textContent`); !strings.Contains(s, "Flow "+conf.ID) {
			t.Errorf("the row says %q", s)
		}
		// Another step of the same sign-in (no grant yet) finds it by
		// client and time.
		click(t, ctx, `#sev-list > li[data-client="`+DemoConfidentialID+`"][data-kind="consent.shown"]`)
		poll(t, ctx, "the row's flow", `document.querySelector('#sev-list > li[data-kind="consent.shown"]').dataset.flow === "`+conf.ID+`"`)
	})

	t.Run("client filter", func(t *testing.T) {
		x.bridgeFlow(t, 2, "approve")
		pollOr(t, ctx, "the public demo's token", `document.querySelector('#sev-list > li[data-client="`+DemoPublicID+`"][data-kind="token.issued"]') !== null`, rows)
		all := eval[int](t, ctx, `document.querySelectorAll("#sev-list > li").length`)
		eval[bool](t, ctx, `(() => { const e = document.getElementById("sev-client"); e.value = "`+DemoPublicID+`";
			e.dispatchEvent(new Event("change")); return true; })()`)
		pollOr(t, ctx, "only the public demo's events", `(() => {
			const li = [...document.querySelectorAll("#sev-list > li")];
			return document.getElementById("sev-status").dataset.state === "live" && li.length > 0 &&
				li.every((l) => l.dataset.client === "`+DemoPublicID+`") && li.some((l) => l.dataset.kind === "token.issued");
		})()`, rows)
		if n := eval[int](t, ctx, `document.querySelectorAll("#sev-list > li").length`); n >= all {
			t.Errorf("the filter shows %d rows of %d", n, all)
		}
	})

	t.Run("refusal", func(t *testing.T) {
		refuseRedirect(t, x.p, "http://127.0.0.1:1/not-registered")
		sel := `#sev-list > li[data-kind="request.refused"][data-client="` + DemoPublicID + `"]`
		pollOr(t, ctx, "the refusal, live, under the filter", `document.querySelector('`+sel+`') !== null`, rows)
		click(t, ctx, sel)
		r := eval[map[string]string](t, ctx, `(() => {
			const out = {};
			for (const dd of document.querySelectorAll('`+sel+` .sev-refusal dd')) out[dd.dataset.key] = dd.textContent;
			out.expanded = document.querySelector('`+sel+`').getAttribute("aria-expanded");
			return out;
		})()`)
		if r["expanded"] != "true" || r["field"] != "redirect_uri" || r["rule"] == "" || !strings.Contains(r["sent"], "127.0.0.1:1") || r["expected"] == "" {
			t.Errorf("the refusal opens to %v, want its rule, redirect_uri, what was sent and what was expected", r)
		}
		eval[bool](t, ctx, `(() => { document.querySelector('`+sel+`').scrollIntoView({ block: "nearest" }); return true; })()`)
		shoot(t, ctx, "server-events-640x860", "")
	})

	t.Run("pause", func(t *testing.T) {
		n := eval[int](t, ctx, `document.querySelectorAll("#sev-list > li").length`)
		click(t, ctx, "#sev-pause")
		refuseRedirect(t, x.p, "http://127.0.0.1:2/not-registered")
		poll(t, ctx, "the held event counted", `document.getElementById("sev-status").textContent.startsWith("paused: 1 new")`)
		if m := eval[int](t, ctx, `document.querySelectorAll("#sev-list > li").length`); m != n {
			t.Errorf("paused, the pane drew %d rows, had %d", m, n)
		}
		click(t, ctx, "#sev-pause")
		poll(t, ctx, "the held event drawn", `document.querySelectorAll("#sev-list > li").length === `+jsInt(int64(n+1)))
		click(t, ctx, "#sev-clear")
		poll(t, ctx, "the list cleared", `document.querySelectorAll("#sev-list > li").length === 0`)
	})

	t.Run("bounded", func(t *testing.T) {
		// ?events-keep=3: the pane keeps the newest three, newest last,
		// and says so; a new event pushes the oldest out.
		u := strings.Replace(x.p.LauncherURL(), "/#", "/?events-keep=3#", 1)
		if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, "the pane live again", `document.getElementById("sev-status").dataset.state === "live"`)
		_, list, _ := listAudit(t, x.p, "")
		var want []string
		for _, e := range list[len(list)-3:] {
			want = append(want, jsInt(e.ID))
		}
		ids := `[...document.querySelectorAll("#sev-list > li")].map((li) => li.dataset.id).join(" ")`
		pollOr(t, ctx, "the newest three", ids+` === "`+strings.Join(want, " ")+`"`, ids)
		if s := eval[string](t, ctx, `document.getElementById("sev-status").textContent`); !strings.Contains(s, "the latest 3 kept") {
			t.Errorf("the status says %q", s)
		}
		refuseRedirect(t, x.p, "http://127.0.0.1:3/not-registered")
		pollOr(t, ctx, "the refusal last, three rows", `(() => { const li = document.querySelectorAll("#sev-list > li");
			return li.length === 3 && li[2].dataset.kind === "request.refused" && li[0].dataset.id === "`+want[1]+`"; })()`, ids)
	})

	// The operator key was never in what the tab received (while the
	// recording saw the events themselves).
	all := got.String()
	if !strings.Contains(all, `"request.refused"`) || !strings.Contains(all, "event: audit") {
		t.Fatalf("the recording holds no event: it shows nothing (%d bytes)", len(all))
	}
	if strings.Contains(all, x.p.OperatorKey()) {
		t.Errorf("the page received the operator key")
	}
	if s := eval[string](t, ctx, `document.documentElement.outerHTML + JSON.stringify(sessionStorage) + JSON.stringify(localStorage)`); strings.Contains(s, x.p.OperatorKey()) {
		t.Errorf("the page holds the operator key")
	}
}
