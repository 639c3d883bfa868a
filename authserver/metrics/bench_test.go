package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkWrap is what Wrap adds to one request: the recorder, the
// route's label and the counter and histogram updates (compare
// BenchmarkWrap/off, the bare mux).
func BenchmarkWrap(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"off", mux}, {"on", New().Wrap("service", mux)}} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodPost, "/oauth/token", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				tc.h.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkStoreOp is one store operation's record: its duration and its
// outcome.
func BenchmarkStoreOp(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.StoreOp("redeem_code_for", time.Now(), OutcomeOK)
	}
}
