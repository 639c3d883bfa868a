package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/miniapp-host/miniapp-host/demoapps"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/host/webkitgtk"
	"github.com/miniapp-host/miniapp-host/redact"
	"github.com/miniapp-host/miniapp-host/resolver"
	"github.com/miniapp-host/miniapp-host/telemetry"
)

// runOpen is `miniapp-host open`: resolve a Miniapp and run it in a
// desktop window (package host). Exit codes: 0 the window was closed, 1
// the Miniapp was rejected (the reason is printed and shown in the
// window), 2 usage, 3 the resolver or the service could not be reached.
// With --webdriver, WebKitWebDriver starts it (docs/webdriver.md).
func runOpen(ctx context.Context, e env) int {
	cfg, code, ok := openConfig(e)
	if !ok {
		return code
	}
	if !webkitgtk.Available {
		fmt.Fprintln(e.stderr, "miniapp-host: open:", host.ErrNoWebview)
		return exitUsage
	}
	tp, code, ok := startTraces(ctx, e, "open", telemetry.Options{Service: telemetry.HostService, FixedService: true})
	if !ok {
		return code
	}
	defer stopTraces(ctx, e, "open", tp)
	cfg.Traces = tp
	err := host.Open(ctx, webkitgtk.New, cfg)
	var rej *resolver.Rejection
	switch {
	case err == nil || errors.Is(err, context.Canceled):
		return exitOK
	case errors.Is(err, host.ErrNoDisplay):
		fmt.Fprintln(e.stderr, "miniapp-host: open:", err)
		return exitUsage
	case errors.As(err, &rej):
		return exitRejected
	default:
		fmt.Fprintln(e.stderr, "miniapp-host: open:", err)
		return exitUndecided
	}
}

// openConfig reads open's flags into what host.Open takes, wired to e:
// the log and the window's events (-v) on stderr, URLs redacted
// (redact.Writer, host.Event.String), the resolver's answer on
// stdout. It reports a usage error as runOpen's exit code.
func openConfig(e env) (host.OpenConfig, int, bool) {
	fs := newFlagSet("open", openUsage)
	cfg := host.OpenConfig{Log: redact.Writer(e.stderr), HostVersion: "dev"}
	f := newOpenFlags(fs, &cfg)
	// The secrets leave the environment before anything else, whatever
	// happens next: WebKit's processes inherit it.
	secrets, err := host.TakeSecretEnv()
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: open:", err)
		return cfg, exitUndecided, false
	}
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return cfg, code, false
	}
	cfg.HostSecret = secrets[host.HostSecretEnv]
	cfg.OperatorKey = secrets[operatorKeyEnv]
	l, err := f.device.read()
	if err != nil {
		return cfg, usageError(e, "open", err.Error()), false
	}
	cfg.Device, cfg.Start, cfg.Network = l.device, l.start, l.network
	if p := l.profile; p.Name != "" {
		if p.Dir != "" {
			return cfg, usageError(e, "open", fmt.Sprintf("--profile %s launches the folder %s: run it with `miniapp-host dev --profile %s`", p.Name, p.Dir, p.Name)), false
		}
		if cfg.Origin == "" && cfg.ID == "" {
			cfg.Origin, cfg.ID = p.Origin, p.ID
		}
		if p.Subject != "" && !flagSet(fs, "subject") {
			cfg.Subject = p.Subject
		}
	}
	if msg := f.usageError(&cfg, args); msg != "" {
		return cfg, usageError(e, "open", msg), false
	}
	if *f.secretFD >= 0 {
		s, err := host.ReadSecret(os.NewFile(uintptr(*f.secretFD), "secret-fd"))
		if err != nil {
			return cfg, usageError(e, "open", fmt.Sprintf("--secret-fd %d: %v", *f.secretFD, err)), false
		}
		cfg.HostSecret = s
	}
	if *f.automationFD >= 0 {
		cfg.AutomationOut = os.NewFile(uintptr(*f.automationFD), "automation-fd")
	}
	// A WebDriver session cannot reach the consent screen (the host's own
	// view): the automation channel answers it (docs/webdriver.md).
	cfg.Automation = cfg.Automation || cfg.WebDriver
	cfg.OnEvent = windowEvents(e, *f.verbose)
	cfg.OnResolved = func(app *resolver.Miniapp, err error) { printResolve(e.stdout, e.stderr, app, err, false) }
	cfg.Stuck = stuckExit(e, "open")
	return cfg, 0, true
}

func openUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: miniapp-host open --origin O --id ID [--dashboard URL] [--service URL] [--subject S] [--ephemeral] [--automation] [--automation-file F] [--devtools] [--webdriver] [--secret-fd N] [--automation-fd N] [-v]")
	fmt.Fprintln(w, "       [--device NAME|WxH@DPR] [--landscape] [--theme light|dark] [--locale TAG] [--zoom Z] [--start PATH?QUERY]")
	fmt.Fprintln(w, "       [--network slow-3g|fast-3g|offline|LATENCY/DOWN/UP] [--mock FILE]")
	fmt.Fprintln(w, "   or: miniapp-host open --profile NAME [flags that change it]")
	fmt.Fprintln(w, "the host's secret is read from MINIAPP_HOST_SECRET (serve --secret miniapp-host=SECRET fixes it), or from --secret-fd;")
	fmt.Fprintln(w, "it and the other secret variables are removed from the environment before WebKit starts (docs/host.md, \"Secrets\")")
	fmt.Fprintln(w, "without --service, the authorization server is the one the dashboard names (docs/host.md, \"Which authorization server\")")
}

// openFlags are the flags of open that are not fields of host.OpenConfig.
type openFlags struct {
	secretFD, automationFD *int
	verbose                *bool
	device                 *deviceFlags
}

// newOpenFlags defines open's flags, most of them straight into cfg.
func newOpenFlags(fs *flag.FlagSet, cfg *host.OpenConfig) *openFlags {
	fs.StringVar(&cfg.Origin, "origin", "", "the Miniapp's origin, e.g. http://"+demoapps.PublicAddr)
	fs.StringVar(&cfg.ID, "id", "", "the Miniapp's id; must equal the manifest's id")
	fs.StringVar(&cfg.Dashboard, "dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	fs.StringVar(&cfg.Service, "service", "", "the authorization service's issuer URL (default: the one the dashboard names, GET {dashboard_url}/api/service)")
	fs.StringVar(&cfg.Subject, "subject", "sub_ana", "the subject who signs in on the consent screen")
	fs.StringVar(&cfg.HostClientID, "host-client", "miniapp-host", "the host's own client id (native-consent API)")
	fs.BoolVar(&cfg.Ephemeral, "ephemeral", false, "give the Miniapp a throw-away WebKit data folder")
	fs.BoolVar(&cfg.Automation, "automation", false, "serve the automation channel (docs/automation.md); its URL and token are printed")
	fs.StringVar(&cfg.AutomationAddr, "automation-addr", "", "loopback address of the automation channel (default: a free port)")
	fs.BoolVar(&cfg.DevTools, "devtools", false, "enable the web inspector in the Miniapp's view from the start (right click, Inspect Element); never in the consent view")
	fs.BoolVar(&cfg.WebDriver, "webdriver", false, "let a W3C WebDriver session drive the Miniapp's view: miniapp-host webdriver (or WebKitWebDriver) starts the host so; implies --automation, for the consent (docs/webdriver.md)")
	fs.StringVar(&cfg.AutomationFile, "automation-file", "", "write the automation channel's URL and token to this file as JSON (mode 0600) before the window opens")
	f := &openFlags{secretFD: new(int), automationFD: new(int)}
	*f.secretFD, *f.automationFD = -1, -1
	fs.Var(fdFlag{f.secretFD}, "secret-fd", "read the host's secret from the inherited file descriptor `N` (a pipe, read to its end) instead of MINIAPP_HOST_SECRET; miniapp-host webdriver passes it so")
	fs.Var(fdFlag{f.automationFD}, "automation-fd", "write the automation channel's URL and token as JSON to the inherited file descriptor `N`, then close it, before the window opens")
	f.device = addDeviceFlags(fs)
	f.verbose = fs.Bool("v", false, "print the window's events (navigation decisions with their rules, loads, consent, the Miniapp's console messages; URLs redacted) to stderr")
	return f
}

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// fdFlag is a flag naming an inherited file descriptor; -1, its value when
// the flag is not given, is not shown as a default in the usage text.
type fdFlag struct{ n *int }

func (v fdFlag) String() string {
	if v.n == nil || *v.n < 0 {
		return ""
	}
	return strconv.Itoa(*v.n)
}

func (v fdFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a file descriptor number (0 or above)", s)
	}
	*v.n = n
	return nil
}

// usageError is what is wrong with open's flags, "" when nothing.
func (f *openFlags) usageError(cfg *host.OpenConfig, args []string) string {
	switch {
	case len(args) > 0:
		return fmt.Sprintf("unexpected argument %q: every input is a flag", args[0])
	case cfg.Origin == "" || cfg.ID == "":
		return fmt.Sprintf("--origin and --id are required, e.g. --origin http://%s --id %s (the playground's public demo)",
			demoapps.PublicAddr, demoapps.PublicID)
	case cfg.WebDriver && os.Getenv("WEBKIT_INSPECTOR_SERVER") == "":
		return "--webdriver: WEBKIT_INSPECTOR_SERVER is not set, so no WebDriver will connect;" +
			" `miniapp-host webdriver` starts `open --webdriver` itself for each New Session (docs/webdriver.md)"
	}
	return f.channelError(cfg)
}

// channelError is what is wrong with the flags of the automation channel
// and the inherited descriptors, "" when nothing.
func (f *openFlags) channelError(cfg *host.OpenConfig) string {
	channel := cfg.Automation || cfg.WebDriver
	switch {
	case cfg.AutomationFile != "" && !channel:
		return "--automation-file needs --automation (or --webdriver)"
	case *f.automationFD >= 0 && !channel:
		return "--automation-fd needs --automation (or --webdriver)"
	case *f.secretFD >= 0 && *f.secretFD < 3, *f.automationFD >= 0 && *f.automationFD < 3:
		return "--secret-fd and --automation-fd name an inherited descriptor, 3 or above (0, 1 and 2 are the standard streams)"
	}
	return ""
}

// windowEvents prints the window's events to stderr: every one with -v,
// as host.Event.String writes it (navigations with their rule, URLs
// redacted), and always those a user must know of (a stalled UI loop).
func windowEvents(e env, verbose bool) func(host.Event) {
	return func(ev host.Event) {
		switch {
		case ev.Kind == host.EventUIStalled || ev.Kind == host.EventUIRecovered:
			fmt.Fprintf(e.stderr, "miniapp-host: window: %s\n", ev.Detail)
		case verbose:
			fmt.Fprintf(e.stderr, "event %s\n", ev)
		}
	}
}

// stuckExit ends the process when the window's UI loop did not stop after
// a SIGINT or SIGTERM (host.Window.RunUntil): it is stalled, and the main
// goroutine, inside it, cannot return.
func stuckExit(e env, cmd string) func() {
	return func() {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: the window's UI loop did not stop when asked (it is stalled); exiting without it\n", cmd)
		os.Exit(exitUndecided)
	}
}
