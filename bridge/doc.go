// Package bridge owns what a Miniapp's page and a test driver can say to the
// host, and the checks that stand between them.
//
// The page side is the JavaScript API window.miniapp (assets/bridge), which
// talks to Go through one bound function and one receive function using a
// small versioned JSON protocol (protocol.go). A [Dispatcher] decodes each
// message strictly, gates it (main frame, per-view key, the Miniapp's origin
// at call time and again at reply time, the same document at reply time) and
// calls the [Host]. The gating is the security core of the bridge and lives
// in one place, dispatcher.go.
//
// The test-driver side is the automation channel: a [Bus] of host events
// (resolution stages, navigation decisions, consent, codes and tokens,
// cookie sync, bridge calls) and an [Automation] WebSocket server on
// loopback that streams them and routes commands to a [Controller].
//
// The package has no cgo and knows nothing of the webview: package host
// implements [Host], [View] and [Controller], so everything here is tested
// without a display. docs/bridge.md and docs/automation.md describe both
// protocols for page authors and test authors.
package bridge
