//go:build linux && cgo

package host

/*
#include <stdlib.h>
#include "webkit_linux.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime/cgo"
	"strings"
	"unsafe"

	"github.com/miniapp-host/miniapp-host/origin"
)

// Pages of a window with a launcher (AddLauncher).
const (
	pageLauncher = 0
	pageMiniapp  = 1
)

// AddLauncher gives the window the playground's launcher: a page of its
// own before the Miniapp's, with a tab for each, so that the user can go
// back to the launcher while a Miniapp stays mounted. The launcher's view
// has its own content manager: no bridge, no content filter, and input on
// it is not a gesture on the Miniapp. It must run on the main goroutine
// before [Window.Run], like NewWindow.
func (w *Window) AddLauncher() error {
	l := C.mh_add_launcher((*C.GtkWindow)(w.wv.Window()), C.uintptr_t(w.handle))
	if l == nil {
		return errors.New("host: the window cannot take a launcher")
	}
	w.launcher = l
	return nil
}

// ShowLauncher loads the launcher page at u in its view and shows it. Only
// u's origin loads there afterwards.
func (w *Window) ShowLauncher(u string) error {
	o, err := origin.OfString(u)
	if err != nil || o.IsOpaque() {
		return fmt.Errorf("host: launcher URL %q has no http(s) origin", u)
	}
	if w.launcher == nil {
		return errors.New("host: this window has no launcher (AddLauncher)")
	}
	w.mu.Lock()
	w.launcherAt = o
	w.mu.Unlock()
	w.Dispatch(func() {
		s := cstr(u)
		C.mh_load_uri(w.launcher, s)
		C.free(unsafe.Pointer(s))
		C.mh_show_page((*C.GtkWindow)(w.wv.Window()), pageLauncher)
	})
	return nil
}

// showPage shows the launcher or the Miniapp; a window without a launcher
// has only the Miniapp's page.
func (w *Window) showPage(page int) {
	w.Dispatch(func() { C.mh_show_page((*C.GtkWindow)(w.wv.Window()), C.int(page)) })
}

// EvalLauncher is EvalResult in the launcher's view; tests and the
// automation of the playground drive the launcher with it.
func (w *Window) EvalLauncher(ctx context.Context, js string) (string, error) {
	if w.launcher == nil {
		return "", errors.New("host: this window has no launcher")
	}
	return w.evalIn(ctx, w.launcher, js)
}

// SnapshotLauncher writes a PNG of the launcher's view to path. The
// launcher's page must be the one shown.
func (w *Window) SnapshotLauncher(ctx context.Context, path string) error {
	if w.launcher == nil {
		return errors.New("host: this window has no launcher")
	}
	ch := make(chan string, 1)
	w.Dispatch(func() {
		s := cstr(path)
		C.mh_snapshot(w.launcher, s, C.uintptr_t(cgo.NewHandle(func(e string) { ch <- e })))
		C.free(unsafe.Pointer(s))
	})
	return waitErr(ctx, ch, "snapshot")
}

// SnapshotWindow writes a PNG of the whole window as the screen shows it:
// the tabs, the page shown and any screen of the host over it.
func (w *Window) SnapshotWindow(ctx context.Context, path string) error {
	ch := make(chan string, 1)
	w.Dispatch(func() {
		s := cstr(path)
		msg := C.mh_snapshot_window((*C.GtkWindow)(w.wv.Window()), s)
		C.free(unsafe.Pointer(s))
		ch <- C.GoString(msg)
		C.g_free(C.gpointer(msg))
	})
	return waitErr(ctx, ch, "window snapshot")
}

// ForgetSite removes what WebKit keeps for the host name of o: cookies,
// local storage, IndexedDB, caches (not session storage). WebKit keys this
// data by host name, so every origin on that host is reset.
func (w *Window) ForgetSite(ctx context.Context, o origin.Origin) error {
	if o.IsOpaque() {
		return errors.New("host: reset storage needs an http(s) origin")
	}
	host := strings.TrimSuffix(strings.TrimPrefix(o.Host, "["), "]")
	ch := make(chan string, 1)
	w.Dispatch(func() {
		s := cstr(host)
		C.mh_forget_site(w.view, s, C.uintptr_t(cgo.NewHandle(func(e string) { ch <- e })))
		C.free(unsafe.Pointer(s))
	})
	return waitErr(ctx, ch, "reset storage")
}

// onLauncherDecide runs on the main thread for every navigation of the
// launcher's view: only the launcher's own origin loads there, never in a
// new window; an http(s) link elsewhere followed by the user goes to the
// system browser.
func (w *Window) onLauncherDecide(raw string, newWindow, gesture bool) bool {
	w.mu.Lock()
	home := w.launcherAt
	w.mu.Unlock()
	o, err := origin.OfString(raw)
	if err != nil {
		return false
	}
	if !newWindow && !home.IsOpaque() && o.Equal(home) {
		return true
	}
	if gesture && !o.IsOpaque() {
		if u, err := origin.ParseURL(raw); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			go w.opts.OpenExternal(u.String())
		}
	}
	return false
}

// onLauncherLoaded runs on the main thread when the launcher's page has
// loaded. The fragment carries the automation token: it is dropped.
func (w *Window) onLauncherLoaded(raw string) {
	if u, err := url.Parse(raw); err == nil {
		u.Fragment, u.RawFragment = "", ""
		raw = u.String()
	} else {
		raw = ""
	}
	w.emit(Event{Kind: EventLauncherLoaded, URL: raw})
}
