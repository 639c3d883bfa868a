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
	d := &drift{n: n, window: window, profilePrefix: profilePrefix, marks: make([]driftMark, n/window+1)}
	trs := driftTransports()
	d.marks[0] = newDriftMark()
	failed, first := g.driftFlows(d, trs)
	d.mu.Lock()
	d.stopProfile()
	d.mu.Unlock()
	d.report(failed)
	if first != nil {
		return fmt.Errorf("first failed flow: %w", first)
	}
	if d.profErr != nil {
		return fmt.Errorf("drift: CPU profile: %w", d.profErr)
	}
	if profilePrefix == "" {
		return nil
	}
	return d.writeHeap()
}

// drift is the measurement of a drift phase.
type drift struct {
	n, window     int64
	profilePrefix string

	mu sync.Mutex // guards below
	// marks[i] is the process CPU time and the wall time when i*window
	// flows were done: the cost curve over the whole run.
	marks   []driftMark
	prof    *os.File
	profErr error
}

// driftMark is the process's CPU time, its garbage collector's and the
// wall time at a point of the run.
type driftMark struct {
	cpu, gc time.Duration
	at      time.Time
}

func newDriftMark() driftMark {
	return driftMark{cpu: cpuTime(), gc: gcCPU(), at: time.Now()}
}

// driftTransports are the transports of the browser flows, one per
// loopback source address.
func driftTransports() []*http.Transport {
	trs := make([]*http.Transport, driftSources)
	for i := range trs {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i))}}
		trs[i] = &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}
	}
	return trs
}

// driftFlows runs the n browser flows of d from g.conc workers, each
// flow on the transport of its source address, marking every window; it
// returns how many failed and the first failure.
func (g *gen) driftFlows(d *drift, trs []*http.Transport) (int64, error) {
	var next, done, failed atomic.Int64
	var first error
	var wg sync.WaitGroup
	for range g.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= d.n {
					return
				}
				if err := g.browserFlow(trs[i%driftSources]); err != nil {
					failed.Add(1)
					d.mu.Lock()
					if first == nil {
						first = err
					}
					d.mu.Unlock()
				}
				d.mark(done.Add(1))
			}
		}()
	}
	wg.Wait()
	return failed.Load(), first
}

// startProfile starts the CPU profile PREFIX-name.pprof; d.mu held.
func (d *drift) startProfile(name string) {
	if d.profErr != nil {
		return
	}
	f, err := os.Create(d.profilePrefix + "-" + name + ".pprof")
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	d.prof, d.profErr = f, err
}

// stopProfile stops the CPU profile being written, if any; d.mu held.
func (d *drift) stopProfile() {
	if d.prof != nil {
		pprof.StopCPUProfile()
		if err := d.prof.Close(); err != nil && d.profErr == nil {
			d.profErr = err
		}
		d.prof = nil
	}
}

// mark records the costs when k flows are done, at the end of every
// window, and starts and stops the profiles at their windows.
func (d *drift) mark(k int64) {
	if k%d.window != 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.marks[k/d.window] = newDriftMark()
	if d.profilePrefix == "" {
		return
	}
	switch k {
	case d.window:
		d.startProfile("start")
	case 3 * d.window:
		d.stopProfile()
	case d.n - 2*d.window:
		d.startProfile("end")
	}
}

// per is the process's CPU per flow in window w (flows w*window to
// (w+1)*window), in µs.
func (d *drift) per(w int64) float64 {
	return float64((d.marks[w+1].cpu - d.marks[w].cpu).Microseconds()) / float64(d.window)
}

// perGC is the garbage collector's CPU per flow in window w, in µs.
func (d *drift) perGC(w int64) float64 {
	return float64((d.marks[w+1].gc - d.marks[w].gc).Microseconds()) / float64(d.window)
}

// rate is the flows per second of window w.
func (d *drift) rate(w int64) float64 {
	return float64(d.window) / d.marks[w+1].at.Sub(d.marks[w].at).Seconds()
}

// last is the last window.
func (d *drift) last() int64 { return d.n/d.window - 1 }

// median is the median of f over the five windows from from (fewer at
// the end of the run).
func (d *drift) median(from int64, f func(int64) float64) float64 {
	var v []float64
	for w := from; w < from+5 && w <= d.last(); w++ {
		v = append(v, f(w))
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// report prints the drift: the first and the last window, their medians,
// and the curve.
func (d *drift) report(failed int64) {
	n, window, last := d.n, d.window, d.last()
	fmt.Printf("browser flow drift: %d flows (%d failed) in %.1fs from %d sources; process CPU per flow: first %d %.0f µs (%.0f flows/s), last %d %.0f µs (%.0f flows/s); last/first %.3f%s\n",
		n, failed, d.marks[last+1].at.Sub(d.marks[0].at).Seconds(), driftSources, window, d.per(0), d.rate(0),
		window, d.per(last), d.rate(last), d.per(last)/d.per(0), loadavg())
	if last >= 9 {
		// A window of a thousand flows lasts about a second: one
		// checkpoint or one collection more or less moves it by 10-20%,
		// so the medians of the first and the last five windows are
		// reported too.
		m0, m1 := d.median(0, d.per), d.median(last-4, d.per)
		g0, g1 := d.median(0, d.perGC), d.median(last-4, d.perGC)
		fmt.Printf("browser flow drift: medians of the first and the last five windows: CPU %.0f → %.0f µs per flow (%.3f), of which the garbage collector %.0f → %.0f µs\n",
			m0, m1, m1/m0, g0, g1)
	}
	// The curve: the first windows, then every tenth of the run.
	var curve []string
	for w := int64(0); w <= last; w++ {
		if w < 3 || (w+1)*10%(last+1) == 0 {
			curve = append(curve, fmt.Sprintf("%d: %.0f (gc %.0f)", (w+1)*window, d.per(w), d.perGC(w)))
		}
	}
	fmt.Printf("browser flow drift: CPU per flow (µs) in the window ending at flow: %s\n", strings.Join(curve, ", "))
}

// writeHeap writes what the flows left live on the heap to
// PREFIX-end.heap: the garbage collector's work per cycle grows with it.
func (d *drift) writeHeap() error {
	f, err := os.Create(d.profilePrefix + "-end.heap")
	if err != nil {
		return fmt.Errorf("drift: heap profile: %w", err)
	}
	runtime.GC()
	err = errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
	if err != nil {
		return fmt.Errorf("drift: heap profile: %w", err)
	}
	p := d.profilePrefix
	fmt.Printf("browser flow drift: CPU profiles of flows %d-%d and %d-%d in %s-start.pprof and %s-end.pprof, live heap at the end in %s-end.heap\n",
		d.window, 3*d.window, d.n-2*d.window, d.n, p, p, p)
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
