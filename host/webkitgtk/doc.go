// Package webkitgtk is Miniapp Host's engine for Linux: WebKitGTK (API 4.0
// or 4.1) in a window made by github.com/webview/webview_go. It implements
// host.Engine and nothing else: the core (package host) decides every
// navigation, consent and completion; this package executes them and
// reports what WebKit does. Every line of cgo of the project lives here.
//
// Which WebKitGTK API it links is chosen by pkg-config (the Makefile's
// WEBKIT_API; docs/webkitgtk.md). Why JavaScriptCore's thread-suspend
// signal is kept off Go's stacks is in webkit.c and docs/webkitgtk.md,
// "Signals". Builds without cgo, or not for Linux, compile a New that
// returns host.ErrNoWebview.
package webkitgtk
