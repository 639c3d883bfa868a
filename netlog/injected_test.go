package netlog

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestInjectedEntries: an answer a mock rule made up is kept in the
// launch's network flow, marked injected in the entry, in the HAR
// export's _injected and in its network event; a real answer carries no
// mark.
func TestInjectedEntries(t *testing.T) {
	ev := &events{}
	l := New(Config{Events: ev})
	la := l.BeginLaunch("http://127.0.0.1:8701", "orders", "c1")
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	la.Injected(Exchange{Source: SourceView, Kind: KindResource, Method: "GET", URL: "http://127.0.0.1:8701/api/orders",
		Status: 503, ResponseHeader: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"5"}},
		ResponseBody: []byte(`{"error":"busy"}`), ResponseSize: 16, Started: at, Done: at.Add(time.Millisecond), Injected: InjectedMock})
	la.Injected(Exchange{Source: SourceView, Kind: KindResource, Method: "POST", URL: "http://127.0.0.1:8701/api/orders",
		Status: 201, Started: at, Done: at, Injected: InjectedMock})
	flows := l.Flows()
	if len(flows) != 1 || flows[0].Launch != la.ID || flows[0].Entries != 2 || !strings.Contains(flows[0].Detail, "mock rules") {
		t.Fatalf("flows = %+v; want the launch's one network flow with both answers", flows)
	}
	x, _ := l.Flow(flows[0].ID)
	for _, e := range x.Entries {
		if e.Injected != InjectedMock {
			t.Errorf("entry %d: injected %q; want %q", e.ID, e.Injected, InjectedMock)
		}
	}
	if x.Entries[0].Response == nil || x.Entries[0].Response.Status != 503 || x.Entries[0].Response.Body == nil || x.Entries[0].Response.Body.Text == "" {
		t.Errorf("entry = %+v; want the made-up 503 and its body", x.Entries[0])
	}
	h, _ := l.HAR(flows[0].ID)
	b, _ := json.Marshal(h)
	if strings.Count(string(b), `"_injected":"mock"`) != 2 {
		t.Errorf("HAR: %s; want _injected on both entries", b)
	}
	var marked int
	for _, e := range ev.evs {
		if ne, ok := e.(NetworkEvent); ok && ne.Injected == InjectedMock {
			marked++
		}
	}
	if marked != 2 {
		t.Errorf("%d network events marked injected; want 2", marked)
	}
	// A real exchange of a flow has no mark.
	f := la.BeginFlow(mustParse(t, "http://127.0.0.1:9/authorize?client_id=c1"))
	f.Add(Exchange{Source: SourceView, Kind: KindResource, Method: "GET", URL: "http://127.0.0.1:8701/", Status: 200, Started: at, Done: at})
	h, _ = l.HAR(f.ID())
	b, _ = json.Marshal(h)
	if strings.Contains(string(b), "_injected") {
		t.Errorf("a real exchange's HAR: %s", b)
	}
	// A second launch has its own network flow.
	l.BeginLaunch("http://127.0.0.1:8702", "other", "c2").Injected(Exchange{Method: "GET", URL: "http://127.0.0.1:8702/", Status: 200, Injected: InjectedMock})
	if n := len(l.Flows()); n != 3 {
		t.Errorf("%d flows; want 3", n)
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
