package origin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestGateHost: the Host rule over the spellings a browser, a program and
// a DNS-rebinding page send. Only loopback hosts as the origin policy
// reads them pass, with any port or none.
func TestGateHost(t *testing.T) {
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"localhost", true},
		{"localhost:8600", true},
		{"LOCALHOST:8600", true},
		{"127.0.0.1", true},
		{"127.0.0.1:8600", true},
		{"127.0.0.2:1", true},
		{"127.1:8600", true},      // 127.0.0.1, as a browser reads it
		{"0x7f.0.0.1:8600", true}, // 127.0.0.1 too
		{"2130706433:8600", true}, // and again
		{"[::1]", true},
		{"[::1]:8600", true},
		{"127.0.0.1:", true}, // an empty port is the default one
		{"", false},          // no Host at all (HTTP/1.0)
		{"localhost.:8600", false},
		{"app.localhost:8600", false},
		{"localhost.evil.example", false},
		{"127.0.0.1.nip.io:8600", false}, // a rebinding name that embeds the address
		{"7f000001.rbndr.us:8600", false},
		{"evil.example:8600", false},
		{"evil.example", false},
		{"[::ffff:127.0.0.1]:8600", false}, // IPv4-mapped: not a loopback origin
		{"[::2]:8600", false},
		{"::1", false}, // IPv6 without brackets
		{"0.0.0.0:8600", false},
		{"10.0.0.1:8600", false},
		{"192.168.1.1", false},
		{"127.0.0.1:99999", false},
		{"127.0.0.1:80:80", false},
		{"u@127.0.0.1:8600", false},
		{"127.0.0.1/x", false},
		{"127.0.0.1?x", false},
		{"127.0.0.1#x", false},
		{"127.0.0.1\\x", false},
		{" 127.0.0.1", false},
		{"127.0.0.1 :8600", false},
	} {
		if got := LoopbackHost(c.host); got != c.ok {
			t.Errorf("LoopbackHost(%q) = %v, want %v", c.host, got, c.ok)
		}
		r := request("GET", c.host, "127.0.0.1:5000", nil, "")
		ref := (&Gate{}).Check(r)
		if c.ok != (ref == nil) {
			t.Errorf("Host %q: Check = %v, want pass %v", c.host, ref, c.ok)
		}
		if ref != nil && (ref.Rule != RuleHost || !strings.Contains(ref.Error(), "Host header "+strconv.Quote(c.host))) {
			t.Errorf("Host %q: refused %q (%s), want the Host rule naming it", c.host, ref.Error(), ref.Rule)
		}
		if ref := (&Gate{AnyHost: true}).Check(r); ref != nil {
			t.Errorf("Host %q with AnyHost: refused %v", c.host, ref)
		}
	}
}

// TestGateRemote: a connection that does not come from this machine is
// refused whatever Host it names.
func TestGateRemote(t *testing.T) {
	for _, c := range []struct {
		remote string
		ok     bool
	}{
		{"127.0.0.1:5000", true},
		{"127.9.9.9:5000", true},
		{"[::1]:5000", true},
		{"[::ffff:127.0.0.1]:5000", true}, // an IPv4 peer of a dual-stack socket
		{"192.0.2.1:1234", false},         // httptest.NewRequest's
		{"10.0.0.2:5000", false},
		{"[::ffff:10.0.0.2]:5000", false},
		{"[fe80::1%eth0]:5000", false},
		{"", false},
		{"@", false}, // a Unix socket's peer
		{"127.0.0.1", false},
	} {
		r := request("GET", "127.0.0.1:8600", c.remote, nil, "")
		ref := (&Gate{}).Check(r)
		if c.ok != (ref == nil) {
			t.Errorf("RemoteAddr %q: Check = %v, want pass %v", c.remote, ref, c.ok)
		}
		if ref != nil && ref.Rule != RuleRemote {
			t.Errorf("RemoteAddr %q: rule %s, want %s", c.remote, ref.Rule, RuleRemote)
		}
		if ref := (&Gate{AnyHost: true}).Check(r); ref != nil {
			t.Errorf("RemoteAddr %q with AnyHost: refused %v", c.remote, ref)
		}
	}
}

// TestGateOrigin: the Origin rule, for a server that some pages may use
// (the launcher, the dashboard), for one that checks reads too (the
// automation channel) and for one no page may use (the WebDriver front).
func TestGateOrigin(t *testing.T) {
	launcher := MustParse("http://127.0.0.1:8600")
	pages := &Gate{Pages: []Origin{launcher, MustParse("http://localhost:5173")}}
	reads := &Gate{Pages: []Origin{launcher}, Reads: true}
	none := &Gate{Reads: true}
	for _, c := range []struct {
		gate    *Gate
		method  string
		origins []string
		ok      bool
	}{
		{pages, "POST", nil, true}, // a program
		{pages, "POST", []string{"http://127.0.0.1:8600"}, true},
		{pages, "POST", []string{"HTTP://127.0.0.1:8600"}, true}, // the same origin, spelled otherwise
		{pages, "DELETE", []string{"http://localhost:5173"}, true},
		{pages, "POST", []string{"http://localhost:8600"}, false}, // another origin on the same server
		{pages, "POST", []string{"http://127.0.0.1:8601"}, false},
		{pages, "POST", []string{"https://127.0.0.1:8600"}, false},
		{pages, "POST", []string{"http://127.0.0.1:8600/"}, true},   // Parse reads a bare "/" path as the origin
		{pages, "POST", []string{"http://127.0.0.1:8600/x"}, false}, // not an origin
		{pages, "PUT", []string{"https://evil.example"}, false},
		{pages, "PATCH", []string{"null"}, false},
		{pages, "POST", []string{""}, false},
		{pages, "POST", []string{"http://127.0.0.1:8600", "http://127.0.0.1:8600"}, false}, // two Origin headers
		{pages, "GET", []string{"https://evil.example"}, true},                             // reads are CORS's
		{pages, "HEAD", []string{"https://evil.example"}, true},
		{pages, "OPTIONS", []string{"https://evil.example"}, true},
		{reads, "GET", []string{"https://evil.example"}, false}, // a WebSocket handshake
		{reads, "GET", []string{"null"}, false},
		{reads, "GET", []string{"http://127.0.0.1:8600"}, true},
		{reads, "GET", nil, true},
		{none, "GET", []string{"http://127.0.0.1:8600"}, false},
		{none, "POST", []string{"null"}, false},
		{none, "GET", nil, true},
		{&Gate{}, "POST", []string{"http://127.0.0.1:8600"}, false}, // the zero gate: no page changes state
		{&Gate{}, "GET", []string{"http://127.0.0.1:8600"}, true},
	} {
		r := request(c.method, "127.0.0.1:8600", "127.0.0.1:5000", c.origins, "")
		ref := c.gate.Check(r)
		if c.ok != (ref == nil) {
			t.Errorf("%+v %s Origin %q: Check = %v, want pass %v", *c.gate, c.method, c.origins, ref, c.ok)
			continue
		}
		if ref != nil && (ref.Rule != RuleOrigin || !strings.Contains(ref.Error(), strings.Join(c.origins, ", "))) {
			t.Errorf("%s Origin %q: refused %q (%s), want the Origin rule naming it", c.method, c.origins, ref.Error(), ref.Rule)
		}
	}
	if ref := none.Check(request("GET", "127.0.0.1:8600", "127.0.0.1:5000", []string{"https://evil.example"}, "")); ref == nil ||
		ref.Error() != `the request has an Origin header ("https://evil.example"): it comes from a web page, and no page may send it here` {
		t.Errorf("no pages: %v", ref)
	}
	if ref := pages.Check(request("POST", "127.0.0.1:8600", "127.0.0.1:5000", []string{"https://evil.example"}, "")); ref == nil ||
		!strings.Contains(ref.Error(), "(http://127.0.0.1:8600, http://localhost:5173)") {
		t.Errorf("pages: %v, want the allowed pages named", ref)
	}
}

// TestGateContentType: with JSON, a POST (even without a body) and any
// request with a body that may change state declare application/json; a
// body-less DELETE need not (a page cannot send it cross-origin without a
// preflight), nor a GET (a page cannot send one with a body).
func TestGateContentType(t *testing.T) {
	g := &Gate{JSON: true}
	for _, c := range []struct {
		method, body string
		types        []string
		ok           bool
	}{
		{"POST", `{}`, []string{"application/json"}, true},
		{"POST", `{}`, []string{"application/json; charset=utf-8"}, true},
		{"POST", `{}`, []string{"Application/JSON"}, true},
		{"POST", "", []string{"application/json"}, true},
		{"POST", "", nil, false}, // a body-less POST from a page is a simple request
		{"POST", `{}`, []string{"text/plain"}, false},
		{"POST", `{}`, []string{"text/plain;charset=UTF-8"}, false},
		{"POST", `{}`, []string{"application/x-www-form-urlencoded"}, false},
		{"POST", `{}`, []string{"multipart/form-data; boundary=x"}, false},
		{"POST", `{}`, []string{"application/json", "text/plain"}, false},
		{"POST", `{}`, []string{"application/jsonx"}, false},
		{"POST", `{}`, []string{"application/json;"}, true}, // an empty parameter list
		{"POST", `{}`, []string{"application/json; x"}, false},
		{"POST", `{}`, []string{""}, false},
		{"PUT", `{}`, nil, false},
		{"PATCH", `{}`, []string{"application/json"}, true},
		{"DELETE", `{}`, []string{"text/plain"}, false},
		{"GET", `x`, nil, true}, // no page can send a GET with a body
		{"DELETE", "", nil, true},
		{"GET", "", nil, true},
	} {
		r := request(c.method, "127.0.0.1:8600", "127.0.0.1:5000", nil, c.body)
		for _, t := range c.types {
			r.Header.Add("Content-Type", t)
		}
		ref := g.Check(r)
		if c.ok != (ref == nil) {
			t.Errorf("%s %q Content-Type %q: Check = %v, want pass %v", c.method, c.body, c.types, ref, c.ok)
			continue
		}
		if ref != nil && (ref.Rule != RuleContentType || !strings.Contains(ref.Error(), `Content-Type is "`+strings.Join(c.types, ", ")+`"`)) {
			t.Errorf("%s Content-Type %q: refused %q (%s)", c.method, c.types, ref.Error(), ref.Rule)
		}
		if ref := (&Gate{}).Check(r); ref != nil {
			t.Errorf("%s Content-Type %q without JSON: refused %v", c.method, c.types, ref)
		}
	}
	// A chunked body, whose length is unknown, is a body.
	r := request("PUT", "127.0.0.1:8600", "127.0.0.1:5000", nil, "")
	r.ContentLength, r.TransferEncoding = -1, []string{"chunked"}
	if ref := g.Check(r); ref == nil || ref.Rule != RuleContentType {
		t.Errorf("chunked PUT without a type: %v", ref)
	}
}

// TestGateOrder: the rules are checked in order, so that a refusal names
// the first the request breaks.
func TestGateOrder(t *testing.T) {
	g := &Gate{JSON: true, Reads: true}
	r := request("POST", "evil.example:8600", "192.0.2.1:1", []string{"https://evil.example"}, "x")
	r.Header.Set("Content-Type", "text/plain")
	for _, want := range []GateRule{RuleRemote, RuleHost, RuleOrigin, RuleContentType} {
		ref := g.Check(r)
		if ref == nil || ref.Rule != want {
			t.Fatalf("got %v, want the %s rule", ref, want)
		}
		switch want {
		case RuleRemote:
			r.RemoteAddr = "127.0.0.1:1"
		case RuleHost:
			r.Host = "localhost:8600"
		case RuleOrigin:
			r.Header.Del("Origin")
		case RuleContentType:
			r.Header.Set("Content-Type", "application/json")
		}
	}
	if ref := g.Check(r); ref != nil {
		t.Errorf("a request that breaks no rule: %v", ref)
	}
}

// TestGateOverTheWire: a real loopback server behind the gate serves a
// program's request and refuses a rebound page's, with the Host and
// Origin as a client sends them.
func TestGateOverTheWire(t *testing.T) {
	g := &Gate{JSON: true}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ref := g.Check(r); ref != nil {
			http.Error(w, ref.Error(), http.StatusForbidden)
			return
		}
		io.WriteString(w, "served")
	}))
	defer srv.Close()
	for _, c := range []struct {
		host, ctype string
		status      int
	}{
		{"", "application/json", 200},
		{"localhost", "application/json", 200},
		{"evil.example", "application/json", 403},
		{"", "text/plain", 403},
	} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{}`))
		if c.host != "" {
			req.Host = c.host
		}
		req.Header.Set("Content-Type", c.ctype)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("Host %q, %s: %d %s, want %d", c.host, c.ctype, resp.StatusCode, body, c.status)
		}
	}
}

// request is a request as a server sees it.
func request(method, host, remote string, origins []string, body string) *http.Request {
	r := httptest.NewRequest(method, "/", strings.NewReader(body))
	if body == "" {
		r = httptest.NewRequest(method, "/", nil)
	}
	r.Host, r.RemoteAddr = host, remote
	for _, o := range origins {
		r.Header.Add("Origin", o)
	}
	return r
}
