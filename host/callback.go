package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/origin"
)

// callbackResult is what the host's own callback request produced.
type callbackResult struct {
	Next    *url.URL // where the view goes next
	Cookies []Cookie // Set-Cookie of the callback, for the Miniapp's origin only
	Status  int
}

// callback performs the confidential client's callback request the way
// the view would have: GET redirect_uri with the view's cookies for the
// Miniapp's origin, without following redirects. The code in its query
// never reaches the view. When the callback does not redirect, the view
// goes to fallback (the Miniapp's start_url): loading the callback again
// would replay a spent code.
func callback(ctx context.Context, client *http.Client, cb *url.URL, cookieHeader string, fallback *url.URL, now time.Time) (*callbackResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cb.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("host: callback request: %w", err)
	}
	if cookieHeader != "" {
		req.Header.Set("Cookie", cookieHeader)
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.Jar = nil
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("host: callback request: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))

	res := &callbackResult{Status: resp.StatusCode, Next: fallback}
	res.Cookies = cookiesFor(cb, resp.Cookies(), now)
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		next, err := origin.ResolveReference(cb, loc)
		if err != nil {
			return nil, fmt.Errorf("host: callback redirects to %q: %w", loc, err)
		}
		res.Next = next
	}
	if res.Next == nil {
		return nil, errors.New("host: callback did not redirect and there is no start_url to go to")
	}
	return res, nil
}

// cookiesFor keeps the Set-Cookie values that belong to the origin of cb
// and converts them for the view's store. A cookie with a Domain attribute
// other than cb's host would reach other origins, so it is dropped; one
// naming cb's host exactly is kept host-only, which is what the Miniapp's
// origin alone means.
func cookiesFor(cb *url.URL, set []*http.Cookie, now time.Time) []Cookie {
	host := origin.Of(cb).Host
	var out []Cookie
	for _, c := range set {
		if c.Domain != "" && !strings.EqualFold(strings.TrimPrefix(c.Domain, "."), host) {
			continue
		}
		if c.Name == "" {
			continue
		}
		vc := Cookie{
			Name: c.Name, Value: c.Value, Domain: host, Path: c.Path,
			MaxAge: -1, HTTPOnly: c.HttpOnly, Secure: c.Secure,
		}
		if vc.Path == "" || !strings.HasPrefix(vc.Path, "/") {
			vc.Path = defaultCookiePath(cb.Path)
		}
		switch {
		case c.MaxAge > 0:
			vc.MaxAge = c.MaxAge
		case c.MaxAge < 0:
			vc.MaxAge = 0 // "Max-Age=0" or negative: delete now
		case !c.Expires.IsZero():
			vc.MaxAge = max(0, int(c.Expires.Sub(now).Seconds()))
		}
		switch c.SameSite {
		case http.SameSiteLaxMode:
			vc.SameSite = SameSiteLax
		case http.SameSiteStrictMode:
			vc.SameSite = SameSiteStrict
		default:
			// Unspecified and None: libsoup 2 stores both as None, which
			// is what WebKit would have kept had it seen the header.
			vc.SameSite = SameSiteNone
		}
		out = append(out, vc)
	}
	return out
}

// defaultCookiePath is RFC 6265 section 5.1.4.
func defaultCookiePath(p string) string {
	if p == "" || p[0] != '/' {
		return "/"
	}
	i := strings.LastIndex(p, "/")
	if i == 0 {
		return "/"
	}
	return p[:i]
}
