package devapp

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher is inotify(7) on a folder tree. inotify watches one folder at a
// time: every folder is added at the start, and a folder created (or
// moved in) later is added when it appears, with the files it already
// holds counted as changed.
type watcher struct {
	dir    string
	fd     int
	file   *os.File // fd, so that Close interrupts a blocked read
	log    *slog.Logger
	events chan string
	out    chan Change
	done   chan struct{}

	mu    sync.Mutex // guards below
	paths map[int]string
}

// The events of a completed save (see gather). IN_MODIFY is not among
// them: a file being written is seen when it is closed.
const watchMask = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_ONLYDIR

func watch(dir string, log *slog.Logger) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("devapp: watch %s: inotify: %w", Quote(dir), err)
	}
	w := &watcher{dir: dir, fd: fd, file: os.NewFile(uintptr(fd), "inotify"), log: log, events: make(chan string),
		out: make(chan Change), done: make(chan struct{}), paths: map[int]string{}}
	if _, err := w.addTree(dir); err != nil {
		w.file.Close()
		return nil, err
	}
	go gather(w.events, w.out, w.done)
	go w.read()
	return w, nil
}

// addTree watches dir, then lists it and does the same for each folder in
// it, and returns the files it found. Watching before listing leaves no
// gap: what is made in a folder after its watch is added comes as an
// event, what was made before is in the listing (some things both ways).
func (w *watcher) addTree(dir string) ([]string, error) {
	if err := w.add(dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil // gone already: its removal comes as an event
	}
	var found []string
	for _, e := range entries {
		if ignored(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			found = append(found, p)
			continue
		}
		sub, err := w.addTree(p)
		if err != nil {
			return found, err
		}
		found = append(found, sub...)
	}
	return found, nil
}

func (w *watcher) add(dir string) error {
	wd, err := unix.InotifyAddWatch(w.fd, dir, watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("devapp: watch %s: the system's limit of inotify watches is reached (sysctl fs.inotify.max_user_watches): %w", Quote(dir), err)
		}
		return fmt.Errorf("devapp: watch %s: %w", Quote(dir), err)
	}
	w.mu.Lock()
	w.paths[wd] = dir
	w.mu.Unlock()
	return nil
}

// read decodes inotify's records (struct inotify_event, then the name)
// until the watcher is closed.
func (w *watcher) read() {
	defer close(w.events)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.log.Warn("devapp: watching the folder stopped", "err", err)
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				name = string(raw[:clen(raw)])
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			w.handle(int(ev.Wd), ev.Mask, name)
		}
	}
}

func (w *watcher) handle(wd int, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		// Events were lost: say the manifest changed, so that it is read
		// again and the Miniapp launched again from what is on disk.
		w.log.Warn("devapp: the kernel's queue of file events overflowed; checking everything again")
		w.events <- ManifestPath[1:]
		return
	}
	w.mu.Lock()
	dir, ok := w.paths[wd]
	if mask&unix.IN_IGNORED != 0 {
		delete(w.paths, wd)
	}
	w.mu.Unlock()
	if !ok || name == "" {
		return
	}
	p := filepath.Join(dir, name)
	rel, err := filepath.Rel(w.dir, p)
	if err != nil || ignoredPath(rel) {
		return
	}
	if mask&unix.IN_ISDIR != 0 {
		if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			// A new folder: watch it and whatever it already holds.
			found, err := w.addTree(p)
			if err != nil {
				w.log.Warn("devapp: watching a new folder", "err", err)
			}
			for _, f := range found {
				if r, err := filepath.Rel(w.dir, f); err == nil {
					w.events <- filepath.ToSlash(r)
				}
			}
		}
		return
	}
	if mask&unix.IN_CREATE != 0 {
		return // an empty new file: its content comes with IN_CLOSE_WRITE
	}
	w.events <- filepath.ToSlash(rel)
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

func (w *watcher) close() error {
	err := w.file.Close()
	<-w.done
	return err
}
