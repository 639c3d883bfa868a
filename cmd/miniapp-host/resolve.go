package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/miniapp-host/miniapp-host/resolver"
)

// defaultDashboardURL is the dashboard role of the embedded reference
// server when it runs with its defaults (beside the catalog defaults).
const defaultDashboardURL = "http://127.0.0.1:8601"

// resolveFlags are the flags of `miniapp-host resolve`.
type resolveFlags struct {
	cfg                           resolver.Config
	origin, id                    *string
	manifest, client, manifestURL *string
	from, manifests, junit        *string
	asJSON                        *bool
}

func newResolveFlags(fs *flag.FlagSet) *resolveFlags {
	f := &resolveFlags{
		origin:      fs.String("origin", "", "the Miniapp's origin, e.g. https://app.example"),
		id:          fs.String("id", "", "the Miniapp's id; must equal the manifest's id"),
		asJSON:      fs.Bool("json", false, "print the report as a JSON document (docs/resolve.md)"),
		manifest:    fs.String("manifest", "", "offline: read the manifest from FILE instead of downloading it"),
		client:      fs.String("client", "", "offline: read the client configuration (the dashboard's answer for oauth.client_id) from FILE"),
		manifestURL: fs.String("manifest-url", "", "offline: the URL the manifest will be served from (start_url and auth_url resolve against it)"),
		from:        fs.String("from", "", "batch: resolve every \"id origin\" line of FILE"),
		manifests:   fs.String("manifests", "", "batch, offline: check every manifest of DIR (with NAME.client.json when present)"),
		junit:       fs.String("junit", "", "batch: also write a JUnit XML report to FILE, one test case per Miniapp"),
	}
	fs.StringVar(&f.cfg.Dashboard, "dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	fs.BoolVar(&f.cfg.Insecure, "insecure", false, "allow plain http on hosts that are not loopback (tests only)")
	fs.DurationVar(&f.cfg.Timeout, "timeout", resolver.DefaultTimeout, "time limit of each download")
	return f
}

func resolveUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: miniapp-host resolve --origin O --id ID [--dashboard URL] [--json] [--insecure] [--timeout D]")
	fmt.Fprintln(w, "       miniapp-host resolve --manifest FILE [--client FILE] [--manifest-url URL] --id ID [--json] [--insecure]")
	fmt.Fprintln(w, "       miniapp-host resolve --from FILE [--dashboard URL] [--junit FILE] [--json]   (lines \"id origin\")")
	fmt.Fprintln(w, "       miniapp-host resolve --manifests DIR [--junit FILE] [--json]   (offline; NAME.client.json beside NAME.webmanifest)")
	fmt.Fprintln(w, "Without --client the offline check is of the manifest alone; the output names what was not checked.")
	fmt.Fprintln(w, "exit 0 accepted (or passed, manifest only), 1 rejected, 2 usage or unreadable input, 3 could not decide")
}

// offline is whether the flags ask for an offline check of one Miniapp.
func (f *resolveFlags) offline() bool {
	return *f.manifest != "" || *f.client != "" || *f.manifestURL != ""
}

// batch is whether the flags ask for a batch (--from or --manifests).
func (f *resolveFlags) batch() bool {
	return *f.from != "" || *f.manifests != ""
}

// batchUsage is what is wrong with the flags of a batch, "" when nothing.
func (f *resolveFlags) batchUsage(args []string) string {
	switch {
	case *f.from != "" && *f.manifests != "":
		return "--from resolves online and --manifests checks offline: use one or the other"
	case *f.id != "" || *f.origin != "" || f.offline():
		return "a batch (--from or --manifests) takes each id and origin from its list; drop --id, --origin, --manifest, --client and --manifest-url"
	case len(args) > 0:
		return fmt.Sprintf("unexpected argument %q", args[0])
	}
	return ""
}

// oneUsage is what is wrong with the flags of one Miniapp's resolve or
// check, "" when nothing.
func (f *resolveFlags) oneUsage(args []string) string {
	offline := f.offline()
	switch {
	case *f.junit != "":
		return "--junit writes the report of a batch: add --from FILE or --manifests DIR"
	case len(args) > 0:
		return fmt.Sprintf("unexpected argument %q (every input is a flag: --origin, --manifest, ...)", args[0])
	case *f.id == "":
		return "--id is required: the id the manifest declares, e.g. --id com.example.notes"
	case f.cfg.Timeout <= 0:
		return "--timeout must be positive, e.g. --timeout 10s"
	case offline && *f.origin != "":
		return "--origin resolves online; --manifest, --client and --manifest-url check offline: use one or the other"
	case offline && *f.manifest == "":
		return "an offline check needs --manifest FILE (--client and --manifest-url add to it)"
	case !offline && *f.origin == "":
		return "--origin is required (or --manifest FILE for an offline check)"
	}
	return ""
}

// runResolve is `miniapp-host resolve`: resolve a Miniapp by origin and id
// (docs/service.md §4.3), or check a manifest (and a client configuration) offline. Exit
// codes: 0 accepted (or passed, manifest only), 1 rejected, 2 usage or
// unreadable input, 3 could not decide. The --json document is described in
// docs/resolve.md.
func runResolve(ctx context.Context, e env) int {
	fs := newFlagSet("resolve", resolveUsage)
	f := newResolveFlags(fs)
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if f.batch() {
		return resolveBatch(ctx, e, f, args)
	}
	if msg := f.oneUsage(args); msg != "" {
		return usageError(e, "resolve", msg)
	}
	cfg := f.cfg
	if f.offline() {
		cfg.Dashboard = "" // an offline check asks no dashboard
	}
	r, err := resolver.New(cfg)
	if err != nil {
		return usageError(e, "resolve", err.Error())
	}
	if !f.offline() {
		app, err := r.Resolve(ctx, *f.id, *f.origin)
		return printResolve(e.stdout, e.stderr, app, err, *f.asJSON)
	}
	return checkOffline(ctx, e, r, f)
}

// checkOffline is `resolve --manifest FILE [--client FILE]`: the manifest
// checked with its client configuration, or alone.
func checkOffline(ctx context.Context, e env, r *resolver.Resolver, f *resolveFlags) int {
	manifest, err := resolver.ReadInput(*f.manifest)
	if err != nil {
		return usageError(e, "resolve", err.Error())
	}
	if *f.client == "" {
		rep, err := r.CheckManifest(ctx, *f.id, *f.manifestURL, manifest)
		if rej := (*resolver.Rejection)(nil); err != nil && !errors.As(err, &rej) {
			fmt.Fprintln(e.stderr, "miniapp-host: resolve:", err)
			return exitUsage
		}
		return printReport(e.stdout, e.stderr, rep, *f.asJSON)
	}
	client, err := resolver.ReadInput(*f.client)
	if err != nil {
		return usageError(e, "resolve", err.Error())
	}
	app, err := r.Check(ctx, *f.id, *f.manifestURL, manifest, client)
	return printResolve(e.stdout, e.stderr, app, err, *f.asJSON)
}

// printResolve prints the outcome of Resolve or Check and returns the exit
// code.
func printResolve(stdout, stderr io.Writer, app *resolver.Miniapp, err error, asJSON bool) int {
	rep := resolver.ReportOf(app, err)
	if rep == nil {
		fmt.Fprintln(stderr, "miniapp-host:", err)
		return exitUsage
	}
	return printReport(stdout, stderr, rep, asJSON)
}

// printReport prints a resolve's report, as text or as the --json document,
// and returns the exit code of its outcome.
func printReport(stdout, stderr io.Writer, report *resolver.Report, asJSON bool) int {
	if !asJSON {
		report.WriteText(stdout)
	} else if err := report.WriteJSON(stdout); err != nil {
		fmt.Fprintln(stderr, "miniapp-host:", err)
		return exitUsage
	}
	return outcomeExit(report.Outcome)
}

// outcomeExit is the exit code of a resolve's outcome.
func outcomeExit(outcome string) int {
	switch outcome {
	case resolver.OutcomeRejected:
		return exitRejected
	case resolver.OutcomeUndecided:
		return exitUndecided
	}
	return exitOK
}
