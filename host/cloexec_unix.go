//go:build unix

package host

import (
	"io"
	"os"
	"syscall"
)

// keepFromChildren marks w, when it is an inherited file, close-on-exec:
// a descriptor the host was handed (--automation-fd) would otherwise be
// inherited by every process WebKit starts (its web and network
// processes), and the reader waiting for its end would never see it.
func keepFromChildren(w io.Writer) {
	if f, ok := w.(*os.File); ok {
		syscall.CloseOnExec(int(f.Fd()))
	}
}
