package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// OpenConfig is what `miniapp-host open` passes to [Open].
type OpenConfig struct {
	Origin, ID string
	// Dashboard is {dashboard_url}, where the resolver reads the client.
	Dashboard string
	// Service is the authorization service's issuer URL.
	Service string
	// Subject is who signs in on the consent screen.
	Subject string
	// HostClientID and HostSecret are the host's own credential for the
	// native-consent API.
	HostClientID, HostSecret string
	// Ephemeral gives the Miniapp a throw-away WebKit data folder.
	Ephemeral bool
	// DataRoot holds the Miniapps' data folders; the user's data directory
	// (miniapp-host/miniapps) when empty.
	DataRoot string
	// HostVersion is reported to pages by getContext.
	HostVersion string
	// HTTP is the client for discovery, resolution and the callback;
	// http.DefaultClient when nil.
	HTTP *http.Client
	// Log receives one line per step; io.Discard when nil.
	Log io.Writer
	// OnResolved is told the resolver's answer (a *resolver.Miniapp, or a
	// *resolver.Rejection or *resolver.Undecided error) before the
	// Miniapp is mounted or the rejection shown.
	OnResolved func(app *resolver.Miniapp, err error)
	// OnEvent receives every event of the window.
	OnEvent func(Event)
	// Automation starts the automation channel (docs/automation.md) on
	// AutomationAddr (a free loopback port when empty) and writes its URL
	// and token to Log.
	Automation     bool
	AutomationAddr string
}

// publishReport sends the resolver's stages to the automation channel.
func publishReport(pub bridge.Publisher, cfg OpenConfig, err error, app *resolver.Miniapp) {
	var rep *resolver.Report
	var rej *resolver.Rejection
	var und *resolver.Undecided
	switch {
	case err == nil && app != nil:
		rep = app.Report
	case errors.As(err, &rej):
		rep = rej.Report
	case errors.As(err, &und):
		rep = und.Report
	}
	if rep == nil || pub == nil {
		return
	}
	for _, st := range rep.Stages {
		if st.Outcome == resolver.OutcomeSkipped {
			continue
		}
		ev := bridge.ResolveStageEvent{Origin: cfg.Origin, ID: cfg.ID, Stage: string(st.Stage), OK: st.Outcome == resolver.OutcomeOK}
		if len(st.Reasons) > 0 {
			ev.Code, ev.Pointer, ev.Hint = st.Reasons[0].Code, st.Reasons[0].Pointer, st.Reasons[0].Hint
		}
		pub.Publish(ev)
	}
}

// dataDir returns the Miniapp's own WebKit data folder, named after its
// origin and id, and a cleanup for an ephemeral one.
func (c *OpenConfig) dataDir() (string, func(), error) {
	if c.Ephemeral {
		d, err := os.MkdirTemp("", "miniapp-host-ephemeral-")
		if err != nil {
			return "", nil, fmt.Errorf("host: data dir: %w", err)
		}
		return d, func() { os.RemoveAll(d) }, nil
	}
	root := c.DataRoot
	if root == "" {
		base := os.Getenv("XDG_DATA_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", nil, fmt.Errorf("host: data dir: %w", err)
			}
			base = filepath.Join(home, ".local", "share")
		}
		root = filepath.Join(base, "miniapp-host", "miniapps")
	}
	// The canonical origin and the id name the folder; a hash keeps
	// any character of either out of the path.
	o, err := origin.Parse(c.Origin)
	name := c.Origin
	if err == nil {
		name = o.String()
	}
	sum := sha256.Sum256([]byte(name + "\n" + c.ID))
	label := strings.NewReplacer("://", "_", ":", "_", "/", "_").Replace(name)
	if len(label) > 60 {
		label = label[:60]
	}
	d := filepath.Join(root, label+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", nil, fmt.Errorf("host: data dir: %w", err)
	}
	return d, func() {}, nil
}

// rejectionText says why a Miniapp was not opened, for the host's view.
func rejectionText(err error) (title, text string) {
	var b strings.Builder
	switch e := err.(type) {
	case *resolver.Rejection:
		title = "This Miniapp was rejected"
		fmt.Fprintf(&b, "Stage %s refused it; it was not loaded.\n", e.Stage)
		for _, r := range e.Reasons {
			fmt.Fprintf(&b, "%s/%s", r.Stage, r.Code)
			if r.Pointer != "" {
				fmt.Fprintf(&b, " at %s", r.Pointer)
			}
			fmt.Fprintf(&b, ": %s\n", r.Message)
			if r.Hint != "" {
				fmt.Fprintf(&b, "Hint: %s\n", r.Hint)
			}
		}
	case *resolver.Undecided:
		title = "This Miniapp could not be checked"
		fmt.Fprintf(&b, "Stage %s could not get an answer (%s): %s\nNothing was rejected; try again when the server answers.", e.Stage, e.Code, e.Message)
	default:
		title = "This Miniapp could not be opened"
		b.WriteString(err.Error())
	}
	return title, strings.TrimSpace(b.String())
}
