package audit_test

import (
	"context"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/metrics"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), storetest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestParseQuery(t *testing.T) {
	q, err := audit.ParseQuery(url.Values{"client": {"c"}, "subject": {"s"}, "kind": {"token.issued, request.refused,token.issued"},
		"after": {"7"}, "limit": {"1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if q.ClientID != "c" || q.Subject != "s" || !slices.Equal(q.Kinds, []string{"token.issued", "request.refused"}) ||
		q.After != 7 || q.Limit != 1000 || !q.HasAfter() {
		t.Fatalf("%+v", q)
	}
	if q, err := audit.ParseQuery(url.Values{"after": {"0"}}); err != nil || !q.HasAfter() {
		t.Fatalf("after=0 is an after: %+v %v", q, err)
	}
	if q, err := audit.ParseQuery(url.Values{"client": {""}, "kind": {""}}); err != nil || q.HasAfter() || q.Kinds != nil {
		t.Fatalf("empty values filter nothing: %+v %v", q, err)
	}
	for _, tc := range []struct {
		q     url.Values
		field string
		rule  string
	}{
		{url.Values{"kind": {"token.issued,nope"}}, "kind", `unknown kind "nope"`},
		{url.Values{"kind": {"token.issued,"}}, "kind", `unknown kind ""`},
		{url.Values{"after": {"1.5"}}, "after", "not a non-negative integer"},
		{url.Values{"after": {"-3"}}, "after", "not a non-negative integer"},
		{url.Values{"after": {"99999999999999999999"}}, "after", "not a non-negative integer"},
		{url.Values{"limit": {"0"}}, "limit", "from 1 to 1000"},
		{url.Values{"limit": {"x"}}, "limit", "from 1 to 1000"},
		{url.Values{"since": {"1"}}, "since", "not a parameter"},
		{url.Values{"subject": {"a", "b"}}, "subject", "more than once"},
		{url.Values{"client": {strings.Repeat("x", 300)}}, "client", "longer than 256"},
	} {
		_, err := audit.ParseQuery(tc.q)
		fe, ok := err.(*audit.FilterError)
		if !ok || fe.Field != tc.field || !strings.Contains(fe.Rule, tc.rule) || fe.Fix == "" {
			t.Errorf("%v: want a FilterError on %s (%s) with a fix, got %v", tc.q, tc.field, tc.rule, err)
		}
	}
	if _, err := audit.ParseLastEventID("12x"); err == nil || err.(*audit.FilterError).Field != "Last-Event-ID" {
		t.Errorf("Last-Event-ID: %v", err)
	}
}

// FuzzParseQuery: any query string is parsed or refused with a
// FilterError, never a panic; what is accepted is within the rules.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"client=a&kind=token.issued", "after=1&limit=5", "kind=%00", "limit=1001", "a=b&a=c", "kind=,,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := audit.ParseQuery(v)
		if err != nil {
			if fe, ok := err.(*audit.FilterError); !ok || fe.Field == "" || fe.Rule == "" || fe.Fix == "" {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if q.Limit < 0 || q.Limit > audit.MaxLimit || q.After < 0 {
			t.Fatalf("%q: accepted %+v", raw, q)
		}
		for _, k := range q.Kinds {
			if !slices.Contains(audit.Kinds, k) {
				t.Fatalf("%q: accepted kind %q", raw, k)
			}
		}
	})
}

// slowStore is a real store whose appends wait for release.
type slowStore struct {
	*store.Store
	release chan struct{}
	entered chan struct{}
}

func (s *slowStore) AppendEvents(ctx context.Context, evs []store.EventRecord, keep int) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return s.Store.AppendEvents(ctx, evs, keep)
}

// A full queue drops the event, counts it, and never makes Record wait;
// what was queued is stored once the store is back.
func TestRecorderDropsPastItsQueue(t *testing.T) {
	st := &slowStore{Store: openStore(t), release: make(chan struct{}), entered: make(chan struct{}, 1)}
	mx := metrics.New()
	r := audit.New(audit.Config{Store: st, Metrics: mx, Queue: 2})
	defer r.Close()
	ctx := context.Background()
	r.Record(ctx, audit.Event{Kind: audit.TokenIssued, Detail: map[string]string{"grant_type": "authorization_code"}})
	<-st.entered // the writer holds the first; the queue is empty
	for range 3 {
		r.Record(ctx, audit.Event{Kind: audit.TokenIssued, Detail: map[string]string{"grant_type": "refresh_token"}})
	}
	close(st.release)
	r.Flush()
	evs, err := r.List(ctx, audit.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("stored %d events, want 3 (one written, two queued)", len(evs))
	}
	if n := counterOf(t, mx, "miniapp_host_audit_events_dropped_total"); n != 1 {
		t.Fatalf("dropped %v, want 1", n)
	}
	// The metrics count every decision, stored or dropped: four tokens.
	if n := counterOf(t, mx, "miniapp_host_tokens_issued_total"); n != 4 {
		t.Fatalf("tokens counted %v, want 4", n)
	}
}

// counterOf sums a family's series from the registry.
func counterOf(t *testing.T, mx *metrics.Metrics, name string) float64 {
	t.Helper()
	fams, err := mx.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// Every value of an event goes through package redact: a code in a URL,
// a secret parameter's value, control characters.
func TestRecorderRedacts(t *testing.T) {
	r := audit.New(audit.Config{Store: openStore(t)})
	defer r.Close()
	ctx := context.Background()
	const code = "SECRETCODE0123456789abcdefghijklmnop"
	r.Record(ctx, audit.Event{Kind: audit.RequestRefused, ClientID: "c\x00\n", Refusal: &audit.Refusal{Error: "invalid_grant",
		Rule: "redirect https://app.example/cb?code=" + code + " refused", Field: "code", Sent: code, Expected: "x"},
		Detail: map[string]string{"client_secret": "hunter2hunter2", "redirect": "https://a.example/?access_token=" + code}})
	r.Flush()
	evs, err := r.List(ctx, audit.Query{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("%v %v", evs, err)
	}
	e := evs[0]
	all := e.ClientID + e.Refusal.Rule + e.Refusal.Sent + e.Refusal.Expected + e.Detail["client_secret"] + e.Detail["redirect"]
	if strings.Contains(all, code) || strings.Contains(all, "hunter2") || strings.ContainsAny(e.ClientID, "\x00\n") {
		t.Fatalf("a secret or a control character is in the event: %+v %+v", e, e.Refusal)
	}
}
