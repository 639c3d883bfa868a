package resolver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
	"github.com/miniapp-host/miniapp-host/origin"
)

// acceptedTypes are the JSON media types a manifest or a client
// configuration may be served with.
var acceptedTypes = map[string]bool{"application/json": true, "application/manifest+json": true}

// fetched is a successful download.
type fetched struct {
	body      []byte
	url       *url.URL // where the body was finally served from
	status    int      // 200, or 304 for a revalidated cache entry
	cache     string   // "miss", "fresh" or "revalidated"
	redirects int
}

// stageError is a failed download: a rejection reason, or an undecided
// answer when undecided is set. status is the HTTP status when there was one.
type stageError struct {
	reason    Reason
	undecided bool
	err       error
	status    int
}

// cacheEntry is a cached 200 response (RFC 9111, the subset a manifest
// fetch needs: ETag and Cache-Control max-age / no-cache / no-store).
type cacheEntry struct {
	body    []byte
	url     *url.URL
	etag    string
	expires time.Time // zero: must revalidate before use
}

// httpCache is the in-memory cache of one Resolver.
type httpCache struct {
	mu      sync.Mutex // guards entries
	entries map[string]*cacheEntry
}

func (c *httpCache) get(key string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key]
}

func (c *httpCache) put(key string, e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e == nil {
		delete(c.entries, key)
		return
	}
	c.entries[key] = e
}

// freshness reads Cache-Control: whether the response may be stored, and
// until when it is fresh (zero time: stored but revalidated before use).
func freshness(h http.Header, now time.Time) (store bool, expires time.Time) {
	store = true
	maxAge := -1
	for _, d := range strings.Split(strings.Join(h.Values("Cache-Control"), ","), ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(name) {
		case "no-store":
			store = false
		case "no-cache":
			maxAge = 0
		case "max-age":
			if n, err := strconv.Atoi(strings.Trim(val, `"`)); err == nil && n >= 0 && maxAge != 0 {
				maxAge = n
			}
		}
	}
	if maxAge > 0 {
		expires = now.Add(time.Duration(maxAge) * time.Second)
	}
	return store, expires
}

// newHTTPClient is the Resolver's own client: keep-alive, bounded dials.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// what names the document being downloaded, for messages.
type target struct {
	stage Stage
	what  string // "manifest" or "client configuration"
}

// fetch downloads u with the limits of the Config: one total timeout, the
// size cap while reading, status 200 only, a JSON content type, and
// same-origin redirects only.
func (r *Resolver) fetch(ctx context.Context, t target, u *url.URL) (*fetched, *stageError) {
	key := u.String()
	cached := r.cache.get(key)
	if cached != nil && !cached.expires.IsZero() && r.cfg.Now().Before(cached.expires) {
		return &fetched{body: cached.body, url: cached.url, status: http.StatusOK, cache: "fresh"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()

	first := origin.Of(u)
	cur := u
	for redirects := 0; ; redirects++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cur.String(), nil)
		if err != nil {
			return nil, &stageError{reason: Reason{Stage: t.stage, Code: CodeNetwork, Message: err.Error()}, undecided: true, err: err}
		}
		req.Header.Set("Accept", "application/manifest+json, application/json")
		if cached != nil && cached.etag != "" {
			req.Header.Set("If-None-Match", cached.etag)
		}
		resp, err := r.client.Do(req)
		if err != nil {
			return nil, r.transportError(ctx, t, cur, err)
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			discard(resp)
			next, se := r.redirect(t, cur, first, resp, redirects)
			if se != nil {
				return nil, se
			}
			cur = next
			continue
		case http.StatusNotModified:
			discard(resp)
			if cached == nil {
				return nil, statusError(t, cur, resp.StatusCode)
			}
			if store, expires := freshness(resp.Header, r.cfg.Now()); store {
				r.cache.put(key, &cacheEntry{body: cached.body, url: cached.url, etag: cached.etag, expires: expires})
			} else {
				r.cache.put(key, nil)
			}
			return &fetched{body: cached.body, url: cached.url, status: resp.StatusCode, cache: "revalidated", redirects: redirects}, nil
		case http.StatusOK:
			body, se := r.readBody(ctx, t, cur, resp)
			if se != nil {
				return nil, se
			}
			if store, expires := freshness(resp.Header, r.cfg.Now()); store && (resp.Header.Get("ETag") != "" || !expires.IsZero()) {
				r.cache.put(key, &cacheEntry{body: body, url: cur, etag: resp.Header.Get("ETag"), expires: expires})
			} else {
				r.cache.put(key, nil)
			}
			return &fetched{body: body, url: cur, status: resp.StatusCode, cache: "miss", redirects: redirects}, nil
		default:
			discard(resp)
			return nil, statusError(t, cur, resp.StatusCode)
		}
	}
}

// redirect decides one redirect: resolved as a browser resolves Location,
// same origin as the first request, within the redirect budget.
func (r *Resolver) redirect(t target, cur *url.URL, first origin.Origin, resp *http.Response, done int) (*url.URL, *stageError) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, &stageError{status: resp.StatusCode, reason: Reason{Stage: t.stage, Code: CodeRedirectInvalid,
			Message: fmt.Sprintf("%s answered %d without a Location header", cur, resp.StatusCode),
			Hint:    fmt.Sprintf("serve the %s itself with status 200", t.what)}}
	}
	next, err := origin.ResolveReference(cur, loc)
	if err != nil {
		return nil, &stageError{status: resp.StatusCode, reason: Reason{Stage: t.stage, Code: CodeRedirectInvalid,
			Message: fmt.Sprintf("%s redirects to %q, which is not a URL: %v", cur, loc, err),
			Hint:    fmt.Sprintf("serve the %s itself with status 200", t.what)}}
	}
	if to := origin.Of(next); !to.Equal(first) {
		return nil, &stageError{status: resp.StatusCode, reason: Reason{Stage: t.stage, Code: CodeRedirectCrossOrigin,
			Message: fmt.Sprintf("%s redirects to %s, on origin %s, not %s", cur, next, to, first),
			Hint:    fmt.Sprintf("serve the %s from %s itself; redirects are followed only within the same origin", t.what, first)}}
	}
	if done >= r.cfg.MaxRedirects {
		return nil, &stageError{status: resp.StatusCode, reason: Reason{Stage: t.stage, Code: CodeRedirectLimit,
			Message: fmt.Sprintf("more than %d redirects, the last from %s to %s", r.cfg.MaxRedirects, cur, next),
			Hint:    fmt.Sprintf("serve the %s at its URL, or after at most %d same-origin redirects (is there a loop?)", t.what, r.cfg.MaxRedirects)}}
	}
	return next, nil
}

// readBody checks the content type and reads at most MaxBytes
// (jsonhttp.Read).
func (r *Resolver) readBody(ctx context.Context, t target, u *url.URL, resp *http.Response) ([]byte, *stageError) {
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !acceptedTypes[mt] || (params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8")) {
		return nil, &stageError{status: resp.StatusCode, reason: Reason{Stage: t.stage, Code: CodeContentType,
			Message: fmt.Sprintf("%s is served as %q, not JSON", u, ct),
			Hint:    fmt.Sprintf("serve the %s with Content-Type: application/manifest+json or application/json (charset utf-8 if any)", t.what)}}
	}
	tooLarge := &stageError{status: resp.StatusCode, reason: Reason{Stage: t.stage, Code: CodeTooLarge,
		Message: fmt.Sprintf("%s is larger than %d bytes", u, r.cfg.MaxBytes),
		Hint:    fmt.Sprintf("keep the %s under %d bytes", t.what, r.cfg.MaxBytes)}}
	ans, err := jsonhttp.Read(resp, r.cfg.MaxBytes)
	if errors.Is(err, jsonhttp.ErrTooLarge) {
		return nil, tooLarge
	}
	if err != nil {
		var je *jsonhttp.Error
		if errors.As(err, &je) && je.Err != nil {
			err = je.Err // the stage's message names the URL itself
		}
		return nil, r.transportError(ctx, t, u, err)
	}
	return ans.Body, nil
}

// transportError classifies a failure without a usable status: all of them
// leave the answer unknown.
func (r *Resolver) transportError(ctx context.Context, t target, u *url.URL, err error) *stageError {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err // url.Error repeats the method and URL
	}
	code, msg := CodeNetwork, fmt.Sprintf("%s: %v", u, cause)
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		code, msg = CodeTimeout, fmt.Sprintf("%s did not answer completely within %s", u, r.cfg.Timeout)
	case ctx.Err() != nil:
		code, msg = CodeCanceled, fmt.Sprintf("%s: canceled", u)
	case errors.As(err, &ne) && ne.Timeout():
		code = CodeTimeout
	}
	return &stageError{undecided: true, err: err, reason: Reason{Stage: t.stage, Code: code, Message: msg}}
}

// statusError is a status that is neither 200 nor a redirect: a 5xx leaves
// the answer unknown, anything else is a rejection.
func statusError(t target, u *url.URL, status int) *stageError {
	if status >= 500 {
		return &stageError{undecided: true, status: status, reason: Reason{Stage: t.stage, Code: CodeServerError,
			Message: fmt.Sprintf("%s answered %d %s", u, status, http.StatusText(status))}}
	}
	return &stageError{status: status, reason: Reason{Stage: t.stage, Code: CodeHTTPStatus,
		Message: fmt.Sprintf("%s answered %d %s, not 200", u, status, http.StatusText(status)),
		Hint:    fmt.Sprintf("serve the %s at %s with status 200", t.what, u)}}
}

// discard drains a little of a body we do not use, so that the connection
// can be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}
