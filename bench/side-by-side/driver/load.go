package main

// load mode: one fixed HTTP/1.1 request sent again and again over C
// keep-alive connections, each worker writing its request and reading the
// response before the next (no pipelining). It replaces hey for the lookup
// measures: hey (net/http's client, its response parsing and its
// per-request bookkeeping) spent about 35 CPU-µs per request here, as much
// as the server under test, so on 2 shared cores it set the pace of the
// faster server. This client spends a few µs: one write and one read per
// request, the status line and Content-Length or chunked framing parsed,
// nothing else.

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"miniapp-host/bench/internal/flow"
)

type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

func loadMain(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	target := fs.String("url", "", "request URL (loopback only)")
	method := fs.String("method", "GET", "request method")
	body := fs.String("body", "", "request body (sent with Content-Length)")
	var headers headerFlags
	fs.Var(&headers, "H", "request header 'Name: value' (repeatable)")
	c := fs.Int("c", 32, "concurrent connections, one request in flight on each")
	n := fs.Int("n", 20000, "requests (the measured part)")
	warmup := fs.Int("warmup", 2000, "unmeasured requests first")
	maxDur := fs.Duration("max-duration", 8*time.Second, "bound of the measured part")
	pid := fs.Int("server-pid", 0, "also report this process's CPU per request (all its threads, from /proc)")
	_ = fs.Parse(args)
	u, err := url.Parse(*target)
	if err != nil || *target == "" {
		fatalf("load: -url is required")
	}
	if err := requireLoopback(*target); err != nil {
		fatalf("load: %v", err)
	}
	if *c <= 0 || *n <= 0 {
		fatalf("load: -c and -n must be > 0")
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: sbsdriver\r\n", *method, u.RequestURI(), u.Host)
	for _, h := range headers {
		fmt.Fprintf(&req, "%s\r\n", h)
	}
	if *body != "" || *method == "POST" {
		fmt.Fprintf(&req, "Content-Length: %d\r\n", len(*body))
	}
	req.WriteString("\r\n")
	req.WriteString(*body)

	if *warmup > 0 {
		runLoad(u.Host, req.Bytes(), *c, *warmup, *maxDur)
	}
	cpu0, srv0 := selfCPU(), procCPU(*pid)
	r := runLoad(u.Host, req.Bytes(), *c, *n, *maxDur)
	cpu1, srv1 := selfCPU(), procCPU(*pid)
	lat := r.lat
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	done := r.ok + r.bad + r.errs
	perReq := func(d time.Duration) float64 {
		if done == 0 {
			return 0
		}
		return float64(d.Microseconds()) / float64(done)
	}
	rate := float64(r.ok) / r.elapsed.Seconds()
	fmt.Printf("load: %d ok, %d not 200 %v, %d errors, %.3f s, %.1f/s, p50 %.2f ms, p99 %.2f ms, c=%d, client %.1f CPU-µs/req\n",
		r.ok, r.bad, r.statuses, r.errs, r.elapsed.Seconds(), rate, ms(flow.Pct(lat, 0.5)), ms(flow.Pct(lat, 0.99)), *c, perReq(cpu1-cpu0))
	if r.firstErr != nil {
		fmt.Printf("error: %v\n", r.firstErr)
	}
	srv := "nan"
	if *pid > 0 {
		srv = fmt.Sprintf("%.1f", perReq(srv1-srv0))
	}
	fmt.Printf("RESULT mode=load n=%d ok=%d errors=%d not200=%d elapsed_s=%.3f rate=%.1f p50_ms=%.3f p99_ms=%.3f client_cpu_us=%.1f server_cpu_us=%s\n",
		done, r.ok, r.errs, r.bad, r.elapsed.Seconds(), rate, ms(flow.Pct(lat, 0.5)), ms(flow.Pct(lat, 0.99)), perReq(cpu1-cpu0), srv)
}

type loadResult struct {
	ok, bad, errs int
	statuses      map[int]int
	lat           []time.Duration
	elapsed       time.Duration
	firstErr      error
}

// runLoad sends n requests over c connections, within maxDur.
func runLoad(host string, req []byte, c, n int, maxDur time.Duration) loadResult {
	var next atomic.Int64
	var mu sync.Mutex
	res := loadResult{statuses: map[int]int{}, lat: make([]time.Duration, 0, n)}
	deadline := time.Now().Add(maxDur)
	var wg sync.WaitGroup
	start := time.Now()
	for range min(c, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn net.Conn
			var br *bufio.Reader
			lat := make([]time.Duration, 0, n/c+1)
			ok, bad, errs := 0, 0, 0
			statuses := map[int]int{}
			var first error
			defer func() {
				if conn != nil {
					conn.Close()
				}
				mu.Lock()
				res.ok, res.bad, res.errs = res.ok+ok, res.bad+bad, res.errs+errs
				for k, v := range statuses {
					res.statuses[k] += v
				}
				res.lat = append(res.lat, lat...)
				if res.firstErr == nil {
					res.firstErr = first
				}
				mu.Unlock()
			}()
			for next.Add(1) <= int64(n) && time.Now().Before(deadline) {
				if conn == nil {
					var err error
					if conn, err = net.DialTimeout("tcp", host, 5*time.Second); err != nil {
						errs++
						first = cmp(first, err)
						continue
					}
					br = bufio.NewReaderSize(conn, 16<<10)
				}
				t0 := time.Now()
				conn.SetDeadline(t0.Add(10 * time.Second))
				status, keep, err := roundTrip(conn, br, req)
				if err != nil {
					errs++
					first = cmp(first, err)
					conn.Close()
					conn = nil
					continue
				}
				lat = append(lat, time.Since(t0))
				if status == 200 {
					ok++
				} else {
					bad++
					statuses[status]++
				}
				if !keep {
					conn.Close()
					conn = nil
				}
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// roundTrip writes req and reads one response, discarding its body.
func roundTrip(conn net.Conn, br *bufio.Reader, req []byte) (status int, keep bool, err error) {
	if _, err := conn.Write(req); err != nil {
		return 0, false, err
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	keep = line[7] == '1' // HTTP/1.1 keeps the connection unless told otherwise
	length, chunked := -1, false
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, _ := bytes.Cut(h, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			keep = !bytes.EqualFold(value, []byte("close"))
		}
	}
	switch {
	case chunked:
		for {
			l, err := br.ReadSlice('\n')
			if err != nil {
				return 0, false, err
			}
			size, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.SplitN(l, []byte(";"), 2)[0])), 16, 64)
			if err != nil {
				return 0, false, fmt.Errorf("bad chunk size %q", l)
			}
			if _, err := br.Discard(int(size) + 2); err != nil { // the chunk and its CRLF
				return 0, false, err
			}
			if size == 0 {
				return status, keep, nil // no trailers are sent by the servers measured
			}
		}
	case length >= 0:
		_, err = br.Discard(length)
		return status, keep, err
	default:
		return 0, false, errors.New("response without Content-Length or chunked body")
	}
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time of every thread of process pid, in nanoseconds
// (the first field of /proc/PID/task/TID/schedstat), 0 when pid is 0. The
// clock ticks of /proc/PID/stat (10 ms) are too coarse for runs of a few
// hundred milliseconds.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(v)
		}
	}
	return total
}
