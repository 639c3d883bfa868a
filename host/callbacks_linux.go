//go:build linux && cgo

package host

// The C side's callbacks into Go (webkit_linux.c). Each runs on the GTK
// main thread and must not block.

/*
#include "webkit_linux.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"strings"
	"time"
)

func windowOf(h C.uintptr_t) *Window { return cgo.Handle(h).Value().(*Window) }

var triggers = map[C.int]Trigger{
	C.WEBKIT_NAVIGATION_TYPE_LINK_CLICKED:     TriggerLink,
	C.WEBKIT_NAVIGATION_TYPE_FORM_SUBMITTED:   TriggerForm,
	C.WEBKIT_NAVIGATION_TYPE_BACK_FORWARD:     TriggerBackFwd,
	C.WEBKIT_NAVIGATION_TYPE_RELOAD:           TriggerReload,
	C.WEBKIT_NAVIGATION_TYPE_FORM_RESUBMITTED: TriggerResubmit,
	C.WEBKIT_NAVIGATION_TYPE_OTHER:            TriggerOther,
}

//export goDecide
func goDecide(h C.uintptr_t, uri, method *C.char, navType, redirect, gesture, newWindow C.int, frame *C.char) C.int {
	n := Navigation{
		URL: C.GoString(uri), Method: strings.ToUpper(C.GoString(method)), Trigger: triggers[navType],
		Redirect: redirect != 0, UserGesture: gesture != 0, NewWindow: newWindow != 0, Frame: C.GoString(frame),
	}
	if windowOf(h).onDecide(n) {
		return 0
	}
	return 1
}

//export goCreate
func goCreate(h C.uintptr_t, uri *C.char, gesture C.int) {
	windowOf(h).onDecide(Navigation{
		URL: C.GoString(uri), Method: "GET", Trigger: TriggerWindowOpen, UserGesture: gesture != 0, NewWindow: true,
	})
}

//export goLoadChanged
func goLoadChanged(h C.uintptr_t, ev C.int, uri *C.char) {
	windowOf(h).onLoadChanged(int(ev), C.GoString(uri))
}

//export goLoadFailed
func goLoadFailed(h C.uintptr_t, uri *C.char, code C.int, msg *C.char) {
	windowOf(h).emit(Event{Kind: EventLoadFailed, URL: C.GoString(uri), Detail: fmt.Sprintf("%d %s", int(code), C.GoString(msg))})
}

//export goWebProcessTerminated
func goWebProcessTerminated(h C.uintptr_t, reason C.int) { windowOf(h).onTerminated(int(reason)) }

//export goResponsive
func goResponsive(h C.uintptr_t, ok C.int) { windowOf(h).onResponsive(ok != 0) }

//export goUserInput
func goUserInput(h C.uintptr_t) { windowOf(h).gestures.Input(time.Now()) }

//export goLauncherDecide
func goLauncherDecide(h C.uintptr_t, uri *C.char, newWindow, gesture C.int) C.int {
	if windowOf(h).onLauncherDecide(C.GoString(uri), newWindow != 0, gesture != 0) {
		return 0
	}
	return 1
}

//export goLauncherLoaded
func goLauncherLoaded(h C.uintptr_t, uri *C.char) { windowOf(h).onLauncherLoaded(C.GoString(uri)) }

//export goBridgeMessage
func goBridgeMessage(h C.uintptr_t, msg *C.char) { windowOf(h).onBridgeMessage(C.GoString(msg)) }

//export goHostMessage
func goHostMessage(h C.uintptr_t, msg *C.char) { windowOf(h).onHostMessage(C.GoString(msg)) }

//export goDispatch
func goDispatch(fn C.uintptr_t) {
	h := cgo.Handle(fn)
	f := h.Value().(func())
	h.Delete()
	f()
}

//export goHostLoaded
func goHostLoaded(h C.uintptr_t) {
	w := windowOf(h)
	select {
	case <-w.hostReady:
	default:
		close(w.hostReady)
	}
}

// The asynchronous WebKit calls carry a cgo.Handle of their Go callback.

//export goFilterDone
func goFilterDone(req C.uintptr_t, errMsg *C.char) { callOnce1(req, C.GoString(errMsg)) }

//export goCookieAdded
func goCookieAdded(req C.uintptr_t, errMsg *C.char) { callOnce1(req, C.GoString(errMsg)) }

//export goSnapshotDone
func goSnapshotDone(req C.uintptr_t, errMsg *C.char) { callOnce1(req, C.GoString(errMsg)) }

//export goEvalDone
func goEvalDone(req C.uintptr_t, value, errMsg *C.char) {
	callOnce2(req, C.GoString(value), C.GoString(errMsg))
}

//export goCookiesGot
func goCookiesGot(req C.uintptr_t, header, errMsg *C.char) {
	callOnce2(req, C.GoString(header), C.GoString(errMsg))
}

func callOnce2(req C.uintptr_t, a, b string) {
	hd := cgo.Handle(req)
	f := hd.Value().(func(string, string))
	hd.Delete()
	f(a, b)
}

func callOnce1(req C.uintptr_t, s string) {
	hd := cgo.Handle(req)
	f := hd.Value().(func(string))
	hd.Delete()
	f(s)
}
