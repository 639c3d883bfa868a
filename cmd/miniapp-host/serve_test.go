package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestServe starts `serve` on free ports, waits for the printed addresses,
// fetches the discovery document and stops it with the context.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, env{args: []string{"serve", "--db", filepath.Join(t.TempDir(), "a.db"), "--addr", "127.0.0.1:0",
			"--secret", "miniapp-host=fixed-host-secret"}, stdout: &out, stderr: &errs})
	}()
	issuer := regexp.MustCompile(`(?m)^issuer\s+(\S+)$`)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "subjects:") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve printed no addresses: %s %s", out.String(), errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := issuer.FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "miniapp-host         confidential secret fixed-host-secret") {
		t.Fatalf("output lacks the issuer or the host credential:\n%s", out.String())
	}
	resp, err := http.Get(m[1] + "/.well-known/openid-configuration")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("discovery: %v %v", err, resp)
	}
	resp.Body.Close()
	// With --addr 127.0.0.1:0 every role prints the port it is bound to,
	// never port 0, and the dashboard printed is the one that answers.
	if bad := regexp.MustCompile(`127\.0\.0\.1:0\b`).FindString(out.String()); bad != "" {
		t.Errorf("serve printed an unbound address %s:\n%s", bad, out.String())
	}
	dash := regexp.MustCompile(`(?m)^dashboard_url\s+(http://127\.0\.0\.1:[1-9]\d*)$`).FindStringSubmatch(out.String())
	if dash == nil {
		t.Fatalf("no dashboard_url with a bound port:\n%s", out.String())
	}
	if code, lines, errs := runCLI(t, "", "rs", "list", "--dashboard", dash[1], "--json"); code != exitOK || !strings.Contains(lines, `"resource_servers"`) {
		t.Errorf("rs list at the printed dashboard_url: exit %d %s %s", code, lines, errs)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}

// TestServeTwiceOnOneDatabase: a second serve on the database of a running
// one is refused, naming the running one's PID and service address, and
// the first keeps serving.
func TestServeTwiceOnOneDatabase(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := filepath.Join(t.TempDir(), "a.db")
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, env{args: []string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, stdout: &out, stderr: &errs})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "subjects:") {
		select {
		case code := <-done:
			t.Fatalf("first serve exited %d: %s", code, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no addresses: %s %s", out.String(), errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	issuer := regexp.MustCompile(`(?m)^issuer\s+(\S+)$`).FindStringSubmatch(out.String())[1]

	var out2, errs2 syncBuffer
	code := run(ctx, env{args: []string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, stdout: &out2, stderr: &errs2})
	if code == exitOK {
		t.Fatal("a second serve on the same database started")
	}
	for _, want := range []string{"in use by another server", "pid " + strconv.Itoa(os.Getpid()), "service " + issuer, "--db"} {
		if !strings.Contains(errs2.String(), want) {
			t.Errorf("refusal lacks %q:\n%s", want, errs2.String())
		}
	}
	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the first server stopped serving: %v %v", err, resp)
	}
	resp.Body.Close()
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}
