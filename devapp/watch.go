package devapp

import (
	"path/filepath"
	"slices"
	"strings"
)

// A watcher turns the kernel's file events under a folder into Changes.
// Its events are those of a save that is complete: a file closed after
// writing, a file moved or renamed into place (an editor's atomic save),
// a file or folder removed. A write in progress (a file truncated, then
// written) is never read half done, because the change is only seen when
// the writer closes the file.
//
// gather collects events into one pending Change and hands it over whenever
// the receiver is ready: while the receiver is busy (checking the
// manifest, reloading), the events of several saves pile up into one
// delivery, and none is lost.
func gather(events <-chan string, out chan<- Change, done chan<- struct{}) {
	defer close(done)
	defer close(out)
	pending := map[string]bool{}
	for {
		var send chan<- Change
		var next Change
		if len(pending) > 0 {
			send = out
			for p := range pending {
				next.Paths = append(next.Paths, p)
			}
			slices.Sort(next.Paths)
		}
		select {
		case p, ok := <-events:
			if !ok {
				return
			}
			pending[p] = true
		case send <- next:
			clear(pending)
		}
	}
}

// ignored names files no page loads: hidden files and folders (.git),
// editors' backups and swap files, and node_modules, which a dev server
// bundles instead.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasSuffix(name, ".swp") ||
		strings.HasSuffix(name, ".swx") || strings.HasPrefix(name, "#") || name == "node_modules"
}

// ignoredPath reports whether any segment of a path relative to the
// folder is ignored.
func ignoredPath(rel string) bool {
	return slices.ContainsFunc(strings.Split(filepath.ToSlash(rel), "/"), ignored)
}
