package netshape

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseThrottle(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Throttle
	}{
		{"", Throttle{}},
		{"none", Throttle{}},
		{"offline", Throttle{Name: "offline", Offline: true}},
		{"slow-3g", Throttle{Name: "slow-3g", Latency: 2 * time.Second, Down: 50000, Up: 50000}},
		{"fast-3g", Throttle{Name: "fast-3g", Latency: 562500 * time.Microsecond, Down: 180000, Up: 84375}},
		{"300ms/400/0", Throttle{Latency: 300 * time.Millisecond, Down: 50000}},
		{"0s/1600/750", Throttle{Down: 200000, Up: 93750}},
	} {
		got, err := ParseThrottle(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseThrottle(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := ParseThrottle(got.String()); err != nil || back.Latency != got.Latency || back.Down != got.Down || back.Up != got.Up || back.Offline != got.Offline {
			t.Errorf("ParseThrottle(%q.String() = %q) = %+v, %v", c.in, got.String(), back, err)
		}
	}
	for in, want := range map[string]string{
		"slow-4g":      "use offline, slow-3g, fast-3g",
		"300/400/400":  `latency "300" is not a duration`,
		"-1s/400/400":  "latency",
		"1s/fast/400":  `download bandwidth "fast"`,
		"1s/400/-5":    `upload bandwidth "-5"`,
		"1s/400":       "LATENCY/DOWN/UP",
		"1s/NaN/400":   "download bandwidth",
		"11m/400/400":  "from 0 to 10m",
		"1s/400/400/1": "LATENCY/DOWN/UP",
	} {
		_, err := ParseThrottle(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseThrottle(%q) = %v; want an error with %q", in, err, want)
		}
	}
}

func TestParseRulesFile(t *testing.T) {
	rules, err := ParseRulesFile([]byte(`{"rules": [
	  {"method": "GET", "url": "http://127.0.0.1:*/api/orders?*", "status": 503, "headers": {"Retry-After": "5"}, "body": "busy", "delay": "10ms"},
	  {"url": "http://127.0.0.1:*/api/*"}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].Status != 503 || rules[0].delay != 10*time.Millisecond || rules[1].Status != 200 {
		t.Fatalf("rules = %+v", rules)
	}
	for _, c := range []struct {
		method, url string
		want        int // the rule that answers; -1 none
	}{
		{"GET", "http://127.0.0.1:8701/api/orders?tab=open", 0},
		{"POST", "http://127.0.0.1:8701/api/orders?tab=open", 1},
		{"GET", "http://127.0.0.1:8701/api/orders", 1},
		{"GET", "http://127.0.0.1:8701/app/index.html", -1},
		{"GET", "http://localhost:8701/api/x", -1},
	} {
		got := -1
		for i := range rules {
			if rules[i].Matches(c.method, c.url) {
				got = i
				break
			}
		}
		if got != c.want {
			t.Errorf("%s %s: rule %d answers; want %d", c.method, c.url, got, c.want)
		}
	}
}

func TestParseRulesRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ in, pointer, msg string }{
		{`[]`, "/", "rules file is"},
		{`{"rules": []} x`, "/", "after"},
		{`{"rule": []}`, "/", "unknown field"},
		{`{}`, "/rules", "missing"},
		{`{"rules": {}}`, "/rules", "array of rules"},
		{`{"rules": [1]}`, "/rules/0", "a rule is an object"},
		{`{"rules": [{"url": "http://a/*", "stauts": 503}]}`, "/rules/0/stauts", "unknown member"},
		{`{"rules": [{"url": "http://a/*", "url": "http://b/*"}]}`, "/rules/0/url", "twice"},
		{`{"rules": [{"status": 200}]}`, "/rules/0/url", "missing"},
		{`{"rules": [{"url": "https://127.0.0.1/*"}]}`, "/rules/0/url", "tunnel"},
		{`{"rules": [{"url": "127.0.0.1/*"}]}`, "/rules/0/url", "does not start with http://"},
		{`{"rules": [{"url": "http://a/ b"}]}`, "/rules/0/url", "space"},
		{`{"rules": [{"url": "http://a/#x"}]}`, "/rules/0/url", "fragment"},
		{`{"rules": [{"url": "http://a/", "method": "get"}]}`, "/rules/0/method", "capitals"},
		{`{"rules": [{"url": "http://a/", "status": 99}]}`, "/rules/0/status", "200 to 599"},
		{`{"rules": [{"url": "http://a/", "status": 1000}]}`, "/rules/0/status", "200 to 599"},
		{`{"rules": [{"url": "http://a/", "status": "503"}]}`, "/rules/0", "string"},
		{`{"rules": [{"url": "http://a/", "headers": {"Bad Name": "x"}}]}`, "/rules/0/headers", "header name"},
		{`{"rules": [{"url": "http://a/", "headers": {"X-A": "a\r\nSet-Cookie: b"}}]}`, "/rules/0/headers/X-A", "line break"},
		{`{"rules": [{"url": "http://a/", "headers": {"Content-Length": "9"}}]}`, "/rules/0/headers/Content-Length", "from the body"},
		{`{"rules": [{"url": "http://a/", "delay": "5"}]}`, "/rules/0/delay", "not a duration"},
		{`{"rules": [{"url": "http://a/", "delay": "1h"}]}`, "/rules/0/delay", "10m"},
		{`{"rules": [{"url": "http://a/"}, {"url": "ftp://a/"}]}`, "/rules/1/url", "http://"},
	} {
		_, err := ParseRulesFile([]byte(c.in))
		var re *RuleError
		if !errors.As(err, &re) || re.Pointer != c.pointer || !strings.Contains(re.Msg, c.msg) {
			t.Errorf("ParseRulesFile(%s) = %v; want %s: ...%s...", c.in, err, c.pointer, c.msg)
		}
	}
	if _, err := ParseRules([]byte(`[{"url": "http://a/", "body": 5}]`)); err == nil || !strings.Contains(err.Error(), "/mocks/0") {
		t.Errorf("ParseRules: %v; want the rule's pointer under /mocks", err)
	}
}

func FuzzParseRulesFile(f *testing.F) {
	f.Add([]byte(`{"rules": [{"method": "GET", "url": "http://127.0.0.1:*/api/*", "status": 503, "headers": {"A": "b"}, "body": "x", "delay": "1ms"}]}`))
	f.Add([]byte(`{"rules": [{"url": "http://**/*?*"}]}`))
	f.Add([]byte(`{"rules": [{"url": "https://a/"}, 3]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseRulesFile(data)
		if err != nil {
			var re *RuleError
			if !errors.As(err, &re) || !strings.HasPrefix(re.Pointer, "/") {
				t.Fatalf("error %v is no RuleError with a pointer", err)
			}
			return
		}
		for _, r := range rules {
			if r.Status < 200 || r.Status > 599 || !strings.HasPrefix(r.URL, "http://") {
				t.Fatalf("accepted %+v", r)
			}
			// A pattern without * matches exactly itself.
			if !strings.Contains(r.URL, "*") && !r.Matches(r.Method, r.URL) && r.Method != "" {
				t.Fatalf("%q does not match itself", r.URL)
			}
			_ = r.Matches("GET", r.URL)
		}
	})
}

// fakeClock never waits: After moves the time on by d at once, so that
// the test reads how long the shaping made a transfer last.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}

// pipeConn is a net.Conn that writes into a buffer and reads from a
// reader.
type pipeConn struct {
	net.Conn
	r io.Reader
	w bytes.Buffer
}

func (c *pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }
func (c *pipeConn) Close() error                { return nil }

func TestShapingHoldsTheBandwidth(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	p := &Proxy{clock: clock, closed: make(chan struct{})}
	const rate, size = 50000, 200000 // 400 kbit/s, 200 kB: 4 s
	if err := p.Set(Conditions{Throttle: Throttle{Down: rate, Up: rate / 2}}); err != nil {
		t.Fatal(err)
	}
	pc := &pipeConn{r: bytes.NewReader(make([]byte, size))}
	c := &shapedConn{Conn: pc, p: p}
	start := clock.Now()
	body := make([]byte, size)
	for i := 0; i < size; i += 7000 {
		if _, err := c.Write(body[i:min(i+7000, size)]); err != nil {
			t.Fatal(err)
		}
	}
	if pc.w.Len() != size {
		t.Fatalf("wrote %d bytes of %d", pc.w.Len(), size)
	}
	took := clock.Now().Sub(start)
	if least := time.Duration(size-chunk(rate)) * time.Second / rate; took < least {
		t.Errorf("%d bytes at %d bytes/s went in %v; the shaping holds them at least %v", size, rate, took, least)
	}
	// The upload: what the connection reads, at half the rate.
	start = clock.Now()
	n, err := io.Copy(io.Discard, c)
	if err != nil || n != size {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	if took, least := clock.Now().Sub(start), time.Duration(size-chunk(rate/2))*time.Second/(rate/2); took < least {
		t.Errorf("read %d bytes at %d bytes/s in %v; at least %v", size, rate/2, took, least)
	}
	// A pause earns no credit: after an idle minute the next burst is
	// paced again.
	clock.After(time.Minute)
	start = clock.Now()
	if _, err := c.Write(body[:size/2]); err != nil {
		t.Fatal(err)
	}
	if took, least := clock.Now().Sub(start), time.Duration(size/2-chunk(rate))*time.Second/rate; took < least {
		t.Errorf("after a pause, %d bytes went in %v; at least %v", size/2, took, least)
	}
	// Offline ends the connection at its next write.
	if err := p.Set(Conditions{Throttle: Presets["offline"]}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, ErrOffline) {
		t.Errorf("write offline: %v; want ErrOffline", err)
	}
}

// world is a loopback server and a proxy in front of it.
type world struct {
	p        *Proxy
	upstream *httptest.Server
	hits     atomic.Int64
	injected chan Injected
}

func newWorld(t *testing.T, body []byte) *world {
	t.Helper()
	w := &world{injected: make(chan Injected, 16)}
	w.upstream = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hits.Add(1)
		rw.Header().Set("X-Upstream", "yes")
		_, _ = rw.Write(body)
	}))
	t.Cleanup(w.upstream.Close)
	p, err := Start(Options{LoopbackOnly: true, OnInjected: func(i Injected) { w.injected <- i }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	w.p = p
	return w
}

// client goes through proxy URL pu.
func client(pu string) *http.Client {
	u, _ := url.Parse(pu)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}}
}

// TestProxyRefusesAClientWithoutItsCredential: a SOCKS client without
// the proxy's user name and password, with a wrong one, or a web page's
// HTTP request to the proxy's port, gets nothing through: the server
// behind is never reached. With the credential, the request goes
// through.
func TestProxyRefusesAClientWithoutItsCredential(t *testing.T) {
	w := newWorld(t, []byte("hello"))
	good := w.p.URL()
	user, pass := w.p.Credential()
	for name, pu := range map[string]string{
		"wrong password":   "socks5://" + user + ":" + strings.Repeat("0", 32) + "@" + w.p.Addr(),
		"another user":     "socks5://someone:" + pass + "@" + w.p.Addr(),
		"password as user": "socks5://" + pass + "@" + w.p.Addr(),
		"no credential":    "socks5://" + w.p.Addr(),
	} {
		resp, err := client(pu).Get(w.upstream.URL + "/")
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: got %d; want the proxy to refuse", name, resp.StatusCode)
		}
	}
	// A client that offers no credential is told no method fits (RFC
	// 1928 §3, X'FF').
	c, err := net.Dial("tcp", w.p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	ans := make([]byte, 2)
	if _, err := io.ReadFull(c, ans); err != nil || ans[0] != 5 || ans[1] != 0xff {
		t.Errorf("no-authentication greeting: %v, %v; want 5 255", ans, err)
	}
	// A web page's request to the proxy's port (origin-form or
	// absolute, as an HTTP proxy would take it) gets no answer at all.
	for _, req := range []string{"GET / HTTP/1.1\r\nHost: " + w.p.Addr() + "\r\n\r\n",
		"GET " + w.upstream.URL + "/ HTTP/1.1\r\nHost: " + strings.TrimPrefix(w.upstream.URL, "http://") + "\r\n\r\n"} {
		resp, err := http.ReadResponse(bufio.NewReader(func() io.Reader {
			c, err := net.Dial("tcp", w.p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			_, _ = io.WriteString(c, req)
			return c
		}()), nil)
		if err == nil {
			resp.Body.Close()
			t.Errorf("HTTP request %q to the proxy: answered %d; want none", req, resp.StatusCode)
		}
	}
	if n := w.hits.Load(); n != 0 {
		t.Errorf("the server was reached %d times without the credential", n)
	}
	resp, err := client(good).Get(w.upstream.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hello" || resp.Header.Get("X-Upstream") != "yes" {
		t.Errorf("with the credential: %d %q", resp.StatusCode, b)
	}
}

func TestProxyAnswersMockRules(t *testing.T) {
	w := newWorld(t, []byte("real"))
	rules, err := ParseRules([]byte(`[
	  {"method": "GET", "url": "http://127.0.0.1:*/api/orders*", "status": 503, "headers": {"Retry-After": "5", "Content-Type": "application/json"}, "body": "{\"error\":\"busy\"}"},
	  {"method": "POST", "url": "http://127.0.0.1:*/api/*", "status": 201, "body": "made"}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.p.Set(Conditions{Mocks: rules}); err != nil {
		t.Fatal(err)
	}
	c := client(w.p.URL())
	resp, err := c.Get(w.upstream.URL + "/api/orders?tab=open")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || string(b) != `{"error":"busy"}` || resp.Header.Get("Retry-After") != "5" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("mocked GET: %d %q %v", resp.StatusCode, b, resp.Header)
	}
	inj := <-w.injected
	if inj.Rule != 0 || inj.Status != 503 || inj.URL != w.upstream.URL+"/api/orders?tab=open" {
		t.Errorf("injected = %+v", inj)
	}
	resp, err = c.Post(w.upstream.URL+"/api/orders", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(b) != "made" {
		t.Errorf("mocked POST: %d %q", resp.StatusCode, b)
	}
	if inj := <-w.injected; inj.Rule != 1 {
		t.Errorf("POST answered by rule %d", inj.Rule)
	}
	if n := w.hits.Load(); n != 0 {
		t.Errorf("mocked requests reached the server %d times", n)
	}
	// Another URL goes to the server; so does everything once cleared.
	for _, path := range []string{"/index.html", "/api/orders"} {
		if path == "/api/orders" {
			if err := w.p.Set(Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
		resp, err = c.Get(w.upstream.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "real" {
			t.Errorf("GET %s: %d %q; want the server's answer", path, resp.StatusCode, b)
		}
	}
	if n := w.hits.Load(); n != 2 {
		t.Errorf("the server saw %d requests; want 2", n)
	}
	select {
	case inj := <-w.injected:
		t.Errorf("a real answer was reported injected: %+v", inj)
	default:
	}
}

func TestProxyOfflineFailsEveryRequest(t *testing.T) {
	w := newWorld(t, []byte("real"))
	if err := w.p.Set(Conditions{Throttle: Presets["offline"]}); err != nil {
		t.Fatal(err)
	}
	resp, err := client(w.p.URL()).Get(w.upstream.URL + "/")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("offline: got %d; want a network error", resp.StatusCode)
	}
	if n := w.hits.Load(); n != 0 {
		t.Errorf("offline reached the server %d times", n)
	}
}

func TestProxyThrottles(t *testing.T) {
	const size = 25000
	w := newWorld(t, make([]byte, size))
	// 400 kbit/s down (50000 bytes/s) and 100ms of latency: the body takes
	// at least (size-chunk)/rate after the latency.
	th, err := ParseThrottle("100ms/400/0")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.p.Set(Conditions{Throttle: th}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := client(w.p.URL()).Get(w.upstream.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil || n != size {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	least := th.Latency + time.Duration(size-chunk(th.Down))*time.Second/time.Duration(th.Down)
	if took < least {
		t.Errorf("%d bytes at %s took %v; at least %v", size, th, took, least)
	}
}

func TestProxyForwardsToLoopbackOnly(t *testing.T) {
	p := &Proxy{opts: Options{LoopbackOnly: true}}
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": true, "127.8.9.1:1": true, "[::1]:443": true, "localhost:8080": true, "LocalHost:1": true,
		"10.0.0.1:80": false, "example.com:80": false, "[::ffff:10.0.0.1]:80": false, "0.0.0.0:80": false, "nohost": false,
	} {
		if err := p.allowed(addr); (err == nil) != ok {
			t.Errorf("allowed(%q) = %v; want ok=%v", addr, err, ok)
		}
	}
}

// TestProxyPassesTLSThrough: an https request is a tunnel the proxy cannot
// read: it reaches the server whole (whatever the rules say), after the
// latency, and offline refuses it.
func TestProxyPassesTLSThrough(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(rw, "secure")
	}))
	defer srv.Close()
	p, err := Start(Options{LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	th, _ := ParseThrottle("150ms/0/0")
	rules := []Rule{{URL: "http://*"}}
	if err := p.Set(Conditions{Throttle: th, Mocks: rules}); err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(p.URL())
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy, tr.DisableKeepAlives = http.ProxyURL(pu), true
	cl := &http.Client{Transport: tr}
	start := time.Now()
	resp, err := cl.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != 200 || string(b) != "secure" || took < th.Latency {
		t.Errorf("https through the proxy: %d %q in %v; want the server's answer after at least %v", resp.StatusCode, b, took, th.Latency)
	}
	if err := p.Set(Conditions{Throttle: Presets["offline"]}); err != nil {
		t.Fatal(err)
	}
	if resp, err := cl.Get(srv.URL + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("https offline: %d; want an error", resp.StatusCode)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the server saw %d requests; want 1", n)
	}
}
