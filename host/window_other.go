//go:build !(linux && cgo)

package host

import (
	"context"
	"net/url"

	"github.com/miniapp-host/miniapp-host/bridge"
)

// HasWebview reports whether this build can open windows.
const HasWebview = false

// Window is the desktop window; this build cannot make one.
type Window struct{}

// NewWindow returns ErrNoWebview in this build.
func NewWindow(Options) (*Window, error) { return nil, ErrNoWebview }

// Run does nothing in this build.
func (*Window) Run() {}

// Terminate does nothing in this build.
func (*Window) Terminate() {}

// Dispatch runs nothing in this build.
func (*Window) Dispatch(func()) {}

// OnEvent registers nothing in this build.
func (*Window) OnEvent(func(Event)) func() { return func() {} }

// Mount returns ErrNoWebview in this build.
func (*Window) Mount(context.Context, Miniapp) error { return ErrNoWebview }

// ShowRejection does nothing in this build.
func (*Window) ShowRejection(string, string) {}

// Navigate does nothing in this build.
func (*Window) Navigate(string) {}

// TopURL is nil in this build.
func (*Window) TopURL() *url.URL { return nil }

// Deliver does nothing in this build.
func (*Window) Deliver(func(bridge.Document) string) {}

// ShowLauncher returns ErrNoWebview in this build.
func (*Window) ShowLauncher(string) error { return ErrNoWebview }

// Open returns ErrNoWebview in this build.
func Open(context.Context, OpenConfig) error { return ErrNoWebview }
