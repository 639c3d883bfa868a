package playground

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// The launcher's Server events panel (docs/playground.md, "Server events"):
// the reference server's audit events, listed and followed through the
// dashboard's event API (docs/dashboard.md), which needs the operator
// credential. The launcher's API calls it with the playground's operator key
// and passes the answers on, so the page gets the events and never the key.
// The dashboard checks the filters: its refusals (an unknown kind, an after
// that is no integer, an unknown parameter) keep their status, code and
// field.

// maxFollowers bounds the streams the launcher follows at once (a page
// each, and one more while a page changes its filter): each holds a
// connection to the dashboard.
const maxFollowers = 8

// maxEventLine bounds one line of the dashboard's stream; an event is one
// line of JSON, far smaller.
const maxEventLine = 1 << 20

// followers counts the streams being followed and ends them all at Close,
// so that the launcher's Shutdown does not wait for pages that never hang
// up.
type followers struct {
	ctx  context.Context
	stop context.CancelFunc

	mu   sync.Mutex // guards n
	n    int
	left *sync.Cond // signalled when a stream ends
}

func newFollowers() *followers {
	f := &followers{}
	f.left = sync.NewCond(&f.mu)
	f.ctx, f.stop = context.WithCancel(context.Background())
	return f
}

// waitBelow returns once fewer than n streams are followed.
func (f *followers) waitBelow(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.n >= n {
		f.left.Wait()
	}
}

// acquire takes a place, or reports that every place is taken.
func (f *followers) acquire() (release func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n >= maxFollowers {
		return nil, false
	}
	f.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.n--
			f.left.Broadcast()
			f.mu.Unlock()
		})
	}, true
}

// errTooManyFollowers answers a stream beyond maxFollowers.
var errTooManyFollowers = &apiError{http.StatusTooManyRequests, "too_many_followers",
	fmt.Sprintf("the launcher already follows %d event streams (a page each): close a launcher tab, or list with GET /api/server-events", maxFollowers)}

// auditQuery is the page's filter as the dashboard's query: the page's
// parameters passed on as they are, since the dashboard is the one that
// checks them (docs/dashboard.md, "Events").
func auditQuery(r *http.Request) (string, *apiError) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", invalid("query: " + err.Error() + ": write the filters as client=ID&subject=S&kind=K, each value percent-encoded")
	}
	return v.Encode(), nil
}

// dashboardRefusal is the launcher's answer for a refusal of the
// dashboard: a 4xx keeps its status, code and field (the message names the
// field, the rule and the fix); anything else is dashboard_failed (502).
func dashboardRefusal(w http.ResponseWriter, err error) {
	var de *dashboard.APIError
	if errors.As(err, &de) && de.Status >= 400 && de.Status < 500 {
		msg := de.Err.Message
		if de.Err.Field != "" {
			msg = de.Err.Field + ": " + msg
		}
		writeJSON(w, de.Status, map[string]any{"error": map[string]string{"code": de.Err.Code, "field": de.Err.Field, "message": msg}})
		return
	}
	writeError(w, &apiError{http.StatusBadGateway, "dashboard_failed", err.Error()})
}

// handleServerEvents serves GET /api/server-events: the dashboard's
// GET /api/events with the page's filters, answered as the dashboard
// answered it ({events, next_after}).
func (p *Playground) handleServerEvents(w http.ResponseWriter, r *http.Request) {
	q, aerr := auditQuery(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	path := "/api/events"
	if q != "" {
		path += "?" + q
	}
	raw, err := p.operator().Do(r.Context(), http.MethodGet, path, nil)
	if err != nil {
		dashboardRefusal(w, err)
		return
	}
	writeJSON(w, http.StatusOK, raw)
}

// streamHeaderTimeout bounds the wait for the dashboard's stream to start.
const streamHeaderTimeout = 10 * time.Second

// handleServerEventStream serves GET /api/server-events/stream: the
// dashboard's event stream (server-sent events) with the page's filters
// and its Last-Event-ID, passed on line by line, each event flushed as it
// comes. The page's request ends it, and so does Close.
func (p *Playground) handleServerEventStream(w http.ResponseWriter, r *http.Request) {
	q, aerr := auditQuery(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	release, ok := p.follow.acquire()
	if !ok {
		writeError(w, errTooManyFollowers)
		return
	}
	defer release()
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, &apiError{http.StatusInternalServerError, "server_error", "this connection cannot stream"})
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(p.follow.ctx, cancel)()
	u := strings.TrimSuffix(p.world.urls.Dashboard, "/") + "/api/events/stream"
	if q != "" {
		u += "?" + q
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		writeError(w, &apiError{http.StatusBadGateway, "dashboard_failed", err.Error()})
		return
	}
	req.Header.Set("Authorization", "Bearer "+p.OperatorKey())
	req.Header.Set("Accept", "text/event-stream")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		req.Header.Set("Last-Event-ID", id)
	}
	// The stream has no deadline (the page follows it for as long as it
	// is open), but its start does.
	started := time.AfterFunc(streamHeaderTimeout, cancel)
	resp, err := (&http.Client{Transport: p.cfg.HTTP.Transport}).Do(req)
	started.Stop()
	if err != nil {
		writeError(w, &apiError{http.StatusBadGateway, "dashboard_failed", "the dashboard's event stream: " + err.Error()})
		return
	}
	if resp.StatusCode != http.StatusOK {
		dashboardRefusal(w, streamRefusal(resp))
		return
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		writeError(w, &apiError{http.StatusBadGateway, "dashboard_failed", fmt.Sprintf("the dashboard's event stream answered %q, not text/event-stream", ct)})
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// A comment first: the page knows the stream is open before the first
	// event.
	fmt.Fprint(w, ": following the dashboard's audit events\n\n")
	flusher.Flush()
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	var line []byte
	for {
		chunk, isPrefix, err := rd.ReadLine()
		if err != nil {
			return // the dashboard, the page or Close ended it
		}
		line = append(line, chunk...)
		if isPrefix {
			if len(line) > maxEventLine {
				p.cfg.Logger.Warn("playground: a line of the dashboard's event stream is too long; the stream ends", "bytes", len(line))
				return
			}
			continue
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return
		}
		if len(line) == 0 {
			flusher.Flush()
		}
		line = line[:0]
	}
}

// streamRefusal reads the dashboard's answer to a stream it did not open.
func streamRefusal(resp *http.Response) error {
	a, err := jsonhttp.Read(resp, 64<<10)
	if err != nil {
		return fmt.Errorf("the dashboard's event stream: %w", err)
	}
	ae := &dashboard.APIError{Status: a.Status, Body: a.Body}
	if json.Unmarshal(a.Body, &ae.Err) != nil || ae.Err.Code == "" {
		return fmt.Errorf("the dashboard's event stream: %s without an error object", a.StatusText)
	}
	return ae
}
