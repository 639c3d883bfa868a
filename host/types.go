package host

import (
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/netshape"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// Options configure the window. The zero value of each field has the
// default its comment names.
type Options struct {
	Title         string // window title; "Miniapp Host"
	Width, Height int    // window size; 1024x768
	// DataDir holds the window's own files (the content-filter store).
	// Required: see UseDataDir.
	DataDir string
	// DataRoot holds each Miniapp's data folder (MiniappDir: cookies,
	// local storage, IndexedDB, caches), kept across runs;
	// DataDir/miniapps when empty. Unused when Ephemeral.
	DataRoot string
	// Ephemeral keeps each Miniapp's data in memory, for the life of the
	// process: nothing of it is written.
	Ephemeral bool
	// FirstOrigin and FirstID name the Miniapp the window opens first,
	// when it is known: the Miniapp's view starts with its data, so the
	// first mount keeps the view it has (a WebDriver session holds it).
	FirstOrigin, FirstID string
	// Subject is who signs in on the consent screen (the service's
	// subject identifier).
	Subject string
	// HTTPClient makes the confidential callback request; http.DefaultClient.
	HTTPClient *http.Client
	// Traces records each sign-in as a trace (docs/deploy.md, "Traces"):
	// the caught navigation its root span, the native-consent calls, which
	// send its W3C traceparent to the service, and the completion; nil
	// or off records none.
	Traces *telemetry.Provider
	// OpenExternal opens a URL in the system browser; xdg-open.
	OpenExternal func(u string)
	// HangTimeout is how long an unresponsive page may hang before its
	// web process is stopped; 10s.
	HangTimeout time.Duration
	// FlowTimeout bounds each step of a consent flow's network calls; 30s.
	FlowTimeout time.Duration
	// DevTools enables the engine's web inspector in the Miniapp's view
	// from the start (right click, Inspect Element); never in the host's
	// own views. Off: Window.ShowInspector still turns it on when asked.
	DevTools bool
	// Launcher gives the window the playground's launcher page beside the
	// Miniapp's (ShowLauncher, ShowPage).
	Launcher bool
	// Layout places the launcher beside the Miniapp's device (the zero
	// value) or in a tab of its own.
	Layout Layout
	// Device is how the Miniapp is shown at first (SetDevice changes
	// it); the zero value is the desktop, filling the window.
	Device DeviceSettings
	// ConsentArm is how long the consent screen is on screen before its
	// Approve takes input (assets/host/consent.js): input aimed at the
	// Miniapp, or begun before the screen was visible, never approves.
	// 1s, as Firefox's security.dialog_enable_delay for its install and
	// download prompts; never less than 500ms.
	ConsentArm time.Duration
	// StallAfter is how long the UI loop may take to run a dispatched
	// function before the window reports it stalled
	// (EventUIStalled); 5s.
	StallAfter time.Duration
	// Now is the clock of the console capture's rate limit; time.Now.
	Now func() time.Time
	// WebDriver lets a W3C WebDriver session (WebKitWebDriver) drive the
	// Miniapp's view (docs/webdriver.md). The session sees that view
	// only, so a rejection is also shown there, as a document the host
	// loads; the consent screen stays in the host's view, answered
	// through the automation channel.
	WebDriver bool
	// DownloadDir is where the window saves what its pages download (the
	// launcher's exports, the Miniapp's files) and says so
	// (DownloadEvent); $XDG_DOWNLOAD_DIR, else ~/Downloads when it
	// exists, else the home folder.
	DownloadDir string
	// Events receives the automation channel's events (navigation
	// decisions, consent, codes and tokens by fingerprint, cookie sync);
	// a *bridge.Bus. Nil: none.
	Events bridge.Publisher
	// NetworkLoopbackOnly keeps the Miniapp view's network proxy
	// (Window.SetNetwork) from forwarding anywhere but to loopback
	// addresses, read without resolving a name: the tests' windows.
	NetworkLoopbackOnly bool
	// NetworkProxy puts the Miniapp views behind the network proxy at the
	// first launch, before its page loads, with or without conditions, so
	// that conditions set later (the automation channel's network.set)
	// never change the views' proxy settings while pages run: WebKit can
	// fail a request made just after they change. Without it the proxy
	// is put in place by the first launch or SetNetwork that has
	// conditions.
	NetworkProxy bool
}

func (o *Options) setDefaults() error {
	if o.DataDir == "" {
		return errors.New("host: Options.DataDir is required")
	}
	if o.DataRoot == "" {
		o.DataRoot = filepath.Join(o.DataDir, "miniapps")
	}
	if o.Title == "" {
		o.Title = "Miniapp Host"
	}
	if o.Width == 0 || o.Height == 0 {
		o.Width, o.Height = 1024, 768
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.DownloadDir == "" {
		o.DownloadDir = defaultDownloadDir()
	}
	if o.OpenExternal == nil {
		o.OpenExternal = func(u string) { _ = exec.Command("xdg-open", u).Run() }
	}
	if o.HangTimeout == 0 {
		o.HangTimeout = 10 * time.Second
	}
	if o.FlowTimeout == 0 {
		o.FlowTimeout = 30 * time.Second
	}
	if o.ConsentArm == 0 {
		o.ConsentArm = time.Second
	}
	o.ConsentArm = max(o.ConsentArm, 500*time.Millisecond)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StallAfter == 0 {
		o.StallAfter = 5 * time.Second
	}
	return nil
}

// Miniapp is what the window mounts: a resolved Miniapp and the service it
// signs in with.
type Miniapp struct {
	Name string
	// Origin and ID are the Miniapp's origin and manifest id: they name
	// its data (Options.DataRoot, MiniappDir). An empty Origin is the
	// origin of StartURL, else of LoadURL.
	Origin, ID string
	// LoadURL is loaded first: oauth.auth_url for a confidential client,
	// start_url for a public one.
	LoadURL *url.URL
	// StartURL is the Miniapp's start_url, where the view goes when a
	// confidential callback does not redirect and after a crash.
	StartURL *url.URL
	// Confidential selects completion through the host's own callback
	// request (docs/architecture.md, way 1).
	Confidential bool
	// ClientID is the manifest's oauth.client_id. When set, a caught
	// authorization request for another client is refused before the
	// service sees it: a Miniapp signs in as itself only.
	ClientID string
	Policy   Policy
	Consent  ConsentService
	// Bridge receives the top frame's bridge messages; nil refuses them.
	Bridge Bridge
	// Subject, when set, signs in on the consent screen instead of
	// Options.Subject (the playground's subject switcher).
	Subject string
	// NetLog, when set, records this launch's consent flows: the caught
	// request decoded, the native-consent calls, the callback, the
	// bridge's token request and the view's requests to its allowed
	// origins (docs/host.md, "Network log"). Nil records nothing.
	NetLog *netlog.Launch
	// Network is the launch's network conditions for the Miniapp's view:
	// throttling and mock rules (Window.SetNetwork); the zero value
	// changes nothing.
	Network netshape.Conditions
}

func (m *Miniapp) validate() error {
	if m.LoadURL == nil {
		return errors.New("host: Miniapp.LoadURL is required")
	}
	if m.Consent == nil {
		return errors.New("host: Miniapp.Consent is required")
	}
	return m.Policy.Validate()
}

func (m *Miniapp) reloadURL() *url.URL {
	if m.StartURL != nil {
		return m.StartURL
	}
	return m.LoadURL
}

// EventKind names what happened in the window.
type EventKind string

// Events. The automation channel and the tests watch them.
const (
	EventNavigation           EventKind = "navigation"             // a navigation was decided (Action)
	EventLoadCommitted        EventKind = "load-committed"         // the top frame committed URL
	EventLoadFinished         EventKind = "load-finished"          // the top frame finished loading URL
	EventLoadFailed           EventKind = "load-failed"            // a load failed (Detail: code and message)
	EventConsentRequested     EventKind = "consent-requested"      // a caught authorization request (URL)
	EventConsentIgnored       EventKind = "consent-ignored"        // caught while a consent was already running
	EventHostShown            EventKind = "host-shown"             // the host's view painted a screen (Detail: its name)
	EventConsentDecided       EventKind = "consent-decided"        // Detail: approve or deny
	EventConsentRefused       EventKind = "consent-refused"        // an automation consent.approve or consent.deny refused; Detail: action, code and message
	EventConsentRemembered    EventKind = "consent-remembered"     // consented to all of it before: approved without asking (URL)
	EventCallback             EventKind = "callback"               // the host made the confidential callback request
	EventDownload             EventKind = "download"               // a page's download ended: saved at URL (a path), or failed (Detail)
	EventCompleted            EventKind = "completed"              // the view is sent to URL after an authorization
	EventBridgeMessage        EventKind = "bridge-message"         // a top-frame bridge message was passed on
	EventBridgeRefused        EventKind = "bridge-refused"         // a bridge message was refused (Detail: why)
	EventUnresponsive         EventKind = "unresponsive"           // the web process stopped answering
	EventWebProcessTerminated EventKind = "web-process-terminated" // the web process ended (Detail: why)
	EventError                EventKind = "error"                  // a flow failed (Detail)
	EventLauncherLoaded       EventKind = "launcher-loaded"        // the playground's launcher finished loading (URL, without its fragment)
	EventUIStalled            EventKind = "ui-stalled"             // the UI loop has not run a dispatched function for Options.StallAfter (Detail)
	EventUIRecovered          EventKind = "ui-recovered"           // the UI loop runs again after a stall (Detail: how long it stalled)
	EventConsole              EventKind = "console"                // the Miniapp wrote to its console, threw or rejected (Console; URL: the frame, Detail: the message)
	EventDevTools             EventKind = "devtools"               // the web inspector of the Miniapp's view was shown
)

// Event is one thing that happened in the window.
type Event struct {
	Kind       EventKind
	URL        string
	Action     Action
	Rule       string // the policy rule that decided a navigation
	Navigation *Navigation
	Detail     string
	// Console is the message of an EventConsole.
	Console *ConsoleMessage
	At      time.Time
}
