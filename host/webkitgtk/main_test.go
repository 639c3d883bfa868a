//go:build linux && cgo

package webkitgtk

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// testWin is the one window of the test process: the engine makes one
// window per process, on the main thread, so every test mounts its
// Miniapp into it, one test at a time.
var testWin *host.Window

// testConsentArm is the consent screen's arming delay in these tests:
// long enough that a click a test sends as soon as the screen is shown
// lands before the screen is armed even on a loaded machine
// (TestClickThroughNeverApproves reads where it landed).
const testConsentArm = 3 * time.Second

// testEng is testWin's engine, for what only the engine knows (where a
// view is on the screen).
var testEng *engine

// testBus records what the window publishes for the automation channel.
var testBus = &busRecorder{}

// externals records the URLs the host handed to the "system browser".
var externals struct {
	mu   sync.Mutex // guards urls
	urls []string
}

func openExternal(u string) {
	externals.mu.Lock()
	externals.urls = append(externals.urls, u)
	externals.mu.Unlock()
}

// procStart is when the test process started its window, for the figures.
var procStart time.Time

// TestMain runs the GTK main loop on the main goroutine (this package locks
// it to the main thread in its init) and the tests on another goroutine.
func TestMain(m *testing.M) {
	if u := os.Getenv(bareWindowEnv); u != "" {
		os.Exit(runBareWindow(u))
	}
	if os.Getenv(webdriverChildEnv) != "" {
		os.Exit(runWebDriverChild(os.Args[1:]))
	}
	if c := os.Getenv(openChildEnv); c != "" {
		os.Exit(runOpenChild(c))
	}
	if title := os.Getenv(sizeChildEnv); title != "" {
		os.Exit(runSizeChild(title))
	}
	if layout := os.Getenv(layoutChildEnv); layout != "" {
		os.Exit(runLayoutChild(layout))
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	procStart = time.Now()
	dir, err := os.MkdirTemp("", "miniapp-host-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// WebKit writes under the XDG directories: keep it inside dir.
	if err := host.UseDataDir(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("WEBKIT_DISABLE_COMPOSITING_MODE") == "" {
		os.Setenv("WEBKIT_DISABLE_COMPOSITING_MODE", "1")
	}
	// The playground's layout: the launcher's page beside the Miniapp's,
	// whose page the tests but TestPlaygroundWindow show.
	newEngine := func(cfg host.EngineConfig, ev host.EngineEvents) (host.Engine, error) {
		e, err := New(cfg, ev)
		if err == nil {
			testEng = e.(*engine)
		}
		return e, err
	}
	// The window keeps the host's own hang timeout: a shorter one made a
	// page that a loaded machine kept from answering for two seconds count
	// as hung, and its web process stopped under another test.
	w, err := host.NewWindow(newEngine, host.Options{DataDir: dir, Subject: "sub_ana", OpenExternal: openExternal,
		Title: "host tests", Events: testBus, Launcher: true, ConsentArm: testConsentArm,
		DownloadDir: filepath.Join(dir, "downloads"), NetworkLoopbackOnly: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w.ShowPage(host.PageMiniapp)
	testWin = w
	done := make(chan int, 1)
	go func() {
		code := m.Run()
		closeEnv()
		w.Terminate()
		done <- code
	}()
	w.Run()
	return <-done
}

// screenCentre is the centre of v in screen coordinates, where a test's
// XTest click (xdotool) must land.
func screenCentre(t *testing.T, v host.View) (x, y int, err error) {
	t.Helper()
	ch := make(chan [2]int, 1)
	testEng.Dispatch(func() {
		x, y := testEng.screenCentre(v)
		ch <- [2]int{x, y}
	})
	select {
	case p := <-ch:
		return p[0], p[1], nil
	case <-t.Context().Done():
		return 0, 0, t.Context().Err()
	}
}
