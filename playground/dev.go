package playground

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/devapp"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// KindDev is the launcher's kind of a developer's own Miniapp, run by
// `miniapp-host dev` (Playground.Dev).
const KindDev = "dev"

// Reloader is an Opener that reloads the mounted Miniapp's page in place,
// keeping what the view keeps (cookies, storage): `dev` reloads on a save.
type Reloader interface {
	Reload(ctx context.Context) error
}

// RejectionShower is an Opener that shows, in place of the Miniapp, why a
// launch was rejected: `dev` shows the staged report in the window.
type RejectionShower interface {
	ShowRejection(title, text string)
}

// Dev events, as DevEvent.Kind.
const (
	DevRegistered = "registered" // the client was created or updated from the manifest
	DevLaunched   = "launched"   // the Miniapp was resolved (Launch says with what outcome)
	DevReloaded   = "reloaded"   // the view was reloaded after a change
	DevChanged    = "changed"    // files changed and there is no window to reload
	DevFailed     = "failed"     // a step failed; Err says why, and dev keeps watching
)

// DevEvent is one step of Playground.Dev, for the terminal.
type DevEvent struct {
	Kind string
	// Changed are the files of the change that led to this step.
	Changed []string
	// Client is the client registered (DevRegistered); its ClientSecret
	// is set only when it is new.
	Client *authserver.Credential
	// Launch is the launch's result (DevLaunched).
	Launch *LaunchResult
	Err    error
}

// Dev runs a developer's own Miniapp: it registers the OAuth client its
// manifest names (RegisterDevClient: public, or confidential when
// oauth.auth_url is declared; redirect URIs start_url and /callback on its
// origin; its origin as the one allowed origin), launches it, and then, for
// every change under its folder, registers and launches it again when the
// manifest changed or the last launch did not open it, else reloads the
// view. A step that fails is reported and the next change tries again. It
// returns when ctx ends or the app stops watching; report receives every
// step, in order, from this goroutine.
func (p *Playground) Dev(ctx context.Context, app *devapp.App, report func(DevEvent)) {
	// The folder's config.json names the issuer a browser tab signs in
	// at: served as this playground's, on whatever port it listens
	// (docs/your-miniapp.md, "config.json under dev").
	app.UseIssuer(p.Services().Issuer)
	opened := p.devLaunch(ctx, app, nil, report)
	changes := app.Changes()
	for {
		var c devapp.Change
		var ok bool
		select {
		case <-ctx.Done():
			return
		case c, ok = <-changes:
			if !ok {
				return
			}
		}
		if c.Manifest() || !opened {
			opened = p.devLaunch(ctx, app, c.Paths, report)
			continue
		}
		r, can := p.cfg.Opener.(Reloader)
		if !can {
			report(DevEvent{Kind: DevChanged, Changed: c.Paths})
			continue
		}
		if err := r.Reload(ctx); err != nil {
			report(DevEvent{Kind: DevFailed, Changed: c.Paths, Err: err})
			continue
		}
		report(DevEvent{Kind: DevReloaded, Changed: c.Paths})
	}
}

// devLaunch registers the app's client from its manifest and launches it;
// it reports whether the Miniapp is open in the window now.
func (p *Playground) devLaunch(ctx context.Context, app *devapp.App, changed []string, report0 func(DevEvent)) bool {
	// The change is said once, with the step's first event.
	report := func(ev DevEvent) {
		ev.Changed, changed = changed, nil
		report0(ev)
	}
	man, err := app.ReadManifest(ctx)
	m := man.Members
	id := m.ID
	if err == nil && (m.ID == "" || m.OAuth.ClientID == "") {
		err = errors.New("playground: the manifest has no id or no oauth.client_id: nothing to register (the report says what is missing)")
	}
	if err != nil {
		report(DevEvent{Kind: DevFailed, Err: err})
	} else {
		cred, err := p.RegisterDevMiniapp(ctx, app, man)
		if err != nil {
			report(DevEvent{Kind: DevFailed, Err: err})
		} else {
			report(DevEvent{Kind: DevRegistered, Client: &cred})
		}
	}
	if id == "" {
		// The resolver needs an id to ask for; without one in the
		// manifest, the report of the last good one, or of none, says why.
		id = p.devID(app)
	}
	p.mu.Lock()
	p.dev = &Entry{ID: id, Name: m.Name, Origin: app.Origin().String(), Kind: KindDev,
		Description: "Your own Miniapp (miniapp-host dev): saved files reload it, a changed manifest is checked again."}
	p.mu.Unlock()
	res, err := p.Launch(ctx, app.Origin().String(), id)
	if err != nil {
		report(DevEvent{Kind: DevFailed, Err: err})
		return false
	}
	report(DevEvent{Kind: DevLaunched, Launch: res})
	if res.Report.Outcome != resolver.OutcomeAccepted {
		if rs, ok := p.cfg.Opener.(RejectionShower); ok {
			var text bytes.Buffer
			res.Report.WriteText(&text)
			rs.ShowRejection("Your Miniapp was not opened: fix it and save", text.String())
		}
	}
	return res.Window.Opened
}

// devID is the id to launch a Miniapp whose manifest names none: the last
// one that did.
func (p *Playground) devID(app *devapp.App) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dev != nil && p.dev.ID != "" {
		return p.dev.ID
	}
	return "unnamed"
}

// RegisterDevMiniapp creates or updates, under the development project,
// the client that a Miniapp in development names in its manifest (man),
// for the origin it is served on; only from a manifest the resolver's
// checks of a manifest alone pass (resolver.CheckManifest: its form, its
// id, start_url and oauth.auth_url on the manifest's origin), so that a
// manifest the launch rejects registers nothing: its start_url, a
// redirect URI, may name any site (docs/security.md).
func (p *Playground) RegisterDevMiniapp(ctx context.Context, app *devapp.App, man devapp.Manifest) (authserver.Credential, error) {
	m := man.Members
	if _, err := p.res.CheckManifest(ctx, m.ID, man.URL, man.Body); err != nil {
		var rej *resolver.Rejection
		if errors.As(err, &rej) {
			return authserver.Credential{}, fmt.Errorf("playground: nothing registered for %s: the manifest is rejected (%s; the launch's report says why and how to fix it)",
				devapp.Quote(m.OAuth.ClientID), rejectionSummary(rej.Report))
		}
		return authserver.Credential{}, fmt.Errorf("playground: nothing registered: %w", err)
	}
	start := app.StartURL(m)
	redirects := []string{start}
	if cb := app.Origin().String() + "/callback"; cb != start {
		redirects = append(redirects, cb)
	}
	spec := authserver.ClientSpec{ID: m.OAuth.ClientID, Name: m.Name, Confidential: app.AuthURL(m) != "",
		RedirectURIs: slices.Clip(redirects), AllowedOrigins: []string{app.Origin().String()}, IDTokenAlg: "ES256"}
	return p.world.srv.RegisterDevClient(ctx, spec)
}

// WriteText writes the step for the terminal of `miniapp-host dev`: what
// changed, the client registered, the launch's outcome with its report
// when it was not accepted, or the error.
func (ev DevEvent) WriteText(w io.Writer) {
	if len(ev.Changed) > 0 {
		fmt.Fprintf(w, "changed  %s\n", strings.Join(quoteAll(ev.Changed), " "))
	}
	switch ev.Kind {
	case DevRegistered:
		c := ev.Client
		fmt.Fprintf(w, "client   %s (%s) in the development project: redirect_uris %s, allowed_origins %s\n",
			devapp.Quote(c.ClientID), c.Type, strings.Join(quoteAll(c.RedirectURIs), " "), strings.Join(quoteAll(c.AllowedOrigins), " "))
		if c.ClientSecret != "" {
			fmt.Fprintf(w, "         client secret %s (give it to the Miniapp's backend)\n", c.ClientSecret)
		}
	case DevLaunched:
		r := ev.Launch.Report
		if r.Outcome == resolver.OutcomeAccepted {
			fmt.Fprintf(w, "launch   %s: accepted; %s\n", ev.Launch.Launch, ev.Launch.Window.Message)
			return
		}
		fmt.Fprintf(w, "launch   %s: %s; fix the Miniapp and save: it is checked again\n", ev.Launch.Launch, r.Outcome)
		r.WriteText(w)
	case DevReloaded:
		fmt.Fprintln(w, "reload   the Miniapp's view reloaded")
	case DevChanged:
		fmt.Fprintln(w, "         no window to reload: reload the browser tab")
	case DevFailed:
		fmt.Fprintf(w, "error    %v\n", ev.Err)
	}
}

// quoteAll is devapp.Quote of each name: what `dev` prints of names the
// developer's folder and manifest chose.
func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = devapp.Quote(n)
	}
	return out
}

// rejectionSummary names a rejected report's first reason: stage, code and
// JSON pointer.
func rejectionSummary(r *resolver.Report) string {
	if r == nil || len(r.Reasons) == 0 {
		return "rejected"
	}
	first := r.Reasons[0]
	s := fmt.Sprintf("%s: %s", first.Stage, first.Code)
	if first.Pointer != "" {
		s += " at " + devapp.Quote(first.Pointer)
	}
	return s
}
