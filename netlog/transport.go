package netlog

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

type ctxKey struct{}

type target struct {
	flow         *Flow
	pushed       *Log // IntoPushed: kept until the flow it starts begins
	source, kind string
}

// add records x where the target says.
func (tg target) add(x Exchange) {
	if tg.pushed != nil {
		tg.pushed.addPushed(x)
		return
	}
	tg.flow.Add(x)
}

// IntoPushed returns a context whose request through a Transport, a
// pushed authorization request (RFC 9126 section 2) made by source, is
// kept by l until a flow begins whose caught request names the
// request_uri the answer gave (RFC 9126 section 4): it is added to that
// flow, of kind KindPAR, before the caught request (Flow lists entries in
// the order they started). A push the service refused starts no flow and
// is not kept. A nil l records nothing.
func IntoPushed(ctx context.Context, l *Log, source string) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, target{pushed: l, source: source, kind: KindPAR})
}

// Into returns a context whose requests through a Transport are recorded
// in f as entries of kind (KindNativeConsent, KindCallback…) made by
// source (SourceHost, SourceBackend). A nil f records nothing.
func Into(ctx context.Context, f *Flow, source, kind string) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, target{flow: f, source: source, kind: kind})
}

// FlowOf returns the flow a context's requests are recorded in (Into), or
// nil.
func FlowOf(ctx context.Context) *Flow {
	tg, _ := ctx.Value(ctxKey{}).(target)
	return tg.flow
}

// Transport records the requests whose context names a flow (Into) and
// passes every request on to Base unchanged. The response body is read by
// the caller as before; the entry is recorded when it has been read to its
// end or closed.
type Transport struct {
	// Base sends the requests; http.DefaultTransport when nil.
	Base http.RoundTripper
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Client returns a copy of c (http.DefaultClient when nil) whose transport
// records as Transport does.
func Client(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	cc := *c
	if _, ok := cc.Transport.(*Transport); !ok {
		cc.Transport = &Transport{Base: c.Transport}
	}
	return &cc
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	tg, ok := req.Context().Value(ctxKey{}).(target)
	if !ok {
		return base.RoundTrip(req)
	}
	now := t.Now
	if now == nil {
		now = time.Now
	}
	x := &Exchange{Source: tg.source, Kind: tg.kind, Method: req.Method, URL: req.URL.String(),
		RequestHeader: req.Header.Clone(), RequestSize: req.ContentLength, Started: now()}
	if x.RequestHeader == nil {
		x.RequestHeader = http.Header{}
	}
	if req.Host != "" && req.Host != req.URL.Host {
		x.RequestHeader.Set("Host", req.Host)
	}
	if req.Body != nil && req.Body != http.NoBody {
		// Keep at most maxBody+1 bytes; the rest streams on untouched.
		head, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
		if err != nil {
			req.Body.Close()
			return nil, err
		}
		x.RequestBody = head
		if len(head) <= maxBody {
			x.RequestSize = int64(len(head))
		}
		body := req.Body
		req = req.Clone(req.Context())
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), body), body}
	}
	var mu sync.Mutex // guards x's times, written by the trace's goroutines
	trace := &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) {
			mu.Lock()
			x.Sent = now()
			mu.Unlock()
		},
		GotFirstResponseByte: func() {
			mu.Lock()
			x.FirstByte = now()
			mu.Unlock()
		},
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := base.RoundTrip(req)
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		x.Done, x.Err = now(), err.Error()
		tg.add(*x)
		return nil, err
	}
	x.Status, x.HTTPVersion, x.ResponseHeader, x.ResponseSize = resp.StatusCode, resp.Proto, resp.Header.Clone(), 0
	resp.Body = &recordingBody{rc: resp.Body, x: x, tg: tg, now: now, mu: &mu}
	return resp, nil
}

// recordingBody keeps the first bytes of a response body and records the
// exchange when the body is read to its end or closed, whichever is first.
type recordingBody struct {
	rc   io.ReadCloser
	x    *Exchange
	tg   target
	now  func() time.Time
	mu   *sync.Mutex
	once sync.Once
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	b.x.ResponseSize += int64(n)
	if keep := maxBody + 1 - len(b.x.ResponseBody); keep > 0 {
		b.x.ResponseBody = append(b.x.ResponseBody, p[:min(n, keep)]...)
	}
	b.mu.Unlock()
	if err != nil {
		b.finish(err)
	}
	return n, err
}

func (b *recordingBody) Close() error {
	err := b.rc.Close()
	b.finish(nil)
	return err
}

func (b *recordingBody) finish(err error) {
	b.once.Do(func() {
		b.mu.Lock()
		x := *b.x
		b.mu.Unlock()
		x.Done = b.now()
		if err != nil && err != io.EOF {
			x.Err = "reading the response: " + err.Error()
		}
		b.tg.add(x)
	})
}
