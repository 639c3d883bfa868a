//go:build linux && cgo

package webkitgtk

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host/hosttest"

	"github.com/miniapp-host/miniapp-host/host"

	"github.com/miniapp-host/miniapp-host/origin"
)

var (
	envOnce sync.Once
	theEnv  *hosttest.World
	envErr  error
)

// testEnv starts the world once for the process.
func testEnv(t testing.TB) *hosttest.World {
	t.Helper()
	envOnce.Do(func() { theEnv, envErr = hosttest.Start() })
	if envErr != nil {
		t.Fatalf("test env: %v", envErr)
	}
	return theEnv
}

func closeEnv() {
	if theEnv != nil {
		theEnv.Close()
	}
}

// forgetConsents revokes every remembered consent of every seeded subject
// (docs/service.md §1: revocable), so that the next flow asks again.
func forgetConsents(t *testing.T) {
	t.Helper()
	if err := testEnv(t).ForgetConsents(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// mount mounts a Miniapp and waits for its first page. Each test starts as
// subjects who never consented to the Miniapp's client: a consent one test
// approved would otherwise be remembered, and the next test's consent
// view would never show.
func mount(t *testing.T, app host.Miniapp) *recorder {
	t.Helper()
	forgetConsents(t)
	rec := record(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testWin.Mount(ctx, app); err != nil {
		t.Fatalf("mount: %v", err)
	}
	// Match the URL exactly: a page the previous test left loading can
	// still report its own end after this Mount.
	want := app.LoadURL.String()
	rec.Wait(t, "first load of "+want, func(e host.Event) bool { return e.Kind == host.EventLoadFinished && e.URL == want })
	return rec
}

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := origin.ParseURL(raw)
	if err != nil {
		t.Fatalf("url %q: %v", raw, err)
	}
	return u
}

// recorder is the window's events for one test.
type recorder = hosttest.Recorder

func record(t testing.TB) *recorder {
	t.Helper()
	r := hosttest.NewRecorder()
	t.Cleanup(testWin.OnEvent(r.Add))
	return r
}

func kind(k host.EventKind) func(host.Event) bool { return hosttest.Kind(k) }

// evalString evaluates js in the Miniapp's view and decodes a string result.
func evalJSON(t *testing.T, js string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := testWin.EvalResult(ctx, js)
	if err != nil {
		t.Fatalf("eval %q: %v", js, err)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("eval %q: %q: %v", js, out, err)
	}
}

// testDeadline is how long a wait of the test may last: until shortly
// before the test binary's own -timeout, so a loaded machine makes a test
// slower, never red; a condition that never comes still fails with what
// was awaited, before the runner's panic would hide it.
func testDeadline(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-30 * time.Second)
	}
	return time.Now().Add(10 * time.Minute)
}

// pollFor waits for cond until testDeadline.
func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := testDeadline(t)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pollJS evaluates js until it returns want, until testDeadline.
func pollJS(t *testing.T, js, want string) {
	t.Helper()
	deadline := testDeadline(t)
	var got string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		out, err := testWin.EvalResult(ctx, js)
		cancel()
		if err == nil {
			_ = json.Unmarshal([]byte(out), &got)
			if got == want {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: got %q, want %q", js, got, want)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// artifactDir is where tests write artefacts (screenshots): artifacts/host
// at the module root, which git ignores.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "artifacts", "host")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("artifacts: no go.mod above the test's folder")
		}
		dir = parent
	}
}

// childDataDir is the data folder of a test binary run as a window of its
// own: a fresh temporary folder WebKit's XDG directories point into; the
// caller removes it.
func childDataDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "miniapp-host-"+name+"-")
	if err != nil {
		return "", err
	}
	if err := host.UseDataDir(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
