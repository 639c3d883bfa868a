//go:build linux && cgo

package webkitgtk

// The C side's calls into Go (webkit.c). Each runs on the GTK main thread,
// with JavaScriptCore's thread-suspend signal blocked (MH_TO_GO), and must
// not block.

/*
#include "webkit.h"
*/
import "C"

import (
	"runtime/cgo"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

func engineOf(h C.uintptr_t) *engine { return cgo.Handle(h).Value().(*engine) }

var triggers = map[C.int]host.Trigger{
	C.WEBKIT_NAVIGATION_TYPE_LINK_CLICKED:     host.TriggerLink,
	C.WEBKIT_NAVIGATION_TYPE_FORM_SUBMITTED:   host.TriggerForm,
	C.WEBKIT_NAVIGATION_TYPE_BACK_FORWARD:     host.TriggerBackFwd,
	C.WEBKIT_NAVIGATION_TYPE_RELOAD:           host.TriggerReload,
	C.WEBKIT_NAVIGATION_TYPE_FORM_RESUBMITTED: host.TriggerResubmit,
	C.WEBKIT_NAVIGATION_TYPE_OTHER:            host.TriggerOther,
	-1:                                        host.TriggerWindowOpen,
}

//export goDecide
func goDecide(h C.uintptr_t, view C.int, uri, method *C.char, navType, redirect, gesture, newWindow C.int, frame *C.char) C.int {
	n := host.Navigation{
		URL: C.GoString(uri), Method: strings.ToUpper(C.GoString(method)), Trigger: triggers[navType],
		Redirect: redirect != 0, UserGesture: gesture != 0, NewWindow: newWindow != 0, Frame: C.GoString(frame),
	}
	if engineOf(h).events.DecideNavigation(host.View(view), n) {
		return 0
	}
	return 1
}

var loadEvents = map[C.int]host.LoadEvent{
	C.WEBKIT_LOAD_STARTED:    host.LoadStarted,
	C.WEBKIT_LOAD_REDIRECTED: host.LoadRedirected,
	C.WEBKIT_LOAD_COMMITTED:  host.LoadCommitted,
	C.WEBKIT_LOAD_FINISHED:   host.LoadFinished,
}

//export goLoadChanged
func goLoadChanged(h C.uintptr_t, view, ev C.int, uri *C.char) {
	engineOf(h).events.LoadChanged(host.View(view), loadEvents[ev], C.GoString(uri))
}

//export goLoadFailed
func goLoadFailed(h C.uintptr_t, view C.int, uri *C.char, code C.int, msg *C.char) {
	engineOf(h).events.LoadFailed(host.View(view), C.GoString(uri), int(code), C.GoString(msg))
}

var terminations = map[C.int]host.Termination{
	C.WEBKIT_WEB_PROCESS_CRASHED:               host.TerminationCrashed,
	C.WEBKIT_WEB_PROCESS_EXCEEDED_MEMORY_LIMIT: host.TerminationMemory,
	C.WEBKIT_WEB_PROCESS_TERMINATED_BY_API:     host.TerminationByHost,
}

//export goWebProcessTerminated
func goWebProcessTerminated(h C.uintptr_t, reason C.int) {
	engineOf(h).events.WebProcessTerminated(terminations[reason])
}

//export goResponsive
func goResponsive(h C.uintptr_t, ok C.int) { engineOf(h).events.WebProcessResponsive(ok != 0) }

//export goUserInput
func goUserInput(h C.uintptr_t) { engineOf(h).events.UserInput(time.Now()) }

//export goScriptMessage
func goScriptMessage(h C.uintptr_t, view C.int, msg *C.char) {
	engineOf(h).events.ScriptMessage(host.View(view), C.GoString(msg))
}

//export goResourceLoaded
func goResourceLoaded(h C.uintptr_t, method, uri, reqHeaders *C.char, status C.int, respHeaders, mime *C.char, size C.longlong,
	started, responded, finished C.longlong, errMsg *C.char) {
	r := host.Resource{Method: strings.ToUpper(C.GoString(method)), URL: C.GoString(uri),
		RequestHeaders: parseHeaderLines(C.GoString(reqHeaders)), Status: int(status),
		ResponseHeaders: parseHeaderLines(C.GoString(respHeaders)), MimeType: C.GoString(mime), Size: int64(size),
		Started: time.UnixMicro(int64(started)), Finished: time.UnixMicro(int64(finished)), Error: C.GoString(errMsg)}
	if responded != 0 {
		r.Responded = time.UnixMicro(int64(responded))
	}
	engineOf(h).events.ResourceLoaded(r)
}

//export goDownloadDestination
func goDownloadDestination(h C.uintptr_t, view C.int, suggested *C.char) *C.char {
	return C.CString(engineOf(h).events.DownloadDestination(host.View(view), C.GoString(suggested)))
}

//export goDownloadFinished
func goDownloadFinished(h C.uintptr_t, view C.int, suggested, path, errMsg *C.char) {
	engineOf(h).events.DownloadFinished(host.View(view), C.GoString(suggested), C.GoString(path), C.GoString(errMsg))
}

//export goConsoleMessage
func goConsoleMessage(h C.uintptr_t, msg *C.char, n C.int) {
	engineOf(h).events.ConsoleMessage(C.GoStringN(msg, n))
}

//export goDispatch
func goDispatch(fn C.uintptr_t) {
	h := cgo.Handle(fn)
	f := h.Value().(func())
	h.Delete()
	f()
}

// The asynchronous WebKit calls carry a cgo.Handle of their Go callback.

//export goDone
func goDone(req C.uintptr_t, errMsg *C.char) {
	hd := cgo.Handle(req)
	f := hd.Value().(func(string))
	hd.Delete()
	f(C.GoString(errMsg))
}

//export goDone2
func goDone2(req C.uintptr_t, value, errMsg *C.char) {
	hd := cgo.Handle(req)
	f := hd.Value().(func(string, string))
	hd.Delete()
	f(C.GoString(value), C.GoString(errMsg))
}
