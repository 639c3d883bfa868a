//go:build !linux

package devapp

import (
	"errors"
	"fmt"
	"log/slog"
)

// watcher is not implemented off Linux: the desktop host runs on WebKitGTK.
type watcher struct{ out chan Change }

func watch(dir string, _ *slog.Logger) (*watcher, error) {
	return nil, fmt.Errorf("devapp: watch %s: watching a folder is implemented on Linux (inotify): %w", Quote(dir), errors.ErrUnsupported)
}

func (w *watcher) close() error { return nil }
