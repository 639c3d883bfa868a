package playground

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// auditEvent is a server audit event as the launcher's API passes it on
// (docs/dashboard.md, "Events").
type auditEvent struct {
	ID       int64             `json:"id"`
	Time     time.Time         `json:"time"`
	Kind     string            `json:"kind"`
	ClientID string            `json:"client_id"`
	Subject  string            `json:"subject"`
	GrantID  string            `json:"grant_id"`
	Outcome  string            `json:"outcome"`
	Detail   map[string]string `json:"detail"`
	Refusal  *struct {
		Error    string `json:"error"`
		Rule     string `json:"rule"`
		Field    string `json:"field"`
		Sent     string `json:"sent"`
		Expected string `json:"expected"`
	} `json:"refusal"`
}

// stream follows GET /api/server-events/stream?query as the page does; it
// returns the answer and a channel of its audit events, closed when the
// stream ends (its error, io.EOF for a clean end, in *end).
type stream struct {
	resp   *http.Response
	events chan auditEvent
	raw    strings.Builder // every byte read, for the key check
	end    error
	done   chan struct{}
	cancel context.CancelFunc
}

func follow(t *testing.T, p *Playground, query string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.LauncherOrigin()+"/api/server-events/stream?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &stream{resp: resp, events: make(chan auditEvent, 1024), done: make(chan struct{}), cancel: cancel}
	t.Cleanup(func() { cancel(); <-s.done })
	if resp.StatusCode != http.StatusOK {
		close(s.events)
		close(s.done)
		return s
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("the stream's Content-Type is %q", ct)
	}
	go func() {
		defer close(s.done)
		defer close(s.events)
		defer resp.Body.Close()
		rd := bufio.NewReader(resp.Body)
		var data []string
		kind := ""
		for {
			line, err := rd.ReadString('\n')
			s.raw.WriteString(line)
			if err != nil {
				s.end = err
				return
			}
			line = strings.TrimRight(line, "\r\n")
			switch {
			case line == "":
				if len(data) > 0 && kind == "audit" {
					var e auditEvent
					if json.Unmarshal([]byte(strings.Join(data, "\n")), &e) == nil {
						s.events <- e
					}
				}
				data, kind = nil, ""
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			case strings.HasPrefix(line, "event:"):
				kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			}
		}
	}()
	return s
}

// until reads the stream's events until one matches, and returns those
// read (the match last).
func (s *stream) until(t *testing.T, what string, match func(auditEvent) bool) []auditEvent {
	t.Helper()
	var got []auditEvent
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended (%v) before %s; it gave %+v", s.end, what, got)
			}
			got = append(got, e)
			if match(e) {
				return got
			}
		case <-timeout.C:
			t.Fatalf("no %s on the stream in a minute; it gave %+v", what, got)
		}
	}
}

func kindsOf(evs []auditEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// listAudit is GET /api/server-events?query: its status, its events and
// the raw answer.
func listAudit(t *testing.T, p *Playground, query string) (int, []auditEvent, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.LauncherOrigin()+"/api/server-events?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Events    []auditEvent `json:"events"`
		NextAfter *int64       `json:"next_after"`
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil || out.NextAfter == nil {
			t.Fatalf("GET /api/server-events?%s: %v, next_after %v: %s", query, err, out.NextAfter, raw)
		}
	}
	return resp.StatusCode, out.Events, string(raw)
}

// refuseRedirect asks the server to authorize demo-public for a
// redirect_uri it never registered: a request.refused of the server.
func refuseRedirect(t *testing.T, p *Playground, redirect string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"client_id": {DemoPublicID}, "response_type": {"code"}, "redirect_uri": {redirect}, "scope": {"openid"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}, "state": {"s"}}
	resp, err := c.Get(p.Services().Authorization + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("authorize with redirect_uri %s: %d, want a refusal", redirect, resp.StatusCode)
	}
}

// TestServerEventsAPI is the launcher's API over the server's audit events
// (docs/playground.md, "Server events"): a sign-in through the server's
// pages is on the stream live, step by step, and in the list; the client
// filter narrows both; a refusal carries its rule, field, sent and
// expected; filters the dashboard refuses are 400 with the field named;
// the launcher's gate holds; no answer holds the operator key; past 8
// streams at once a ninth is refused (429); and Close ends the streams
// cleanly.
func TestServerEventsAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	p, err := Start(ctx, Config{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	key := p.OperatorKey()
	all := follow(t, p, "")
	if all.resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/server-events/stream: %d", all.resp.StatusCode)
	}
	public := follow(t, p, "client="+DemoPublicID)

	signInConfidentialDemo(t, p)
	got := all.until(t, "the sign-in's token.issued", func(e auditEvent) bool {
		return e.Kind == "token.issued" && e.ClientID == DemoConfidentialID
	})
	// The sign-in's steps, in order, each about the demo and the subject
	// once it is known.
	want := []string{"signin.started", "signin.authenticated", "consent.shown", "consent.approved", "token.issued"}
	var steps []string
	for _, e := range got {
		if e.ClientID == DemoConfidentialID && (len(steps) == 0 || steps[len(steps)-1] != e.Kind) {
			steps = append(steps, e.Kind)
		}
	}
	if strings.Join(steps, " ") != strings.Join(want, " ") {
		t.Errorf("the stream gave %v for the sign-in, want %v (all: %v)", steps, want, kindsOf(got))
	}
	last := got[len(got)-1]
	if last.Subject != p.Subject() || last.GrantID == "" {
		t.Errorf("token.issued %+v, want subject %s and its grant", last, p.Subject())
	}

	// The list has them too, oldest first; the client filter narrows it.
	st, list, raw := listAudit(t, p, "client="+DemoConfidentialID)
	if st != http.StatusOK || len(list) < len(want) {
		t.Fatalf("GET /api/server-events?client=%s: %d, %d events: %s", DemoConfidentialID, st, len(list), raw)
	}
	for i, e := range list {
		if e.ClientID != DemoConfidentialID || i > 0 && e.ID <= list[i-1].ID {
			t.Errorf("event %d of the client's list: %+v (previous id %d)", i, e, list[i-1].ID)
		}
	}

	// A refusal, live, on the unfiltered stream and on the public demo's.
	bad := "http://127.0.0.1:1/not-registered"
	refuseRedirect(t, p, bad)
	isRefusal := func(e auditEvent) bool { return e.Kind == "request.refused" && e.ClientID == DemoPublicID }
	for _, s := range []*stream{all, public} {
		evs := s.until(t, "the refusal", isRefusal)
		r := evs[len(evs)-1].Refusal
		if r == nil || r.Field != "redirect_uri" || r.Rule == "" || !strings.Contains(r.Sent, "127.0.0.1:1") || r.Expected == "" {
			t.Errorf("the refusal says %+v, want the rule, redirect_uri, what was sent and what was expected", r)
		}
		for _, e := range evs {
			if s == public && e.ClientID != DemoPublicID {
				t.Errorf("the stream of client %s gave %+v", DemoPublicID, e)
			}
		}
	}

	// Filters the dashboard refuses: its status and code, and the field.
	for _, q := range []string{"kind=signin.nope", "after=yesterday", "limit=0", "colour=blue"} {
		for _, path := range []string{"/api/server-events?", "/api/server-events/stream?"} {
			var e struct {
				Error struct{ Code, Field, Message string }
			}
			// The dashboard's own refusal, passed on: its code, the field,
			// and a message with the rule and the fix after the field.
			if st := call(t, p, http.MethodGet, path+q, nil, &e); st != http.StatusBadRequest || e.Error.Code != "invalid_filter" ||
				e.Error.Field == "" || !strings.HasPrefix(e.Error.Message, e.Error.Field+": ") || len(e.Error.Message) < len(e.Error.Field)+20 {
				t.Errorf("GET %s%s: %d %+v, want 400 invalid_filter naming the field, the rule and the fix", path, q, st, e.Error)
			}
		}
	}
	// A query that is no query at all is the launcher's own refusal.
	var e struct {
		Error struct{ Code, Message string }
	}
	if st := call(t, p, http.MethodGet, "/api/server-events?client=%zz", nil, &e); st != http.StatusBadRequest || e.Error.Code != "invalid_request" {
		t.Errorf("a malformed query: %d %+v", st, e.Error)
	}

	// The launcher's gate: the token, a loopback Host.
	for name, edit := range map[string]func(*http.Request){
		"no token":     func(r *http.Request) { r.Header.Del("Authorization") },
		"foreign Host": func(r *http.Request) { r.Host = "rebound.example" },
	} {
		for _, path := range []string{"/api/server-events", "/api/server-events/stream"} {
			req, _ := http.NewRequest(http.MethodGet, p.LauncherOrigin()+path, nil)
			req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
			edit(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s, GET %s: %d", name, path, resp.StatusCode)
			}
		}
	}

	// Bounded followers: two are open; six more fill the launcher, and a
	// ninth is refused until one ends.
	more := []*stream{}
	for range maxFollowers - 2 {
		s := follow(t, p, "kind=token.issued")
		if s.resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", len(more)+3, s.resp.StatusCode)
		}
		more = append(more, s)
	}
	var tm struct {
		Error struct{ Code, Message string }
	}
	if st := call(t, p, http.MethodGet, "/api/server-events/stream", nil, &tm); st != http.StatusTooManyRequests || tm.Error.Code != "too_many_followers" {
		t.Errorf("a ninth stream: %d %+v, want 429 too_many_followers", st, tm.Error)
	}
	if st, _, _ := listAudit(t, p, ""); st != http.StatusOK {
		t.Errorf("the list while the streams are full: %d", st)
	}
	more[0].cancel()
	<-more[0].done
	p.follow.waitBelow(maxFollowers)
	if s := follow(t, p, ""); s.resp.StatusCode != http.StatusOK {
		t.Errorf("a stream after one ended: %d", s.resp.StatusCode)
	}

	// Close ends every stream with a clean end of its answer (not a cut
	// connection), and the streams never carried the operator key.
	closed = true
	if err := p.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	<-all.done
	<-public.done
	if !errors.Is(all.end, io.EOF) || !errors.Is(public.end, io.EOF) {
		t.Errorf("the streams ended with %v and %v, want a clean end (io.EOF)", all.end, public.end)
	}
	for _, s := range []*stream{all, public} {
		if strings.Contains(s.raw.String(), key) {
			t.Errorf("a stream carried the operator key")
		}
	}
	if strings.Contains(raw, key) {
		t.Errorf("the list carried the operator key")
	}
}
