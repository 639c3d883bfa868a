package jsonhttp

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// server answers each path as the test needs, on loopback.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, `{"name":"shop","n":3}`)
		case "/big": // Content-Length says it
			fmt.Fprint(w, `{"name":"`+strings.Repeat("a", 100)+`"}`)
		case "/chunked": // no Content-Length: the cap is found while reading
			w.(http.Flusher).Flush()
			fmt.Fprint(w, `{"name":"`+strings.Repeat("a", 100)+`"}`)
		case "/refused":
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error":"forbidden"}`+strings.Repeat(" ", 10)+strings.Repeat("x", 300))
		case "/html":
			fmt.Fprint(w, `<!doctype html>`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestCall: a 2xx JSON answer is decoded; every other outcome is an
// *Error whose message names the request, the status and the cap.
func TestCall(t *testing.T) {
	srv := server(t)
	var out struct {
		Name string
		N    int
	}
	a, err := Call(srv.Client(), get(t, srv.URL+"/ok?key=secret"), 64, &out)
	if err != nil || out.Name != "shop" || out.N != 3 || a.Status != 200 {
		t.Fatalf("ok: %+v %v %+v", out, err, a)
	}
	for _, c := range []struct {
		path   string
		status int
		want   string
		large  bool
	}{
		{"/big", 200, "GET " + srv.URL + "/big: the answer (200 OK) is over the cap of 64 bytes", true},
		{"/chunked", 200, "GET " + srv.URL + "/chunked: the answer (200 OK) is over the cap of 64 bytes", true},
		{"/refused", 403, "GET " + srv.URL + `/refused: the answer (403 Forbidden) is over the cap of 64 bytes`, true},
		{"/html", 200, "GET " + srv.URL + "/html: the answer (200 OK, 15 bytes) is not the expected JSON: invalid character '<'", false},
	} {
		_, err := Call(srv.Client(), get(t, srv.URL+c.path), 64, &out)
		var e *Error
		if !errors.As(err, &e) || e.Status != c.status || e.Max != 64 || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *Error with status %d starting %q", c.path, err, c.status, c.want)
		}
		if errors.Is(err, ErrTooLarge) != c.large {
			t.Errorf("%s: errors.Is(err, ErrTooLarge) = %v", c.path, !c.large)
		}
	}
	// The start of a refusal's answer is quoted, not all of it.
	_, err = Call(srv.Client(), get(t, srv.URL+"/refused"), 1<<10, nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != 403 || len(err.Error()) > 400 || !strings.HasSuffix(err.Error(), "...") ||
		!strings.HasPrefix(err.Error(), "GET "+srv.URL+`/refused: answered 403 Forbidden, not 2xx: {"error":"forbidden"}`) {
		t.Errorf("a long refusal: %v", err)
	}
}

// TestDoNoAnswer: a closed loopback port is an *Error with status 0 that
// names the request once; the query and the user information of a URL,
// which may hold secrets, are never in a message.
func TestDoNoAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Do(nil, get(t, "http://user:pw@"+addr+"/x?code=secret#frag"), 64)
	var e *Error
	if !errors.As(err, &e) || e.Status != 0 || !strings.HasPrefix(err.Error(), "GET http://"+addr+"/x?...: no answer: ") {
		t.Fatalf("got %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "secret") || strings.Contains(msg, "pw") || strings.Count(msg, "/x") != 1 {
		t.Errorf("message %q shows a secret or repeats the URL", msg)
	}
}

// TestAnswerKeepsTheRefusal: Do hands a refusal back with its body and
// headers, for a caller that reads the server's error object.
func TestAnswerKeepsTheRefusal(t *testing.T) {
	srv := server(t)
	a, err := Do(srv.Client(), get(t, srv.URL+"/refused"), 1<<10)
	if err != nil || a.OK() || a.Status != 403 || !strings.HasPrefix(string(a.Body), `{"error":"forbidden"}`) || a.Header.Get("Content-Type") == "" {
		t.Fatalf("%+v %v", a, err)
	}
	if err := a.WantOK(); err == nil {
		t.Error("WantOK accepted 403")
	}
}
