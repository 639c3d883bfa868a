// Package webkitgtk is Miniapp Host's engine for Linux: WebKitGTK (API 4.1,
// or 4.0 with the build tag webkit2_40) in a GTK window it makes itself. It implements
// host.Engine and nothing else: the core (package host) decides every
// navigation, consent and completion; this package executes them and
// reports what WebKit does. Every line of cgo of the project lives here.
//
// Which WebKitGTK API it links is chosen by a build tag: api41.go has the
// pkg-config line of a plain build, api40.go that of webkit2_40
// (docs/webkitgtk.md, "WebKitGTK 4.0 and 4.1"). Why JavaScriptCore's thread-suspend
// signal is kept off Go's stacks is in webkit.c and docs/webkitgtk.md,
// "Signals". Builds without cgo, or not for Linux, compile a New that
// returns host.ErrNoWebview.
package webkitgtk
