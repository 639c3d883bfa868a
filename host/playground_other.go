//go:build !(linux && cgo)

package host

import (
	"context"

	"github.com/miniapp-host/miniapp-host/playground"
)

// PlaygroundWindow is the playground's desktop window; this build cannot
// make one.
type PlaygroundWindow struct{}

var _ playground.Opener = (*PlaygroundWindow)(nil)

// NewPlaygroundWindow returns ErrNoWebview in this build.
func NewPlaygroundWindow(PlaygroundConfig) (*PlaygroundWindow, error) { return nil, ErrNoWebview }

// Window is nil in this build.
func (*PlaygroundWindow) Window() *Window { return nil }

// Mount returns ErrNoWebview in this build.
func (*PlaygroundWindow) Mount(context.Context, playground.OpenRequest) (string, error) {
	return "", ErrNoWebview
}

// ResetStorage returns ErrNoWebview in this build.
func (*PlaygroundWindow) ResetStorage(context.Context, string, string) error { return ErrNoWebview }
