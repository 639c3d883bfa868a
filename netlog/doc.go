// Package netlog keeps the network log of consent flows: every HTTP
// exchange that makes up a flow (the caught authorization request decoded,
// the host's native-consent calls, the confidential callback, the
// backend's token exchange and grant read, the Miniapp view's own
// requests), grouped per flow and per launch, with secrets redacted before
// anything is stored, and exported as JSON or as HAR 1.2
// (http://www.softwareishard.com/blog/har-12-spec/).
//
// The log is bounded (Config): a window stays open for hours, so flows,
// entries per flow, headers and bodies are capped, the oldest dropped
// first. Every method of a nil *Log, *Launch or *Flow does nothing, so
// that the host records unconditionally, as it publishes on a nil bus.
package netlog
