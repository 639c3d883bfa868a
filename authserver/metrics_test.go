package authserver_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// startMetered runs a server with metrics on a free loopback port.
func startMetered(t *testing.T) *env {
	t.Helper()
	return startWith(t, storetest.DB(t), &clock{t: time.Now()}, func(c *authserver.Config) { c.MetricsAddr = "127.0.0.1:0" })
}

// series is one scraped sample: its metric name and labels.
type series struct {
	name   string
	labels map[string]string
}

func (s series) String() string {
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(s.name + "{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + s.labels[k])
	}
	return b.String() + "}"
}

// scrape reads e's metrics as Prometheus would, and returns the value of
// every series of the server's own metrics (miniapp_host_...): a
// counter's value, a histogram's count.
func scrape(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	if e.u.Metrics == "" {
		t.Fatal("the server has no metrics URL")
	}
	resp, err := http.Get(e.u.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", e.u.Metrics, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "miniapp_host_") {
			continue
		}
		for _, m := range f.Metric {
			s := series{name: name, labels: map[string]string{}}
			for _, l := range m.Label {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[s.String()] = m.Counter.GetValue()
			case dto.MetricType_HISTOGRAM:
				out[s.String()] = float64(m.Histogram.GetSampleCount())
			default:
				out[s.String()] = m.Untyped.GetValue()
			}
		}
	}
	return out
}

// TestMetricsCountFlows: a browser flow, a native flow, a denial, the
// token exchanges and a replayed code show in the metrics as what they
// were: sign-ins by flow and outcome, consent decisions, tokens by grant
// type, requests by route pattern and status, the refusal by its OAuth
// error code, and the store's operations and write batches.
func TestMetricsCountFlows(t *testing.T) {
	e := startMetered(t)
	// A browser flow, redeemed.
	v, c := pkce(t)
	q := newBrowser(t, e.u.Issuer).browserCode(e.u.Authorization+"?"+e.authParams(c).Encode(), subAna, map[string]string{"action": "approve", "remember": "on"})
	if st, m := e.exchange(q.Get("code"), v); st != http.StatusOK {
		t.Fatalf("browser flow's token: %d %v", st, m)
	}
	// A native flow, redeemed, and its code replayed.
	v, c = pkce(t)
	code := e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "approve"}).Get("code")
	if st, m := e.exchange(code, v); st != http.StatusOK {
		t.Fatalf("native flow's token: %d %v", st, m)
	}
	if st, m := e.exchange(code, v); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("replayed code: %d %v, want 400 invalid_grant", st, m)
	}
	// A native flow denied.
	_, c = pkce(t)
	if q := e.nativeCode(e.authParams(c), subAna, map[string]string{"action": "deny"}); q.Get("error") != "access_denied" {
		t.Fatalf("denial: %v", q)
	}

	got := scrape(t, e)
	for k, want := range map[string]float64{
		"miniapp_host_signins_total{flow=browser,outcome=started}":                                                 1,
		"miniapp_host_signins_total{flow=browser,outcome=completed}":                                               1,
		"miniapp_host_signins_total{flow=native,outcome=started}":                                                  2,
		"miniapp_host_signins_total{flow=native,outcome=completed}":                                                1,
		"miniapp_host_signins_total{flow=native,outcome=denied}":                                                   1,
		"miniapp_host_consent_decisions_total{decision=approved,remembered=true}":                                  2, // the native approval renews the consent the browser flow remembered
		"miniapp_host_consent_decisions_total{decision=denied,remembered=false}":                                   1,
		"miniapp_host_tokens_issued_total{grant_type=authorization_code}":                                          2,
		"miniapp_host_http_requests_total{code=200,method=POST,role=service,route=/oauth/token}":                   2,
		"miniapp_host_http_requests_total{code=400,method=POST,role=service,route=/oauth/token}":                   1,
		"miniapp_host_http_requests_total{code=201,method=POST,role=service,route=/native/requests}":               2,
		"miniapp_host_http_request_duration_seconds{method=POST,role=service,route=/oauth/token}":                  3,
		"miniapp_host_oauth_refusals_total{error=invalid_grant,route=/oauth/token}":                                1,
		"miniapp_host_store_operations_total{operation=redeem_code_for,outcome=ok}":                                2,
		"miniapp_host_http_requests_total{code=200,method=GET,role=service,route=/oauth/login}":                    1,
		"miniapp_host_http_requests_total{code=303,method=POST,role=service,route=/oauth/consent}":                 1,
		"miniapp_host_http_requests_total{code=200,method=POST,role=service,route=/native/requests/{id}/decision}": 2,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	// The store's batchers: the SQLite writer's, or on PostgreSQL the
	// native flows' admissions and the decisions and redemptions.
	batches := []string{"sqlite_write"}
	if storetest.UsesPostgres() {
		batches = []string{"pg_admit", "pg_durable"}
	}
	for _, b := range batches {
		if got["miniapp_host_store_batch_size{batch="+b+"}"] == 0 || got["miniapp_host_store_batch_wait_seconds{batch="+b+"}"] == 0 {
			t.Errorf("no batch of %s recorded", b)
		}
	}
	if t.Failed() {
		var all []string
		for k, v := range got {
			all = append(all, fmt.Sprintf("%s %g", k, v))
		}
		slices.Sort(all)
		t.Logf("scraped:\n%s", strings.Join(all, "\n"))
	}
}

// TestMetricsLabelsBounded: 500 requests with random client ids, subjects,
// paths, ids and methods, on every role, make no series beyond those of a
// first round of the same requests: no label takes a value from a request,
// and none of the random values appears in the exposition.
func TestMetricsLabelsBounded(t *testing.T) {
	e := startMetered(t)
	random := func() string {
		b := make([]byte, 8)
		rand.Read(b)
		return "r" + hex.EncodeToString(b)
	}
	var used []string
	kinds := []func(string) *http.Request{
		func(x string) *http.Request { // an unknown client at the authorization endpoint
			return mustRequest(t, http.MethodGet, e.u.Authorization+"?"+url.Values{"client_id": {x}, "redirect_uri": {"https://" + x + ".example/cb"}, "response_type": {"code"}}.Encode(), "")
		},
		func(x string) *http.Request { // an unknown client at the token endpoint
			r := mustRequest(t, http.MethodPost, e.u.Token, url.Values{"grant_type": {"authorization_code"}, "code": {x}, "client_id": {x}}.Encode())
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		},
		func(x string) *http.Request { // a host credential that does not exist
			r := mustRequest(t, http.MethodPost, e.u.Native, `{"authorization_url":"`+e.u.Authorization+`?client_id=`+x+`","subject":"`+x+`"}`)
			r.SetBasicAuth(x, x)
			r.Header.Set("Content-Type", "application/json")
			return r
		},
		func(x string) *http.Request { // a decision on a request that does not exist
			r := mustRequest(t, http.MethodPost, e.u.Native+"/"+x+"/decision", `{"action":"approve"}`)
			asHost(r)
			return r
		},
		func(x string) *http.Request { // the grant endpoint with an unknown client
			r := mustRequest(t, http.MethodGet, e.u.Grant, "")
			r.Header.Set("Authorization", "Bearer "+x)
			r.Header.Set("X-Client-Id", x)
			r.Header.Set("X-Client-Secret", x)
			return r
		},
		func(x string) *http.Request { // paths no route has, on the service and a provider
			return mustRequest(t, http.MethodGet, e.u.Issuer+"/"+x+"/oauth/"+x, "")
		},
		func(x string) *http.Request {
			return mustRequest(t, http.MethodGet, e.u.SigningBaseURL+"/"+x, "")
		},
		func(x string) *http.Request { // a client id in a dashboard route's pattern
			return mustRequest(t, http.MethodGet, e.u.Dashboard+"/api/oauth/clients/"+x, "")
		},
		func(x string) *http.Request { // a method of the request's own
			return mustRequest(t, strings.ToUpper(x), e.u.Issuer+"/oauth/token", "")
		},
		func(x string) *http.Request { // consents of a subject that does not exist
			r := mustRequest(t, http.MethodGet, e.u.Issuer+"/native/consents?subject="+x, "")
			asHost(r)
			return r
		},
	}
	round := func(n int) {
		for i := range n {
			x := random()
			used = append(used, x)
			resp, err := http.DefaultClient.Do(kinds[i%len(kinds)](x))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	// Each round's audit events are stored before the scrape: their
	// writes (and on PostgreSQL the notification they send) are the
	// round's series too, made after its last answer.
	round(len(kinds))
	e.srv.Events().Flush()
	first := scrape(t, e)
	round(500)
	e.srv.Events().Flush()
	second := scrape(t, e)
	for k := range second {
		if _, ok := first[k]; !ok {
			t.Errorf("a new series after 500 random requests: %s", k)
		}
	}
	if len(second) != len(first) {
		t.Errorf("%d series after the first round, %d after 500 more", len(first), len(second))
	}
	resp, err := http.Get(e.u.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	for _, x := range used {
		if strings.Contains(strings.ToLower(body), x) {
			t.Fatalf("the exposition carries a value of a request: %s", x)
		}
	}
	for _, s := range []string{subAna, hostID, publicID} {
		if strings.Contains(body, s) {
			t.Errorf("the exposition names %q", s)
		}
	}
}

// TestMetricsAddressRefused: a metrics address off loopback without
// MetricsPublic, and one another process holds, stop Start with a
// *SettingError naming the address and what to do; nothing is left
// listening.
func TestMetricsAddressRefused(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct {
		addr   string
		public bool
		rule   string
	}{
		{"0.0.0.0:9464", false, "not a loopback address"},
		{"192.0.2.1:9464", false, "not a loopback address"},
		{":9464", false, "not a loopback address"},
		{"127.0.0.1", false, "not HOST:PORT"},
		{held.Addr().String(), false, "another process may hold it"},
		{held.Addr().String(), true, "another process may hold it"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			ctx := t.Context()
			srv, err := authserver.Start(ctx, authserver.Config{DB: storetest.DB(t), MetricsAddr: tc.addr, MetricsPublic: tc.public})
			if err == nil {
				srv.Close()
				t.Fatalf("Start with metrics on %s: no error", tc.addr)
			}
			var se *authserver.SettingError
			if !errors.As(err, &se) || se.Field != "MetricsAddr" || se.Key != tc.addr || !strings.Contains(se.Rule, tc.rule) {
				t.Fatalf("Start with metrics on %s: %v, want a MetricsAddr setting error: %s", tc.addr, err, tc.rule)
			}
		})
	}
}
