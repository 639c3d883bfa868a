package playground

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/assets"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

// apiError is a refusal of the launcher's API, written as
// {"error":{"code":"...","message":"..."}} like the automation channel's.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// Codes of the launcher's API (docs/playground.md).
var (
	errBadHost       = &apiError{http.StatusForbidden, "bad_host", "the Host header is not a loopback name"}
	errBadToken      = &apiError{http.StatusUnauthorized, "bad_token", "send the automation token as Authorization: Bearer <token>"}
	errBadOrigin     = &apiError{http.StatusForbidden, "bad_origin", "only the launcher's own page may call the API"}
	errBadType       = &apiError{http.StatusUnsupportedMediaType, "bad_content_type", "send Content-Type: application/json"}
	errNotFound      = &apiError{http.StatusNotFound, "not_found", "no such route"}
	errNoWindowAPI   = &apiError{http.StatusConflict, string(CodeNoWindow), ErrNoWindow.Error()}
	errNoDevToolsAPI = &apiError{http.StatusConflict, "no_devtools", ErrNoDevTools.Error() +
		"; the playground's desktop window has one (run without --no-window, with a display)"}
)

func invalid(msg string) *apiError {
	return &apiError{http.StatusBadRequest, "invalid_request", msg}
}

// ServeHTTP (routes: see routes) is the gate of the launcher: the one
// loopback gate (origin.Gate: a loopback connection and Host, since a
// DNS-rebound page names its own host; a request that changes something
// from the launcher's own page (Origin) or from a program; a POST or a
// body in JSON, which a cross-site form cannot send), then the automation
// token for the API.
func (p *Playground) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if err := p.gate(r); err != nil {
		writeError(w, err)
		return
	}
	p.mux.ServeHTTP(w, r)
}

func (p *Playground) gate(r *http.Request) *apiError {
	g := origin.Gate{Pages: []origin.Origin{origin.MustParse(p.origin)}, JSON: true}
	if ref := g.Check(r); ref != nil {
		e := map[origin.GateRule]*apiError{origin.RuleRemote: errBadHost, origin.RuleHost: errBadHost,
			origin.RuleOrigin: errBadOrigin, origin.RuleContentType: errBadType}[ref.Rule]
		return &apiError{e.status, e.code, ref.Error()}
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		return nil
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(p.auto.Token())) != 1 {
		return errBadToken
	}
	return nil
}

// routes registers every route of the launcher.
func (p *Playground) routes() *http.ServeMux {
	m := http.NewServeMux()
	// GET /{$}: the launcher page.
	m.HandleFunc("GET /{$}", p.handleAsset("index.html", "text/html; charset=utf-8"))
	// GET /playground.css: its style sheet.
	m.HandleFunc("GET /playground.css", p.handleAsset("playground.css", "text/css; charset=utf-8"))
	// GET /playground.js: its script.
	m.HandleFunc("GET /playground.js", p.handleAsset("playground.js", "text/javascript; charset=utf-8"))
	// GET /events.js: the script of its Server events panel.
	m.HandleFunc("GET /events.js", p.handleAsset("events.js", "text/javascript; charset=utf-8"))
	// GET /api/session: addresses, the automation channel, the window's state, the subject.
	m.HandleFunc("GET /api/session", p.handleSession)
	// GET /api/miniapps: the launcher's list.
	m.HandleFunc("GET /api/miniapps", p.handleMiniapps)
	// GET /api/subjects: the seeded subjects and the current one.
	m.HandleFunc("GET /api/subjects", p.handleSubjects)
	// POST /api/subject {subject}: switch the subject.
	m.HandleFunc("POST /api/subject", p.handleSetSubject)
	// POST /api/launch {origin, id}: resolve, report, open.
	m.HandleFunc("POST /api/launch", p.handleLaunch)
	// POST /api/reset {origin, id}: reset a Miniapp's storage in the window.
	m.HandleFunc("POST /api/reset", p.handleReset)
	// POST /api/devtools {}: the web inspector of the Miniapp's view.
	m.HandleFunc("POST /api/devtools", p.handleDevTools)
	// The device presets (docs/playground.md, "Devices").
	m.HandleFunc("GET /api/devices", p.handleDevices)
	// Show the Miniapp as another device, in place.
	m.HandleFunc("POST /api/device", p.handleSetDevice)
	// The launch profiles (docs/playground.md, "Launch profiles").
	m.HandleFunc("GET /api/profiles", p.handleProfiles)
	// Save a launch profile (a new one, or one of the same name).
	m.HandleFunc("POST /api/profiles", p.handleSaveProfile)
	// Remove a launch profile.
	m.HandleFunc("DELETE /api/profiles/{name}", p.handleDeleteProfile)
	// Launch as a profile says.
	m.HandleFunc("POST /api/profiles/{name}/launch", p.handleLaunchProfile)
	// GET /api/icon?launch=L&index=N: an icon of an accepted launch's manifest, from the Miniapp's origin.
	m.HandleFunc("GET /api/icon", p.handleIcon)
	// GET /api/events: the latest automation events, for a late launcher.
	m.HandleFunc("GET /api/events", p.handleEvents)
	// GET /api/server-events: the server's audit events (the dashboard's, with the operator key).
	m.HandleFunc("GET /api/server-events", p.handleServerEvents)
	// GET /api/server-events/stream: the same, followed (server-sent events).
	m.HandleFunc("GET /api/server-events/stream", p.handleServerEventStream)
	// GET /api/flows: the network log's consent flows.
	m.HandleFunc("GET /api/flows", p.handleFlows)
	// GET /api/flows/{id}/json: one flow with its entries.
	m.HandleFunc("GET /api/flows/{id}/json", p.handleFlowJSON)
	// GET /api/flows/{id}/har: one flow as HAR 1.2.
	m.HandleFunc("GET /api/flows/{id}/har", p.handleFlowHAR)
	// GET /api/reviews: the submissions pending on the dashboard (operator key).
	m.HandleFunc("GET /api/reviews", p.handleReviews)
	// POST /api/reviews/{kind}/{id}/{action} {reason}: approve or reject one.
	m.HandleFunc("POST /api/reviews/{kind}/{id}/{action}", p.handleDecideReview)
	// GET /api/connected: the current subject's grants (the server's Connected Miniapps API).
	m.HandleFunc("GET /api/connected", p.handleConnected)
	// POST /api/connected/revoke {grant_id, entry}: revoke an entry, or the whole grant without entry.
	m.HandleFunc("POST /api/connected/revoke", p.handleRevokeConnected)
	// POST /api/explain: the embedded server's dry run of an authorization request.
	m.HandleFunc("POST /api/explain", p.handleExplain)
	// Anything else: 404 in the API's shape.
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeError(w, errNotFound) })
	return m
}

// handleAsset serves one embedded file of assets/playground under the
// launcher's Content-Security-Policy: its own scripts and styles only, and
// connections to itself and to the automation channel.
func (p *Playground) handleAsset(name, ctype string) http.HandlerFunc {
	body, err := fs.ReadFile(assets.FS, "playground/"+name)
	return func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			writeError(w, &apiError{http.StatusInternalServerError, "server_error", "missing asset " + name})
			return
		}
		ws := strings.Replace(p.auto.URL(), "/automation", "", 1)
		w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' "+ws+
			"; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(body)
	}
}

// session is the answer of GET /api/session.
type session struct {
	Launcher      string   `json:"launcher_origin"`
	AutomationURL string   `json:"automation_url"`
	Services      Services `json:"services"`
	Window        struct {
		Available bool   `json:"available"`
		Message   string `json:"message"`
	} `json:"window"`
	Subject string `json:"subject"`
	// TraceUI is Config.TraceUI: where the inspector links a flow's
	// trace id; "" without one.
	TraceUI string `json:"trace_ui,omitempty"`
}

func (p *Playground) handleSession(w http.ResponseWriter, r *http.Request) {
	s := session{Launcher: p.origin, AutomationURL: p.auto.URL(), Services: p.Services(), Subject: p.Subject(), TraceUI: p.cfg.TraceUI}
	s.Window.Available = p.cfg.Opener != nil
	if s.Window.Available {
		s.Window.Message = "Miniapps open in the desktop window."
	} else {
		s.Window.Message = msgNoWindow
	}
	writeJSON(w, http.StatusOK, s)
}

func (p *Playground) handleMiniapps(w http.ResponseWriter, r *http.Request) {
	list, err := p.Miniapps(r.Context())
	out := struct {
		Miniapps       []Entry `json:"miniapps"`
		PublishedError string  `json:"published_error,omitempty"`
		Published      bool    `json:"published_source"`
	}{Miniapps: list, Published: p.cfg.Published != nil}
	if err != nil {
		out.PublishedError = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

func (p *Playground) handleSubjects(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Subjects []Subject `json:"subjects"`
		Current  string    `json:"current"`
	}{p.Subjects(), p.Subject()})
}

func (p *Playground) handleSetSubject(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Subject string `json:"subject"`
	}
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	if err := p.SetSubject(in.Subject); err != nil {
		writeError(w, invalid(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"current": in.Subject})
}

// miniappRef is the body of launch and reset.
type miniappRef struct {
	Origin string `json:"origin"`
	ID     string `json:"id"`
}

func (p *Playground) handleLaunch(w http.ResponseWriter, r *http.Request) {
	var in miniappRef
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	res, err := p.Launch(r.Context(), in.Origin, in.ID)
	if err != nil {
		writeError(w, invalid(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (p *Playground) handleReset(w http.ResponseWriter, r *http.Request) {
	var in miniappRef
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	err := p.ResetStorage(r.Context(), in.Origin, in.ID)
	switch {
	case errors.Is(err, ErrNoWindow):
		writeError(w, errNoWindowAPI)
	case err != nil:
		writeError(w, &apiError{http.StatusBadGateway, "reset_failed", err.Error()})
	default:
		// The desktop host's WebKit keeps site data by host name, not by
		// origin: say so, since the loopback Miniapps share one host.
		writeJSON(w, http.StatusOK, map[string]string{"message": "The window forgot what it kept for " + in.Origin +
			" (cookies, storage, caches). WebKit keeps them by host name: every Miniapp on the same host was reset too."})
	}
}

func (p *Playground) handleDevTools(w http.ResponseWriter, r *http.Request) {
	// The body is {}, or empty: there is nothing to choose, the window
	// has one Miniapp view.
	var in struct{}
	if err := readJSON(r, &in); err != nil && r.ContentLength != 0 {
		writeError(w, err)
		return
	}
	err := p.ShowDevTools(r.Context(), bridge.ViewCommand{})
	switch {
	case errors.Is(err, ErrNoWindow):
		writeError(w, errNoWindowAPI)
	case errors.Is(err, ErrNoDevTools):
		writeError(w, errNoDevToolsAPI)
	case err != nil:
		writeError(w, &apiError{http.StatusBadGateway, "devtools_failed", err.Error()})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"message": "The web inspector of the Miniapp's view is open. " +
			"Developer extras stay on in that view (right click, Inspect Element) until the window closes; the consent view never has them."})
	}
}

func (p *Playground) handleEvents(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Events []json.RawMessage `json:"events"`
	}{p.history.recent()})
}

func (p *Playground) handleFlows(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Flows []netlog.FlowSummary `json:"flows"`
	}{p.netlog.Flows()})
}

// unknownFlow is the 404 of a flow id the log does not have (any more:
// it keeps the latest flows only).
func unknownFlow(id string) *apiError {
	return &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no flow %q in the network log; GET /api/flows lists the flows it keeps (the latest 100)", id)}
}

func (p *Playground) handleFlowJSON(w http.ResponseWriter, r *http.Request) {
	x, ok := p.netlog.Flow(r.PathValue("id"))
	if !ok {
		writeError(w, unknownFlow(r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (p *Playground) handleFlowHAR(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	h, ok := p.netlog.HAR(id)
	if !ok {
		writeError(w, unknownFlow(id))
		return
	}
	// A file a HAR viewer opens; the name is the flow's id, which the log
	// made ([a-z0-9] only).
	w.Header().Set("Content-Disposition", `attachment; filename="flow-`+id+`.har"`)
	writeJSON(w, http.StatusOK, h)
}

// maxAPIBody is the largest request body the launcher's API reads.
const maxAPIBody = 64 << 10

// readJSON decodes one JSON object of at most maxAPIBody bytes with the
// project's strict rules (package strictjson): a member named twice, a
// member v has no field for, or anything after the object is refused.
func readJSON(r *http.Request, v any) *apiError {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxAPIBody+1))
	if err != nil {
		return invalid("the body could not be read: " + err.Error())
	}
	if len(raw) > maxAPIBody {
		return &apiError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is longer than %d bytes", maxAPIBody)}
	}
	if err := strictjson.Unmarshal(raw, v, strictjson.Limits{}); err != nil {
		return invalid("the body is not the expected JSON object: " + err.Error())
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError is the one place an API error becomes an HTTP answer.
func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]any{"error": map[string]string{"code": e.code, "message": e.message}})
}
