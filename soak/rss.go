package soak

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProcRSS is the resident memory of one process of the playground at one
// moment: the host itself or one of WebKit's helper processes.
type ProcRSS struct {
	PID  int
	Role string // "host", "web" (WebKitWebProcess), "network" (WebKitNetworkProcess), or the executable's name
	RSS  int64  // bytes (VmRSS)
}

// RSSSample is every process of the playground at one moment.
type RSSSample struct {
	Minute float64 // minutes into the use
	Time   time.Time
	Procs  []ProcRSS // the host first, then by role and pid
}

// String is one line: the host, then each WebKit process by role and pid.
func (s RSSSample) String() string {
	var parts []string
	for _, p := range s.Procs {
		if p.Role == "host" {
			parts = append(parts, "host "+mb(p.RSS))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d %s", p.Role, p.PID, mb(p.RSS)))
	}
	return strings.Join(parts, ", ")
}

// roleOf names a process of the playground by its executable: WebKit's
// helpers are WebKitWebProcess and WebKitNetworkProcess.
func roleOf(pid int) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		exe = strings.TrimSpace(string(b))
	}
	name := filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	switch {
	case strings.HasPrefix(name, "WebKitWebProces"):
		return "web"
	case strings.HasPrefix(name, "WebKitNetworkPr"):
		return "network"
	case name == "" || name == ".":
		return "unknown"
	}
	return name
}

var roleOrder = map[string]int{"host": 0, "web": 1, "network": 2}

// sampleProcs reads the RSS of pid (the host) and of each of its
// descendants, with their roles.
func sampleProcs(pid int, start time.Time) RSSSample {
	s := RSSSample{Minute: time.Since(start).Minutes(), Time: time.Now()}
	s.Procs = append(s.Procs, ProcRSS{PID: pid, Role: "host", RSS: vmRSS(pid)})
	for _, c := range descendants(pid) {
		s.Procs = append(s.Procs, ProcRSS{PID: c, Role: roleOf(c), RSS: vmRSS(c)})
	}
	sort.SliceStable(s.Procs, func(i, j int) bool {
		a, b := s.Procs[i], s.Procs[j]
		ra, oka := roleOrder[a.Role]
		rb, okb := roleOrder[b.Role]
		if !oka {
			ra = 3
		}
		if !okb {
			rb = 3
		}
		if ra != rb {
			return ra < rb
		}
		return a.PID < b.PID
	})
	return s
}

// rssRecorder samples the playground's processes every interval until
// stopped, prints a line per sample and writes the CSV rows
// (minute,time,pid,role,rss_mb).
type rssRecorder struct {
	pid   int
	start time.Time
	every time.Duration
	line  func(RSSSample)
	csv   *csv.Writer

	mu      sync.Mutex
	samples []RSSSample
	stop    chan struct{}
	done    chan struct{}
}

func newRSSRecorder(pid int, start time.Time, every time.Duration, line func(RSSSample), w io.Writer) *rssRecorder {
	r := &rssRecorder{pid: pid, start: start, every: every, line: line, stop: make(chan struct{}), done: make(chan struct{})}
	if w != nil {
		r.csv = csv.NewWriter(w)
		_ = r.csv.Write([]string{"minute", "time", "pid", "role", "rss_mb"})
		r.csv.Flush()
	}
	return r
}

// record takes one sample now.
func (r *rssRecorder) record() RSSSample {
	s := sampleProcs(r.pid, r.start)
	r.mu.Lock()
	r.samples = append(r.samples, s)
	if r.csv != nil {
		for _, p := range s.Procs {
			_ = r.csv.Write([]string{strconv.FormatFloat(s.Minute, 'f', 2, 64), s.Time.UTC().Format(time.RFC3339),
				strconv.Itoa(p.PID), p.Role, strconv.FormatFloat(float64(p.RSS)/(1<<20), 'f', 1, 64)})
		}
		r.csv.Flush()
	}
	r.mu.Unlock()
	if r.line != nil {
		r.line(s)
	}
	return s
}

// run samples at the start and every interval until halt.
func (r *rssRecorder) run() {
	defer close(r.done)
	r.record()
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.record()
		case <-r.stop:
			return
		}
	}
}

// halt stops the sampling and takes a last sample.
func (r *rssRecorder) halt() {
	close(r.stop)
	<-r.done
	r.record()
}

// all is a copy of the samples so far.
func (r *rssRecorder) all() []RSSSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RSSSample(nil), r.samples...)
}

// at is the first sample at or after minute m, or false.
func at(samples []RSSSample, m float64) (RSSSample, bool) {
	for _, s := range samples {
		if s.Minute >= m {
			return s, true
		}
	}
	return RSSSample{}, false
}

// writeRSS prints the per-process RSS at minutes 1, 5, 10, 30, 60, 120
// (those the run reached) and at the end.
func (r Report) writeRSS(row func(k, f string, a ...any)) {
	if len(r.RSS) == 0 {
		return
	}
	last := r.RSS[len(r.RSS)-1]
	for _, m := range []float64{0, 1, 5, 10, 30, 60, 120} {
		s, ok := at(r.RSS, m)
		if !ok || s.Minute > last.Minute-0.1 && m > 0 {
			continue
		}
		row(fmt.Sprintf("RSS minute %.1f", s.Minute), "%s", s)
	}
	row(fmt.Sprintf("RSS minute %.1f", last.Minute), "%s", last)
}
