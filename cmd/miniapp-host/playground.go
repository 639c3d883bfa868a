package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/playground"
)

// defaultLauncherAddr is the launcher's address; the demo Miniapps take the
// next two ports (8701 and 8702, where the seed world registers them), the
// broken ones the four after, and the automation channel the launcher's
// port + 9.
const defaultLauncherAddr = "127.0.0.1:8700"

// runPlayground is `miniapp-host playground` (what `make run` starts): the
// reference server, the demo and broken Miniapps, the automation channel
// and the launcher page, until interrupted.
func runPlayground(ctx context.Context, e env) int {
	fs := flag.NewFlagSet("playground", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	addr := fs.String("addr", authserver.DefaultServiceAddr, "service address; the dashboard, signing and invoicing roles take the next three ports (port 0: free ports for all)")
	launcher := fs.String("launcher-addr", defaultLauncherAddr, "launcher address; the demo Miniapps take the next two ports, the broken ones the four after, the automation channel port+9 (port 0: free ports for all)")
	data := fs.String("data", "", "folder of the server's database, kept between runs (default: a fresh temporary folder, removed on exit)")
	browser := fs.Bool("browser", false, "open the launcher in the user's browser (xdg-open)")
	verbose := fs.Bool("v", false, "log internal errors to stderr")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: miniapp-host playground [--addr HOST:PORT] [--launcher-addr HOST:PORT] [--data DIR] [--browser] [-v]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(e.args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	cfg := playground.Config{DataDir: *data, Addrs: playground.Addrs{
		Service: *addr, Dashboard: nextPort(*addr, 1), Signing: nextPort(*addr, 2), Invoicing: nextPort(*addr, 3),
		Launcher: *launcher, Public: nextPort(*launcher, 1), Confidential: nextPort(*launcher, 2),
		Automation: nextPort(*launcher, 9),
	}}
	for i := range playground.BrokenKinds() {
		cfg.Addrs.Broken = append(cfg.Addrs.Broken, nextPort(*launcher, 3+i))
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(e.stderr, nil))
	}
	// Package host will offer a playground.Opener (a desktop window);
	// until it does, the playground runs without one and says so.
	p, err := playground.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		fmt.Fprintln(e.stderr, "miniapp-host: a port may be taken; --addr 127.0.0.1:0 --launcher-addr 127.0.0.1:0 picks free ones")
		return exitUndecided
	}
	printPlayground(e, p, *data)
	if *browser {
		if err := exec.Command("xdg-open", p.LauncherURL()).Start(); err != nil {
			fmt.Fprintln(e.stderr, "miniapp-host: could not open a browser (xdg-open):", err)
		}
	}
	<-ctx.Done()
	if err := p.Close(); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: stopping:", err)
	}
	return exitOK
}

// printPlayground prints every address of a running playground.
func printPlayground(e env, p *playground.Playground, data string) {
	w := e.stdout
	row := func(k, v string) { fmt.Fprintf(w, "%-22s%s\n", k, v) }
	fmt.Fprintln(w, "Miniapp Host playground")
	fmt.Fprintln(w)
	row("launcher", p.LauncherURL())
	row("", "(the link carries the automation token: show it only to yourself)")
	row("automation channel", p.AutomationURL())
	row("automation token", p.AutomationToken())
	row("", `subprotocols "miniapp-automation.v1, token.<token>" (docs/automation.md)`)
	row("screenshots", "the automation channel's screenshot command returns a PNG; the end-to-end tests write theirs to artifacts/playground/")
	fmt.Fprintln(w)
	s := p.Services()
	for _, l := range [][2]string{
		{"issuer", s.Issuer}, {"authorization", s.Authorization}, {"token", s.Token}, {"base_url", s.BaseURL},
		{"grant endpoint", s.Grant}, {"native consent", s.Native}, {"dashboard_url", s.Dashboard},
		{"signing_base_url", s.SigningBaseURL}, {"invoicing_base_url", s.InvoicingBaseURL},
	} {
		row(l[0], l[1])
	}
	if data == "" {
		data = "a temporary folder, removed on exit"
	}
	row("database", data)
	fmt.Fprintln(w)
	list, err := p.Miniapps(context.Background())
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
	}
	for _, m := range list {
		what := m.Kind
		if m.Expect != nil {
			what += fmt.Sprintf(", rejected at %s with %s", m.Expect.Stage, m.Expect.Code)
		}
		fmt.Fprintf(w, "%-22s%s  --id %s  (%s)\n", m.Kind+" Miniapp", m.Origin, m.ID, what)
	}
	fmt.Fprintln(w)
	var subs []string
	for _, sub := range p.Subjects() {
		subs = append(subs, sub.ID)
	}
	row("subjects", strings.Join(subs, ", ")+" (pick one on the sign-in page, or in the launcher for the window)")
	fmt.Fprintln(w, "\nNo desktop window in this build yet: launches are resolved and reported in the launcher;")
	fmt.Fprintln(w, "open a demo Miniapp in a browser tab from its report. Ctrl-C stops everything.")
}
