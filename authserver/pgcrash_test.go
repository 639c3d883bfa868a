package authserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// TestPostgresCrashKeepsAcknowledgedGrants: a server on PostgreSQL under a
// load of complete native flows (submit, decide, token); PostgreSQL's
// server is crashed mid-load (pg_ctl stop -m immediate: no checkpoint, and
// what it has not written yet is lost). The flow state that only restarts
// a sign-in commits asynchronously and may be lost; every grant the server
// acknowledged, a code returned by a decision or a token by the token
// endpoint, commits synchronously and is there after PostgreSQL restarts,
// read by a new store with nothing cached, and the server completes flows
// again.
func TestPostgresCrashKeepsAcknowledgedGrants(t *testing.T) {
	cluster, db := storetest.Crashable(t)
	e := startWith(t, db, &clock{t: time.Now()}, func(*authserver.Config) {})
	u := e.u
	hc := &http.Client{}

	post := func(target, body string, set func(*http.Request)) (map[string]any, error) {
		return postOK(hc, target, body, set)
	}
	host := asHost
	// flow runs one native flow; acked receives the code once the decision
	// returned it, and the access token once the token endpoint did.
	flow := func(acked func(kind, v string)) error {
		v, c := pkce(t)
		body, _ := json.Marshal(map[string]any{"authorization_url": u.Authorization + "?" + e.confAuthParams(c).Encode(), "subject": subAna})
		m, err := post(u.Native, string(body), host)
		if err != nil {
			return err
		}
		m, err = post(u.Native+"/"+m["request_id"].(string)+"/decision", `{"action":"approve"}`, host)
		if err != nil {
			return err
		}
		ru, err := url.Parse(m["redirect_url"].(string))
		if err != nil {
			return err
		}
		code := ru.Query().Get("code")
		acked("code", code)
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {confRedir}, "code_verifier": {v}}
		m, err = post(u.Token, form.Encode(), func(r *http.Request) {
			r.SetBasicAuth(confID, e.confSecret)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		})
		if err != nil {
			return err
		}
		acked("token", m["access_token"].(string))
		return nil
	}

	const workers, before = 8, 24 // codes acknowledged before the crash
	var (
		mu          sync.Mutex
		codes, toks []string
		firstErr    error
		crashing    bool
		reached     = make(chan struct{})
		done        = make(chan struct{})
		once        sync.Once
		wg          sync.WaitGroup
	)
	acked := func(kind, v string) {
		mu.Lock()
		defer mu.Unlock()
		if kind == "code" {
			codes = append(codes, v)
			if len(codes) >= before {
				once.Do(func() { close(reached) })
			}
		} else {
			toks = append(toks, v)
		}
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
				if err := flow(acked); err != nil {
					mu.Lock()
					if !crashing && firstErr == nil {
						firstErr = fmt.Errorf("a flow failed before the crash: %w", err)
						once.Do(func() { close(reached) })
					}
					mu.Unlock()
				}
			}
		}()
	}
	<-reached
	mu.Lock()
	crashing = true
	mu.Unlock()
	// The requests in flight meet the crash: each is acknowledged or fails.
	crashErr := cluster.Crash()
	close(done)
	wg.Wait()
	if crashErr != nil {
		t.Fatal(crashErr)
	}
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	ctx := context.Background()
	if err := cluster.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d codes and %d tokens acknowledged before the crash", len(codes), len(toks))

	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, code := range codes {
		c, _, err := st.PeekCode(ctx, store.SecretKey(code))
		if err != nil {
			t.Fatalf("acknowledged code %d of %d is gone after the crash: %v", i+1, len(codes), err)
		}
		if g, err := st.Grant(ctx, c.GrantID); err != nil || g.SubjectID != subAna || g.Revoked() {
			t.Fatalf("the grant of acknowledged code %d of %d after the crash: %+v, %v", i+1, len(codes), g, err)
		}
	}
	for i, tok := range toks {
		if at, g, err := st.LookupAccessToken(ctx, store.AccessTokenKey(tok)); err != nil || at.Revoked || g.Revoked() {
			t.Fatalf("acknowledged token %d of %d after the crash: %+v %+v, %v", i+1, len(toks), at, g, err)
		}
	}

	// The server's connections died with PostgreSQL; the pool replaces
	// them, so that at most the first requests after the restart fail.
	var err2 error
	for range 5 {
		if err2 = flow(func(string, string) {}); err2 == nil {
			break
		}
	}
	if err2 != nil {
		t.Fatalf("the server completes no flow after PostgreSQL restarted: %v", err2)
	}
}
