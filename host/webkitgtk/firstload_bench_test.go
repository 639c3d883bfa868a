//go:build linux && cgo

package webkitgtk

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host/hosttest"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/demoapps"
)

// bareWindowEnv makes the test binary a bare WebKitGTK window that loads
// the URL it names and prints "loaded" on the page's load event: the
// baseline of BenchmarkFirstLoad, measured on the same machine at the same
// time.
const bareWindowEnv = "MINIAPP_HOST_BARE_WINDOW_URL"

func runBareWindow(u string) int { return bareWindow(u) }

// BenchmarkFirstLoad measures what BENCHMARKS.md reports for start-up:
// process start to the Miniapp's first load finished, for Open (what
// `miniapp-host open -v --ephemeral` runs: window, discovery, content
// filter, resolution against the reference server, mount of the public
// demo) and for the baseline, a bare WebKitGTK window loading a loopback
// page; plus the peak RSS (VmHWM) of each process and of WebKit's web and
// network processes, read once the page has loaded. The two run in turns,
// so that both see the same load of a shared machine.
func BenchmarkFirstLoad(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	srv, err := authserver.Start(ctx, authserver.Config{DB: filepath.Join(dir, "svc.db"), Secrets: map[string]string{"miniapp-host": hosttest.HostSecret}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	u := srv.URLs()
	app, err := demoapps.StartPublic(demoapps.Config{ID: "demo-public", Name: "Demo public Miniapp", ClientID: "demo-public",
		AuthURL: u.Authorization, TokenURL: u.Token, Scope: hosttest.Scope, Resource: u.BaseURL}, "")
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	if _, err := srv.RegisterClient(ctx, authserver.ClientSpec{ID: "demo-public", Name: "Demo public Miniapp",
		RedirectURIs: []string{app.RedirectURI()}, AllowedOrigins: []string{app.Origin}}); err != nil {
		b.Fatal(err)
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>bare</title><h1>bare</h1>")
	}))
	defer page.Close()

	var open, bare peaks
	for i := 0; i < b.N; i++ {
		cmd := openChild(b, childConfig{Origin: app.Origin, ID: "demo-public", Dashboard: u.Dashboard, Service: u.Issuer,
			Subject: "sub_ana", HostClientID: "miniapp-host", HostSecret: hosttest.HostSecret, Ephemeral: true})
		open.measure(b, cmd, true, "event load-finished "+app.Origin+"/")
		cmd = exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), bareWindowEnv+"="+page.URL, "WEBKIT_DISABLE_COMPOSITING_MODE=1")
		bare.measure(b, cmd, false, "loaded")
	}
	b.ReportMetric(open.median().Seconds(), "s-open-first-load")
	b.ReportMetric(bare.median().Seconds(), "s-bare-first-load")
	b.ReportMetric(float64(open.hostKB)/1024, "MB-open-host")
	b.ReportMetric(float64(open.webKB)/1024, "MB-open-webprocess")
	b.ReportMetric(float64(open.netKB)/1024, "MB-open-networkprocess")
	b.ReportMetric(float64(bare.hostKB)/1024, "MB-bare-host")
	b.ReportMetric(float64(bare.webKB)/1024, "MB-bare-webprocess")
	b.Logf("open: process start -> first load finished: %s", stats(open.loads))
	b.Logf("bare window: process start -> page load event: %s", stats(bare.loads))
	b.Logf("peak RSS open: host %d MB, largest web process %d MB (%d web processes, %d MB together), network %d MB; bare: host %d MB, web %d MB, network %d MB",
		open.hostKB/1024, open.webKB/1024, open.webProcs, open.webSumKB/1024, open.netKB/1024, bare.hostKB/1024, bare.webKB/1024, bare.netKB/1024)
	b.Logf("PSS of all processes once loaded: open %d MB, bare %d MB", open.pssKB/1024, bare.pssKB/1024)
}

// peaks collects the figures of one kind of process over runs.
type peaks struct {
	loads                []time.Duration
	hostKB, webKB, netKB int
	webProcs             int
	webSumKB             int // all web processes of a run together
	pssKB                int // host and WebKit processes together, proportional set size, once loaded
}

// measure starts cmd, waits for the line starting with ready on its
// stderr (or stdout), reads the peak RSS of it and of the WebKit processes below it,
// and stops it.
func (p *peaks) measure(b *testing.B, cmd *exec.Cmd, onStderr bool, ready string) {
	b.Helper()
	var pipe io.ReadCloser
	var err error
	if onStderr {
		pipe, err = cmd.StderrPipe()
	} else {
		pipe, err = cmd.StdoutPipe()
	}
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(syscall.SIGTERM)
	sc := bufio.NewScanner(pipe)
	var seen []string
	found := false
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), ready) {
			found = true
			break
		}
	}
	if !found {
		b.Fatalf("the process ended before %q:\n%s", ready, strings.Join(seen, "\n"))
	}
	p.loads = append(p.loads, time.Since(start))
	go func() { _, _ = io.Copy(io.Discard, pipe) }()
	time.Sleep(500 * time.Millisecond)
	p.hostKB = max(p.hostKB, vmHWM(cmd.Process.Pid))
	webs, sum := 0, 0
	pss := procPSS(cmd.Process.Pid)
	for _, c := range descendants(cmd.Process.Pid) {
		pss += procPSS(c.pid)
		switch c.name {
		case "WebKitWebProces":
			webs++
			kb := vmHWM(c.pid)
			sum += kb
			p.webKB = max(p.webKB, kb)
		case "WebKitNetworkPr":
			p.netKB = max(p.netKB, vmHWM(c.pid))
		}
	}
	p.webProcs = max(p.webProcs, webs)
	p.webSumKB = max(p.webSumKB, sum)
	p.pssKB = max(p.pssKB, pss)
}

func (p *peaks) median() time.Duration {
	s := slices.Clone(p.loads)
	slices.Sort(s)
	return s[len(s)/2]
}

// procPSS is a process's proportional set size now, in kB: shared
// libraries counted once across the processes that map them.
func procPSS(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "Pss:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// vmHWM is a process's peak resident set, in kB.
func vmHWM(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

type proc struct {
	pid  int
	name string
}

// descendants lists the processes below pid: its children and theirs
// (WebKit's auxiliary processes are spawned by the UI process; a
// sandboxed web process under the bwrap processes that start it,
// docs/webkitgtk.md, "The web process sandbox").
func descendants(pid int) []proc {
	type entry struct {
		proc
		ppid int
	}
	var all []entry
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue // ended since
		}
		var name string
		var ppid int
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "Name:":
				name = f[1]
			case "PPid:":
				ppid, _ = strconv.Atoi(f[1])
			}
		}
		all = append(all, entry{proc{p, name}, ppid})
	}
	below := map[int]bool{pid: true}
	var out []proc
	// Parents before children is not /proc's order (pids wrap): repeat
	// until no process joins.
	for grew := true; grew; {
		grew = false
		for _, e := range all {
			if !below[e.pid] && below[e.ppid] {
				below[e.pid] = true
				out = append(out, e.proc)
				grew = true
			}
		}
	}
	return out
}
