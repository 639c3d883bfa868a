package webdriverfront

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A private session's folder (docs/webdriver.md, "A private network per
// session") is removed by the session's stop. A front killed outright
// (SIGKILL, the OOM killer) stops nothing, so each folder also holds a
// lock file that its front keeps locked (flock, LOCK_EX) while the
// session lives: the kernel lets go of the lock when the front dies,
// however it dies. The next front removes the folders whose lock it can
// take. A folder is never removed on a guess: one without its lock file
// (a front killed between creating the folder and its lock, or a folder
// that is not ours) is left alone.

// folderPrefix begins the name of a session's folder under $TMPDIR, as
// os.MkdirTemp makes it.
const folderPrefix = "miniapp-host-webdriver-"

// lockName is the folder's lock file.
const lockName = "front.lock"

// lockFolder creates and locks folder's lock file; the returned file
// holds the lock until it is closed or the process ends. The descriptor
// is close-on-exec, so no child of the front keeps the lock past it.
// The file is locked under another name and then renamed, so another
// front never sees the lock file of a live session unlocked.
func lockFolder(folder string) (*os.File, error) {
	tmp := filepath.Join(folder, "."+lockName)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(folder, lockName)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeStaleFolders removes, in dir, the session folders of fronts that
// are gone: folders of this user whose lock file nobody holds. It returns
// the folders it removed.
func removeStaleFolders(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), folderPrefix) || e.Type() != fs.ModeDir {
			continue // a link or a file of that name is not a folder of ours
		}
		folder := filepath.Join(dir, e.Name())
		if stale(folder) {
			if os.RemoveAll(folder) == nil {
				removed = append(removed, folder)
			}
		}
	}
	return removed
}

// stale reports whether folder is a session folder of this user whose
// front is gone: its lock file exists and can be locked.
func stale(folder string) bool {
	info, err := os.Lstat(folder)
	if err != nil || !info.IsDir() {
		return false
	}
	if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return false
	}
	f, err := os.OpenFile(filepath.Join(folder, lockName), os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false // no lock file: left alone (see above)
	}
	defer f.Close()
	// EWOULDBLOCK: a live front holds it; any other error: not provably gone.
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
