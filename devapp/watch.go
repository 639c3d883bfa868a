package devapp

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// watcher turns fsnotify's events on a folder tree into Changes. inotify
// watches one folder at a time: every folder is added at the start, and a
// folder created later is added when its creation is seen.
type watcher struct {
	dir  string
	fsw  *fsnotify.Watcher
	log  *slog.Logger
	out  chan Change
	done chan struct{}
}

func watch(dir string, log *slog.Logger) (*watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("devapp: watch %s: %w", dir, err)
	}
	w := &watcher{dir: dir, fsw: fsw, log: log, out: make(chan Change), done: make(chan struct{})}
	if err := w.addTree(dir); err != nil {
		fsw.Close()
		return nil, err
	}
	go w.run()
	return w, nil
}

// addTree watches dir and every folder below it but hidden ones.
func (w *watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return fmt.Errorf("devapp: watch %s: %w", p, err)
			}
			return nil // gone since it was listed
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && ignored(d.Name()) {
			return filepath.SkipDir
		}
		if err := w.fsw.Add(p); err != nil {
			return fmt.Errorf("devapp: watch %s: %w", p, err)
		}
		return nil
	})
}

// ignored names files no page loads: hidden files and folders (.git),
// editors' backups and swap files, and node_modules, which a dev server
// bundles instead.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasSuffix(name, ".swp") ||
		strings.HasSuffix(name, ".swx") || strings.HasPrefix(name, "#") || name == "node_modules"
}

// run gathers events into one pending Change and hands it over whenever
// the receiver is ready: while the receiver is busy (checking the manifest,
// reloading), the events of one save pile up into one delivery.
func (w *watcher) run() {
	defer close(w.done)
	defer close(w.out)
	pending := map[string]bool{}
	for {
		var out chan Change
		var next Change
		if len(pending) > 0 {
			out = w.out
			for p := range pending {
				next.Paths = append(next.Paths, p)
			}
			slices.Sort(next.Paths)
		}
		select {
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.note(ev, pending)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// An overflowed queue lost events: say that everything may
			// have changed, so the manifest is read again.
			w.log.Warn("devapp: watching the folder", "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				pending[ManifestPath[1:]] = true
			}
		case out <- next:
			clear(pending)
		}
	}
}

func (w *watcher) note(ev fsnotify.Event, pending map[string]bool) {
	rel, err := filepath.Rel(w.dir, ev.Name)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return
	}
	for _, seg := range strings.Split(filepath.ToSlash(rel), "/") {
		if ignored(seg) {
			return
		}
	}
	if ev.Has(fsnotify.Create) {
		// A new folder: watch it and what it already holds (a copy or
		// a mkdir -p made before the watch was added).
		if err := w.addTree(ev.Name); err == nil {
			_ = filepath.WalkDir(ev.Name, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if r, err := filepath.Rel(w.dir, p); err == nil {
						pending[filepath.ToSlash(r)] = true
					}
				}
				return nil
			})
		}
	}
	if ev.Op == fsnotify.Chmod {
		return // touched metadata only: nothing a page reads changed
	}
	pending[filepath.ToSlash(rel)] = true
}

func (w *watcher) close() error {
	err := w.fsw.Close()
	<-w.done
	return err
}
