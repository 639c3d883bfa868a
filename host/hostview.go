package host

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
)

// hostView is the host's own view (ViewHost), layered over the Miniapp's:
// its one page (hostPage), loaded once, and the screens rendered in it
// (consent, rejections, errors, crashes, the notice of blocked
// navigations). A screen is JSON-encoded into the render, so nothing in it
// is ever code.
type hostView struct {
	eng  Engine
	emit func(Event)
	page string // the view's one document (hostPage)

	// UI-thread state: read and written only on the UI thread (inside
	// Dispatch or an EngineEvents callback), so it has no lock. The page
	// is loaded once, and renders asked for before it finished wait in
	// pending.
	loading     bool
	loaded      bool
	pending     []string
	screen      string       // the screen rendered in the view, "" while it is hidden
	blocked     []blockedNav // the blocked navigations its notice lists, newest last
	blockedMore int          // those blocked before them, counted

	// seq is the number of the latest render or hiding of the view
	// (renderUI), which the page's "shown" message repeats.
	seq atomic.Uint64

	mu      sync.Mutex // guards visible, which other goroutines read
	visible bool       // the view is shown over the Miniapp
}

// ensurePageUI loads the host's page into its view, once; UI thread.
func (h *hostView) ensurePageUI() {
	if h.loading || h.loaded {
		return
	}
	h.loading = true
	h.eng.LoadHTML(ViewHost, h.page)
}

// show renders a screen of the host's view and shows it over the
// Miniapp; from any goroutine.
func (h *hostView) show(screen map[string]any) {
	name, js, ok := h.render(screen)
	if ok {
		h.eng.Dispatch(func() { h.renderUI(name, js) })
	}
}

// render is the script that renders screen, and its name.
func (h *hostView) render(screen map[string]any) (name, js string, ok bool) {
	b, err := json.Marshal(screen)
	if err != nil {
		h.emit(Event{Kind: EventError, Detail: "host: render: " + err.Error()})
		return "", "", false
	}
	name, _ = screen["screen"].(string)
	return name, string(b), true
}

// renderUI runs a render of the host's view (render) and shows the view;
// UI thread. Each render, and each hiding of the view, has a number of
// its own (seq), which the page's "shown" message repeats: a message of a
// screen that a later render or a hiding replaced is not taken for the
// screen on view.
func (h *hostView) renderUI(name, screen string) {
	js := fmt.Sprintf("window.hostRender(%s, %d)", screen, h.seq.Add(1))
	h.screen = name
	if name != screenBlocked {
		h.blocked, h.blockedMore = nil, 0
	}
	if !h.loaded {
		// The host page is loaded once; the render waits for it.
		h.pending = append(h.pending, js)
		h.ensurePageUI()
		return
	}
	h.eng.Eval(ViewHost, js, nil)
	h.showUI(true)
}

// loadedUI runs the renders that waited for the host page; UI thread.
func (h *hostView) loadedUI() {
	h.loaded, h.loading = true, false
	pending := h.pending
	h.pending = nil
	for _, js := range pending {
		h.eng.Eval(ViewHost, js, nil)
	}
	if len(pending) > 0 {
		h.showUI(true)
	}
}

// showUI shows or hides the host's view; UI thread.
func (h *hostView) showUI(show bool) {
	if !show {
		h.screen = ""
		h.blocked, h.blockedMore = nil, 0
		h.seq.Add(1)
	}
	h.mu.Lock()
	h.visible = show
	h.mu.Unlock()
	h.eng.ShowHostView(show)
}

// hide hides the host's view; from any goroutine.
func (h *hostView) hide() { h.eng.Dispatch(func() { h.showUI(false) }) }

// isVisible reports whether the host's view is shown over the Miniapp.
func (h *hostView) isVisible() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.visible
}

// latestUI reports whether seq numbers the latest render of the view,
// not one that a later render or a hiding replaced; UI thread.
func (h *hostView) latestUI(seq uint64) bool { return seq == h.seq.Load() }

// showsNoticeUI reports whether the notice of blocked navigations is the
// screen on view; UI thread.
func (h *hostView) showsNoticeUI() bool { return h.screen == screenBlocked }
