package netlog

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestFlowTraceID: a flow's trace id is in its summary (GET /api/flows),
// its JSON export and its HAR (log._trace_id); anything but 32 lower-case
// hexadecimal digits (W3C Trace Context §3.2.2.3) is not kept.
func TestFlowTraceID(t *testing.T) {
	l := New(Config{})
	la := l.BeginLaunch("https://app.example", "app", "c1")
	u, _ := url.Parse("https://as.example/oauth/authorize?client_id=c1")
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	traced, untraced := la.BeginTracedFlow(u, id), la.BeginTracedFlow(u, "00000000000000000000000000000000")
	untraced.SetTraceID("4BF92F3577B34DA6A3CE929D0E0E4736\"><script>")
	later := la.BeginFlow(u)
	later.SetTraceID(id)
	for _, s := range l.Flows() {
		want := map[string]string{traced.ID(): id, untraced.ID(): "", later.ID(): id}[s.ID]
		if s.TraceID != want {
			t.Errorf("flow %s: trace id %q, want %q", s.ID, s.TraceID, want)
		}
	}
	x, _ := l.Flow(traced.ID())
	b, _ := json.Marshal(x)
	if !strings.Contains(string(b), `"trace_id":"`+id+`"`) {
		t.Errorf("the JSON export lacks the trace id: %s", b)
	}
	h, _ := l.HAR(traced.ID())
	b, _ = json.Marshal(h)
	if !strings.Contains(string(b), `"_trace_id":"`+id+`"`) {
		t.Errorf("the HAR lacks log._trace_id: %s", b)
	}
	h, _ = l.HAR(untraced.ID())
	if b, _ = json.Marshal(h); strings.Contains(string(b), "_trace_id") {
		t.Errorf("an untraced flow's HAR has a trace id: %s", b)
	}
}
