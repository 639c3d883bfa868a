//go:build linux && cgo && webkit2_40

package webkitgtk

// The WebKitGTK API of this build: 4.0 (libsoup 2), for a distribution
// that still ships it (Debian 12, Ubuntu 22.04), picked with the build tag
// webkit2_40 (api41.go has the default, 4.1; docs/webkitgtk.md, "WebKitGTK
// 4.0 and 4.1"). Without webkit2gtk-4.0 the build stops at pkg-config:
// "Package webkit2gtk-4.0 was not found" (Debian package
// libwebkit2gtk-4.0-dev; or build without the tag, for 4.1).

/*
#cgo pkg-config: gtk+-3.0 webkit2gtk-4.0
*/
import "C"

// buildAPI is the WebKitGTK API this build asks pkg-config for.
const buildAPI = "4.0"
