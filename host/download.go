package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Downloads (docs/playground.md, "Downloads"). A page of the window (the
// launcher's Export HAR and Export JSON, or the Miniapp) may download a
// file: the engine saves it where DownloadDestination says, and the window
// says where it went (EventDownload, and a DownloadEvent on the automation
// channel, which the launcher shows under its header). Nothing is saved
// without a word.

// DownloadEvent reports a download of a view of the window on the
// automation channel (kind "download"): saved at Path, or failed with
// Error.
type DownloadEvent struct {
	View     string `json:"view"` // launcher or miniapp
	Filename string `json:"filename"`
	Path     string `json:"path,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Kind implements bridge.Event.
func (DownloadEvent) Kind() string { return "download" }

// defaultDownloadDir is where downloads go without Options.DownloadDir:
// $XDG_DOWNLOAD_DIR, else ~/Downloads when it exists, else the home
// folder.
func defaultDownloadDir() string {
	if d := os.Getenv("XDG_DOWNLOAD_DIR"); filepath.IsAbs(d) {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return os.TempDir()
	}
	if st, err := os.Stat(filepath.Join(home, "Downloads")); err == nil && st.IsDir() {
		return filepath.Join(home, "Downloads")
	}
	return home
}

// downloadName is the file name a suggested name may have: its last path
// element, without control characters; "download" when nothing is left.
func downloadName(suggested string) string {
	name := filepath.Base(strings.ReplaceAll(suggested, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '/' {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == ".." {
		return "download"
	}
	return name
}

// DownloadDestination implements EngineEvents: a download of the launcher
// or the Miniapp goes to Options.DownloadDir under its suggested name,
// made unique ("flow-f2 (2).har") rather than replacing a file; the
// host's own view never downloads ("").
func (s *engineSink) DownloadDestination(v View, suggested string) string {
	if v != ViewLauncher && v != ViewMiniapp {
		return ""
	}
	dir := s.w.opts.DownloadDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	name := downloadName(suggested)
	ext := filepath.Ext(name)
	base := strings.TrimSuffix(name, ext)
	for i := 1; i < 1000; i++ {
		p := filepath.Join(dir, name)
		if i > 1 {
			p = filepath.Join(dir, fmt.Sprintf("%s (%d)%s", base, i, ext))
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p
		}
	}
	return ""
}

// DownloadFinished implements EngineEvents: the window says where the
// file went, or why it did not.
func (s *engineSink) DownloadFinished(v View, suggested, path, errMsg string) {
	w := s.w
	ev := DownloadEvent{View: v.String(), Filename: downloadName(suggested), Path: path, Error: errMsg}
	if errMsg != "" {
		ev.Path = ""
	} else if path == "" {
		ev.Error = "the window had nowhere to save it"
	}
	w.emit(Event{Kind: EventDownload, URL: ev.Path, Detail: ev.Error})
	w.publish(ev)
}

// DownloadDir is the folder the window saves downloads in.
func (w *Window) DownloadDir() string { return w.opts.DownloadDir }
