package authserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// childEnv carries the configuration of an instance that the test binary,
// started again, runs in a process of its own (runChild), so that a test
// can kill it with SIGKILL.
const childEnv = "AUTHSERVER_TEST_INSTANCE"

// runChild is the child's side: start the instance, print its service
// listen address, and serve until killed (or until stdin closes, when the
// parent died without killing it).
func runChild(raw string) int {
	var c childConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	var cfg authserver.Config
	c.apply(&cfg)
	srv, err := authserver.Start(context.Background(), cfg)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("service", srv.ListenAddrs().Service)
	var b [1]byte
	os.Stdin.Read(b[:])
	return 0
}

// startChild runs an instance in a child process and returns its service
// listen address and the process.
func startChild(t *testing.T, c childConfig) (string, *exec.Cmd) {
	t.Helper()
	raw, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "service ")
	if err != nil || !ok {
		t.Fatalf("child instance: %q %v", line, err)
	}
	return addr, cmd
}

// TestKilledInstanceLosesNoGrant: two instances on one PostgreSQL database
// behind a round-robin proxy, under a load of complete native flows (submit,
// decide, token) whose requests go to alternating instances. One instance
// is killed with SIGKILL mid-load. Every flow that was acknowledged (a token
// response) keeps its grant, readable from the survivor, and the survivor
// keeps serving complete flows.
func TestKilledInstanceLosesNoGrant(t *testing.T) {
	db := storetest.Postgres(t)
	rr := &roundRobin{}
	front := roundRobinFront(t, rr, false)
	shared := sharedConfig(db, front.URL)
	victimAddr, victim := startChild(t, shared)
	survivor := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	rr.targets = []string{victimAddr, survivor.srv.ListenAddrs().Service}
	u := survivor.u

	hc := front.Client()
	// flow runs one native flow through the proxy; it returns the access
	// token when the flow was acknowledged.
	flow := func() (string, error) {
		v, c := pkce(t)
		q := survivor.confAuthParams(c)
		post := func(target, body string, set func(*http.Request)) (map[string]any, error) {
			return postOK(hc, target, body, set)
		}
		host := asHost
		body, _ := json.Marshal(map[string]any{"authorization_url": u.Authorization + "?" + q.Encode(), "subject": subAna})
		m, err := post(u.Native, string(body), host)
		if err != nil {
			return "", err
		}
		m, err = post(u.Native+"/"+m["request_id"].(string)+"/decision", `{"action":"approve"}`, host)
		if err != nil {
			return "", err
		}
		ru, err := url.Parse(m["redirect_url"].(string))
		if err != nil {
			return "", err
		}
		code := ru.Query().Get("code")
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {v}}
		m, err = post(u.Token, form.Encode(), func(r *http.Request) {
			r.SetBasicAuth(confID, survivor.confSecret)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		})
		if err != nil {
			return "", err
		}
		return m["access_token"].(string), nil
	}

	const before, after = 60, 60 // acknowledged flows before the kill, and after it
	// The kill may cut the requests in flight to the victim (one per
	// worker) and one request on each connection to it that the proxy
	// kept open; any failure beyond those is a defect, as is any failure
	// before the kill.
	const workers, maxCut = 4, 16
	var (
		mu          sync.Mutex
		acked       []string
		firstErr    error
		afterKill   atomic.Int64
		failed      atomic.Int64
		killed      atomic.Bool
		reachedKill = make(chan struct{})
		done        = make(chan struct{})
		once, fin   sync.Once
		wg          sync.WaitGroup
	)
	stop := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		once.Do(func() { close(reachedKill) })
		fin.Do(func() { close(done) })
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				tok, err := flow()
				if err != nil {
					if !killed.Load() {
						stop(fmt.Errorf("a flow failed before the kill: %w", err))
					} else if failed.Add(1) > maxCut {
						stop(fmt.Errorf("%d flows failed after the kill; the last: %w", maxCut+1, err))
					}
					continue
				}
				mu.Lock()
				acked = append(acked, tok)
				n := len(acked)
				mu.Unlock()
				if n >= before {
					once.Do(func() { close(reachedKill) })
				}
				if killed.Load() && afterKill.Add(1) >= after {
					fin.Do(func() { close(done) })
				}
			}
		}()
	}
	<-reachedKill
	killed.Store(true)
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("%d flows acknowledged (%d after the kill), %d failed (requests cut by the kill)", len(acked), afterKill.Load(), failed.Load())
	for i, tok := range acked {
		if st, g := survivor.grant(tok, confID, survivor.confSecret); st != http.StatusOK || g["subject"] != subAna {
			t.Fatalf("acknowledged flow %d: the survivor answers %d %v", i, st, g)
		}
	}
}
