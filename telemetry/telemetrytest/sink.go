// Package telemetrytest is an OTLP/HTTP trace receiver on loopback for
// the tests (docs/deploy.md, "Traces"): Sink keeps the spans it receives
// and lets a test wait for those it expects; a hanging Sink accepts each
// export and never answers, as a collector that hangs.
package telemetrytest

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, as the tests read it.
type Span struct {
	Service      string
	Name         string
	TraceID      string // hexadecimal
	SpanID       string
	ParentSpanID string // "" for a root
	Kind         int32  // OTLP's SpanKind: 2 server, 3 client
	Attrs        map[string]string
}

// Sink is an OTLP/HTTP receiver at URL (the traces endpoint).
type Sink struct {
	URL     string
	hang    bool
	discard bool // answer without decoding or keeping (a benchmark's)

	mu      sync.Mutex
	spans   []Span
	held    int           // exports received and held (a hanging sink)
	changed chan struct{} // closed and replaced at each change
	release chan struct{} // closed at Close: held exports end
}

// NewSink starts a receiver on 127.0.0.1 until the test ends.
func NewSink(t testing.TB) *Sink { return start(t, false) }

// NewDiscardSink starts a receiver that accepts every export without
// decoding or keeping it: the cheapest collector, for a benchmark.
func NewDiscardSink(t testing.TB) *Sink {
	s := start(t, false)
	s.discard = true
	return s
}

// NewHangingSink starts a receiver that reads each export and never
// answers it until the test ends.
func NewHangingSink(t testing.TB) *Sink { return start(t, true) }

func start(t testing.TB, hang bool) *Sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sink{URL: "http://" + ln.Addr().String() + "/v1/traces", hang: hang, changed: make(chan struct{}), release: make(chan struct{})}
	hs := &http.Server{Handler: http.HandlerFunc(s.serve)}
	go hs.Serve(ln)
	t.Cleanup(func() {
		close(s.release)
		hs.Close()
	})
	return s
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if s.hang {
		s.mu.Lock()
		s.held++
		s.notify()
		s.mu.Unlock()
		select {
		case <-s.release:
		case <-r.Context().Done():
		}
		return
	}
	if s.discard {
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				attrs := map[string]string{}
				for _, a := range sp.Attributes {
					v := a.GetValue()
					switch x := v.GetValue().(type) {
					case *commonpb.AnyValue_StringValue:
						attrs[a.Key] = x.StringValue
					case *commonpb.AnyValue_IntValue:
						attrs[a.Key] = strconv.FormatInt(x.IntValue, 10)
					default:
						attrs[a.Key] = v.String()
					}
				}
				parent := ""
				if len(sp.ParentSpanId) > 0 {
					parent = hex.EncodeToString(sp.ParentSpanId)
				}
				got = append(got, Span{Service: service, Name: sp.Name, TraceID: hex.EncodeToString(sp.TraceId),
					SpanID: hex.EncodeToString(sp.SpanId), ParentSpanID: parent, Kind: int32(sp.Kind), Attrs: attrs})
			}
		}
	}
	s.mu.Lock()
	s.spans = append(s.spans, got...)
	s.notify()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Write(b)
}

// notify wakes the waiters; s.mu held.
func (s *Sink) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Spans returns the spans received so far.
func (s *Sink) Spans() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Span(nil), s.spans...)
}

// Held is the number of exports a hanging sink holds.
func (s *Sink) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// Wait waits until ok holds of the sink (the spans received, the
// exports held), or ctx ends; it reports whether ok held.
func (s *Sink) Wait(ctx context.Context, ok func(spans []Span, held int) bool) bool {
	for {
		s.mu.Lock()
		done := ok(s.spans, s.held)
		ch := s.changed
		s.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}
