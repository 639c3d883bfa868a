package host

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
)

// The engine's reports (EngineEvents). Each runs on the UI thread and must
// not block.

// engineSink receives the engine's reports for a Window: NewWindow gives
// the engine the sink, as an EngineEvents, and never the Window, so the
// engine's callbacks are no part of the Window's API and an engine cannot
// call the Window's (docs/host.md, "Core and engine"). Its methods run on
// the UI thread.
type engineSink struct {
	w *Window

	// console is the console capture's rate gate and drop counts, with a
	// lock of its own.
	console consoleGate

	mu           sync.Mutex // guards the Miniapp view's page as the engine reported it, below
	topURI       string     // last committed top-level URL of the view, as the engine reports it
	topURL       *url.URL   // topURI made canonical; nil when url.URL cannot carry it
	seq          uint64     // committed main-frame documents, for the bridge
	loaded       bool       // the view's page has finished loading and is not loading another
	unresponsive bool       // the web process stopped answering
}

var _ EngineEvents = (*engineSink)(nil)

// doc is the document in the view's main frame now.
func (s *engineSink) doc() bridge.Document {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.docLocked()
}

// docLocked is doc with s.mu held.
func (s *engineSink) docLocked() bridge.Document {
	// The URL as the engine reports it: the bridge takes its origin with
	// origin.OfString, which a page at a URL that url.URL cannot carry
	// (https://app.example/#/sale/50%) still has.
	return bridge.Document{Seq: s.seq, URL: s.topURI}
}

// pageLoaded reports whether the view's page has finished loading.
func (s *engineSink) pageLoaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// setLoaded records whether the view's page has finished loading.
func (s *engineSink) setLoaded(loaded bool) {
	s.mu.Lock()
	s.loaded = loaded
	s.mu.Unlock()
}

// top is a copy of the URL of the document committed in the view's top
// frame; nil before the first or when url.URL cannot carry it.
func (s *engineSink) top() *url.URL {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.topURL == nil {
		return nil
	}
	u := *s.topURL
	return &u
}

// DecideNavigation implements EngineEvents.
func (s *engineSink) DecideNavigation(v View, n Navigation) bool {
	switch v {
	case ViewMiniapp:
		return s.decideMiniapp(n)
	case ViewLauncher:
		return s.decideLauncher(n)
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

func (s *engineSink) decideMiniapp(n Navigation) bool {
	w := s.w
	app := w.mounted()
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
		w.hv.noticeBlockedUI(app, n.URL, rule, func() bool { return w.mounted() != app || w.flows.running() })
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
		// log's id); consentFlows.start publishes nav.
		w.flows.start(u, nav)
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
func (s *engineSink) decideLauncher(n Navigation) bool {
	w := s.w
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
func (s *engineSink) LoadChanged(v View, ev LoadEvent, uri string) {
	w := s.w
	switch v {
	case ViewHost:
		if ev == LoadFinished {
			w.hv.loadedUI()
		}
	case ViewLauncher:
		if ev == LoadFinished {
			s.launcherLoaded(uri)
		}
	case ViewMiniapp:
		s.miniappLoadChanged(ev, uri)
	}
}

func (s *engineSink) miniappLoadChanged(ev LoadEvent, uri string) {
	w := s.w
	s.setLoaded(ev == LoadFinished)
	switch ev {
	case LoadCommitted:
		u := parseOrNil(uri)
		s.mu.Lock()
		s.topURI, s.topURL = uri, u
		s.seq++
		doc := s.docLocked()
		s.mu.Unlock()
		app := w.mounted()
		if app != nil && app.Bridge != nil {
			app.Bridge.Navigated(doc)
		}
		w.emit(Event{Kind: EventLoadCommitted, URL: uri})
	case LoadFinished:
		w.flows.viewLoaded()
		w.emit(Event{Kind: EventLoadFinished, URL: uri})
		// The host page loads after the Miniapp's first page: its web
		// process would compete with the Miniapp's start on a small
		// machine.
		w.hv.ensurePageUI()
	}
}

// launcherLoaded reports the launcher's page. Its fragment carries the
// automation token: it is dropped.
func (s *engineSink) launcherLoaded(raw string) {
	w := s.w
	if u, err := url.Parse(raw); err == nil {
		u.Fragment, u.RawFragment = "", ""
		raw = u.String()
	} else {
		raw = ""
	}
	w.emit(Event{Kind: EventLauncherLoaded, URL: raw})
}

// LoadFailed implements EngineEvents.
func (s *engineSink) LoadFailed(v View, uri string, code int, message string) {
	w := s.w
	if v != ViewMiniapp {
		return
	}
	w.emit(Event{Kind: EventLoadFailed, URL: uri, Detail: fmt.Sprintf("%d %s", code, message)})
}

// ScriptMessage implements EngineEvents.
func (s *engineSink) ScriptMessage(v View, raw string) {
	switch v {
	case ViewMiniapp:
		s.bridgeMessage(raw)
	case ViewHost:
		s.hostMessage(raw)
	}
}

// bridgeMessage runs for every message posted to the bridge's handler,
// from any frame of the Miniapp's view.
func (s *engineSink) bridgeMessage(raw string) {
	w := s.w
	main := len(raw) >= len(w.key) && subtle.ConstantTimeCompare([]byte(raw[:len(w.key)]), []byte(w.key)) == 1
	msg := raw
	if main {
		msg = raw[len(w.key):]
	}
	app, doc := w.mounted(), s.doc()
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
func (s *engineSink) hostMessage(raw string) {
	w := s.w
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
		if !w.hv.latestUI(m.Seq) {
			// A screen that a later render, or a hiding, replaced
			// before it was painted: not the one on view.
			return
		}
		// The screen is on record as shown (ConsentOnScreen) and
		// consent.shown published before the event says so: whoever
		// answers the event (consent.approve) finds the screen there.
		if m.Screen == "consent" {
			if shown := w.flows.painted(); shown != nil {
				w.publish(*shown)
			}
		}
		w.emit(Event{Kind: EventHostShown, Detail: m.Screen})
	case "approve":
		go w.flows.decide(m.approval())
	case "deny":
		go w.flows.decide(consent.Decision{Action: consent.Deny})
	case "reload":
		app := w.mounted()
		w.hv.showUI(false)
		if app != nil {
			w.eng.Load(ViewMiniapp, app.reloadURL().String())
		}
	case "close":
		w.flows.abandon()
		w.hv.showUI(false)
	case "dismiss":
		// The notice of blocked navigations only: a consent or an error
		// that replaced it since stays.
		if w.hv.showsNoticeUI() {
			w.hv.showUI(false)
		}
	}
}

// WebProcessResponsive implements EngineEvents: a web process that stays
// unresponsive for HangTimeout is stopped.
func (s *engineSink) WebProcessResponsive(ok bool) {
	w := s.w
	s.mu.Lock()
	s.unresponsive = !ok
	s.mu.Unlock()
	if ok {
		return
	}
	w.emit(Event{Kind: EventUnresponsive})
	time.AfterFunc(w.opts.HangTimeout, func() {
		w.Dispatch(func() {
			s.mu.Lock()
			hung := s.unresponsive
			s.mu.Unlock()
			if hung {
				w.eng.TerminateWebProcess()
			}
		})
	})
}

// WebProcessTerminated implements EngineEvents: the host's view says so
// and offers a reload.
func (s *engineSink) WebProcessTerminated(why Termination) {
	w := s.w
	s.mu.Lock()
	s.unresponsive, s.loaded = false, false
	s.mu.Unlock()
	w.emit(Event{Kind: EventWebProcessTerminated, Detail: why.String()})
	w.hv.show(map[string]any{"screen": "crashed", "text": "The Miniapp's page " + why.String() + "."})
}

// UserInput implements EngineEvents.
func (s *engineSink) UserInput(at time.Time) { s.w.gestures.Input(at) }

// ResourceLoaded implements EngineEvents: a request of the Miniapp's view
// to one of its allowed origins joins the flow it belongs to in the
// network log (docs/host.md, "Network log"). Requests elsewhere, and
// those outside a flow, are not kept.
func (s *engineSink) ResourceLoaded(r Resource) {
	w := s.w
	app, nf, until := w.viewNet()
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
