package demoapps

// The demo Miniapps as the seed world registers them
// (assets/authserver/seed.json: each id is also its client id, and its
// allowed origin is http:// + its address) and as the playground serves
// them with its default addresses (docs/playground.md): commands that
// name a demo in their help or hints use these, so that the id and the
// port they suggest belong together.
const (
	PublicID         = "demo-public"
	PublicAddr       = "127.0.0.1:8701"
	ConfidentialID   = "demo-confidential"
	ConfidentialAddr = "127.0.0.1:8702"
	// FAPIID is the FAPI demo (ServeFAPI); the seed world does not hold
	// its client, which the playground registers with the demo's key.
	FAPIID   = "demo-fapi"
	FAPIAddr = "127.0.0.1:8707"
)
