package netshape

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
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
	// OnInjected, when set, hears every mocked answer just before it is
	// sent. It must not block.
	OnInjected func(Injected)
	// LoopbackOnly refuses to forward a request or open a tunnel to a
	// host that is not a loopback address (127.0.0.0/8, ::1, localhost),
	// without resolving any name: the tests' proxies never reach another
	// machine.
	LoopbackOnly bool
	// Clock paces the shaping; the real one when nil.
	Clock Clock
}

// Proxy is the host's proxy for the Miniapp's view: a SOCKS5 proxy (RFC
// 1928) on 127.0.0.1 that serves only a client that authenticates with
// its random user name and password (RFC 1929): the network process of
// the host's own Miniapp views, given them in the proxy URL, which GLib's
// SOCKS5 client sends before anything else (docs/security.md §2). An
// HTTP proxy's credential would not do: libsoup sends Proxy-Authorization
// to an HTTP proxy only after a 407, and then to the proxy's own URL. A
// tunnel whose first bytes are an HTTP request is served as HTTP (the
// mock rules see its method and URL, each request gets the latency);
// any other (TLS) is passed through, the latency once when it opens.
// Every byte both ways is shaped by the throttle.
type Proxy struct {
	opts  Options
	ln    net.Listener
	srv   *http.Server
	httpL *connListener
	user  string
	pass  string
	rp    *httputil.ReverseProxy
	clock Clock

	mu   sync.Mutex
	cond Conditions

	closed chan struct{}
	once   sync.Once
	active map[net.Conn]struct{} // the client connections open; guarded by mu
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
	p.httpL = &connListener{conns: make(chan net.Conn), closed: p.closed, addr: ln.Addr()}
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
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", destination(pr.In.Context())
			pr.Out.Host = pr.In.Host
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "miniapp-host network proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 30 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*tunnelConn); ok {
				return context.WithValue(ctx, dstKey{}, tc.dst)
			}
			return ctx
		}}
	go func() { _ = p.srv.Serve(p.httpL) }()
	go p.accept()
	return p, nil
}

// URL is the proxy's URL with its credential, for the Miniapp views' web
// contexts only: whoever has it may use the proxy.
func (p *Proxy) URL() string {
	return (&url.URL{Scheme: "socks5", User: url.UserPassword(p.user, p.pass), Host: p.ln.Addr().String()}).String()
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
	err := p.ln.Close()
	_ = p.srv.Close()
	p.mu.Lock()
	for c := range p.active {
		c.Close()
	}
	p.mu.Unlock()
	return err
}

// accept serves each client connection.
func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.active == nil {
			p.active = map[net.Conn]struct{}{}
		}
		p.active[c] = struct{}{}
		p.mu.Unlock()
		go func() {
			p.handle(&shapedConn{Conn: c, p: p})
		}()
	}
}

// done forgets a client connection that ended.
func (p *Proxy) done(c net.Conn) {
	p.mu.Lock()
	delete(p.active, c)
	p.mu.Unlock()
}

// SOCKS5 (RFC 1928) and its user name and password method (RFC 1929).
const (
	socksVersion   = 5
	methodUserPass = 2
	methodNone     = 0xff
	cmdConnect     = 1
	repSucceeded   = 0
	repNotAllowed  = 2
	repNetUnreach  = 3
	repCmdUnsupp   = 7
	repAddrUnsupp  = 8
)

// handle runs the SOCKS5 handshake on c, then serves its tunnel.
func (p *Proxy) handle(c *shapedConn) {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	dst, ok := p.handshake(c)
	if !ok {
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	if b := first[0]; b >= 'A' && b <= 'Z' {
		// An HTTP request: served by the proxy's HTTP server.
		select {
		case p.httpL.conns <- &tunnelConn{Conn: c, r: br, dst: dst}:
		case <-p.closed:
			c.Close()
		}
		return
	}
	if !p.sleep(context.Background(), p.throttle().Latency) {
		c.Close()
		return
	}
	up, err := (&net.Dialer{Timeout: 30 * time.Second}).Dial("tcp", dst)
	if err != nil {
		c.abort()
		c.Close()
		return
	}
	pipe(c, br, up)
}

// handshake reads the client's greeting, its credential and its
// request, and answers each; it returns the host:port to connect to.
func (p *Proxy) handshake(c net.Conn) (string, bool) {
	if !p.greet(c) || !p.authenticate(c) {
		return "", false
	}
	cmd, dst, ok := p.request(c)
	if !ok {
		return "", false
	}
	switch {
	case cmd != cmdConnect:
		p.reply(c, repCmdUnsupp)
		return "", false
	case p.allowed(dst) != nil:
		p.reply(c, repNotAllowed)
		return "", false
	case p.throttle().Offline:
		p.reply(c, repNetUnreach)
		return "", false
	}
	return dst, p.reply(c, repSucceeded)
}

// greet reads the client's greeting (RFC 1928 section 3) and chooses
// user name and password, refusing a client that does not offer it.
func (p *Proxy) greet(c net.Conn) bool {
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil || hdr[0] != socksVersion {
		// Not SOCKS5 (a web page's HTTP request to this port): nothing
		// is answered.
		return false
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return false
	}
	if !slices.Contains(methods, methodUserPass) {
		_, _ = c.Write([]byte{socksVersion, methodNone})
		return false
	}
	_, err := c.Write([]byte{socksVersion, methodUserPass})
	return err == nil
}

// authenticate reads the client's credential (RFC 1929: VER=1, ULEN,
// UNAME, PLEN, PASSWD) and answers whether it is the proxy's.
func (p *Proxy) authenticate(c net.Conn) bool {
	var ver [1]byte
	if _, err := io.ReadFull(c, ver[:]); err != nil || ver[0] != 1 {
		return false
	}
	user, err := readShort(c)
	if err != nil {
		return false
	}
	pass, err := readShort(c)
	if err != nil {
		return false
	}
	okUser := subtle.ConstantTimeCompare(user, []byte(p.user))
	okPass := subtle.ConstantTimeCompare(pass, []byte(p.pass))
	if okUser&okPass != 1 {
		_, _ = c.Write([]byte{1, 1})
		return false
	}
	_, err = c.Write([]byte{1, 0})
	return err == nil
}

// request reads the client's request (RFC 1928 section 4): its command
// and the host:port it names. An address type it cannot read is answered.
func (p *Proxy) request(c net.Conn) (cmd byte, dst string, ok bool) {
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != socksVersion {
		return 0, "", false
	}
	var host string
	switch req[3] {
	case 1, 4: // IPv4, IPv6
		ip := make([]byte, map[byte]int{1: 4, 4: 16}[req[3]])
		if _, err := io.ReadFull(c, ip); err != nil {
			return 0, "", false
		}
		host = net.IP(ip).String()
	case 3: // a domain name
		name, err := readShort(c)
		if err != nil {
			return 0, "", false
		}
		host = string(name)
	default:
		p.reply(c, repAddrUnsupp)
		return 0, "", false
	}
	var port [2]byte
	if _, err := io.ReadFull(c, port[:]); err != nil {
		return 0, "", false
	}
	return req[1], net.JoinHostPort(host, strconv.Itoa(int(port[0])<<8|int(port[1]))), true
}

// readShort reads a length byte and that many bytes.
func readShort(c net.Conn) ([]byte, error) {
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, n[0])
	_, err := io.ReadFull(c, b)
	return b, err
}

// reply answers a SOCKS5 request with rep, bound to no address.
func (p *Proxy) reply(c net.Conn, rep byte) bool {
	_, err := c.Write([]byte{socksVersion, rep, 0, 1, 0, 0, 0, 0, 0, 0})
	return err == nil
}

type dstKey struct{}

// destination is the host:port the SOCKS client asked for, of the
// tunnel a request came on.
func destination(ctx context.Context) string {
	s, _ := ctx.Value(dstKey{}).(string)
	return s
}

// tunnelConn is a tunnel whose first bytes were an HTTP request, handed
// to the HTTP server with what was already read.
type tunnelConn struct {
	net.Conn
	r   *bufio.Reader
	dst string
}

func (c *tunnelConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// connListener hands tunnels to the HTTP server.
type connListener struct {
	conns  chan net.Conn
	closed chan struct{}
	addr   net.Addr
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error   { return nil }
func (l *connListener) Addr() net.Addr { return l.addr }

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

// drop ends the request's tunnel without an answer: the client sees a
// network error, as with DevTools offline.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*tunnelConn); ok {
				if sc, ok := tc.Conn.(*shapedConn); ok {
					sc.abort()
				}
			}
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// serve answers an HTTP request that came through a tunnel: a mock rule's
// answer, or the server's after the latency.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	dst := destination(r.Context())
	p.mu.Lock()
	c := p.cond
	p.mu.Unlock()
	if c.Throttle.Offline || dst == "" {
		drop(w)
		return
	}
	started := p.clock.Now()
	host := r.Host
	if host == "" {
		host = dst
	}
	u := "http://" + host + r.URL.RequestURI()
	for i, rule := range c.Mocks {
		if rule.Matches(r.Method, u) {
			p.mock(w, r, i, rule, u, started, c.Throttle)
			return
		}
	}
	if !p.sleep(r.Context(), c.Throttle.Latency) {
		return
	}
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
	// Heard before the answer goes: whoever reads the answer finds it
	// recorded.
	if p.opts.OnInjected != nil {
		p.opts.OnInjected(Injected{Rule: i, Method: r.Method, URL: u, RequestHeader: r.Header.Clone(), Status: rule.Status, Header: h.Clone(),
			Body: []byte(rule.Body), Started: started, Ended: p.clock.Now()})
	}
	w.WriteHeader(rule.Status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, rule.Body)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// pipe copies both ways until either side ends.
func pipe(client net.Conn, br *bufio.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, br)
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
