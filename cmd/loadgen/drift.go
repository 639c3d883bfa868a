package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// driftSources is how many loopback source addresses (127.0.1.1 ...) the
// browser flows come from, so that 100,000 signed-in sessions stay within
// the per-source session quota, as they would from many browsers.
const driftSources = 200

// driftPhase runs n browser flows (authorize, sign-in page, sign-in,
// consent, token) with a new cookie jar each, and reports the process CPU
// time per flow over the first and the last `window` flows: flat when the
// server's cost per flow does not grow with what earlier flows left behind
// (sessions, pending requests, grants).
//
// With a profile prefix, it also writes CPU profiles of two windows of
// 2*window flows each: PREFIX-start.pprof from flow window to 3*window
// (past the warm-up) and PREFIX-end.pprof over the last 2*window, for
// `go tool pprof -top -diff_base PREFIX-start.pprof PREFIX-end.pprof`.
// Profiling costs CPU itself and its end window overlaps the last
// measured window, so figures for the ratio come from a run without it.
func (g *gen) driftPhase(n, window int64, profilePrefix string) error {
	if profilePrefix != "" && n < 5*window {
		return fmt.Errorf("drift: profiles need at least %d flows (5 windows), not %d", 5*window, n)
	}
	trs := make([]*http.Transport, driftSources)
	for i := range trs {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i))}}
		trs[i] = &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}
	}
	var next, done, failed atomic.Int64
	var mu sync.Mutex
	var cpu0, cpuFirst, cpuLastStart time.Duration
	var t0, tFirst, tLastStart time.Time
	var first, profErr error
	var prof *os.File
	startProfile := func(name string) {
		if profErr != nil {
			return
		}
		f, err := os.Create(profilePrefix + "-" + name + ".pprof")
		if err == nil {
			if err = pprof.StartCPUProfile(f); err != nil {
				f.Close()
			}
		}
		prof, profErr = f, err
	}
	stopProfile := func() {
		if prof != nil {
			pprof.StopCPUProfile()
			if err := prof.Close(); err != nil && profErr == nil {
				profErr = err
			}
			prof = nil
		}
	}
	mark := func(k int64) {
		mu.Lock()
		defer mu.Unlock()
		switch k {
		case window:
			cpuFirst, tFirst = cpuTime(), time.Now()
		case n - window:
			cpuLastStart, tLastStart = cpuTime(), time.Now()
		}
		if profilePrefix == "" {
			return
		}
		switch k {
		case window:
			startProfile("start")
		case 3 * window:
			stopProfile()
		case n - 2*window:
			startProfile("end")
		}
	}
	cpu0, t0 = cpuTime(), time.Now()
	var wg sync.WaitGroup
	for range g.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				if err := g.browserFlow(trs[i%driftSources]); err != nil {
					failed.Add(1)
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
				mark(done.Add(1))
			}
		}()
	}
	wg.Wait()
	cpuEnd, tEnd := cpuTime(), time.Now()
	mu.Lock()
	stopProfile()
	mu.Unlock()
	per := func(c time.Duration) float64 { return float64(c.Microseconds()) / float64(window) }
	firstPer, lastPer := per(cpuFirst-cpu0), per(cpuEnd-cpuLastStart)
	fmt.Printf("browser flow drift: %d flows (%d failed) in %.1fs from %d sources; process CPU per flow: first %d %.0f µs (%.0f flows/s), last %d %.0f µs (%.0f flows/s); last/first %.3f%s\n",
		n, failed.Load(), tEnd.Sub(t0).Seconds(), driftSources, window, firstPer, float64(window)/tFirst.Sub(t0).Seconds(),
		window, lastPer, float64(window)/tEnd.Sub(tLastStart).Seconds(), lastPer/firstPer, loadavg())
	if first != nil {
		return fmt.Errorf("first failed flow: %w", first)
	}
	if profErr != nil {
		return fmt.Errorf("drift: CPU profile: %w", profErr)
	}
	if profilePrefix != "" {
		// What the flows left live on the heap: the garbage collector's
		// work per cycle grows with it.
		f, err := os.Create(profilePrefix + "-end.heap")
		if err != nil {
			return fmt.Errorf("drift: heap profile: %w", err)
		}
		runtime.GC()
		err = errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
		if err != nil {
			return fmt.Errorf("drift: heap profile: %w", err)
		}
		fmt.Printf("browser flow drift: CPU profiles of flows %d-%d and %d-%d in %s-start.pprof and %s-end.pprof, live heap at the end in %s-end.heap\n",
			window, 3*window, n-2*window, n, profilePrefix, profilePrefix, profilePrefix)
	}
	return nil
}

var (
	reRequest = regexp.MustCompile(`name="request" value="([^"]*)"`)
	reCSRF    = regexp.MustCompile(`name="csrf" value="([^"]*)"`)
)

// browserFlow is one browser's authorization code flow of the loadgen
// client, from a cookie-less authorize to the token.
func (g *gen) browserFlow(tr http.RoundTripper) error {
	jar, _ := cookiejar.New(nil)
	iu, _ := url.Parse(g.u.Issuer)
	hc := &http.Client{Transport: tr, Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host != iu.Host {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	b := make([]byte, 32)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(v))
	q := url.Values{"client_id": {"loadgen"}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"openid profile"},
		"resource": {g.u.BaseURL}, "state": {"s"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}, "nonce": {"n"}}
	resp, err := hc.Get(g.u.Authorization + "?" + q.Encode())
	for step := 0; err == nil && step < 3; step++ {
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			return rerr
		}
		if loc := resp.Header.Get("Location"); resp.StatusCode == http.StatusSeeOther && strings.HasPrefix(loc, redirect) {
			ru, _ := url.Parse(loc)
			if ru.Query().Get("code") == "" {
				return fmt.Errorf("browser flow: %s", loc)
			}
			return g.exchange(code{ru.Query().Get("code"), v})
		}
		rm, cm := reRequest.FindSubmatch(body), reCSRF.FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || rm == nil || cm == nil {
			return fmt.Errorf("browser flow: %s %s: %.200s", resp.Request.URL.Path, resp.Status, body)
		}
		f := url.Values{"request": {string(rm[1])}, "csrf": {string(cm[1])}}
		if strings.HasSuffix(resp.Request.URL.Path, "/oauth/login") {
			f.Set("subject", "sub_ana")
		} else {
			f.Set("action", "approve")
		}
		resp, err = hc.PostForm(resp.Request.URL.String(), f)
	}
	if err != nil {
		return err
	}
	resp.Body.Close()
	return errors.New("browser flow: no redirect to the client after three pages")
}
