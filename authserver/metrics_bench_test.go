package authserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// BenchmarkMetricsCost runs a browser flow and a native flow, each to its
// token, on two servers side by side in one run, one without metrics and
// one with them (Config.MetricsAddr), both recording audit events as
// serve always does (BenchmarkEventsCost measures those), in turn within
// every iteration (in a random order), so that a machine's load falls on
// both alike. It
// reports the process's CPU time (user and system, getrusage) and the
// wall time per flow of each, and how much more the metered flows cost
// (docs/deploy.md, "Metrics"; BENCHMARKS.md, "Metrics off and on").
func BenchmarkMetricsCost(b *testing.B) {
	sideBySide(b, newBenchServer(b, ""), newBenchServer(b, "127.0.0.1:0"), "on", nil)
}

// sideBySide is the loop of the cost benchmarks: in every iteration a
// browser flow and a native flow on off and on each, in a new random
// order (what a flow leaves behind, a collection due or a write to flush,
// falls on any of the four alike). settle, when set, runs after the loop
// for work the on server deferred (spans to export, events to store): its
// CPU is counted half to each of on's flows. It reports the CPU time
// (getrusage) and wall time per flow of each, and how much more on's cost,
// as cpu-%/FLOW-LABEL-vs-off.
func sideBySide(b *testing.B, off, on *benchServer, label string, settle func()) {
	servers := map[bool]*benchServer{false: off, true: on}
	type key struct{ native, on bool }
	cpu, wall := map[key]time.Duration{}, map[key]time.Duration{}
	order := []key{{false, false}, {false, true}, {true, false}, {true, true}}
	n := 0
	for b.Loop() {
		for _, j := range mrand.Perm(len(order)) {
			k := order[j]
			c0, w0 := cpuTime(b), time.Now()
			if err := servers[k.on].flow(k.native); err != nil {
				b.Fatal(err)
			}
			wall[k] += time.Since(w0)
			cpu[k] += cpuTime(b) - c0
		}
		n++
	}
	if settle != nil {
		c0 := cpuTime(b)
		settle()
		d := cpuTime(b) - c0
		cpu[key{false, true}] += d / 2
		cpu[key{true, true}] += d / 2
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	for _, f := range []struct {
		name   string
		native bool
	}{{"browser", false}, {"native", true}} {
		k0, k1 := key{f.native, false}, key{f.native, true}
		b.ReportMetric(per(cpu[k0]), "cpu-µs/"+f.name+"-off")
		b.ReportMetric(per(cpu[k1]), "cpu-µs/"+f.name+"-"+label)
		b.ReportMetric(per(wall[k0]), "wall-µs/"+f.name+"-off")
		b.ReportMetric(per(wall[k1]), "wall-µs/"+f.name+"-"+label)
		b.ReportMetric(100*(float64(cpu[k1])/float64(cpu[k0])-1), "cpu-%/"+f.name+"-"+label+"-vs-off")
	}
}

// cpuTime is the process's CPU time so far.
func cpuTime(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchServer is a reference server on SQLite with the public test client,
// and the HTTP client of its flows.
type benchServer struct {
	srv *authserver.Server
	u   authserver.URLs
	hc  *http.Client
	// ctx is the context of the native-consent calls: its span, when it
	// has one, is sent as their traceparent, as the host sends its own.
	ctx context.Context
}

func newBenchServer(b testing.TB, metricsAddr string, set ...func(*authserver.Config)) *benchServer {
	return newBenchServerWith(b, func(c *authserver.Config) {
		c.MetricsAddr = metricsAddr
		for _, f := range set {
			f(c)
		}
	})
}

// newBenchServerWith is newBenchServer with the configuration set changes.
func newBenchServerWith(b testing.TB, set func(*authserver.Config)) *benchServer {
	b.Helper()
	cfg := authserver.Config{DB: filepath.Join(b.TempDir(), "bench.db"), Secrets: map[string]string{hostID: hostSecret}}
	set(&cfg)
	// Every flow is a new browser from 127.0.0.1: lift the per-source caps.
	cfg.OAuth.MaxSessionsPerSource, cfg.OAuth.MaxPendingPerSource = 1<<30, 1<<30
	srv, err := authserver.Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	if _, err := srv.RegisterClient(context.Background(), authserver.ClientSpec{ID: publicID, RedirectURIs: []string{publicRedir},
		AllowedOrigins: []string{"https://app.example"}}); err != nil {
		b.Fatal(err)
	}
	return &benchServer{srv: srv, u: srv.URLs(), hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}, ctx: context.Background()}
}

// flow runs one sign-in of sub_ana for the public client, in a browser or
// through the native-consent API, and redeems its code.
func (s *benchServer) flow(native bool) error {
	vb := make([]byte, 32)
	rand.Read(vb)
	verifier := base64.RawURLEncoding.EncodeToString(vb)
	q := url.Values{"client_id": {publicID}, "redirect_uri": {publicRedir}, "response_type": {"code"},
		"scope": {"openid profile offline_access"}, "resource": {s.u.BaseURL}, "state": {"st"}, "nonce": {"n"},
		"code_challenge": {s256(verifier)}, "code_challenge_method": {"S256"}, "prompt": {"consent"}} // the consent page every time
	authURL := s.u.Authorization + "?" + q.Encode()
	var code string
	var err error
	if native {
		code, err = s.nativeCode(authURL)
	} else {
		code, err = s.browserCode(authURL)
	}
	if err != nil {
		return err
	}
	resp, err := s.hc.PostForm(s.u.Token, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {publicRedir},
		"code_verifier": {verifier}, "client_id": {publicID}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("token: %d", resp.StatusCode)
	}
	return nil
}

func (s *benchServer) nativeCode(authURL string) (string, error) {
	post := func(u string, body any) (map[string]any, error) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(s.ctx, http.MethodPost, u, bytes.NewReader(raw))
		asHost(req)
		telemetry.Inject(s.ctx, req.Header)
		resp, err := s.hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode >= 300 {
			return nil, fmt.Errorf("%s: %d %v %v", u, resp.StatusCode, m, err)
		}
		return m, nil
	}
	m, err := post(s.u.Native, map[string]any{"authorization_url": authURL, "subject": subAna})
	if err != nil {
		return "", err
	}
	id, _ := m["request_id"].(string)
	if m, err = post(s.u.Native+"/"+id+"/decision", map[string]string{"action": "approve"}); err != nil {
		return "", err
	}
	to, _ := m["redirect_url"].(string)
	u, err := url.Parse(to)
	if err != nil || u.Query().Get("code") == "" {
		return "", fmt.Errorf("decision: redirect %q", to)
	}
	return u.Query().Get("code"), nil
}

// browserCode signs in and approves in a new browser (a cookie jar of its
// own, sharing the connections), as browserCode of the tests does.
func (s *benchServer) browserCode(authURL string) (string, error) {
	jar, _ := cookiejar.New(nil)
	iu, _ := url.Parse(s.u.Issuer)
	hc := &http.Client{Jar: jar, Transport: s.hc.Transport, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host != iu.Host {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := hc.Get(authURL)
	for _, set := range []url.Values{{"subject": {subAna}}, {"action": {"approve"}}} {
		if err != nil {
			return "", err
		}
		action, values, ferr := benchForm(resp)
		if ferr != nil {
			return "", ferr
		}
		for k, v := range set {
			values[k] = v
		}
		resp, err = hc.PostForm(action, values)
	}
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusSeeOther || loc.Query().Get("code") == "" {
		return "", fmt.Errorf("consent: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code"), nil
}

// benchForm reads the first form of a page as parseForm does: its action
// and the values a browser sends by default.
func benchForm(resp *http.Response) (string, url.Values, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("%s: %d", resp.Request.URL, resp.StatusCode)
	}
	doc, err := html.Parse(resp.Body)
	if err != nil {
		return "", nil, err
	}
	values, action := url.Values{}, ""
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			attr := map[string]string{}
			checked, disabled := false, false
			for _, a := range n.Attr {
				attr[a.Key] = a.Val
				checked = checked || a.Key == "checked"
				disabled = disabled || a.Key == "disabled"
			}
			switch {
			case n.Data == "form" && action == "":
				action = attr["action"]
			case n.Data == "input" && (attr["type"] == "hidden" || attr["type"] == "text" || attr["type"] == "radio" && checked ||
				attr["type"] == "checkbox" && checked && !disabled):
				values.Add(attr["name"], attr["value"])
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if action == "" {
		return "", nil, errors.New("no form on " + resp.Request.URL.String())
	}
	a, err := resp.Request.URL.Parse(action)
	if err != nil {
		return "", nil, err
	}
	return a.String(), values, nil
}
