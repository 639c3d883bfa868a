package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

// runEvents lists the server's audit events, or follows them
// (docs/dashboard.md, "Events").
func runEvents(ctx context.Context, e env) int {
	const cmd = "events"
	fs := newFlagSet(cmd, func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host events [--dashboard URL] [--key KEY] [--follow] [--client ID] [--subject S] [--kind K[,K2]] [--limit N] [--json]")
		fmt.Fprintln(w, "\nThe reference server's audit events, oldest first: each sign-in step, consent")
		fmt.Fprintln(w, "decision, token issued, refusal (its rule, field, what was sent and what was")
		fmt.Fprintln(w, "expected), grant revocation and dashboard change (docs/dashboard.md, \"Events\").")
		fmt.Fprintln(w, "--follow goes on printing them as they are recorded until interrupted (Ctrl-C).")
		fmt.Fprintln(w, "kinds: "+strings.Join(audit.Kinds, ", "))
		fmt.Fprintln(w, "Exit codes: 0 done (or interrupted while following), 1 refused by the dashboard, 2 usage, 3 dashboard unreachable.")
	})
	dash := fs.String("dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	key := fs.String("key", "", "the operator key (default $"+operatorKeyEnv+", then $"+keyEnv+")")
	asJSON := fs.Bool("json", false, "print each event's JSON on a line of its own")
	follow := fs.Bool("follow", false, "after the newest events, go on printing those recorded until interrupted")
	client := fs.String("client", "", "only the events of this client_id")
	subject := fs.String("subject", "", "only the events of this subject")
	kind := fs.String("kind", "", "only the events of these kinds, comma-separated")
	limit := fs.Int("limit", audit.DefaultLimit, fmt.Sprintf("how many of the newest events to print first, 1 to %d", audit.MaxLimit))
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(args) > 0 {
		return usageError(e, cmd, fmt.Sprintf("takes no argument, got %q; filter with --client, --subject or --kind", args[0]))
	}
	q := url.Values{}
	if *kind != "" {
		for _, k := range strings.Split(*kind, ",") {
			if !slices.Contains(audit.Kinds, strings.TrimSpace(k)) {
				return usageError(e, cmd, fmt.Sprintf("--kind: unknown kind %q; use one or more of %s, comma-separated", k, strings.Join(audit.Kinds, ", ")))
			}
		}
		q.Set("kind", *kind)
	}
	if *limit < 1 || *limit > audit.MaxLimit {
		return usageError(e, cmd, fmt.Sprintf("--limit %d: give 1 to %d", *limit, audit.MaxLimit))
	}
	if u, err := url.Parse(*dash); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError(e, cmd, fmt.Sprintf("--dashboard %q: give the dashboard's http(s) URL, such as %s", *dash, defaultDashboardURL))
	}
	if *client != "" {
		q.Set("client", *client)
	}
	if *subject != "" {
		q.Set("subject", *subject)
	}
	k := *key
	for _, v := range []string{operatorKeyEnv, keyEnv} {
		if k == "" {
			k = e.envVar(v)
		}
	}
	p := &eventPrinter{w: e.stdout, json: *asJSON}
	list := url.Values{"limit": {strconv.Itoa(*limit)}}
	for n, v := range q {
		list[n] = v
	}
	c := &dashboard.Client{BaseURL: *dash, Key: k}
	out, err := c.Do(ctx, http.MethodGet, "/api/events?"+list.Encode(), nil)
	if err != nil {
		return dashboardFailed(e, cmd, "review", *dash, k != "", *asJSON, err)
	}
	var page struct {
		Events    []json.RawMessage `json:"events"`
		NextAfter int64             `json:"next_after"`
	}
	if err := json.Unmarshal(out, &page); err != nil {
		fmt.Fprintf(e.stderr, "miniapp-host: events: the answer is not a list of events: %v\n", err)
		return exitUndecided
	}
	for _, raw := range page.Events {
		p.print(raw)
	}
	if !*follow {
		return exitOK
	}
	return followEvents(ctx, e, *dash, k, q, page.NextAfter, p)
}

// followEvents prints the events after id after as the stream sends
// them, until ctx ends (an interrupt: exit 0). A dropped stream is opened
// again after the last event printed.
func followEvents(ctx context.Context, e env, dash, key string, q url.Values, after int64, p *eventPrinter) int {
	for {
		last, err := streamEvents(ctx, dash, key, q, after, p)
		if ctx.Err() != nil {
			return exitOK
		}
		var ae *dashboard.APIError
		if errors.As(err, &ae) {
			return dashboardFailed(e, "events", "review", dash, key != "", p.json, err)
		}
		if last == after && err != nil {
			// Not one event since the last try: the server is gone.
			fmt.Fprintf(e.stderr, "miniapp-host: events: the stream of %s ended: %v\n", dash, err)
			return exitUndecided
		}
		after = last
		fmt.Fprintf(e.stderr, "miniapp-host: events: the stream ended (%v); following again after event %d\n", err, after)
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(time.Second):
		}
	}
}

// streamEvents reads one stream from after, printing its events; it
// returns the id of the last one printed and why the stream ended.
func streamEvents(ctx context.Context, dash, key string, q url.Values, after int64, p *eventPrinter) (int64, error) {
	sq := url.Values{"after": {strconv.FormatInt(after, 10)}}
	for n, v := range q {
		sq[n] = v
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(dash, "/")+"/api/events/stream?"+sq.Encode(), nil)
	if err != nil {
		return after, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return after, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		ae := &dashboard.APIError{Status: resp.StatusCode, Body: body}
		if json.Unmarshal(body, &ae.Err) != nil || ae.Err.Code == "" {
			return after, fmt.Errorf("dashboard: %s without an error object", resp.Status)
		}
		return after, ae
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	id := after
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			if n, err := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64); err == nil {
				id = n
			}
		case strings.HasPrefix(line, "data: "):
			p.print(json.RawMessage(strings.TrimPrefix(line, "data: ")))
			after = id
		}
	}
	if err := sc.Err(); err != nil {
		return after, err
	}
	return after, io.ErrUnexpectedEOF
}

// eventPrinter prints events: one line of text each, or their JSON.
type eventPrinter struct {
	w    io.Writer
	json bool
}

func (p *eventPrinter) print(raw json.RawMessage) {
	if p.json {
		fmt.Fprintln(p.w, string(raw))
		return
	}
	var ev audit.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		fmt.Fprintln(p.w, string(raw))
		return
	}
	fmt.Fprintln(p.w, eventLine(ev))
}

// eventLine is an event's line of text: time, kind, client, subject,
// outcome, and a refusal's error, field, what was sent and expected, and
// its rule.
func eventLine(ev audit.Event) string {
	var b strings.Builder
	b.WriteString(ev.Time.UTC().Format("2006-01-02T15:04:05.000Z"))
	b.WriteString(" " + ev.Kind)
	kv := func(k, v string) {
		if v == "" {
			return
		}
		if strings.ContainsAny(v, " \"=") {
			v = strconv.Quote(v)
		}
		b.WriteString(" " + k + "=" + v)
	}
	kv("client", ev.ClientID)
	kv("subject", ev.Subject)
	kv("outcome", ev.Outcome)
	kv("actor", ev.Actor)
	kv("grant", ev.GrantID)
	if f := ev.Refusal; f != nil {
		kv("error", f.Error)
		kv("field", f.Field)
		kv("sent", f.Sent)
		kv("expected", f.Expected)
		kv("rule", f.Rule)
	}
	for _, k := range []string{"flow", "grant_type", "via", "method", "route"} {
		kv(k, ev.Detail[k])
	}
	return b.String()
}
