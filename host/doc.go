// Package host is Miniapp Host's desktop shell: one GTK window with the
// Miniapp's WebKitGTK view and, layered over it, the host's own view for
// consent, rejections and crashes.
//
// It owns what a Miniapp cannot be trusted with:
//   - the navigation policy ([Policy]), decided natively in Go through the
//     one origin policy for every navigation and new-window action of the
//     view, subframes included, plus window.open (the view's create
//     signal) and a content filter for fetch/XHR to the authorization
//     endpoint;
//   - the consent view, a second WebKitWebView with its own content
//     manager, loaded from assets/host with load_html (no network origin),
//     which the Miniapp's pages have no reference to;
//   - completion of an authorization (docs/architecture.md, "The three ways an
//     authorization completes"): the confidential callback request with the
//     view's cookies and the copy of its Set-Cookie into the view, the
//     navigation to redirect_uri for public clients, and the bridge's
//     authorize;
//   - the bridge transport: the top frame's bound function and the
//     delivery of replies (package bridge gates and dispatches), and the
//     native input that openExternal requires.
//
// The playground's window ([NewPlaygroundWindow]) adds the launcher in a
// page of its own and implements playground.Opener.
//
// All cgo is in files built with linux && cgo; see webkit_linux.c for the
// C side. Other builds compile a stub whose NewWindow returns
// ErrNoWebview. Threading: WebKitGTK runs on the main thread, which
// package webkitgtk locks in its init; every call from another goroutine goes
// through Dispatch and the main thread never waits for a goroutine.
package host
