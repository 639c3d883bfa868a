package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// TestSecondOpenRefused: while a Store has the database open, a second
// Open of the same file is refused with a message naming the owner's PID
// and addresses; after Close the file opens again.
func TestSecondOpenRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no file locks on this platform")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	first, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Announce(map[string]string{"service": "http://127.0.0.1:8600", "dashboard": "http://127.0.0.1:8601"}); err != nil {
		t.Fatal(err)
	}
	second, err := Open(ctx, path)
	if err == nil {
		second.Close()
		t.Fatal("a second Open of an open database succeeded")
	}
	var le *LockedError
	if !errors.As(err, &le) || le.Owner == nil || le.Owner.PID != os.Getpid() {
		t.Fatalf("want a *LockedError naming pid %d, got %v", os.Getpid(), err)
	}
	for _, want := range []string{path, "pid " + strconv.Itoa(os.Getpid()), "service http://127.0.0.1:8600", "dashboard http://127.0.0.1:8601"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("open after Close: %v", err)
	}
	again.Close()
}

// lockChildEnv names the database a re-executed test binary opens and
// holds (TestKilledOwnerReleases).
const lockChildEnv = "STORE_TEST_HOLD_DB"

// TestMain lets the test binary act as the child of
// TestKilledOwnerReleases: it opens the database, says so and waits to be
// killed.
func TestMain(m *testing.M) {
	if path := os.Getenv(lockChildEnv); path != "" {
		s, err := Open(context.Background(), path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if err := s.Announce(map[string]string{"service": "http://child.invalid"}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("holding")
		// Wait for the parent's SIGKILL; stdin closes only if the parent dies.
		var b [1]byte
		os.Stdin.Read(b[:])
		os.Exit(0)
	}
	os.Exit(storetest.Main(m))
}

// TestKilledOwnerReleases: a server killed with SIGKILL (no Close, no
// cleanup) does not block the next start, because the kernel drops its
// lock; while it lives, Open names it.
func TestKilledOwnerReleases(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no file locks or SIGKILL on this platform")
	}
	path := filepath.Join(t.TempDir(), "a.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "holding\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q %v", line, err)
	}
	_, err = Open(context.Background(), path)
	var le *LockedError
	if !errors.As(err, &le) || le.Owner == nil || le.Owner.PID != cmd.Process.Pid ||
		!strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(err.Error(), "http://child.invalid") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("while the child holds it: want a *LockedError naming pid %d, got %v", cmd.Process.Pid, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // the child is gone, and with it its lock
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open after the owner was killed: %v", err)
	}
	s.Close()
}

// TestFileModes: a new database, its WAL and shared-memory files and the
// lock file are 0600 whatever the umask; an existing database file that
// others could read is restricted at open, with a notice in the log.
func TestFileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes on this platform")
	}
	old := syscall.Umask(0) // the most permissive umask: every 0600 is ours
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutProject(ctx, Project{ID: "p", Name: "P"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm", LockPath(path)} {
		assertMode(t, name, 0o600)
	}
	s.Close()

	// A database left readable by others, as earlier versions created it.
	for _, name := range []string{path, path + "-wal", path + "-shm", LockPath(path)} {
		if err := os.Chmod(name, 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	s, err = OpenWith(ctx, path, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutProject(ctx, Project{ID: "q", Name: "Q"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm", LockPath(path)} {
		assertMode(t, name, 0o600)
	}
	if !strings.Contains(log.String(), "restricted a database file to its owner") || !strings.Contains(log.String(), path) {
		t.Errorf("no notice of the restricted mode in the log: %q", log.String())
	}
}

func assertMode(t *testing.T, name string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(name), err)
		return
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", filepath.Base(name), got, want)
	}
}
