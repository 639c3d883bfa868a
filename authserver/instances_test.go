package authserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// roundRobin sends each request to the next of its targets, and to the one
// after when the connection is refused (an instance that stopped), as
// nginx's upstream round robin with proxy_next_upstream error does.
type roundRobin struct {
	targets []string
	next    atomic.Uint64
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	start := rr.next.Add(1)
	// The transport closes a request's body when it fails, so a retry
	// sends a copy.
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	var err error
	for i := range rr.targets {
		r := req.Clone(req.Context())
		if req.Body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		r.URL.Host = rr.targets[(int(start)+i)%len(rr.targets)]
		var resp *http.Response
		if resp, err = http.DefaultTransport.RoundTrip(r); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			return resp, err
		}
	}
	return nil, err
}

// roundRobinFront is a reverse proxy on loopback (TLS when useTLS) in front
// of rr's targets. A request it cannot pass on is answered 502, as nginx
// does.
func roundRobinFront(t *testing.T, rr *roundRobin, useTLS bool) *httptest.Server {
	h := &httputil.ReverseProxy{Transport: rr, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: "http", Host: "upstream.invalid"})
		r.SetXForwarded()
		r.Out.Host = r.In.Host
	}, ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }}
	var front *httptest.Server
	if useTLS {
		front = httptest.NewTLSServer(h)
	} else {
		front = httptest.NewServer(h)
	}
	t.Cleanup(front.Close)
	return front
}

// TestInstancesBehindOneProxy runs two instances on one PostgreSQL
// database, given the same public addresses, operator key and secrets
// (docs/deploy.md), behind one round-robin TLS proxy: both advertise the
// same documents and keys, a token issued through one is honoured by the
// other, both accept the shared credentials; when one drains and shuts
// down, the other stays ready and the public address keeps answering.
func TestInstancesBehindOneProxy(t *testing.T) {
	db := storetest.Postgres(t)
	rr := &roundRobin{}
	front := roundRobinFront(t, rr, true)
	hc := front.Client()
	instance := func() *env {
		return startWith(t, db, &clock{t: time.Now()}, func(c *authserver.Config) {
			c.Issuer, c.DashboardURL = front.URL, "https://dashboard.example.test"
			c.SigningURL, c.InvoicingURL = "https://signing.example.test", "https://invoicing.example.test"
			c.OperatorKey = "operator-key-for-tests"
		})
	}
	a, b := instance(), instance()
	rr.targets = []string{a.srv.ListenAddrs().Service, b.srv.ListenAddrs().Service}
	if a.u != b.u {
		t.Fatalf("the instances advertise different addresses:\n%+v\n%+v", a.u, b.u)
	}

	// Discovery and the keys, through the proxy: one answer from each.
	for _, path := range []string{"/.well-known/openid-configuration", "/oauth/jwks"} {
		_, first := send(t, hc, mustRequest(t, http.MethodGet, front.URL+path, ""))
		if _, second := send(t, hc, mustRequest(t, http.MethodGet, front.URL+path, "")); first != second {
			t.Errorf("%s differs between the instances:\n%s\n%s", path, first, second)
		}
	}

	// The shared credentials open both instances: the host client's secret
	// (the native-consent API) and the operator key (review).
	v, c := pkce(t)
	var code string
	for i, e := range []*env{a, b} {
		// The native flow on this instance's own listener, so that each
		// instance is shown to accept the shared host secret.
		native := "http://" + e.srv.ListenAddrs().Service + "/native/requests"
		body, _ := json.Marshal(map[string]any{"authorization_url": e.u.Authorization + "?" + e.authParams(c).Encode(), "subject": subAna})
		req := mustRequest(t, http.MethodPost, native, string(body))
		req.SetBasicAuth(hostID, hostSecret)
		req.Header.Set("Content-Type", "application/json")
		st, sub := send(t, http.DefaultClient, req)
		var m map[string]any
		if json.Unmarshal([]byte(sub), &m); st != http.StatusCreated {
			t.Fatalf("instance %d: native submission with the shared host secret: %d %s", i, st, sub)
		}
		req = mustRequest(t, http.MethodPost, native+"/"+m["request_id"].(string)+"/decision", `{"action":"approve"}`)
		req.SetBasicAuth(hostID, hostSecret)
		st, dec := send(t, http.DefaultClient, req)
		if json.Unmarshal([]byte(dec), &m); st != http.StatusOK {
			t.Fatalf("instance %d: native decision: %d %s", i, st, dec)
		}
		if i == 0 {
			code = redirectQuery(t, m["redirect_url"].(string)).Get("code")
		}
		req = mustRequest(t, http.MethodGet, "http://"+e.srv.ListenAddrs().Dashboard+"/api/review", "")
		req.Header.Set("Authorization", "Bearer operator-key-for-tests")
		if st, body := send(t, http.DefaultClient, req); st != http.StatusOK {
			t.Errorf("instance %d: review list with the shared operator key: %d %s", i, st, body)
		}
	}
	// A code issued by the first instance, redeemed through the proxy; the
	// token is read back through the proxy from both.
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {publicRedir},
		"code_verifier": {v}, "client_id": {publicID}}
	req := mustRequest(t, http.MethodPost, a.u.Token, form.Encode())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	st, body := send(t, hc, req)
	var tok map[string]any
	if json.Unmarshal([]byte(body), &tok); st != http.StatusOK || tok["access_token"] == nil {
		t.Fatalf("token through the proxy: %d %s", st, body)
	}
	userinfo := func() (int, string) {
		req := mustRequest(t, http.MethodGet, front.URL+"/oauth/userinfo", "")
		req.Header.Set("Authorization", "Bearer "+tok["access_token"].(string))
		return send(t, hc, req)
	}
	for range 2 {
		if st, body := userinfo(); st != http.StatusOK || !strings.Contains(body, subAna) {
			t.Fatalf("userinfo through the proxy: %d %s", st, body)
		}
	}

	// A rolling stop: the first drains (readiness 503 there, 200 on the
	// other), then shuts down; the public address keeps answering.
	ready := func(e *env) int {
		st, _ := send(t, http.DefaultClient, mustRequest(t, http.MethodGet, "http://"+e.srv.ListenAddrs().Service+"/readyz", ""))
		return st
	}
	a.srv.Drain()
	if ra, rb := ready(a), ready(b); ra != http.StatusServiceUnavailable || rb != http.StatusOK {
		t.Fatalf("readiness while the first drains: %d and %d, want 503 and 200", ra, rb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown of the first: %v", err)
	}
	for range 4 {
		if st, body := userinfo(); st != http.StatusOK {
			t.Fatalf("userinfo through the proxy after the first stopped: %d %s", st, body)
		}
	}
	if st := ready(b); st != http.StatusOK {
		t.Errorf("the second's readiness after the first stopped: %d", st)
	}
}
