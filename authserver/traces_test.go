package authserver_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
	"github.com/miniapp-host/miniapp-host/telemetry"
	"github.com/miniapp-host/miniapp-host/telemetry/telemetrytest"
)

// envOf is a Getenv over vars.
func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// startTraces starts a provider exporting to endpoint, shut down when the
// test ends.
func startTraces(t *testing.T, service string, vars map[string]string) *telemetry.Provider {
	t.Helper()
	tp, err := telemetry.Start(context.Background(), telemetry.Options{Service: service, FixedService: true, Getenv: envOf(vars)})
	if err != nil {
		t.Fatal(err)
	}
	if !tp.Enabled() {
		t.Fatal("the provider is off with an endpoint")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		tp.Shutdown(ctx)
	})
	return tp
}

// waitCtx bounds a wait on events generously, for a loaded machine.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestTracesOfANativeSignIn: a native sign-in whose calls carry the host's
// traceparent is one trace: each endpoint's server span is a child of
// the host's span and named by its route pattern, the checks, the
// consent model and the decision are under the endpoints, the store
// calls under them; no span carries the code, the verifier or the
// host's secret (docs/deploy.md, "Traces").
func TestTracesOfANativeSignIn(t *testing.T) {
	sink := telemetrytest.NewSink(t)
	vars := map[string]string{telemetry.EnvTracesEndpoint: sink.URL}
	server := startTraces(t, telemetry.ServerService, vars)
	host := startTraces(t, telemetry.HostService, vars)
	s := newBenchServerWith(t, func(c *authserver.Config) { c.Traces = server })
	ctx, root := host.Tracer("test").Start(context.Background(), "navigation.caught")
	s.ctx = ctx
	if err := s.flow(true); err != nil {
		t.Fatal(err)
	}
	root.End()
	for _, tp := range []*telemetry.Provider{server, host} {
		if err := tp.ForceFlush(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	traceID := root.SpanContext().TraceID().String()
	want := []string{"POST /native/requests", "POST /native/requests/{id}/decision", "check.project_approval", "check.consent",
		"check.resource", "consent.build", "consent.decide", "store.client", "store.create_grant"}
	var spans []telemetrytest.Span
	if !sink.Wait(waitCtx(t), func(got []telemetrytest.Span, _ int) bool {
		spans = got
		names := map[string]bool{}
		for _, sp := range got {
			if sp.TraceID == traceID {
				names[sp.Name] = true
			}
		}
		for _, n := range append(want, "navigation.caught") {
			if !names[n] {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the sink has not received the trace's spans %v; got %v", want, spans)
	}
	byID := map[string]telemetrytest.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	for _, sp := range spans {
		if sp.TraceID != traceID {
			if strings.HasPrefix(sp.Name, "POST /native/") {
				t.Errorf("span %s is in another trace than the host's", sp.Name)
			}
			continue // the token request, sent without traceparent, and the server's start
		}
		switch {
		case strings.HasPrefix(sp.Name, "POST /native/"):
			if sp.ParentSpanID != root.SpanContext().SpanID().String() || sp.Service != telemetry.ServerService || sp.Kind != 2 {
				t.Errorf("endpoint span %s: parent %s, service %s, kind %d; want a server span of %s under the host's span",
					sp.Name, sp.ParentSpanID, sp.Service, sp.Kind, telemetry.ServerService)
			}
			if sp.Attrs["http.route"] == "" || sp.Attrs["http.response.status_code"] == "" {
				t.Errorf("endpoint span %s has no route or status: %v", sp.Name, sp.Attrs)
			}
			if sp.Attrs["miniapp.client_id"] != hostID {
				t.Errorf("endpoint span %s: miniapp.client_id %q, want the host that authenticated, %s", sp.Name, sp.Attrs["miniapp.client_id"], hostID)
			}
		case strings.HasPrefix(sp.Name, "store."), strings.HasPrefix(sp.Name, "check."), strings.HasPrefix(sp.Name, "consent."):
			// Under an endpoint span, directly or through a check.
			p := byID[sp.ParentSpanID]
			for strings.HasPrefix(p.Name, "check.") || strings.HasPrefix(p.Name, "consent.") {
				p = byID[p.ParentSpanID]
			}
			if !strings.HasPrefix(p.Name, "POST /native/") {
				t.Errorf("span %s is not under an endpoint's span (parent %q)", sp.Name, p.Name)
			}
		}
		for k, v := range sp.Attrs {
			if strings.Contains(v, hostSecret) || strings.Contains(k+v, "code=") || strings.Contains(k, "verifier") || strings.Contains(k, "token") {
				t.Errorf("span %s carries %s=%s", sp.Name, k, v)
			}
		}
		if strings.ContainsAny(sp.Name, "?=") {
			t.Errorf("span name %q carries a query", sp.Name)
		}
	}
}

// TestTracesOffWithoutEndpoint: without an endpoint the provider is off
// and the server serves as without tracing.
func TestTracesOffWithoutEndpoint(t *testing.T) {
	tp, err := telemetry.Start(context.Background(), telemetry.Options{Service: telemetry.ServerService, Getenv: envOf(nil)})
	if err != nil || tp.Enabled() {
		t.Fatalf("Start without an endpoint: %v, enabled %v; want off", err, tp.Enabled())
	}
	s := newBenchServerWith(t, func(c *authserver.Config) { c.Traces = tp })
	if err := s.flow(true); err != nil {
		t.Fatal(err)
	}
}

// TestTracesUnreachableEndpoint: with an OTLP endpoint that refuses
// connections, sign-ins complete, and the spans are dropped and counted
// in miniapp_host_trace_spans_dropped_total{reason="export_failed"}.
func TestTracesUnreachableEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/v1/traces"
	ln.Close() // nothing listens there now: connection refused
	tp := startTraces(t, telemetry.ServerService, map[string]string{telemetry.EnvTracesEndpoint: refused})
	s := newBenchServerWith(t, func(c *authserver.Config) { c.Traces = tp; c.MetricsAddr = "127.0.0.1:0" })
	for range 3 {
		if err := s.flow(true); err != nil {
			t.Fatal(err)
		}
	}
	if err := tp.ForceFlush(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, failed := tp.Dropped(); failed == 0 {
		t.Fatal("no span counted as dropped after exports to a refused endpoint")
	}
	m := scrape(t, &env{u: s.u})
	if got := m[`miniapp_host_trace_spans_dropped_total{reason=export_failed}`]; got == 0 {
		t.Errorf("miniapp_host_trace_spans_dropped_total{reason=export_failed} = %v after failed exports; metrics %v", got, m)
	}
	// The spans' wrapper keeps the metrics' route labels.
	if got := m[`miniapp_host_http_requests_total{code=201,method=POST,role=service,route=/native/requests}`]; got != 3 {
		t.Errorf("requests of route /native/requests: %v, want 3 with tracing on; metrics %v", got, m)
	}
}

// TestTracesHangingEndpoint: with an OTLP endpoint that accepts an export
// and never answers, sign-ins complete while it holds the export (none
// waits on the exporter), the spans that do not fit the bounded queue
// are dropped and counted, and a shutdown returns when its context ends.
func TestTracesHangingEndpoint(t *testing.T) {
	sink := telemetrytest.NewHangingSink(t)
	tp := startTraces(t, telemetry.ServerService, map[string]string{telemetry.EnvTracesEndpoint: sink.URL,
		telemetry.EnvScheduleDelay: "1", telemetry.EnvMaxQueueSize: "8", telemetry.EnvExportTimeout: "3600000"})
	s := newBenchServerWith(t, func(c *authserver.Config) { c.Traces = tp; c.MetricsAddr = "127.0.0.1:0" })
	if err := s.flow(true); err != nil {
		t.Fatal(err)
	}
	if !sink.Wait(waitCtx(t), func(_ []telemetrytest.Span, held int) bool { return held > 0 }) {
		t.Fatal("the hanging sink received no export")
	}
	// The exporter is stuck on the held export for an hour: every flow
	// now completes beside it, and its spans overflow the queue of 8.
	for range 4 {
		if err := s.flow(true); err != nil {
			t.Fatal(err)
		}
	}
	if sink.Held() == 0 {
		t.Fatal("the export is no longer held")
	}
	if full, _ := tp.Dropped(); full == 0 {
		t.Fatal("no span counted as dropped while the exporter hangs")
	}
	m := scrape(t, &env{u: s.u})
	if got := m[`miniapp_host_trace_spans_dropped_total{reason=queue_full}`]; got == 0 {
		t.Errorf("miniapp_host_trace_spans_dropped_total{reason=queue_full} = %v; metrics %v", got, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := tp.Shutdown(ctx); err == nil {
		t.Error("Shutdown with a hanging collector reported a clean flush")
	}
	// Requests still complete after the shutdown gave up.
	resp, err := http.Get(s.u.Discovery)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestTracesOfAJWKSURIFetch: the server's fetch of a client's jwks_uri is
// a client span under the endpoint's span that sends its W3C traceparent
// to the key host.
func TestTracesOfAJWKSURIFetch(t *testing.T) {
	sink := telemetrytest.NewSink(t)
	tp := startTraces(t, telemetry.ServerService, map[string]string{telemetry.EnvTracesEndpoint: sink.URL})
	e := startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(c *authserver.Config) { c.Traces = tp })
	prj, key := e.fapiProject()
	s1 := newSigner(t, jose.ES256)
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{s1.public()}})
	sent := make(chan string, 1)
	kh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sent <- r.Header.Get("Traceparent"):
		default:
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write(set)
	}))
	defer kh.Close()
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key, map[string]any{
		"type": "confidential", "redirect_uris": []string{keyedRedirect}, "token_endpoint_auth_method": "private_key_jwt",
		"jwks_uri": kh.URL + "/jwks.json", "profile": "fapi2"})
	kc := keyedClient{id: c["client_id"].(string), project: prj, key: key, signers: []signer{s1}}
	_, challenge := pkce(t)
	if st, m, _ := e.post(e.parEndpoint(), withAssertion(kc.params(e, challenge), s1.sign(t, kc.claims(e, e.u.Issuer), "JWT", false)), "", ""); st != http.StatusCreated {
		t.Fatalf("PAR: %d %v", st, m)
	}
	traceparent := <-sent
	if err := tp.ForceFlush(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	var fetch, par telemetrytest.Span
	if !sink.Wait(waitCtx(t), func(got []telemetrytest.Span, _ int) bool {
		for _, s := range got {
			switch s.Name {
			case "jwks_uri.fetch":
				fetch = s
			case "POST /oauth/par":
				par = s
			}
		}
		return fetch.SpanID != "" && par.SpanID != ""
	}) {
		t.Fatalf("no jwks_uri.fetch and POST /oauth/par spans: %+v", sink.Spans())
	}
	if fetch.ParentSpanID != par.SpanID || fetch.Kind != 3 || fetch.Attrs["server.address"] != "127.0.0.1" {
		t.Errorf("jwks_uri.fetch %+v, want a client span under POST /oauth/par (%s)", fetch, par.SpanID)
	}
	if want := "00-" + fetch.TraceID + "-" + fetch.SpanID + "-01"; traceparent != want {
		t.Errorf("the key host got traceparent %q, want the fetch span's %q", traceparent, want)
	}
}
