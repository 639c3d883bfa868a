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
	"runtime/metrics"
	"runtime/pprof"
	"slices"
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
// (sessions, pending requests, grants). The first window includes the
// warm-up (caches filling, the first database pages), so it also reports
// the last against the second window, and the curve every tenth of the run.
//
// With a profile prefix, it also writes CPU profiles of two windows of
// 2*window flows each: PREFIX-start.pprof from flow window to 3*window
// (past the warm-up) and PREFIX-end.pprof over the last 2*window, for
// `go tool pprof -top -diff_base PREFIX-start.pprof PREFIX-end.pprof`.
// Profiling costs CPU itself and its end window overlaps the last
// measured window, so figures for the ratio come from a run without it.
func (g *gen) driftPhase(n, window int64, profilePrefix string) error {
	if window <= 0 || n%window != 0 || n < 2*window {
		return fmt.Errorf("drift: %d flows are not a whole number (2 or more) of %d-flow windows", n, window)
	}
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
	// marks[i] is the process CPU time and the wall time when i*window
	// flows were done: the cost curve over the whole run.
	marks := make([]struct {
		cpu, gc time.Duration
		at      time.Time
	}, n/window+1)
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
		if k%window != 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		marks[k/window].cpu, marks[k/window].gc, marks[k/window].at = cpuTime(), gcCPU(), time.Now()
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
	marks[0].cpu, marks[0].gc, marks[0].at = cpuTime(), gcCPU(), time.Now()
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
	mu.Lock()
	stopProfile()
	mu.Unlock()
	// CPU per flow in window w (flows w*window to (w+1)*window), of the
	// process and of its garbage collector.
	per := func(w int64) float64 {
		return float64((marks[w+1].cpu - marks[w].cpu).Microseconds()) / float64(window)
	}
	perGC := func(w int64) float64 {
		return float64((marks[w+1].gc - marks[w].gc).Microseconds()) / float64(window)
	}
	rate := func(w int64) float64 { return float64(window) / marks[w+1].at.Sub(marks[w].at).Seconds() }
	last := n/window - 1
	// A window of a thousand flows lasts about a second: one checkpoint or
	// one collection more or less moves it by 10-20%, so the medians of the
	// first and the last five windows are reported too.
	median := func(from int64, f func(int64) float64) float64 {
		var v []float64
		for w := from; w < from+5 && w <= last; w++ {
			v = append(v, f(w))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	fmt.Printf("browser flow drift: %d flows (%d failed) in %.1fs from %d sources; process CPU per flow: first %d %.0f µs (%.0f flows/s), last %d %.0f µs (%.0f flows/s); last/first %.3f%s\n",
		n, failed.Load(), marks[last+1].at.Sub(marks[0].at).Seconds(), driftSources, window, per(0), rate(0),
		window, per(last), rate(last), per(last)/per(0), loadavg())
	if last >= 9 {
		m0, m1 := median(0, per), median(last-4, per)
		g0, g1 := median(0, perGC), median(last-4, perGC)
		fmt.Printf("browser flow drift: medians of the first and the last five windows: CPU %.0f → %.0f µs per flow (%.3f), of which the garbage collector %.0f → %.0f µs\n",
			m0, m1, m1/m0, g0, g1)
	}
	// The curve: the first windows, then every tenth of the run.
	var curve []string
	for w := int64(0); w <= last; w++ {
		if w < 3 || (w+1)*10%(last+1) == 0 {
			curve = append(curve, fmt.Sprintf("%d: %.0f (gc %.0f)", (w+1)*window, per(w), perGC(w)))
		}
	}
	fmt.Printf("browser flow drift: CPU per flow (µs) in the window ending at flow: %s\n", strings.Join(curve, ", "))
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

// gcCPU is the CPU time the garbage collector has used so far, as the
// runtime estimates it.
func gcCPU() time.Duration {
	m := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(m[0].Value.Float64() * float64(time.Second))
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
