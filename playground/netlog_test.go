package playground

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/hosttest"
	"github.com/miniapp-host/miniapp-host/netlog"
)

// spy is the playground's HTTP transport in TestFlowLogAPI: it keeps the
// secrets that cross it (the demo's client credential, its tokens), so that
// the test can look for them in the exports.
type spy struct {
	mu       sync.Mutex // guards secrets and withheld
	secrets  []string
	withheld map[string]bool // secrets the server did not issue: no fingerprint either
}

func (s *spy) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, secret, ok := req.BasicAuth(); ok {
		s.keepWithheld(secret)
	}
	if req.Body != nil && req.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
		body, _ := io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		if f, err := url.ParseQuery(string(body)); err == nil {
			s.keep(f.Get("code"))
			s.keepWithheld(f.Get("code_verifier"))
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/token") {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var tr map[string]any
	if json.Unmarshal(body, &tr) == nil {
		for _, k := range []string{"access_token", "id_token", "refresh_token"} {
			if v, _ := tr[k].(string); v != "" {
				s.keep(v)
			}
		}
	}
	return resp, nil
}

func (s *spy) keep(v string) {
	if sec, err := url.QueryUnescape(v); err == nil {
		v = sec
	}
	if v == "" {
		return
	}
	s.mu.Lock()
	s.secrets = append(s.secrets, v)
	s.mu.Unlock()
}

func (s *spy) keepWithheld(v string) {
	if v == "" {
		return
	}
	s.keep(v)
	s.mu.Lock()
	if s.withheld == nil {
		s.withheld = map[string]bool{}
	}
	s.withheld[v] = true
	s.mu.Unlock()
}

// har is HAR 1.2 as its specification has it
// (http://www.softwareishard.com/blog/har-12-spec/), with the log's own
// members (underscore-prefixed, as the specification allows): the export
// is decoded with unknown members refused.
type har struct {
	Log struct {
		Version string `json:"version"`
		Creator struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"creator"`
		Entries []struct {
			StartedDateTime string   `json:"startedDateTime"`
			Time            *float64 `json:"time"`
			Request         *struct {
				Method      string          `json:"method"`
				URL         string          `json:"url"`
				HTTPVersion string          `json:"httpVersion"`
				Cookies     []harCookie     `json:"cookies"`
				Headers     []harNV         `json:"headers"`
				QueryString []harNV         `json:"queryString"`
				PostData    json.RawMessage `json:"postData"`
				HeadersSize *int            `json:"headersSize"`
				BodySize    *int64          `json:"bodySize"`
			} `json:"request"`
			Response *struct {
				Status      *int        `json:"status"`
				StatusText  string      `json:"statusText"`
				HTTPVersion string      `json:"httpVersion"`
				Cookies     []harCookie `json:"cookies"`
				Headers     []harNV     `json:"headers"`
				Content     *struct {
					Size     *int64 `json:"size"`
					MimeType string `json:"mimeType"`
					Text     string `json:"text"`
					Comment  string `json:"comment"`
				} `json:"content"`
				RedirectURL *string `json:"redirectURL"`
				HeadersSize *int    `json:"headersSize"`
				BodySize    *int64  `json:"bodySize"`
				Comment     string  `json:"comment"`
			} `json:"response"`
			Cache   *struct{} `json:"cache"`
			Timings *struct {
				Blocked, DNS, Connect, SSL float64
				Send, Wait, Receive        *float64
			} `json:"timings"`
			Flow      string          `json:"_flow"`
			Launch    string          `json:"_launch"`
			Source    string          `json:"_source"`
			Kind      string          `json:"_kind"`
			Error     string          `json:"_error"`
			Note      string          `json:"_note"`
			Authorize json.RawMessage `json:"_authorize"`
			Curl      string          `json:"_curl"`
		} `json:"entries"`
		Comment string `json:"comment"`
	} `json:"log"`
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harCookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Path     string `json:"path"`
	Domain   string `json:"domain"`
	Expires  string `json:"expires"`
	HTTPOnly bool   `json:"httpOnly"`
	Secure   bool   `json:"secure"`
	SameSite string `json:"_sameSite"`
	MaxAge   *int   `json:"_maxAge"`
}

// TestFlowLogAPI runs a full confidential flow in a window (the host's
// core on the fake engine, mounted by the playground as its Opener),
// launched and approved through the playground, then reads the flow from
// GET /api/flows, its JSON and its HAR: the HAR is strict HAR 1.2, every
// entry has a request and a response, timings >= 0 and a valid start
// time; the flow has the backend's token exchange and grant read besides
// the host's calls; and no secret (the demo's cookies, its client secret,
// its state, code and verifier, its tokens, the host's secret) is in the
// flow list, either export or the playground's log, in any encoding
// (hosttest.Leak), nor a secret the server did not issue as a fingerprint.
func TestFlowLogAPI(t *testing.T) {
	bus := bridge.NewBus(nil)
	var eng *hosttest.Engine
	w, err := host.NewWindow(hosttest.Factory(&eng), host.Options{DataDir: t.TempDir(), Events: bus, Launcher: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := hosttest.NewRecorder()
	w.OnEvent(rec.Add)
	ran := make(chan struct{})
	go func() { w.Run(); close(ran) }()
	t.Cleanup(func() { w.Terminate(); <-ran })
	pw := NewWindow(w, "test")
	sp := &spy{}
	var logs syncBuffer
	p := start(t, Config{Opener: pw, Bus: bus, HTTP: &http.Client{Transport: sp, Timeout: 30 * time.Second},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	grant := bus.Subscribe(256)
	defer grant.Close()

	conf := entry(t, p, DemoConfidentialID)
	var launched LaunchResult
	if st := call(t, p, "POST", "/api/launch", miniappRef{Origin: conf.Origin, ID: DemoConfidentialID}, &launched); st != 200 || !launched.Window.Opened {
		t.Fatalf("launch: %d %+v", st, launched.Window)
	}
	// What WebKit does with auth_url: fetch it, follow its redirect into
	// the host's policy, which catches it.
	rec.Wait(t, "auth_url loaded", func(e host.Event) bool { return e.Kind == host.EventLoadFinished && strings.HasSuffix(e.URL, "/login") })
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(conf.Origin + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc, err := url.Parse(resp.Header.Get("Location")); err == nil {
		sp.keepWithheld(loc.Query().Get("state"))
	}
	for _, ck := range resp.Cookies() {
		sp.keep(ck.Value)
		done := make(chan error, 1)
		eng.Dispatch(func() {
			eng.AddCookies([]host.Cookie{{Name: ck.Name, Value: ck.Value, Domain: "127.0.0.1", Path: "/", MaxAge: -1, HTTPOnly: true}},
				func(err error) { done <- err })
		})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	eng.Navigate(host.ViewMiniapp, host.Navigation{URL: resp.Header.Get("Location"), Method: "GET", Trigger: host.TriggerOther, Redirect: true})
	rec.Wait(t, "the consent screen", func(e host.Event) bool { return e.Kind == host.EventHostShown && e.Detail == "consent" })
	// The consent page's Approve, as the fake's host page posts it.
	eng.Post(host.ViewHost, `{"action":"approve"}`)
	rec.Wait(t, "the completion", func(e host.Event) bool { return e.Kind == host.EventCompleted })
	// The grant read runs after the token response: wait for its event.
	waitKind(t, grant, "grant")
	for _, ck := range eng.Cookies() {
		if ck.Name == demoapps.SessionCookie {
			sp.keep(ck.Value)
		}
	}
	_, hostSecret := p.HostCredential()
	sp.keepWithheld(hostSecret)

	var list struct {
		Flows []netlog.FlowSummary `json:"flows"`
	}
	if st := call(t, p, "GET", "/api/flows", nil, &list); st != 200 || len(list.Flows) != 1 {
		t.Fatalf("GET /api/flows: %d %+v", st, list)
	}
	f := list.Flows[0]
	if f.Outcome != netlog.OutcomeCompleted || f.ClientID != DemoConfidentialID || f.MiniappID != DemoConfidentialID ||
		f.Origin != conf.Origin || f.Ended == nil || f.Entries < 6 || f.Launch == "" {
		t.Errorf("flow %+v", f)
	}

	raw := get(t, p, "/api/flows/"+f.ID+"/har")
	var h har
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		t.Fatalf("the HAR is not HAR 1.2 as the log writes it: %v\n%s", err, raw)
	}
	if h.Log.Version != "1.2" || h.Log.Creator.Name == "" || h.Log.Creator.Version == "" {
		t.Errorf("HAR log version %q creator %+v", h.Log.Version, h.Log.Creator)
	}
	kinds := map[string]int{}
	for i, e := range h.Log.Entries {
		kinds[e.Kind]++
		if _, err := time.Parse(time.RFC3339Nano, e.StartedDateTime); err != nil {
			t.Errorf("entry %d: startedDateTime %q: %v", i, e.StartedDateTime, err)
		}
		if e.Request == nil || e.Response == nil || e.Cache == nil || e.Timings == nil || e.Time == nil ||
			e.Request.HeadersSize == nil || e.Request.BodySize == nil || e.Response.Status == nil || e.Response.Content == nil ||
			e.Response.Content.Size == nil || e.Response.RedirectURL == nil || e.Response.HeadersSize == nil || e.Response.BodySize == nil ||
			e.Timings.Send == nil || e.Timings.Wait == nil || e.Timings.Receive == nil {
			t.Errorf("entry %d (%s) lacks a member HAR 1.2 requires: %+v", i, e.Kind, e)
			continue
		}
		if *e.Timings.Send < 0 || *e.Timings.Wait < 0 || *e.Timings.Receive < 0 || *e.Time < 0 {
			t.Errorf("entry %d (%s): timings %+v, time %v", i, e.Kind, *e.Timings, *e.Time)
		}
		if e.Request.Method == "" || !strings.HasPrefix(e.Request.URL, "http://") || !strings.HasPrefix(e.Curl, "curl ") {
			t.Errorf("entry %d: request %s %s, curl %q", i, e.Request.Method, e.Request.URL, e.Curl)
		}
		if e.Kind != netlog.KindAuthorize && *e.Response.Status == 0 {
			t.Errorf("entry %d (%s %s) has no response: %s", i, e.Kind, e.Request.URL, e.Error)
		}
		if e.Flow != f.ID || e.Launch != f.Launch {
			t.Errorf("entry %d is of flow %s, launch %s", i, e.Flow, e.Launch)
		}
	}
	for k, n := range map[string]int{netlog.KindAuthorize: 1, netlog.KindNativeConsent: 2, netlog.KindCallback: 1, netlog.KindToken: 1, netlog.KindGrant: 1} {
		if kinds[k] != n {
			t.Errorf("%d %s entries in the HAR, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}

	js := get(t, p, "/api/flows/"+f.ID+"/json")
	var x netlog.FlowExport
	if err := json.Unmarshal(js, &x); err != nil || x.ID != f.ID || len(x.Entries) != len(h.Log.Entries) {
		t.Errorf("GET /api/flows/%s/json: %v, %d entries", f.ID, err, len(x.Entries))
	}
	sp.mu.Lock()
	secrets, withheld := sp.secrets, sp.withheld
	sp.mu.Unlock()
	if len(secrets) < 8 || len(withheld) < 4 {
		t.Fatalf("the test caught %d secrets (%d withheld); it needs the cookies, the client secret, the state, code and verifier, "+
			"the tokens and the host's secret", len(secrets), len(withheld))
	}
	flows := get(t, p, "/api/flows")
	for _, s := range secrets {
		if len(s) < 8 {
			continue
		}
		for what, doc := range map[string][]byte{"HAR": raw, "JSON": js, "flow list": flows, "log": []byte(logs.String())} {
			if how := hosttest.Leak(string(doc), s, withheld[s]); how != "" {
				t.Errorf("the %s holds a secret (%s): %q", what, how, s)
			}
		}
	}

	var notFound struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if st := call(t, p, "GET", "/api/flows/f999/har", nil, &notFound); st != 404 || notFound.Error.Code != "not_found" ||
		!strings.Contains(notFound.Error.Message, "f999") {
		t.Errorf("an unknown flow: %d %+v", st, notFound)
	}
}

// get reads an API route's body as the launcher page does.
func get(t *testing.T, p *Playground, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", p.LauncherOrigin()+path, nil)
	req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return b
}

// waitKind waits for an event of kind on sub.
func waitKind(t *testing.T, sub *bridge.Subscription, kind string) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		select {
		case env, ok := <-sub.C():
			if !ok {
				t.Fatalf("the bus dropped the test's subscription before %s", kind)
			}
			var e struct{ Kind string }
			if json.Unmarshal(env, &e) == nil && e.Kind == kind {
				return
			}
		case <-deadline.C:
			t.Fatalf("no %s event", kind)
		}
	}
}

// syncBuffer is a strings.Builder the playground's logger may write to
// from any goroutine.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
