//go:build !(linux && cgo)

package webkitgtk

import "github.com/miniapp-host/miniapp-host/host"

// Available reports whether this build has an engine.
const Available = false

// New returns host.ErrNoWebview in this build.
func New(host.EngineConfig, host.EngineEvents) (host.Engine, error) { return nil, host.ErrNoWebview }

var _ host.NewEngine = New

// API is "" in this build: it links no WebKitGTK.
func API() string { return "" }

// BuildAPI is "" in this build: it links no WebKitGTK.
func BuildAPI() string { return "" }
