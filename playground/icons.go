package playground

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// IconRef is one icon of a launched Miniapp's manifest (Web App Manifest
// "icons"), for the launcher's manifest panel. The launcher's page may load
// images only from its own origin (its CSP), so an icon is fetched through
// GET /api/icon, and only from the Miniapp's own origin.
type IconRef struct {
	Src     string `json:"src"`               // as the manifest wrote it
	URL     string `json:"url,omitempty"`     // resolved against the manifest's URL
	Sizes   string `json:"sizes,omitempty"`   // as in the manifest
	Type    string `json:"type,omitempty"`    // as in the manifest
	Purpose string `json:"purpose,omitempty"` // as in the manifest
	// Path is the launcher's route that serves the icon; empty when it
	// is not served, and Error says why.
	Path  string `json:"path,omitempty"`
	Error string `json:"error,omitempty"`
}

// keptLaunches is how many accepted launches keep their icons reachable.
const keptLaunches = 64

// maxIcon bounds an icon's body: a manifest icon is a few kilobytes.
const maxIcon = 1 << 20

// iconTypes are the media types GET /api/icon passes on: images a browser
// draws in <img> without running anything.
var iconTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/avif": true,
	"image/x-icon": true, "image/vnd.microsoft.icon": true, "image/svg+xml": true,
}

// launchLog names the launches and keeps, for the latest accepted ones,
// the icons GET /api/icon may fetch.
type launchLog struct {
	mu    sync.Mutex // guards below
	n     int
	icons map[string]launchIcons
	order []string // launches in icons, oldest first
}

type launchIcons struct {
	origin origin.Origin
	urls   []*url.URL // nil where the icon is not served
}

// next names a new launch.
func (l *launchLog) next() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return "launch-" + strconv.Itoa(l.n)
}

// keep resolves app's icons against its manifest's URL and keeps those on
// the Miniapp's origin for GET /api/icon.
func (l *launchLog) keep(launch string, app *resolver.Miniapp) []IconRef {
	if app.Manifest == nil || len(app.Manifest.Icons) == 0 {
		return nil
	}
	li := launchIcons{origin: app.Origin}
	refs := make([]IconRef, 0, len(app.Manifest.Icons))
	for i, ic := range app.Manifest.Icons {
		ref := IconRef{Src: ic.Src, Sizes: ic.Sizes, Type: ic.Type, Purpose: ic.Purpose}
		var u *url.URL
		switch r, err := origin.ResolveReference(app.ManifestURL, ic.Src); {
		case err != nil:
			ref.Error = "src does not resolve against the manifest's URL: " + err.Error()
		case !origin.Of(r).Equal(app.Origin):
			ref.URL = r.String()
			ref.Error = "not on the Miniapp's origin " + app.Origin.String() + ": the launcher loads icons only from the Miniapp's own origin"
		default:
			u = r
			ref.URL = r.String()
			ref.Path = "/api/icon?launch=" + url.QueryEscape(launch) + "&index=" + strconv.Itoa(i)
		}
		li.urls = append(li.urls, u)
		refs = append(refs, ref)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.icons == nil {
		l.icons = map[string]launchIcons{}
	}
	l.icons[launch] = li
	l.order = append(l.order, launch)
	if len(l.order) > keptLaunches {
		delete(l.icons, l.order[0])
		l.order = l.order[1:]
	}
	return refs
}

// icon returns the URL of icon index of launch.
func (l *launchLog) icon(launch, index string) (*url.URL, origin.Origin, *apiError) {
	l.mu.Lock()
	li, ok := l.icons[launch]
	l.mu.Unlock()
	if !ok {
		return nil, origin.Origin{}, &apiError{http.StatusNotFound, "unknown_launch",
			"no accepted launch " + strconv.Quote(launch) + " is kept: launch the Miniapp again (the latest " +
				strconv.Itoa(keptLaunches) + " accepted launches keep their icons)"}
	}
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= len(li.urls) {
		return nil, origin.Origin{}, invalid(fmt.Sprintf("index must be the icon's position in the manifest's icons, 0 to %d", len(li.urls)-1))
	}
	if li.urls[i] == nil {
		return nil, origin.Origin{}, invalid("icon " + index + " is not served: it is not on the Miniapp's origin (the launch's report says why)")
	}
	return li.urls[i], li.origin, nil
}

var errIconRedirect = errors.New("the icon redirects off the Miniapp's origin")

// handleIcon (GET /api/icon?launch=L&index=N) fetches one icon of an
// accepted launch from the Miniapp's origin and passes it on if it is an
// image: the one origin policy decides (origin.Of), redirects must stay on
// the Miniapp's origin, and the answer carries a CSP that runs nothing, so
// an SVG opened on its own cannot script the launcher's origin.
func (p *Playground) handleIcon(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	u, o, apiErr := p.launches.icon(q.Get("launch"), q.Get("index"))
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	c := *p.cfg.HTTP
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 || !origin.Of(req.URL).Equal(o) {
			return errIconRedirect
		}
		return nil
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		writeError(w, iconFailed(u, err.Error()))
		return
	}
	req.Header.Set("Accept", "image/*")
	resp, err := c.Do(req)
	if err != nil {
		writeError(w, iconFailed(u, err.Error()))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		writeError(w, iconFailed(u, "the Miniapp answered "+resp.Status))
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !iconTypes[mt] {
		writeError(w, iconFailed(u, "its Content-Type is "+strconv.Quote(mt)+", not an image type (image/png, image/svg+xml, …)"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIcon+1))
	if err != nil {
		writeError(w, iconFailed(u, "reading it: "+err.Error()))
		return
	}
	if len(body) > maxIcon {
		writeError(w, iconFailed(u, "it is larger than 1 MiB"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", mt)
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	h.Set("Cache-Control", "no-store")
	w.Write(body)
}

func iconFailed(u *url.URL, why string) *apiError {
	return &apiError{http.StatusBadGateway, "icon_failed", "icon " + u.String() + ": " + why}
}
