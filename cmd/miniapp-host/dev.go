package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/miniapp-host/miniapp-host/devapp"
	"github.com/miniapp-host/miniapp-host/playground"
)

// runDev is `miniapp-host dev DIR|URL`: the playground with the developer's
// own Miniapp registered, launched and reloaded on every save
// (docs/your-miniapp.md).
func runDev(ctx context.Context, e env) int {
	fs := newFlagSet("dev", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host dev [--app-addr HOST:PORT] [--ready-file FILE] [playground flags] DIR|URL")
		fmt.Fprintln(w, "serves DIR (or uses the origin of URL, a dev server you run), registers the client its miniapp.webmanifest")
		fmt.Fprintln(w, "names on the embedded server, and opens it in the playground's window; a save reloads it, a changed manifest")
		fmt.Fprintln(w, "is checked again. Runs until the window is closed or Ctrl-C.")
	})
	f := playgroundFlags(fs, e)
	appAddr := fs.String("app-addr", "", "where DIR is served (default: the launcher's port + 8; port 0: a free port)")
	ready := fs.String("ready-file", "", "once ready, write the run's addresses and keys there as JSON (mode 0600), for scripts and CI")
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if err := f.log.check(); err != nil {
		return usageError(e, "dev", err.Error())
	}
	l, err := f.readLaunch()
	if err != nil {
		return usageError(e, "dev", err.Error())
	}
	if len(args) == 0 && l.profile.Dir != "" {
		args = []string{l.profile.Dir}
	}
	if l.profile.Origin != "" {
		return usageError(e, "dev", fmt.Sprintf("--profile %s opens a published Miniapp (%s): use miniapp-host open --profile %s", l.profile.Name, l.profile.Origin, l.profile.Name))
	}
	if len(args) != 1 {
		return usageError(e, "dev", "give one folder (made by `miniapp-host new DIR`, or your own) or the URL of your dev server")
	}
	cfg, ok := devAppConfig(e, f, args[0], *appAddr)
	if !ok {
		return exitUsage
	}
	app, err := devapp.Start(cfg)
	if err != nil {
		devStartFailed(e, f, err)
		return exitUsage
	}
	defer app.Close()
	fmt.Fprintf(e.stdout, "%-22s%s\n", "your Miniapp", app.Origin())
	return f.run(ctx, e, "dev", devStarted(ctx, e, app, *ready))
}

// devAppConfig is what dev serves: the origin of a dev server's URL, or
// the folder arg on appAddr (default the playground's Dev address), a
// port none of the playground's parts has; false once that is reported.
func devAppConfig(e env, f *pgFlags, arg, appAddr string) (devapp.Config, bool) {
	cfg := devapp.Config{}
	if strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://") {
		cfg.URL = arg
		return cfg, true
	}
	cfg.Dir, cfg.Addr = arg, appAddr
	if cfg.Addr == "" {
		cfg.Addr = f.addrs().Dev
	}
	// Checked before anything listens: the folder's port must be
	// none of the playground's.
	f.devAddr = cfg.Addr
	if err := f.addrs().Check(); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: dev:", err)
		fmt.Fprintln(e.stderr, "miniapp-host: dev: give --app-addr another port, or --app-addr 127.0.0.1:0 for a free one")
		return cfg, false
	}
	return cfg, true
}

// devStartFailed reports a Miniapp that could not be served, with a hint
// for a folder that is missing and a port that is taken.
func devStartFailed(e env, f *pgFlags, err error) {
	fmt.Fprintln(e.stderr, "miniapp-host: dev:", err)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(e.stderr, "miniapp-host: dev: `miniapp-host new DIR` writes a Miniapp to start from")
	}
	if oe := (*net.OpError)(nil); errors.As(err, &oe) && oe.Op == "listen" {
		fmt.Fprintln(e.stderr, "miniapp-host: dev:", startHint(err, f.addrs()))
	}
}

// devStarted runs the developer's Miniapp in a started playground: it
// says when config.json names another issuer than the one served, and
// prints each dev event, writing the ready file (if any) at the first
// launch.
func devStarted(ctx context.Context, e env, app *devapp.App, ready string) func(p *playground.Playground) {
	var once sync.Once
	return func(p *playground.Playground) {
		// The folder's config.json is served with this playground's
		// issuer (Playground.Dev): say so when the file names another.
		if iss, err := app.ConfigIssuer(); err == nil && iss != "" && iss != p.Services().Issuer {
			fmt.Fprintf(e.stdout, "%-22s%s\n", "config.json issuer", fmt.Sprintf("served as %s, this playground's (the file names %s and is left as it is)",
				p.Services().Issuer, devapp.Quote(iss)))
		}
		p.Dev(ctx, app, func(ev playground.DevEvent) {
			// The ready file first: whoever reads the launch line finds it.
			if ev.Kind == playground.DevLaunched && ready != "" {
				once.Do(func() {
					if err := devapp.WriteReady(ready, readyOf(p, app, ev)); err != nil {
						fmt.Fprintln(e.stderr, "miniapp-host: dev:", err)
					}
				})
			}
			ev.WriteText(e.stdout)
		})
	}
}

func readyOf(p *playground.Playground, app *devapp.App, ev playground.DevEvent) devapp.Ready {
	s := p.Services()
	return devapp.Ready{Origin: app.Origin().String(), ID: ev.Launch.Report.ID, Issuer: s.Issuer, Dashboard: s.Dashboard,
		Launcher: p.LauncherURL(), OperatorKey: p.OperatorKey(), Outcome: string(ev.Launch.Report.Outcome),
		Automation: devapp.Automation{URL: p.AutomationURL(), Token: p.AutomationToken()}}
}
