package playground

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/miniapp-host/miniapp-host/privatefile"
)

// The playground's desktop window opens at the size the user left it,
// kept in $XDG_CONFIG_HOME/miniapp-host/<name>-window.json
// (os.UserConfigDir). The path must be found before host.UseDataDir points
// the XDG directories at WebKit's temporary folder. Errors start with
// "window size:", the setting the user may have to fix.

// Bounds of a remembered size: smaller is unusable, larger is no screen's.
const (
	minWindowWidth, minWindowHeight = 480, 360
	maxWindowSize                   = 16384
)

// WindowSize is a window's size in pixels, as it is kept.
type WindowSize struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// WindowSizeFile is where the window called name keeps its size; "" when
// the system has no configuration directory.
func WindowSizeFile(name string) string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "miniapp-host", name+"-window.json")
}

// LoadWindowSize returns the remembered size in path, or def when there is
// none. A file that cannot be used is reported and def returned: a bad
// file never keeps the window from opening.
func LoadWindowSize(path string, def WindowSize) (WindowSize, error) {
	if path == "" {
		return def, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return def, nil
	}
	if err != nil {
		return def, fmt.Errorf("window size: %w", err)
	}
	var s WindowSize
	if err := json.Unmarshal(b, &s); err != nil {
		return def, fmt.Errorf("window size: %s is not {\"width\": W, \"height\": H}: %v; delete it to start from the default size", path, err)
	}
	if s.Width < minWindowWidth || s.Height < minWindowHeight || s.Width > maxWindowSize || s.Height > maxWindowSize {
		return def, fmt.Errorf("window size: %s says %dx%d, outside %dx%d to %dx%d; delete it to start from the default size",
			path, s.Width, s.Height, minWindowWidth, minWindowHeight, maxWindowSize, maxWindowSize)
	}
	return s, nil
}

// SaveWindowSize keeps s in path (written whole or not at all, mode
// 0600, never through a symbolic link: package privatefile). A size
// that is not known (0) or out of bounds is not kept.
func SaveWindowSize(path string, s WindowSize) error {
	if path == "" || s.Width < minWindowWidth || s.Height < minWindowHeight || s.Width > maxWindowSize || s.Height > maxWindowSize {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("window size: %w", err)
	}
	b, _ := json.Marshal(s)
	if err := privatefile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("window size: %w", err)
	}
	return nil
}
