//go:build linux && cgo

package webkitgtk

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// sizeChildEnv makes the test binary a window of its own titled by the
// variable's value, which prints "ready" once its loop runs and, when
// SIGTERM ends it, the size the engine kept ("size W H").
const sizeChildEnv = "MINIAPP_HOST_SIZE_CHILD_TITLE"

func runSizeChild(title string) int {
	dir, err := childDataDir("size")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	w, err := host.NewWindow(New, host.Options{DataDir: dir, Ephemeral: true, Title: title, Width: 900, Height: 700})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	w.Dispatch(func() { fmt.Println("ready") })
	w.RunUntil(ctx, 5*time.Second, func() { os.Exit(3) })
	width, height := w.Size()
	fmt.Printf("size %d %d\n", width, height)
	return 0
}

// TestWindowSizeKept: the size a user gives the window (here through the
// X server, as a window manager would) is the size the engine reports
// once the window has closed, for the next window to open with.
func TestWindowSizeKept(t *testing.T) {
	title := fmt.Sprintf("size test %d", os.Getpid())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sizeChildEnv+"="+title, "WEBKIT_DISABLE_COMPOSITING_MODE=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the child did not start: %q %v", lines.Text(), lines.Err())
	}
	// search --sync and windowsize --sync wait for the X server's state,
	// not for a time.
	id, err := exec.Command("xdotool", "search", "--sync", "--onlyvisible", "--name", "^"+title+"$").Output()
	if err != nil {
		t.Fatalf("xdotool search (scripts/deps.sh installs xdotool): %v", err)
	}
	win := strings.Fields(string(id))[0]
	if out, err := exec.Command("xdotool", "windowsize", "--sync", win, "1000", "640").CombinedOutput(); err != nil {
		t.Fatalf("xdotool windowsize: %v: %s", err, out)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() {
		t.Fatalf("the child said nothing after SIGTERM: %v", lines.Err())
	}
	f := strings.Fields(lines.Text())
	if len(f) != 3 || f[0] != "size" {
		t.Fatalf("child: %q", lines.Text())
	}
	w, _ := strconv.Atoi(f[1])
	h, _ := strconv.Atoi(f[2])
	if w != 1000 || h != 640 {
		t.Fatalf("the engine kept %dx%d; the user left the window at 1000x640", w, h)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}
