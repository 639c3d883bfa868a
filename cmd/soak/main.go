// Command soak uses `miniapp-host playground` through its automation
// channel for a while and reports whether it kept answering (package
// soak). `make soak` runs it under a virtual display; SOAK_MINUTES sets
// the length.
//
//	soak -binary bin/miniapp-host -minutes 30 [-pick-ports] [-no-alloc] [-rss-every 30s] [-rss-csv FILE]
//	     [-freeze-bt FILE] [-process-log FILE]
//
// Every -rss-every it prints the resident memory of the host and of each
// WebKit web and network process (by pid), and writes the samples as CSV
// (minute,time,pid,role,rss_mb) to -rss-csv, by default
// bin/soak-rss-YYYYMMDD-HHMMSS.csv.
//
// It exits 1 on a freeze, a lost process or an unclean exit after SIGTERM,
// and 2 when the run could not start.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/miniapp-host/miniapp-host/soak"
)

func main() {
	os.Exit(run())
}

func run() int {
	minutes := 30.0
	if v := os.Getenv("SOAK_MINUTES"); v != "" {
		m, err := strconv.ParseFloat(v, 64)
		if err != nil || m <= 0 {
			fmt.Fprintf(os.Stderr, "soak: SOAK_MINUTES=%q is not a positive number\n", v)
			return 2
		}
		minutes = m
	}
	binary := flag.String("binary", "bin/miniapp-host", "the miniapp-host executable")
	flag.Float64Var(&minutes, "minutes", minutes, "minutes of use (default $SOAK_MINUTES, else 30)")
	timeout := flag.Duration("command-timeout", 30*time.Second, "a command not answered within this is a freeze")
	exitTimeout := flag.Duration("exit-timeout", 10*time.Second, "time the playground has to exit after SIGTERM")
	bt := flag.String("freeze-bt", "", "on a freeze, write gdb's backtrace of every thread of the frozen process to this file (needs gdb)")
	pick := flag.Bool("pick-ports", false, "pick free ports for --addr and --launcher-addr instead of port 0 (with port 0 the confidential demo's launch is rejected: its client is registered for http://127.0.0.1:0)")
	plog := flag.String("process-log", "", "write the playground's stdout and stderr to this file")
	noAlloc := flag.Bool("no-alloc", false, "leave out the scripts that allocate on purpose (garbage in the page, large results in the host)")
	rssEvery := flag.Duration("rss-every", 30*time.Second, "how often to sample and print the RSS of every process")
	rssCSV := flag.String("rss-csv", "", "write the RSS samples as CSV to this file (default bin/soak-rss-YYYYMMDD-HHMMSS.csv)")
	flag.Parse()
	if *rssEvery <= 0 {
		fmt.Fprintf(os.Stderr, "soak: -rss-every %s: must be positive (e.g. 30s)\n", *rssEvery)
		return 2
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(os.Stderr, "soak: no display: run it under one (scripts/soak.sh starts xvfb-run itself)")
		return 2
	}
	cfg := soak.Config{Binary: *binary, Duration: time.Duration(minutes * float64(time.Minute)),
		CommandTimeout: *timeout, ExitTimeout: *exitTimeout, PickPorts: *pick, Log: os.Stdout,
		NoAlloc: *noAlloc, RSSEvery: *rssEvery}
	if *rssCSV == "" {
		*rssCSV = filepath.Join("bin", "soak-rss-"+time.Now().Format("20060102-150405")+".csv")
		if err := os.MkdirAll("bin", 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
	}
	csvFile, err := os.Create(*rssCSV)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	defer csvFile.Close()
	cfg.RSSCSV = csvFile
	if *plog != "" {
		f, err := os.Create(*plog)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
		defer f.Close()
		cfg.ProcessLog = f
	}
	if *bt != "" {
		cfg.OnFreeze = func(pid int) { backtrace(pid, *bt) }
	}
	// Ctrl-C ends the use early; the playground is still stopped and
	// checked, and the report printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("soak: %s playground for %.1f minutes (command timeout %s)\n", *binary, minutes, *timeout)
	rep, err := soak.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	fmt.Println()
	rep.Write(os.Stdout)
	fmt.Printf("%-20s%s\n", "RSS samples (CSV)", *rssCSV)
	if !rep.OK() {
		return 1
	}
	return 0
}

// backtrace writes gdb's backtrace of every thread of pid to path; the
// process is left as it was (gdb detaches).
func backtrace(pid int, path string) {
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: no gdb on PATH: no backtrace taken")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fmt.Printf("soak: taking a backtrace of pid %d into %s\n", pid, path)
	out, err := exec.CommandContext(ctx, gdb, "-p", strconv.Itoa(pid), "-batch",
		"-ex", "info threads", "-ex", "thread apply all bt").CombinedOutput()
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	head := fmt.Sprintf("# gdb -p %d -batch -ex 'info threads' -ex 'thread apply all bt' (%s)\n# /proc/%d/status:\n%s\n",
		pid, time.Now().Format(time.RFC3339), pid, status)
	if err != nil {
		head += fmt.Sprintf("# gdb: %v\n", err)
	}
	if werr := os.WriteFile(path, append([]byte(head), out...), 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, "soak:", werr)
	}
}
