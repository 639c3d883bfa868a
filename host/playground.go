package host

// PlaygroundConfig configures [NewPlaygroundWindow].
type PlaygroundConfig struct {
	// Options are the window's; Events should be the playground's bus,
	// so that the window's events reach the inspector.
	Options Options
	// HostVersion is reported to pages by getContext.
	HostVersion string
}
