package host_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/telemetry"
	"github.com/miniapp-host/miniapp-host/telemetry/telemetrytest"
)

// TestSignInTraceWithoutDisplay: with Options.Traces, a confidential
// sign-in in the core is one trace: the caught navigation its root, the
// native-consent calls and the completion (its callback and cookie sync)
// its children; each native-consent call sends the W3C traceparent of
// its own span (netlog keeps the header), and the network log's flow
// names the trace (docs/deploy.md, "Traces").
func TestSignInTraceWithoutDisplay(t *testing.T) {
	e := world(t)
	sink := telemetrytest.NewSink(t)
	tp, err := telemetry.Start(context.Background(), telemetry.Options{Service: telemetry.HostService, FixedService: true,
		Getenv: func(k string) string { return map[string]string{telemetry.EnvTracesEndpoint: sink.URL}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	c := newCore(t, host.Options{Traces: tp})
	log := netlog.New(netlog.Config{})
	app := confidentialApp(t, e)
	app.NetLog = log.BeginLaunch(e.Confidential.Origin, "demo-confidential", "demo-confidential")
	if err := c.w.Mount(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	c.rec.Wait(t, "the event", func(ev host.Event) bool { return ev.Kind == host.EventLoadFinished && ev.URL == app.LoadURL.String() })
	if got := browse(t, c.eng, fetch(t, c.eng, app.LoadURL.String())); got != "" {
		t.Fatalf("the redirect to the service loaded %s; want it caught", got)
	}
	c.rec.Wait(t, "the event", shown("consent"))
	c.eng.Post(host.ViewHost, `{"action":"approve"}`)
	c.rec.Wait(t, "the event", kind(host.EventCompleted))

	flows := log.Flows()
	if len(flows) != 1 || len(flows[0].TraceID) != 32 {
		t.Fatalf("the network log's flows %+v, want one with a trace id", flows)
	}
	traceID := flows[0].TraceID
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"navigation.caught", "native_consent.begin", "native_consent.decide", "completion", "completion.callback", "completion.cookie_sync"}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var spans []telemetrytest.Span
	if !sink.Wait(ctx, func(got []telemetrytest.Span, _ int) bool {
		spans = got
		return len(got) >= len(want)
	}) {
		t.Fatalf("spans %+v, want %v", spans, want)
	}
	byName := map[string]telemetrytest.Span{}
	for _, s := range spans {
		if s.TraceID != traceID || s.Service != telemetry.HostService {
			t.Errorf("span %s is of trace %s, service %s; want the flow's %s of %s", s.Name, s.TraceID, s.Service, traceID, telemetry.HostService)
		}
		byName[s.Name] = s
		for k, v := range s.Attrs {
			if strings.Contains(v, "code=") || strings.Contains(v, "state=") {
				t.Errorf("span %s carries %s=%s", s.Name, k, v)
			}
		}
	}
	root := byName["navigation.caught"]
	if root.ParentSpanID != "" || root.Attrs["miniapp.client_id"] != "demo-confidential" || root.Attrs["miniapp.outcome"] != "completed" {
		t.Errorf("root span %+v, want a root with the client and the outcome", root)
	}
	parents := map[string]string{"native_consent.begin": root.SpanID, "native_consent.decide": root.SpanID, "completion": root.SpanID,
		"completion.callback": byName["completion"].SpanID, "completion.cookie_sync": byName["completion"].SpanID}
	for name, parent := range parents {
		if s, ok := byName[name]; !ok || s.ParentSpanID != parent {
			t.Errorf("span %s: %+v, want it under %s", name, s, parent)
		}
	}
	// Each native-consent call carried its own span's traceparent.
	x, _ := log.Flow(flows[0].ID)
	sent := map[string]bool{}
	for _, en := range x.Entries {
		if en.Kind != netlog.KindNativeConsent {
			continue
		}
		for _, h := range en.Request.Headers {
			if http.CanonicalHeaderKey(h.Name) == "Traceparent" {
				sent[h.Value] = true
			}
		}
	}
	for _, name := range []string{"native_consent.begin", "native_consent.decide"} {
		if tp := "00-" + traceID + "-" + byName[name].SpanID + "-01"; !sent[tp] {
			t.Errorf("no native-consent call sent traceparent %s (%s); sent %v", tp, name, sent)
		}
	}
}
