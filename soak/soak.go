// Package soak drives `miniapp-host playground` through its automation
// channel (docs/automation.md) for a long time, the way a developer uses
// it, and reports whether the window kept answering: every command must be
// answered within a deadline, and the process must exit cleanly on SIGTERM.
//
// One round of use launches both demo Miniapps (docs/playground.md),
// approves or denies their consent screens, evaluates scripts that make
// garbage in the Miniapp's web process and scripts whose result is large
// (the host deserialises it into its own JavaScriptCore heap), calls the
// bridge in a loop, navigates inside the Miniapp's origin and takes
// screenshots. A command left without an answer is a freeze: it is
// recorded with the minute of the run, and nothing more is sent.
//
// The driver never sleeps for correctness: it waits on replies and events
// with deadlines. It talks to loopback addresses only.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config is one soak run.
type Config struct {
	// Binary is the miniapp-host executable to run.
	Binary string
	// Duration is how long to keep using the playground.
	Duration time.Duration
	// CommandTimeout is how long a command may go unanswered before it is
	// a freeze; 0 means 30 s.
	CommandTimeout time.Duration
	// ExitTimeout is how long the process has to exit after SIGTERM; 0
	// means 10 s.
	ExitTimeout time.Duration
	// StartTimeout bounds the start-up (the printed addresses and the
	// launcher loaded in the window); 0 means 120 s.
	StartTimeout time.Duration
	// PickPorts has the driver pick free ports and pass them to the
	// playground (--addr 127.0.0.1:P --launcher-addr 127.0.0.1:Q) instead
	// of port 0 for all. With port 0 the playground registers the
	// confidential demo with the allowed origin http://127.0.0.1:0, so the
	// resolver rejects its launch (start-url-not-allowed); fixed ports,
	// like `make run`'s defaults, do not have that fault.
	PickPorts bool
	// OwnDisplay runs the playground on an X server of its own (Xvfb,
	// on a free display it picks), so that its window shares the screen
	// with no other program's: tests elsewhere click at screen
	// coordinates, which a window on top would take.
	OwnDisplay bool
	// NoWindow runs the playground with --no-window (to test the driver
	// itself; view commands then answer no_window). Normally false.
	NoWindow bool
	// Log receives progress lines (one per round, one per minute); nil
	// discards them.
	Log io.Writer
	// ProcessLog receives the playground's stdout and stderr lines (the
	// token is left out); nil discards them.
	ProcessLog io.Writer
	// NoAlloc leaves out the scripts that allocate on purpose (the
	// garbage script in the Miniapp's web process and the large results
	// the host deserialises): to tell their memory from the rest's.
	NoAlloc bool
	// RSSEvery is how often the resident memory of every process of the
	// playground (the host, each WebKit web and network process) is
	// sampled and logged; 0 means 30 s.
	RSSEvery time.Duration
	// RSSCSV, when set, receives every sample as CSV rows
	// (minute,time,pid,role,rss_mb).
	RSSCSV io.Writer
	// OnFreeze, when set, is called with the playground's pid after a
	// freeze is recorded and before SIGTERM is sent (to take a backtrace
	// of the frozen process).
	OnFreeze func(pid int)
}

// Freeze is a command that got no answer in time.
type Freeze struct {
	Minute  float64 // minutes into the run when the command was sent
	Command string  // its name and what it did, e.g. "eval (large result)"
	ID      int64
	Waited  time.Duration
}

// Report is the outcome of a run.
type Report struct {
	PID      int
	Planned  time.Duration
	Ran      time.Duration // from the playground being up to the last command
	Rounds   int
	Sent     int // commands sent
	Answered int // commands answered (ok or with an error code)
	// Errors counts answers with ok false, by "command: code".
	Errors map[string]int
	// Latency is the slowest answer per command.
	Latency map[string]time.Duration
	Freezes []Freeze
	// Consent screens decided, and launches approved without a screen
	// (remembered consent).
	Approved, Denied, Remembered int
	// Checks that did not hold (a page not in the expected state, an
	// event that did not come): not liveness failures, but listed.
	Checks []string
	// Lost is set when the process exited or the connection closed
	// during the run.
	Lost string
	// Exit after SIGTERM.
	ExitedInTime bool
	ExitCode     int
	ExitTook     time.Duration
	Killed       bool
	// Memory and load at the start and at the end of the use.
	MemStart, MemEnd, MemPeak Memory
	LoadStart, LoadEnd        string
	// RSS is the per-process samples, every Config.RSSEvery and at the
	// end of the use.
	RSS []RSSSample
}

// CleanExit reports whether the process exited with code 0 within the
// exit timeout after SIGTERM.
func (r Report) CleanExit() bool { return r.ExitedInTime && r.ExitCode == 0 }

// OK reports whether the run showed no liveness failure: every command
// answered, no freeze, nothing lost, and a clean exit.
func (r Report) OK() bool {
	return len(r.Freezes) == 0 && r.Lost == "" && r.Sent == r.Answered && r.CleanExit()
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

// Write prints the report.
func (r Report) Write(w io.Writer) {
	row := func(k, f string, a ...any) { fmt.Fprintf(w, "%-20s"+f+"\n", append([]any{k}, a...)...) }
	fmt.Fprintln(w, "soak report: miniapp-host playground")
	row("pid", "%d", r.PID)
	row("minutes run", "%.1f of %.0f", r.Ran.Minutes(), r.Planned.Minutes())
	row("rounds", "%d", r.Rounds)
	row("commands sent", "%d", r.Sent)
	row("commands answered", "%d", r.Answered)
	if len(r.Errors) > 0 {
		var ks []string
		for k := range r.Errors {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		var parts []string
		for _, k := range ks {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, r.Errors[k]))
		}
		row("error answers", "%s", strings.Join(parts, ", "))
	}
	row("consent", "%d approved, %d denied on screen, %d remembered", r.Approved, r.Denied, r.Remembered)
	if len(r.Freezes) == 0 {
		row("freezes", "none")
	}
	for _, f := range r.Freezes {
		row("FREEZE", "minute %.1f (%.0f s into the run): %s (id %d) got no answer in %s",
			f.Minute, f.Minute*60, f.Command, f.ID, f.Waited)
	}
	if r.Lost != "" {
		row("LOST", "%s", r.Lost)
	}
	switch {
	case r.CleanExit():
		row("exit after SIGTERM", "clean (exit code 0 in %.1f s)", r.ExitTook.Seconds())
	case r.ExitedInTime:
		row("exit after SIGTERM", "NOT CLEAN: exit code %d in %.1f s", r.ExitCode, r.ExitTook.Seconds())
	default:
		row("exit after SIGTERM", "NOT WITHIN %.0f s (then SIGKILL)", r.ExitTook.Seconds())
	}
	mem := func(m Memory) string {
		return fmt.Sprintf("host %s, WebKit %s (%d processes), total %s", mb(m.Host), mb(m.WebKit), m.Procs, mb(m.Host+m.WebKit))
	}
	row("RSS start", "%s", mem(r.MemStart))
	row("RSS end", "%s", mem(r.MemEnd))
	row("RSS peak (host)", "%s", mb(r.MemPeak.Host))
	row("load average", "start %s, end %s", r.LoadStart, r.LoadEnd)
	r.writeRSS(row)
	if len(r.Latency) > 0 {
		var ks []string
		for k := range r.Latency {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		var parts []string
		for _, k := range ks {
			parts = append(parts, fmt.Sprintf("%s %.1fs", k, r.Latency[k].Seconds()))
		}
		row("slowest answers", "%s", strings.Join(parts, ", "))
	}
	if n := len(r.Checks); n > 0 {
		row("checks not held", "%d (first ones below)", n)
		for i, c := range r.Checks {
			if i == 10 {
				break
			}
			row("", "%s", c)
		}
	}
	if r.OK() {
		row("verdict", "PASS")
	} else {
		row("verdict", "FAIL")
	}
}

// Run starts the playground, uses it for cfg.Duration (or until a freeze,
// the process's loss, or ctx's end), then sends SIGTERM and checks the
// exit. The error is for a run that could not start (no binary, the
// playground never came up, the channel refused the connection); a freeze
// or an unclean exit is in the report (Report.OK).
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = 30 * time.Second
	}
	if cfg.ExitTimeout <= 0 {
		cfg.ExitTimeout = 10 * time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 120 * time.Second
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	rep := Report{Planned: cfg.Duration, Errors: map[string]int{}, Latency: map[string]time.Duration{}}
	p, err := startPlayground(ctx, cfg, cfg.ProcessLog)
	if err != nil {
		return rep, err
	}
	rep.PID = p.pid()
	fmt.Fprintf(logw, "soak: playground up (pid %d), automation channel %s\n", rep.PID, p.automationURL)
	// Whatever happens below, the process is stopped and checked.
	finish := func() {
		if cfg.OnFreeze != nil && len(rep.Freezes) > 0 && p.running() {
			cfg.OnFreeze(rep.PID)
		}
		rep.ExitedInTime, rep.ExitCode, rep.ExitTook = p.terminate(cfg.ExitTimeout)
		if !rep.ExitedInTime {
			rep.Killed = true
		}
		p.kill()
	}
	c, err := dial(ctx, p.automationURL, p.token, cfg.CommandTimeout)
	if err != nil {
		finish()
		return rep, err
	}
	rep.MemStart, rep.MemPeak, rep.LoadStart = sampleMemory(rep.PID), sampleMemory(rep.PID), loadAverage()
	d := &driver{cfg: cfg, c: c, p: p, rep: &rep, log: logw, start: time.Now(),
		http: &http.Client{Timeout: cfg.CommandTimeout}}
	every := cfg.RSSEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	rec := newRSSRecorder(rep.PID, d.start, every, func(s RSSSample) { d.logf("rss: %s", s) }, cfg.RSSCSV)
	go rec.run()
	d.loop(ctx)
	rep.Ran = time.Since(d.start)
	if p.running() {
		rec.halt()
	} else {
		close(rec.stop)
		<-rec.done
	}
	rep.RSS = rec.all()
	if p.running() {
		rep.MemEnd = sampleMemory(rep.PID)
	}
	rep.LoadEnd = loadAverage()
	// After a freeze, closing the connection would only wait on a
	// frozen host: the process is stopped first.
	finish()
	c.close()
	return rep, nil
}

// driver is the state of a run's use of the playground.
type driver struct {
	cfg Config
	c   *client
	p   *playground
	rep *Report
	// logMu serialises log's lines: the RSS recorder's goroutine logs
	// beside the loop.
	logMu sync.Mutex
	log   io.Writer
	start time.Time
	http  *http.Client

	round   int
	denials map[string]int // subject|client -> consent screens denied
}

// errStop ends the use: a freeze or a loss was recorded.
var errStop = errors.New("soak: stopped")

func (d *driver) minute() float64 { return time.Since(d.start).Minutes() }

func (d *driver) logf(format string, a ...any) {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	fmt.Fprintf(d.log, "%s [%5.1f min] %s\n", time.Now().Format("15:04:05"), d.minute(), fmt.Sprintf(format, a...))
}

func (d *driver) check(format string, a ...any) {
	msg := fmt.Sprintf("minute %.1f, round %d: ", d.minute(), d.round) + fmt.Sprintf(format, a...)
	d.rep.Checks = append(d.rep.Checks, msg)
	d.logf("check: %s", msg)
}

// cmd sends one command, labelled what (e.g. "eval (large result)") in the
// report, and accounts for its answer. It returns errStop after a freeze or
// a loss, a *CommandError for an error answer.
func (d *driver) cmd(ctx context.Context, what, name string, params any) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.rep.Sent++
	t0 := time.Now()
	res, err := d.c.do(ctx, name, params)
	var fe *FreezeError
	var ce *CommandError
	switch {
	case errors.As(err, &fe):
		f := Freeze{Minute: fe.Sent.Sub(d.start).Minutes(), Command: what, ID: fe.ID, Waited: fe.Waited}
		d.rep.Freezes = append(d.rep.Freezes, f)
		d.logf("FREEZE: %s (id %d) sent at minute %.1f (%.0f s into the run) got no answer in %s",
			what, fe.ID, f.Minute, f.Minute*60, fe.Waited)
		return nil, errStop
	case errors.Is(err, errClosed):
		d.lost(fmt.Sprintf("the automation connection closed during %s (minute %.1f)", what, d.minute()))
		return nil, errStop
	case err != nil && ctx.Err() != nil:
		d.rep.Sent-- // interrupted by the driver's own end: not the host's to answer
		return nil, ctx.Err()
	}
	d.rep.Answered++
	if took := time.Since(t0); took > d.rep.Latency[name] {
		d.rep.Latency[name] = took
	}
	if errors.As(err, &ce) {
		d.rep.Errors[name+": "+ce.Code]++
		return nil, err
	}
	return res, err
}

func (d *driver) lost(why string) {
	if d.rep.Lost != "" {
		return
	}
	if !d.p.running() {
		why += fmt.Sprintf("; the playground exited (%v)", d.p.werr)
	}
	d.rep.Lost = why
	d.logf("LOST: %s", why)
}

// over reports whether the run's duration has passed: a round stops
// between steps, never by interrupting a command (which could hide a
// freeze).
func (d *driver) over() bool { return time.Since(d.start) >= d.cfg.Duration }

// loop runs rounds until the duration is over, a freeze, a loss, or ctx's
// end.
func (d *driver) loop(ctx context.Context) {
	d.denials = map[string]int{}
	lastMinute := -1
	for !d.over() && ctx.Err() == nil {
		err := d.runRound(ctx)
		d.rep.Rounds++
		if m := sampleMemory(d.rep.PID); m.Host > d.rep.MemPeak.Host {
			d.rep.MemPeak = m
		}
		if errors.Is(err, errStop) {
			return
		}
		if !d.p.running() {
			d.lost(fmt.Sprintf("the playground exited during round %d", d.round))
			return
		}
		if m := int(d.minute()); m != lastMinute {
			lastMinute = m
			mem := sampleMemory(d.rep.PID)
			d.logf("round %d done: %d commands sent, %d answered; RSS host %s, WebKit %s; load %s",
				d.round, d.rep.Sent, d.rep.Answered, mb(mem.Host), mb(mem.WebKit), loadAverage())
		}
		d.round++
	}
}
