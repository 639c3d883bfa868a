package authserver_test

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var floodFull = flag.Bool("flood.full", false, "TestFlood: 100,000 junk authorizations and 2,000 with 1 MB parameters (default 2,000 and 40), and report peak RSS and legitimate flows/s")

// vmHWM is the process's peak resident set size from /proc/self/status.
func vmHWM() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// TestFlood: while one source (127.0.0.2) sends junk cookie-less
// authorizations and authorizations with 1 MB parameters, a second client
// from another source completes browser flows and the host completes
// native flows, every one of them. Loopback only; bounded in count, and in
// time by the server's own limits.
func TestFlood(t *testing.T) {
	junkN, bigN := 2_000, 40
	if *floodFull {
		junkN, bigN = 100_000, 2_000
	}
	if testing.Short() {
		junkN, bigN = 1_500, 10 // still over the per-source quota of 1,000
	}
	e := start(t)
	// The flooding source: no cookie jar, redirects not followed.
	fd := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	flood := &http.Client{Transport: &http.Transport{DialContext: fd.DialContext, MaxIdleConnsPerHost: 16},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, c := pkce(t)
	junkURL := e.u.Authorization + "?" + e.authParams(c).Encode()
	bigForm := e.authParams(c)
	bigForm.Set("state", strings.Repeat("s", 1<<20))
	bigBody := bigForm.Encode()

	var admitted, refused, tooLarge, other atomic.Int64
	var next atomic.Int64
	var floodWG sync.WaitGroup
	floodDone := make(chan struct{})
	begin := time.Now()
	for range 8 {
		floodWG.Add(1)
		go func() {
			defer floodWG.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(junkN+bigN) {
					return
				}
				var resp *http.Response
				var err error
				if i%int64((junkN+bigN)/bigN) == 0 {
					resp, err = flood.Post(e.u.Authorization, "application/x-www-form-urlencoded", strings.NewReader(bigBody))
				} else {
					resp, err = flood.Get(junkURL)
				}
				if err != nil {
					other.Add(1)
					continue
				}
				resp.Body.Close()
				loc := resp.Header.Get("Location")
				switch {
				case resp.StatusCode == http.StatusRequestEntityTooLarge:
					tooLarge.Add(1)
				case strings.HasPrefix(loc, "/oauth/login"):
					admitted.Add(1)
				case strings.Contains(loc, "error=temporarily_unavailable"):
					refused.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	go func() { floodWG.Wait(); close(floodDone) }()

	// Legitimate flows until the flood ends, at least three of each kind.
	var browserFlows, nativeFlows int
	running := func() bool {
		select {
		case <-floodDone:
			return false
		default:
			return true
		}
	}
	// The second client's browsers come from 64 addresses of 127.0.1.0/24:
	// each flow signs a new browser in, and one address keeps at most
	// 1,000 signed-in sessions.
	var second []*http.Transport
	for i := range 64 {
		second = append(second, transportFrom(t, fmt.Sprintf("127.0.1.%d", i+1)))
	}
	for browserFlows < 3 || nativeFlows < 3 || running() {
		v, c := pkce(t)
		b := newBrowserVia(t, e.u.Issuer, second[browserFlows%len(second)])
		q := e.confAuthParams(c)
		q.Set("prompt", "consent") // the page every time, though consent is remembered
		rq := b.browserCode(e.u.Authorization+"?"+q.Encode(), subAna, map[string]string{"action": "approve"})
		if st, m := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {confRedir},
			"code_verifier": {v}}, confID, e.confSecret); st != http.StatusOK {
			t.Fatalf("second client's token during the flood: %d %v", st, m)
		}
		browserFlows++
		v2, c2 := pkce(t)
		e.publicTokens(e.authParams(c2), v2)
		nativeFlows++
	}
	elapsed := time.Since(begin)
	if admitted.Load() == 0 || refused.Load() == 0 || tooLarge.Load() != int64(bigN) || other.Load() != 0 {
		t.Fatalf("flood answers: %d admitted, %d refused (quota), %d 413, %d other; want the quota admitted, the rest refused, every 1 MB request 413",
			admitted.Load(), refused.Load(), tooLarge.Load(), other.Load())
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	t.Logf("flood of %d junk + %d 1 MB authorizations from one source in %.1fs: %d admitted, %d refused, %d 413; meanwhile %d browser flows (second client, second source) and %d native flows completed, %.1f legitimate flows/s; process peak RSS (VmHWM) %s, Go runtime memory now %.0f MiB",
		junkN, bigN, elapsed.Seconds(), admitted.Load(), refused.Load(), tooLarge.Load(), browserFlows, nativeFlows,
		float64(browserFlows+nativeFlows)/elapsed.Seconds(), vmHWM(), float64(s[0].Value.Uint64())/(1<<20))
}
