package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/webkitgtk"
	"github.com/miniapp-host/miniapp-host/launchprofile"
	"github.com/miniapp-host/miniapp-host/playground"
	"github.com/miniapp-host/miniapp-host/redact"
)

// defaultLauncherAddr is the launcher's address; playground.Layout places
// the Miniapps and the automation channel after it (the demos on 8701 and
// 8702, where the seed world registers them; docs/playground.md, "Ports").
const defaultLauncherAddr = playground.DefaultLauncherAddr

// stopGrace is how long the window's UI loop may take to stop after a
// SIGINT or SIGTERM before the process ends without it.
const stopGrace = 3 * time.Second

// runPlayground is `miniapp-host playground` (what `make run` starts): the
// reference server, the demo and broken Miniapps, the automation channel
// and the launcher page, until interrupted.
func runPlayground(ctx context.Context, e env) int {
	fs := newFlagSet("playground", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host playground [--addr HOST:PORT] [--launcher-addr HOST:PORT] [--data DIR] [--operator-key KEY] [--browser] [--no-window] [--devtools] [-v]")
		fmt.Fprintln(w, "       [--layout side|tabs] [--device NAME|WxH@DPR] [--landscape] [--theme light|dark] [--locale TAG] [--zoom Z]")
		fmt.Fprintln(w, "       [--network slow-3g|fast-3g|offline|LATENCY/DOWN/UP] [--mock FILE] [--log-format text|json] [--log-level debug|info|warn|error]")
		fmt.Fprintln(w, "prints every address (the ports actually bound, also with port 0), then serves until the window is closed or Ctrl-C")
	})
	f := playgroundFlags(fs, e)
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(args) > 0 {
		return usageError(e, "playground", fmt.Sprintf("unexpected argument %q: every input is a flag", args[0]))
	}
	return f.run(ctx, e, "playground", nil)
}

// pgFlags are the flags of the playground, which `dev` takes too.
type pgFlags struct {
	opKey                                func() (key, source string) // --operator-key, else MINIAPP_HOST_OPERATOR_KEY
	addr, launcher, data, layout         *string
	browser, noWindow, devtools, verbose *bool
	device                               *deviceFlags
	log                                  *logFlags // --log-format, --log-level
	launch                               *launch   // read once (readLaunch)
	devAddr                              string    // where `dev` serves its folder, "" for none
}

// readLaunch reads the device flags and the profile they name, once.
func (f *pgFlags) readLaunch() (launch, error) {
	if f.launch != nil {
		return *f.launch, nil
	}
	l, err := f.device.read()
	if err == nil {
		f.launch = &l
	}
	return l, err
}

func playgroundFlags(fs *flag.FlagSet, e env) *pgFlags {
	return &pgFlags{
		opKey:    operatorKeyFlag(fs, e),
		addr:     fs.String("addr", authserver.DefaultServiceAddr, "service address; the dashboard, signing and invoicing roles take the next three ports (port 0: free ports for all)"),
		launcher: fs.String("launcher-addr", defaultLauncherAddr, "launcher address; the demo Miniapps take the next two ports, the broken ones the four after, the FAPI demo port+7, dev's folder port+8, the automation channel port+9 (port 0: free ports for all)"),
		data:     fs.String("data", "", "folder of the server's database, kept between runs (default: a fresh temporary folder, removed on exit)"),
		browser:  fs.Bool("browser", false, "open the launcher in the user's browser (xdg-open)"),
		noWindow: fs.Bool("no-window", false, "serve the launcher without the desktop window (as in a build without WebKitGTK)"),
		devtools: fs.Bool("devtools", false, "enable the web inspector in the Miniapp's view from the start (right click, Inspect Element); never in the consent view"),
		verbose:  fs.Bool("v", false, "log internal errors and the window's events (the Miniapp's console messages among them) to stderr"),
		layout:   fs.String("layout", "side", "side: the launcher and its inspector beside the Miniapp's device; tabs: each in a tab of its own"),
		device:   addDeviceFlags(fs),
		log:      addLogFlags(fs),
	}
}

// addrs is the playground's port layout from --addr and --launcher-addr,
// with dev's folder at devAddr when `dev` was given another (--app-addr).
func (f *pgFlags) addrs() playground.Addrs {
	a := playground.Layout(*f.addr, *f.launcher)
	if f.devAddr != "" {
		a.Dev = f.devAddr
	}
	return a
}

// run starts the playground of the flags, with or without its window, and
// calls started (when not nil) on another goroutine once it serves; it
// returns when the window is closed or ctx ends.
func (f *pgFlags) run(ctx context.Context, e env, name string, started func(*playground.Playground)) int {
	// The secrets leave the environment before anything else: WebKit's
	// processes inherit it (docs/host.md, "Secrets").
	opKey, opKeySource := f.opKey()
	secrets, err := host.TakeSecretEnv()
	if err != nil {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: %v\n", name, err)
		return exitUndecided
	}
	layout, err := host.ParseLayout(*f.layout)
	if err != nil {
		return usageError(e, name, "--layout: "+strings.TrimPrefix(err.Error(), "host: "))
	}
	l, err := f.readLaunch()
	if err != nil {
		return usageError(e, name, err.Error())
	}
	if l.start != "" || l.profile.Origin != "" {
		return usageError(e, name, "--start and a profile of a published Miniapp are for a launch: use open --profile, or launch the profile from the launcher")
	}
	cfg := playground.Config{DataDir: *f.data, Profiles: launchprofile.DefaultPath(), Addrs: f.addrs(), Network: l.network}
	// `open` reads the same variable: with it, `open --dashboard <this
	// playground's dashboard>` completes consents against this server.
	cfg.HostSecret = secrets[host.HostSecretEnv]
	cfg.OperatorKey = opKey
	// Internal errors may quote a URL with a code in it: redacted as the
	// network log keeps URLs, as the window's events are, in either format.
	if cfg.Logger, err = f.log.logger(redact.Writer(e.stderr), *f.verbose); err != nil {
		return usageError(e, name, err.Error())
	}
	if !*f.noWindow {
		if !webkitgtk.Available {
			fmt.Fprintf(e.stderr, "miniapp-host: %s: %v\n", name, host.ErrNoWebview)
			fmt.Fprintf(e.stderr, "miniapp-host: %s: --no-window serves the launcher without a window\n", name)
			return exitUsage
		}
		return runPlaygroundWindow(ctx, e, cfg, windowChoices{data: *f.data, opKeySource: opKeySource, browser: *f.browser,
			verbose: *f.verbose, devtools: *f.devtools, layout: layout, device: l.device}, started)
	}
	p, err := playground.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		fmt.Fprintln(e.stderr, "miniapp-host:", startHint(err, cfg.Addrs))
		return exitUndecided
	}
	printPlayground(e, p, *f.data, opKeySource, false)
	if started != nil {
		go started(p)
	}
	if *f.browser {
		openBrowser(e, p.LauncherURL())
	}
	<-ctx.Done()
	closePlayground(e, p)
	return exitOK
}

// runPlaygroundWindow is the playground with its desktop window (package
// host): the window is made and run on the main goroutine, which package
// webkitgtk locks to the main thread, while the servers start on
// another; the launcher loads in the window as soon as they serve. It
// returns when the window is closed or ctx ends.
// windowChoices are the flags that shape the playground's window.
type windowChoices struct {
	data, opKeySource          string
	browser, verbose, devtools bool
	layout                     host.Layout
	device                     host.DeviceSettings
}

func runPlaygroundWindow(ctx context.Context, e env, cfg playground.Config, c windowChoices, started func(*playground.Playground)) int {
	data, opKeySource, browser, verbose, devtools := c.data, c.opKeySource, c.browser, c.verbose, c.devtools
	// Before UseDataDir moves XDG_CONFIG_HOME into dir.
	sizeFile := playground.WindowSizeFile("playground")
	size, err := playground.LoadWindowSize(sizeFile, playground.WindowSize{Width: 1280, Height: 860})
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
	}
	dir, err := os.MkdirTemp("", "miniapp-host-playground-webkit-")
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUndecided
	}
	defer os.RemoveAll(dir)
	// WebKit's data stays in dir, removed on exit: every playground starts
	// signed out. Each Miniapp launched has its own data folder in it
	// (docs/host.md, "Each Miniapp's data").
	if err := host.UseDataDir(dir); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUndecided
	}
	cfg.Bus = bridge.NewBus(nil)
	w, err := host.NewWindow(webkitgtk.New, host.Options{Title: "Miniapp Host playground", Width: size.Width, Height: size.Height,
		DataDir: dir, Events: cfg.Bus, Launcher: true, DevTools: devtools, Layout: c.layout, Device: c.device, NetworkProxy: true})
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: playground:", err)
		if errors.Is(err, host.ErrNoDisplay) {
			return exitUsage
		}
		return exitUndecided
	}
	cfg.Opener = playground.NewWindow(w, "dev")
	w.OnEvent(launcherEvents(e, verbose))
	run := &windowRun{e: e, w: w, dir: dir, data: data, opKeySource: opKeySource, browser: browser, started: started,
		running: make(chan *playground.Playground, 1), failed: make(chan struct{})}
	go run.start(ctx, cfg)
	w.RunUntil(ctx, stopGrace, run.stalled)
	// The window is closed (or ctx ended): keep its size for the next
	// run, and stop the servers, once they have started.
	sw, sh := w.Size()
	if err := playground.SaveWindowSize(sizeFile, playground.WindowSize{Width: sw, Height: sh}); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
	}
	return run.stop()
}

// launcherEvents prints the window's events (windowEvents), and once that
// the launcher is loaded.
func launcherEvents(e env, verbose bool) func(host.Event) {
	var once sync.Once
	printEvent := windowEvents(e, verbose)
	return func(ev host.Event) {
		if ev.Kind == host.EventLauncherLoaded {
			once.Do(func() { fmt.Fprintf(e.stdout, "%-22s%s\n", "window", "the launcher is loaded") })
		}
		printEvent(ev)
	}
}

// windowRun is the playground's servers behind its window: started on
// another goroutine than the window's, and stopped when the window is
// closed or its UI loop is stalled.
type windowRun struct {
	e                 env
	w                 *host.Window
	dir               string // WebKit's data folder, removed at the end
	data, opKeySource string
	browser           bool
	started           func(*playground.Playground)
	running           chan *playground.Playground // receives the playground once it serves
	failed            chan struct{}               // closed when it could not start
}

// start starts the servers and shows the launcher in the window, or ends
// the window when they cannot start.
func (r *windowRun) start(ctx context.Context, cfg playground.Config) {
	e := r.e
	p, err := playground.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		fmt.Fprintln(e.stderr, "miniapp-host:", startHint(err, cfg.Addrs))
		close(r.failed)
		// From inside the main loop: Start can fail before Run has
		// started it, and a quit before then would be lost.
		r.w.Dispatch(r.w.Terminate)
		return
	}
	r.running <- p
	printPlayground(e, p, r.data, r.opKeySource, true)
	fmt.Fprintf(e.stdout, "%-22s%s\n", "downloads", r.w.DownloadDir()+" (the launcher's Export HAR and Export JSON; it says where each went)")
	if err := r.w.ShowLauncher(p.LauncherURL()); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
	}
	if r.started != nil {
		go r.started(p)
	}
	if r.browser {
		openBrowser(e, p.LauncherURL())
	}
}

// stalled ends the process when the window's UI loop did not stop: the
// servers stop (their databases close cleanly) and the process ends
// without the window.
func (r *windowRun) stalled() {
	select {
	case p := <-r.running:
		closePlayground(r.e, p)
	default:
	}
	os.RemoveAll(r.dir)
	stuckExit(r.e, "playground")()
}

// stop stops the servers once the window is closed, and returns the exit
// code: exitUndecided when they never started.
func (r *windowRun) stop() int {
	select {
	case p := <-r.running:
		closePlayground(r.e, p)
		return exitOK
	case <-r.failed:
		return exitUndecided
	}
}

// closePlayground stops a playground's servers.
func closePlayground(e env, p *playground.Playground) {
	if err := p.Close(); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: stopping:", err)
	}
}

// openBrowser opens url in the user's browser (xdg-open).
func openBrowser(e env, url string) {
	if err := exec.Command("xdg-open", url).Start(); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: could not open a browser (xdg-open):", err)
	}
}

// printPlayground prints every address of a running playground.
func printPlayground(e env, p *playground.Playground, data, opKeySource string, window bool) {
	w := e.stdout
	row := func(k, v string) { fmt.Fprintf(w, "%-22s%s\n", k, v) }
	fmt.Fprintln(w, "Miniapp Host playground")
	fmt.Fprintln(w)
	row("launcher", p.LauncherURL())
	row("", "(the link carries the automation token: show it only to yourself)")
	row("automation channel", p.AutomationURL())
	row("automation token", p.AutomationToken())
	row("", `subprotocols "miniapp-automation.v1, token.<token>" (docs/automation.md)`)
	hostID, hostSecret := p.HostCredential()
	if p.HostSecretGiven() {
		// A given secret is never printed: where it came from is.
		row("host credential", hostID+", secret as given ("+host.HostSecretEnv+")")
		row("", "(miniapp-host open --dashboard "+p.Services().Dashboard+" ... with the same "+host.HostSecretEnv+" completes consents here)")
	} else {
		row("host credential", hostID+" "+hostSecret)
		row("", "(MINIAPP_HOST_SECRET="+hostSecret+" miniapp-host open --dashboard "+p.Services().Dashboard+" ... completes consents here;")
		row("", " set MINIAPP_HOST_SECRET before starting the playground to keep the same secret across runs)")
	}
	printOperatorKey(w, 22, p.OperatorKey(), opKeySource, p.Services().Dashboard)
	row("", "(the launcher's Pending reviews approve and reject too; set "+operatorKeyEnv+" or --operator-key to keep one key across runs)")
	row("screenshots", `the automation channel's screenshot command returns a PNG of the Miniapp's view, with {"area":"window"} of the whole window;`)
	row("", "the end-to-end tests write theirs to artifacts/playground/")
	fmt.Fprintln(w)
	s := p.Services()
	for _, l := range [][2]string{
		{"issuer", s.Issuer}, {"authorization", s.Authorization}, {"token", s.Token}, {"base_url", s.BaseURL},
		{"grant endpoint", s.Grant}, {"native consent", s.Native}, {"dashboard_url", s.Dashboard},
		{"signing_base_url", s.SigningBaseURL}, {"invoicing_base_url", s.InvoicingBaseURL},
	} {
		row(l[0], l[1])
	}
	row("metrics", s.Metrics+"  (Prometheus; docs/deploy.md, \"Metrics\")")
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
	if window {
		fmt.Fprintln(w, "\nThe launcher is in the desktop window, beside the device that Launch opens a Miniapp in (drag the")
		fmt.Fprintln(w, "split to resize or collapse; --layout tabs: in tabs). Closing the window or Ctrl-C stops everything.")
		return
	}
	fmt.Fprintln(w, "\nNo desktop window: launches are resolved and reported in the launcher;")
	fmt.Fprintln(w, "open a demo Miniapp in a browser tab from its report. Ctrl-C stops everything.")
}

// startHint says what to try when the playground could not start: another
// --data folder when another server owns its database, else free ports,
// naming the port taken and the part of addrs it was for.
func startHint(err error, addrs playground.Addrs) string {
	if errors.As(err, new(*store.LockedError)) {
		return "another server uses the database of this --data folder; stop it, or pass another --data"
	}
	if se := (*authserver.SettingError)(nil); errors.As(err, &se) && se.Field == "Secrets" {
		return "MINIAPP_HOST_SECRET is the host's secret: " + se.Rule
	}
	const free = "--addr 127.0.0.1:0 --launcher-addr 127.0.0.1:0 picks free ones for all (a `dev` Miniapp's config.json issuer is served as the one running)"
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "listen" && oe.Addr != nil {
		if ta, ok := oe.Addr.(*net.TCPAddr); ok && ta.Port != 0 {
			who := addrs.PartOn(ta.Port)
			if who == "" {
				who = "a part of the playground"
			}
			return fmt.Sprintf("port %d (%s) is taken by another program (`ss -ltnp 'sport = :%d'` names it): stop it, or %s", ta.Port, who, ta.Port, free)
		}
	}
	return "a port may be taken; " + free
}
