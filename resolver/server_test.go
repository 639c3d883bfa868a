package resolver

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serverSpec is how a test server behaves when asked for its document.
type serverSpec struct {
	Status      int               `json:"status"`       // 0: 200
	ContentType *string           `json:"content_type"` // nil: application/manifest+json; "": no header
	Headers     map[string]string `json:"headers"`
	Location    string            `json:"location"`  // for a redirect status
	Hops        int               `json:"hops"`      // same-origin redirects before the document
	HopPath     string            `json:"hop_path"`  // path of the last hop; default /hop/N
	Behaviour   string            `json:"behaviour"` // trickle, hang, reset, refused, oversized, oversized-chunked, redirect-loop
}

// testServer serves one document at path under a spec, and counts requests.
type testServer struct {
	*httptest.Server
	spec     serverSpec
	body     []byte
	maxBytes int
	requests chan *http.Request
}

func newTestServer(t *testing.T, path string, spec serverSpec, body []byte, maxBytes int) *testServer {
	t.Helper()
	s := &testServer{spec: spec, body: body, maxBytes: maxBytes, requests: make(chan *http.Request, 64)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.requests <- r:
		default:
		}
		s.serve(w, r, path)
	}))
	if spec.Behaviour == "refused" {
		s.Close()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *testServer) hopPath(i int) string {
	if i == s.spec.Hops && s.spec.HopPath != "" {
		return s.spec.HopPath
	}
	return "/hop/" + strconv.Itoa(i)
}

// serve answers one request; the request path decides where in a redirect
// chain it is.
func (s *testServer) serve(w http.ResponseWriter, r *http.Request, path string) {
	spec := s.spec
	if spec.Hops > 0 {
		hop := -1
		if r.URL.Path == path {
			hop = 0
		}
		for i := 1; i <= spec.Hops; i++ {
			if r.URL.Path == s.hopPath(i) {
				hop = i
			}
		}
		switch {
		case hop < 0:
			http.NotFound(w, r)
			return
		case hop < spec.Hops:
			http.Redirect(w, r, s.hopPath(hop+1), http.StatusFound)
			return
		}
	} else if !strings.HasPrefix(r.URL.Path, path) {
		http.NotFound(w, r)
		return
	}
	for k, v := range spec.Headers {
		w.Header().Set(k, v)
	}
	switch {
	case spec.ContentType == nil:
		w.Header().Set("Content-Type", "application/manifest+json")
	case *spec.ContentType == "":
		w.Header()["Content-Type"] = nil // no sniffing either
	default:
		w.Header().Set("Content-Type", *spec.ContentType)
	}
	switch spec.Behaviour {
	case "trickle":
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	case "hang":
		<-r.Context().Done()
		return
	case "reset":
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		conn.Close()
		return
	case "redirect-loop":
		w.Header().Set("Location", r.URL.Path)
		w.WriteHeader(http.StatusFound)
		return
	case "oversized":
		big := strings.Repeat(" ", s.maxBytes) + "{}"
		w.Header().Set("Content-Length", strconv.Itoa(len(big)))
		_, _ = w.Write([]byte(big))
		return
	case "oversized-chunked":
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat(" ", 4096))
		for sent := 0; sent <= s.maxBytes+8192; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		return
	}
	if spec.Location != "" {
		w.Header().Set("Location", spec.Location)
	}
	status := spec.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if status == http.StatusOK {
		_, _ = w.Write(s.body)
	}
}
