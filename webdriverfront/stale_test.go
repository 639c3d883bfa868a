package webdriverfront

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// holderEnv makes the test binary a front's stand-in: it makes a session
// folder in the directory the variable names, locks it as startPrivate
// does, prints the folder and waits for its standard input to close.
const holderEnv = "WEBDRIVERFRONT_TEST_HOLD_FOLDER_IN"

func init() {
	dir := os.Getenv(holderEnv)
	if dir == "" {
		return
	}
	folder, err := os.MkdirTemp(dir, folderPrefix)
	if err != nil {
		os.Exit(3)
	}
	if _, err := lockFolder(folder); err != nil {
		os.Exit(4)
	}
	os.Stdout.WriteString(folder + "\n")
	var b [1]byte
	os.Stdin.Read(b[:])
	os.Exit(0)
}

// holdFolder starts a stand-in front holding a session folder in dir.
func holdFolder(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the stand-in front printed no folder: %v", err)
	}
	return cmd, strings.TrimSpace(line)
}

// A front killed with SIGKILL stops nothing; the next front removes the
// session folder it left, and only that one: not a live front's folder,
// not a folder without its lock file, not a link.
func TestStaleFoldersOfKilledFronts(t *testing.T) {
	dir := t.TempDir()
	killed, left := holdFolder(t, dir)
	_, live := holdFolder(t, dir)
	noLock := filepath.Join(dir, folderPrefix+"nolock")
	if err := os.Mkdir(noLock, 0o700); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, lockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, folderPrefix+"link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	if got := removeStaleFolders(dir); len(got) != 0 {
		t.Fatalf("with both fronts alive, removed %v", got)
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.Wait() // the kernel has released its lock once it is reaped
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the killed front's folder went before any front swept it: %v", err)
	}

	if got := removeStaleFolders(dir); !slices.Equal(got, []string{left}) {
		t.Fatalf("removed %v, want only the killed front's %s", got, left)
	}
	for _, kept := range []string{live, noLock, link, filepath.Join(target, lockName)} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
		}
	}
}

// A private front sweeps $TMPDIR when it is made, and says what it removed.
func TestPrivateFrontSweepsAtStart(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	killed, left := holdFolder(t, dir)
	killed.Process.Signal(syscall.SIGKILL)
	killed.Wait()
	var log bytes.Buffer
	if _, err := New(Config{Addr: "127.0.0.1:0", Driver: "d", Host: "h", Network: NetworkPrivate,
		Supervisor: []string{"s"}, Log: &log, Dashboard: "http://127.0.0.1:1/", Service: "http://127.0.0.1:2/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the folder is still there (%v)", err)
	}
	if !strings.Contains(log.String(), left) || !strings.Contains(log.String(), "killed") {
		t.Errorf("the front did not say what it removed: %q", log.String())
	}
}
