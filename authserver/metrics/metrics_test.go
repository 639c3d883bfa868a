package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestNilRecordsNothing: every method of a nil *Metrics is a no-op, and
// Wrap of nil returns the handler itself.
func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if fmt.Sprint(m.Wrap("service", h)) != fmt.Sprint(h) {
		t.Error("Wrap of nil wraps")
	}
	m.SignInStarted(true)
	m.Decided(false, true, true)
	m.TokenIssued("authorization_code")
	m.ConsentDecided(true, false)
	m.StoreOp("client", time.Now(), OutcomeOK)
	m.Batch(BatchSQLiteWrite, 3, m.Queued())
	m.NotificationSent("grant")
	m.NotificationReceived("grant", time.Now())
	if m.Stamp() != "" || !m.Queued().IsZero() {
		t.Error("a nil Metrics stamps or reads the clock")
	}
	Refused(nil, "invalid_request")
	Refused(httptest.NewRequest(http.MethodGet, "/", nil), "invalid_request")
}

// TestCappedLabel: a capped label keeps its first values and names every
// further one, and any value outside an error code's characters, "other".
func TestCappedLabel(t *testing.T) {
	c := capped{max: 3}
	for _, v := range []string{"a", "b", "a", "c"} {
		if got := c.get(v); got != v {
			t.Errorf("get(%q) = %q", v, got)
		}
	}
	for _, v := range []string{"d", "a b", "Upper", "", strings.Repeat("x", 65)} {
		if got := c.get(v); got != other {
			t.Errorf("get(%q) = %q, want other", v, got)
		}
	}
	if c.get("b") != "b" {
		t.Error("a kept value is lost")
	}
}

// TestCheckAddr: loopback hosts pass, others only when public, and an
// address that is not HOST:PORT never.
func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
		ok     bool
	}{
		{"127.0.0.1:9464", false, true}, {"127.1.2.3:0", false, true}, {"[::1]:9464", false, true}, {"localhost:9464", false, true},
		{"0.0.0.0:9464", false, false}, {":9464", false, false}, {"10.0.0.11:9464", false, false}, {"example.com:9464", false, false},
		{"10.0.0.11:9464", true, true}, {":9464", true, true},
		{"127.0.0.1", false, false}, {"127.0.0.1:http", true, false}, {"127.0.0.1:70000", false, false},
	} {
		if err := CheckAddr(tc.addr, tc.public); (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, %v) = %v, want ok %v", tc.addr, tc.public, err, tc.ok)
		}
	}
}

// TestStamp: a stamped instance id splits into the id and the time; an
// unstamped one is itself with no time.
func TestStamp(t *testing.T) {
	m := New()
	before := time.Now().Truncate(time.Microsecond)
	id, at := SplitStamp("abc" + m.Stamp())
	if id != "abc" || at.Before(before) || at.After(time.Now()) {
		t.Errorf("SplitStamp = %q %v", id, at)
	}
	if id, at := SplitStamp("abc"); id != "abc" || !at.IsZero() {
		t.Errorf("SplitStamp of an unstamped id = %q %v", id, at)
	}
	if id, at := SplitStamp("abc@x"); id != "abc" || !at.IsZero() {
		t.Errorf("SplitStamp of a bad stamp = %q %v", id, at)
	}
}

// TestWrapRoutes: the route label is the pattern's path, a fixed path, or
// "unmatched"; never the request's path; and a hijacking handler reaches
// the connection through the recorder (http.ResponseController).
func TestWrapRoutes(t *testing.T) {
	m := New()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		Refused(r, "unknown_item")
		w.WriteHeader(http.StatusNotFound)
	})
	mux.HandleFunc("GET /hijack", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack through the recorder: %v", err)
			return
		}
		conn.Write([]byte("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
		conn.Close()
	})
	srv := httptest.NewServer(m.Wrap("service", mux, "/healthz"))
	defer srv.Close()
	for _, p := range []string{"/items/secret-client-id", "/healthz", "/nowhere/secret-path", "/hijack"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	body := rec.Body.String()
	for _, w := range []string{
		`miniapp_host_http_requests_total{code="404",method="GET",role="service",route="/items/{id}"} 1`,
		`miniapp_host_http_requests_total{code="404",method="GET",role="service",route="/healthz"} 1`,
		`miniapp_host_http_requests_total{code="404",method="GET",role="service",route="unmatched"} 1`,
		`miniapp_host_oauth_refusals_total{error="unknown_item",route="/items/{id}"} 1`,
	} {
		if !strings.Contains(body, w) {
			t.Errorf("metrics lack %s", w)
		}
	}
	if strings.Contains(body, "secret") {
		t.Errorf("a request's path is a label value:\n%s", body)
	}
}
