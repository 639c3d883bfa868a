package devapp

import (
	"encoding/json"
	"fmt"

	"github.com/miniapp-host/miniapp-host/privatefile"
)

// Ready is what `miniapp-host dev --ready-file FILE` writes once the
// Miniapp is registered and launched, so that CI and scripts can drive the
// run (docs/your-miniapp.md, "Scripts and CI").
type Ready struct {
	Origin      string `json:"origin"`
	ID          string `json:"id"`
	Issuer      string `json:"issuer"`
	Dashboard   string `json:"dashboard"`
	Launcher    string `json:"launcher"`
	OperatorKey string `json:"operator_key"`
	// ClientSecret is the confidential client's secret, when `dev`
	// created it: the Miniapp's backend needs it.
	ClientSecret string     `json:"client_secret,omitempty"`
	Automation   Automation `json:"automation"`
	// Outcome is the resolver's outcome of the first launch (accepted,
	// rejected, undecided).
	Outcome string `json:"outcome"`
}

// Automation is how to reach the playground's automation channel
// (docs/automation.md).
type Automation struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// WriteReady writes r to path as the host writes every file it leaves
// for its user (package privatefile): mode 0600, whole or not at all, and
// never through a symbolic link (a link at path is refused, its target
// left as it was).
func WriteReady(path string, r Ready) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("devapp: ready file: %w", err)
	}
	if err := privatefile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("devapp: ready file: %w", err)
	}
	return nil
}
