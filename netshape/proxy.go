package netshape

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Injected is an answer the proxy made up, from a mock rule: the host
// records it in the network log, marked injected.
type Injected struct {
	// Rule is the rule's place in the conditions' mocks, from 0.
	Rule           int
	Method, URL    string
	RequestHeader  http.Header
	Status         int
	Header         http.Header
	Body           []byte
	Started, Ended time.Time
}

// Options configure a Proxy.
type Options struct {
	// OnInjected, when set, hears every mocked answer once it is sent.
	// It must not block.
	OnInjected func(Injected)
	// LoopbackOnly refuses to forward a request or open a tunnel to a
	// host that is not a loopback address (127.0.0.0/8, ::1, localhost),
	// without resolving any name: the tests' proxies never reach another
	// machine.
	LoopbackOnly bool
	// Clock paces the shaping; the real one when nil.
	Clock Clock
}

// Proxy is the host's HTTP proxy for the Miniapp's view: it listens on
// 127.0.0.1 only, serves only a client that presents its credential
// (Proxy-Authorization, RFC 9110 §11.7.1, Basic: the web processes of the
// host's own Miniapp views, given it in the proxy URL), and applies the
// conditions Set gave it (docs/security.md §2).
type Proxy struct {
	opts  Options
	ln    net.Listener
	srv   *http.Server
	user  string
	pass  string
	auth  string // the Proxy-Authorization value it takes
	rp    *httputil.ReverseProxy
	clock Clock

	mu   sync.Mutex
	cond Conditions

	closed chan struct{}
	once   sync.Once
}

// Start starts a proxy on a free port of 127.0.0.1 with a new random
// credential, passing everything through until Set.
func Start(opts Options) (*Proxy, error) {
	var k [16]byte
	if _, err := rand.Read(k[:]); err != nil {
		return nil, fmt.Errorf("netshape: credential: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netshape: listen: %w", err)
	}
	p := &Proxy{opts: opts, ln: ln, user: "miniapp-host", pass: hex.EncodeToString(k[:]), closed: make(chan struct{}), clock: opts.Clock}
	if p.clock == nil {
		p.clock = realClock{}
	}
	p.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(p.user+":"+p.pass))
	dialer := &net.Dialer{Timeout: 30 * time.Second}
	tr := &http.Transport{
		Proxy:              nil,
		DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if err := p.allowed(addr); err != nil {
				return nil, err
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.Host = pr.In.Host },
		Transport:     tr,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "miniapp-host network proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}
	go func() { _ = p.srv.Serve(&shapedListener{Listener: ln, p: p}) }()
	return p, nil
}

// URL is the proxy's URL with its credential, for the Miniapp views' web
// contexts only: whoever has it may use the proxy.
func (p *Proxy) URL() string {
	return (&url.URL{Scheme: "http", User: url.UserPassword(p.user, p.pass), Host: p.ln.Addr().String()}).String()
}

// Addr is the proxy's address, without the credential.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Credential is the user and password the proxy takes.
func (p *Proxy) Credential() (user, password string) { return p.user, p.pass }

// Set makes c the conditions from now on: requests already answered keep
// theirs, tunnels open take the new bandwidths at their next bytes.
func (p *Proxy) Set(c Conditions) error {
	c.Mocks = append([]Rule(nil), c.Mocks...)
	if err := Compile(c.Mocks); err != nil {
		return err
	}
	p.mu.Lock()
	p.cond = c
	p.mu.Unlock()
	return nil
}

// Conditions are the conditions in force.
func (p *Proxy) Conditions() Conditions {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cond
	c.Mocks = append([]Rule(nil), c.Mocks...)
	return c
}

func (p *Proxy) throttle() Throttle {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cond.Throttle
}

// Close stops the proxy and ends every connection it holds.
func (p *Proxy) Close() error {
	p.once.Do(func() { close(p.closed) })
	return p.srv.Close()
}

// allowed is the forwarding policy: with LoopbackOnly, a loopback host
// only, read without resolving a name.
func (p *Proxy) allowed(addr string) error {
	if !p.opts.LoopbackOnly {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address: this proxy forwards to loopback only", host)
}

// sleep waits d, or until ctx ends or the proxy closes; false when it did
// not wait it out.
func (p *Proxy) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-p.clock.After(d):
		return true
	case <-ctx.Done():
		return false
	case <-p.closed:
		return false
	}
}

func (p *Proxy) authorized(r *http.Request) bool {
	got := r.Header.Get("Proxy-Authorization")
	return subtle.ConstantTimeCompare([]byte(got), []byte(p.auth)) == 1
}

// drop ends the request's connection without an answer: the client sees
// a network error, as with DevTools offline.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*shapedConn); ok {
				tc.abort()
			}
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(r) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="miniapp-host"`)
		http.Error(w, "miniapp-host network proxy: the proxy serves only the host's own Miniapp view (Proxy-Authorization)", http.StatusProxyAuthRequired)
		return
	}
	p.mu.Lock()
	c := p.cond
	p.mu.Unlock()
	if c.Throttle.Offline {
		drop(w)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, c.Throttle)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		http.Error(w, "miniapp-host network proxy: a proxy request names its whole http:// URL (RFC 9112 §3.2.2)", http.StatusBadRequest)
		return
	}
	started := p.clock.Now()
	u := r.URL.String()
	for i, rule := range c.Mocks {
		if rule.Matches(r.Method, u) {
			p.mock(w, r, i, rule, u, started, c.Throttle)
			return
		}
	}
	if !p.sleep(r.Context(), c.Throttle.Latency) {
		return
	}
	r.Header.Del("Proxy-Authorization")
	p.rp.ServeHTTP(w, r)
}

// mock answers r with rule.
func (p *Proxy) mock(w http.ResponseWriter, r *http.Request, i int, rule Rule, u string, started time.Time, t Throttle) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 16<<20))
	if !p.sleep(r.Context(), t.Latency+rule.delay) {
		return
	}
	h := w.Header()
	for k, v := range rule.Headers {
		h.Set(k, v)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set("Content-Length", strconv.Itoa(len(rule.Body)))
	w.WriteHeader(rule.Status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, rule.Body)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if p.opts.OnInjected != nil {
		rh := r.Header.Clone()
		rh.Del("Proxy-Authorization")
		p.opts.OnInjected(Injected{Rule: i, Method: r.Method, URL: u, RequestHeader: rh, Status: rule.Status, Header: h.Clone(),
			Body: []byte(rule.Body), Started: started, Ended: p.clock.Now()})
	}
}

// tunnel opens a CONNECT tunnel (RFC 9110 §9.3.6) after the latency; its
// bytes are shaped by the client's connection.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, t Throttle) {
	if err := p.allowed(r.Host); err != nil {
		http.Error(w, "miniapp-host network proxy: "+err.Error(), http.StatusForbidden)
		return
	}
	if !p.sleep(r.Context(), t.Latency) {
		return
	}
	up, err := (&net.Dialer{Timeout: 30 * time.Second}).DialContext(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, "miniapp-host network proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "miniapp-host network proxy: no tunnel", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
	client, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	go pipe(client, buf, up)
}

// pipe copies both ways until either side ends.
func pipe(client net.Conn, buf *bufio.ReadWriter, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_ = buf.Flush()
		_, _ = io.Copy(up, buf.Reader)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, up)
		done <- struct{}{}
	}()
	<-done
	client.Close()
	up.Close()
	<-done
}

// ErrOffline is what a shaped connection's Read and Write return once the
// conditions went offline.
var ErrOffline = errors.New("netshape: offline")
