package host

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
)

// The engine's reports (EngineEvents). Each runs on the UI thread and must
// not block.

var _ EngineEvents = (*Window)(nil)

// DecideNavigation implements EngineEvents.
func (w *Window) DecideNavigation(v View, n Navigation) bool {
	switch v {
	case ViewMiniapp:
		return w.decideMiniapp(n)
	case ViewLauncher:
		return w.decideLauncher(n)
	default:
		return decideHostView(n)
	}
}

// decideHostView keeps the host's own view on the one document the host
// loaded into it: it has no network origin and follows no link. Loading a
// document with LoadHTML and no base URI is a navigation to about:blank
// that no page started.
func decideHostView(n Navigation) bool {
	return n.URL == "about:blank" && n.Trigger == TriggerOther && !n.UserGesture && !n.NewWindow
}

func (w *Window) decideMiniapp(n Navigation) bool {
	w.mu.Lock()
	app := w.app
	w.mu.Unlock()
	if app == nil {
		// With WebDriver, a rejection is also loaded into this view
		// (ShowRejection): the host's own document, as in its view.
		if w.opts.WebDriver && decideHostView(n) {
			w.emit(Event{Kind: EventNavigation, URL: n.URL, Action: Allow, Rule: RuleHostDocument, Navigation: &n})
			return true
		}
		w.emit(Event{Kind: EventNavigation, URL: n.URL, Action: Block, Rule: RuleNoMiniapp, Navigation: &n})
		return false
	}
	act, rule, u := app.Policy.DecideRule(n)
	w.emit(Event{Kind: EventNavigation, URL: n.URL, Action: act, Rule: rule, Navigation: &n})
	if act == Block {
		w.noticeBlockedUI(app, n.URL, rule)
	}
	decision := bridge.NavigationBlocked
	switch act {
	case Allow:
		decision = bridge.NavigationAllowed
	case Consent:
		decision = bridge.NavigationConsent
	}
	nav := bridge.NavigationEvent{URL: n.URL, Decision: decision, Rule: rule}
	if act == Consent {
		// The flow starts first, so that the event names it (its network
		// log's id); startConsent publishes nav.
		w.startConsent(u, nav)
		return false
	}
	w.publish(nav)
	switch act {
	case Allow:
		if n.NewWindow {
			// No second window: the page loads in the Miniapp's view,
			// once the current signal has returned. Without a canonical
			// URL (see Policy.Decide), the engine's own spelling is
			// loaded.
			us := n.URL
			if u != nil {
				us = u.String()
			}
			w.Dispatch(func() { w.eng.Load(ViewMiniapp, us) })
			return false
		}
		return true
	case External:
		go w.opts.OpenExternal(u.String())
	}
	return false
}

// decideLauncher keeps the launcher's view on the launcher's own origin,
// never in a new window; an http(s) link elsewhere followed by the user
// goes to the system browser.
func (w *Window) decideLauncher(n Navigation) bool {
	w.mu.Lock()
	home := w.launcherAt
	w.mu.Unlock()
	o, err := origin.OfString(n.URL)
	if err != nil {
		return false
	}
	if !n.NewWindow && !home.IsOpaque() && o.Equal(home) {
		return true
	}
	if n.UserGesture && !o.IsOpaque() {
		if u, err := origin.ParseURL(n.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			go w.opts.OpenExternal(u.String())
		}
	}
	return false
}

// LoadChanged implements EngineEvents.
func (w *Window) LoadChanged(v View, ev LoadEvent, uri string) {
	switch v {
	case ViewHost:
		if ev == LoadFinished {
			w.hostLoadedUI()
		}
	case ViewLauncher:
		if ev == LoadFinished {
			w.launcherLoaded(uri)
		}
	case ViewMiniapp:
		w.miniappLoadChanged(ev, uri)
	}
}

func (w *Window) miniappLoadChanged(ev LoadEvent, uri string) {
	w.mu.Lock()
	w.loaded = ev == LoadFinished
	w.mu.Unlock()
	switch ev {
	case LoadCommitted:
		u := parseOrNil(uri)
		w.mu.Lock()
		w.topURI, w.topURL = uri, u
		w.seq++
		app, doc := w.app, w.docLocked()
		w.mu.Unlock()
		if app != nil && app.Bridge != nil {
			app.Bridge.Navigated(doc)
		}
		w.emit(Event{Kind: EventLoadCommitted, URL: uri})
	case LoadFinished:
		w.mu.Lock()
		if w.netFlow != nil && w.netFlowUntil.IsZero() && w.netFlow.Ended() {
			// The page the flow led to has loaded: what the view starts
			// asking for from now on is no longer the flow's. WebKit may
			// report the page's own resources as finished after this.
			w.netFlowUntil = time.Now()
		}
		w.mu.Unlock()
		w.emit(Event{Kind: EventLoadFinished, URL: uri})
		// The host page loads after the Miniapp's first page: its web
		// process would compete with the Miniapp's start on a small
		// machine.
		w.ensureHostPageUI()
	}
}

// launcherLoaded reports the launcher's page. Its fragment carries the
// automation token: it is dropped.
func (w *Window) launcherLoaded(raw string) {
	if u, err := url.Parse(raw); err == nil {
		u.Fragment, u.RawFragment = "", ""
		raw = u.String()
	} else {
		raw = ""
	}
	w.emit(Event{Kind: EventLauncherLoaded, URL: raw})
}

// LoadFailed implements EngineEvents.
func (w *Window) LoadFailed(v View, uri string, code int, message string) {
	if v != ViewMiniapp {
		return
	}
	w.emit(Event{Kind: EventLoadFailed, URL: uri, Detail: fmt.Sprintf("%d %s", code, message)})
}

// ScriptMessage implements EngineEvents.
func (w *Window) ScriptMessage(v View, raw string) {
	switch v {
	case ViewMiniapp:
		w.bridgeMessage(raw)
	case ViewHost:
		w.hostMessage(raw)
	}
}

// bridgeMessage runs for every message posted to the bridge's handler,
// from any frame of the Miniapp's view.
func (w *Window) bridgeMessage(raw string) {
	main := len(raw) >= len(w.key) && subtle.ConstantTimeCompare([]byte(raw[:len(w.key)]), []byte(w.key)) == 1
	msg := raw
	if main {
		msg = raw[len(w.key):]
	}
	w.mu.Lock()
	app, doc := w.app, w.docLocked()
	w.mu.Unlock()
	if !main {
		w.emit(Event{Kind: EventBridgeRefused, URL: doc.URL, Detail: "not from the Miniapp's top frame"})
	}
	if app == nil || app.Bridge == nil {
		if main {
			w.emit(Event{Kind: EventBridgeRefused, URL: doc.URL, Detail: "this Miniapp has no bridge"})
		}
		return
	}
	if main {
		w.emit(Event{Kind: EventBridgeMessage, URL: doc.URL})
	}
	// The dispatcher gates (key, origin, document) and never blocks.
	app.Bridge.Receive(bridge.Frame{Document: doc, IsMainFrame: main}, msg)
}

// hostMessage runs for messages of the host's view.
func (w *Window) hostMessage(raw string) {
	var m struct {
		Action string `json:"action"`
		Screen string `json:"screen"`
		Seq    uint64 `json:"seq"`
		hostDecision
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return
	}
	switch m.Action {
	case "shown":
		if m.Seq != w.renderSeq.Load() {
			// A screen that a later render, or a hiding, replaced
			// before it was painted: not the one on view.
			return
		}
		// The screen is on record as shown (ConsentOnScreen) and
		// consent.shown published before the event says so: whoever
		// answers the event (consent.approve) finds the screen there.
		if m.Screen == "consent" {
			w.mu.Lock()
			var shown *bridge.ConsentShownEvent
			if w.flow != nil {
				shown = w.flow.shown
				w.flow.onScreen = shown != nil
			}
			w.mu.Unlock()
			if shown != nil {
				w.publish(*shown)
			}
		}
		w.emit(Event{Kind: EventHostShown, Detail: m.Screen})
	case "approve":
		go w.decide(m.approval())
	case "deny":
		go w.decide(consent.Decision{Action: consent.Deny})
	case "reload":
		w.mu.Lock()
		app := w.app
		w.mu.Unlock()
		w.showHostViewUI(false)
		if app != nil {
			w.eng.Load(ViewMiniapp, app.reloadURL().String())
		}
	case "close":
		w.abandonFlow()
		w.showHostViewUI(false)
	case "dismiss":
		// The notice of blocked navigations only: a consent or an error
		// that replaced it since stays.
		if w.hostScreen == screenBlocked {
			w.showHostViewUI(false)
		}
	}
}

// WebProcessResponsive implements EngineEvents: a web process that stays
// unresponsive for HangTimeout is stopped.
func (w *Window) WebProcessResponsive(ok bool) {
	w.mu.Lock()
	w.unresponsive = !ok
	w.mu.Unlock()
	if ok {
		return
	}
	w.emit(Event{Kind: EventUnresponsive})
	time.AfterFunc(w.opts.HangTimeout, func() {
		w.Dispatch(func() {
			w.mu.Lock()
			hung := w.unresponsive
			w.mu.Unlock()
			if hung {
				w.eng.TerminateWebProcess()
			}
		})
	})
}

// WebProcessTerminated implements EngineEvents: the host's view says so
// and offers a reload.
func (w *Window) WebProcessTerminated(why Termination) {
	w.mu.Lock()
	w.unresponsive, w.loaded = false, false
	w.mu.Unlock()
	w.emit(Event{Kind: EventWebProcessTerminated, Detail: why.String()})
	w.showHost(map[string]any{"screen": "crashed", "text": "The Miniapp's page " + why.String() + "."})
}

// UserInput implements EngineEvents.
func (w *Window) UserInput(at time.Time) { w.gestures.Input(at) }

// ResourceLoaded implements EngineEvents: a request of the Miniapp's view
// to one of its allowed origins joins the flow it belongs to in the
// network log (docs/host.md, "Network log"). Requests elsewhere, and
// those outside a flow, are not kept.
func (w *Window) ResourceLoaded(r Resource) {
	w.mu.Lock()
	app, nf, until := w.app, w.netFlow, w.netFlowUntil
	w.mu.Unlock()
	if app == nil || nf == nil || !until.IsZero() && r.Started.After(until) {
		return
	}
	o, err := origin.OfString(r.URL)
	if err != nil || o.IsOpaque() || !origin.InList(o, app.Policy.Allowed) {
		return
	}
	nf.Add(netlog.Exchange{Source: netlog.SourceView, Kind: netlog.KindResource, Method: r.Method, URL: r.URL,
		RequestHeader: r.RequestHeaders, RequestSize: -1, Status: r.Status, ResponseHeader: r.ResponseHeaders, ResponseSize: r.Size,
		Started: r.Started, FirstByte: r.Responded, Done: r.Finished, Err: r.Error})
}
