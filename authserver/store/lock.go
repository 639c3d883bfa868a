package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// One process owns a database. Two servers on one file would each load the
// seed world's secrets and the operator credential over the other's, and
// each would keep serving from its own cache what the other revoked. So
// Open takes an exclusive lock on a file beside the database and holds it
// until Close. The lock is the operating system's (flock(2) on Unix): it is
// released by the kernel when the process ends however it ends, so a
// crashed or killed owner never blocks the next start, and it is held per
// open file, so a second Open in the same process is refused too.
//
// The lock file also carries a small JSON note about its owner, for the
// refusal's message: its PID, its start time and, once it listens, its
// addresses.

// LockPath is the lock file of the database at path: path + ".lock".
func LockPath(path string) string { return path + ".lock" }

// Owner is the note a database's owner keeps in its lock file.
type Owner struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Addresses are the owner's listening addresses by role ("service":
	// "http://127.0.0.1:8600"), once Announce has recorded them.
	Addresses map[string]string `json:"addresses,omitempty"`
}

// LockedError is Open's refusal of a database that another process (or
// another Store of this process) has open.
type LockedError struct {
	// Path is the database file.
	Path string
	// Owner is the owner's note; nil when it could not be read (an owner
	// that has not written it yet).
	Owner *Owner
}

func (e *LockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "store: the database %s is in use by another server", e.Path)
	if o := e.Owner; o != nil {
		fmt.Fprintf(&b, " (pid %d", o.PID)
		if o.PID == os.Getpid() {
			b.WriteString(", this process")
		}
		if !o.Started.IsZero() {
			fmt.Fprintf(&b, ", started %s", o.Started.Local().Format(time.DateTime))
		}
		for _, role := range slices.Sorted(maps.Keys(o.Addresses)) {
			fmt.Fprintf(&b, ", %s %s", role, o.Addresses[role])
		}
		b.WriteString(")")
	}
	b.WriteString("; stop it, or use another database file")
	return b.String()
}

// dbLock is a held lock file.
type dbLock struct {
	f     *os.File
	owner Owner
}

// errLockHeld is returned by the platform's tryLock when another open file
// holds the lock.
var errLockHeld = errors.New("store: lock held")

// acquireLock creates (0600) or opens the lock file of the database at
// path and takes its exclusive lock without waiting. On a platform without
// file locks it returns a nil lock and no error: the database is then
// unguarded, as it was before.
func acquireLock(path string, log *slog.Logger) (*dbLock, error) {
	lp := LockPath(path)
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock file: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, errors.ErrUnsupported) {
			return nil, nil
		}
		if errors.Is(err, errLockHeld) {
			le := &LockedError{Path: path}
			if b, rerr := os.ReadFile(lp); rerr == nil {
				var o Owner
				if json.Unmarshal(b, &o) == nil && o.PID > 0 {
					le.Owner = &o
				}
			}
			return nil, le
		}
		return nil, fmt.Errorf("store: lock %s: %w", lp, err)
	}
	if err := tighten(lp, log); err != nil {
		f.Close()
		return nil, err
	}
	l := &dbLock{f: f, owner: Owner{PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second)}}
	if err := l.write(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// write replaces the note in the lock file with l.owner.
func (l *dbLock) write() error {
	b, err := json.Marshal(l.owner)
	if err != nil {
		return fmt.Errorf("store: lock note: %w", err)
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("store: lock note: %w", err)
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("store: lock note: %w", err)
	}
	return nil
}

// release empties the note and drops the lock. The file stays: removing it
// would let a process that opened it just before lock a file no longer
// on disk while a third locks a new one.
func (l *dbLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	err := l.f.Close()
	l.f = nil
	return err
}

// Announce records the owner's listening addresses, by role, in the lock
// file's note, so that a second server refused the database can name them.
func (s *Store) Announce(addrs map[string]string) error {
	if s.lock == nil {
		return nil
	}
	s.lock.owner.Addresses = addrs
	return s.lock.write()
}

// privateMode is the mode of the database, its WAL and shared-memory files
// and its lock file: they hold the private signing keys and every token's
// hash, so only the owner reads them.
const privateMode fs.FileMode = 0o600

// tighten removes group and other permissions from an existing file, and
// logs it: the file was readable by others until now.
func tighten(name string, log *slog.Logger) error {
	fi, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if fi.Mode().Perm()&^privateMode == 0 {
		return nil
	}
	if err := os.Chmod(name, fi.Mode().Perm()&privateMode); err != nil {
		return fmt.Errorf("store: restrict %s to its owner: %w", name, err)
	}
	if log != nil {
		log.Warn("store: restricted a database file to its owner; it was readable by others", "file", name,
			"was", fi.Mode().Perm().String(), "now", (fi.Mode().Perm() & privateMode).String())
	}
	return nil
}

// secureFiles makes the database file exist with mode 0600 before SQLite
// opens it, and tightens the mode of an existing database and of its WAL
// and shared-memory files. SQLite creates the -wal and -shm files with the
// mode of the database file (os_unix.c, findCreateFileMode), so a database
// created here 0600 keeps them 0600 whatever the umask.
func secureFiles(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, privateMode)
	switch {
	case err == nil:
		// A new, empty file is a new database to SQLite. The umask may
		// have cleared owner bits; set the mode exactly.
		if err := f.Chmod(privateMode); err != nil {
			f.Close()
			return fmt.Errorf("store: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("store: %w", err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		if err := tighten(name, log); err != nil {
			return err
		}
	}
	return nil
}
