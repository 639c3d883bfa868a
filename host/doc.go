// Package host is Miniapp Host's desktop shell: one window with the
// Miniapp's web view and, layered over it, the host's own view for
// consent, rejections and crashes, driven through an [Engine].
//
// It owns what a Miniapp cannot be trusted with:
//   - the navigation policy ([Policy]), decided natively in Go through the
//     one origin policy for every navigation and new-window action of the
//     view, subframes included, plus window.open (the engine's new-window
//     action) and a content filter for fetch/XHR to the authorization
//     endpoint;
//   - the consent view, a second web view with its own content manager,
//     loaded from assets/host as a document without a network origin,
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
// [NewWindow] makes the [Window] with the engine a [NewEngine] makes, and
// [Open] runs `miniapp-host open` in one. The engine reports what its views
// do through [EngineEvents], which the core implements with a type of its
// own: the engine never holds the Window (docs/host.md, "Core and engine").
// The playground's window (playground.NewWindow, in package playground)
// wraps a Window made with Options.Launcher, which adds the launcher's
// page.
//
// This package has no cgo and imports no engine. The WebKitGTK engine is
// package host/webkitgtk (its C side in webkit.c); a build without cgo, or
// not for Linux, compiles a webkitgtk.New that returns [ErrNoWebview].
// Package host/hosttest is a fake engine for the core's tests. Threading:
// the engine's UI loop runs on the main goroutine (package webkitgtk locks
// it in its init); every call from another goroutine goes through
// Dispatch, and the UI thread never waits for a goroutine.
package host
