//go:build linux && cgo && !webkit2_40

package webkitgtk

// The WebKitGTK API of this build: 4.1 (libsoup 3), what current
// distributions ship. The build tag webkit2_40 picks 4.0 instead
// (api40.go; docs/webkitgtk.md, "WebKitGTK 4.0 and 4.1"). These are the
// package's only pkg-config lines, and nothing else the binary links asks
// for a WebKitGTK, so the process has one WebKitGTK and one libsoup.
// Without webkit2gtk-4.1 the build stops at pkg-config: "Package
// webkit2gtk-4.1 was not found" (Debian and Ubuntu package
// libwebkit2gtk-4.1-dev; or build with -tags webkit2_40).

/*
#cgo pkg-config: gtk+-3.0 webkit2gtk-4.1
*/
import "C"

// buildAPI is the WebKitGTK API this build asks pkg-config for.
const buildAPI = "4.1"
