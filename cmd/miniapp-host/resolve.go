package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/miniapp-host/miniapp-host/resolver"
)

// defaultDashboardURL is the dashboard role of the embedded reference
// server when it runs with its defaults (beside the catalog defaults).
const defaultDashboardURL = "http://127.0.0.1:8601"

// runResolve is `miniapp-host resolve`: resolve a Miniapp by origin and id
// (docs/service.md §4.3), or check a manifest (and a client configuration) offline. Exit
// codes: 0 accepted (or passed, manifest only), 1 rejected, 2 usage or
// unreadable input, 3 could not decide. The --json document is described in
// docs/resolve.md.
func runResolve(ctx context.Context, e env) int {
	fs := newFlagSet("resolve", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host resolve --origin O --id ID [--dashboard URL] [--json] [--insecure] [--timeout D]")
		fmt.Fprintln(w, "       miniapp-host resolve --manifest FILE [--client FILE] [--manifest-url URL] --id ID [--json] [--insecure]")
		fmt.Fprintln(w, "       miniapp-host resolve --from FILE [--dashboard URL] [--junit FILE] [--json]   (lines \"id origin\")")
		fmt.Fprintln(w, "       miniapp-host resolve --manifests DIR [--junit FILE] [--json]   (offline; NAME.client.json beside NAME.webmanifest)")
		fmt.Fprintln(w, "Without --client the offline check is of the manifest alone; the output names what was not checked.")
		fmt.Fprintln(w, "exit 0 accepted (or passed, manifest only), 1 rejected, 2 usage or unreadable input, 3 could not decide")
	})
	var (
		cfg          resolver.Config
		rawOrigin    = fs.String("origin", "", "the Miniapp's origin, e.g. https://app.example")
		id           = fs.String("id", "", "the Miniapp's id; must equal the manifest's id")
		asJSON       = fs.Bool("json", false, "print the report as a JSON document (docs/resolve.md)")
		manifestFile = fs.String("manifest", "", "offline: read the manifest from FILE instead of downloading it")
		clientFile   = fs.String("client", "", "offline: read the client configuration (the dashboard's answer for oauth.client_id) from FILE")
		manifestURL  = fs.String("manifest-url", "", "offline: the URL the manifest will be served from (start_url and auth_url resolve against it)")
		from         = fs.String("from", "", "batch: resolve every \"id origin\" line of FILE")
		manifests    = fs.String("manifests", "", "batch, offline: check every manifest of DIR (with NAME.client.json when present)")
		junit        = fs.String("junit", "", "batch: also write a JUnit XML report to FILE, one test case per Miniapp")
	)
	fs.StringVar(&cfg.Dashboard, "dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "allow plain http on hosts that are not loopback (tests only)")
	fs.DurationVar(&cfg.Timeout, "timeout", resolver.DefaultTimeout, "time limit of each download")
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	offline := *manifestFile != "" || *clientFile != "" || *manifestURL != ""
	usageErr := func(msg string) int { return usageError(e, "resolve", msg) }
	batch := *from != "" || *manifests != ""
	switch {
	case *from != "" && *manifests != "":
		return usageErr("--from resolves online and --manifests checks offline: use one or the other")
	case batch && (*id != "" || *rawOrigin != "" || offline):
		return usageErr("a batch (--from or --manifests) takes each id and origin from its list; drop --id, --origin, --manifest, --client and --manifest-url")
	case batch && len(args) > 0:
		return usageErr(fmt.Sprintf("unexpected argument %q", args[0]))
	case !batch && *junit != "":
		return usageErr("--junit writes the report of a batch: add --from FILE or --manifests DIR")
	case batch:
		if *manifests != "" {
			cfg.Dashboard = ""
		}
		r, err := resolver.New(cfg)
		if err != nil {
			return usageErr(err.Error())
		}
		return runBatch(ctx, e, r, *from, *manifests, *junit, *asJSON)
	case len(args) > 0:
		return usageErr(fmt.Sprintf("unexpected argument %q (every input is a flag: --origin, --manifest, ...)", args[0]))
	case *id == "":
		return usageErr("--id is required: the id the manifest declares, e.g. --id com.example.notes")
	case cfg.Timeout <= 0:
		return usageErr("--timeout must be positive, e.g. --timeout 10s")
	case offline && *rawOrigin != "":
		return usageErr("--origin resolves online; --manifest, --client and --manifest-url check offline: use one or the other")
	case offline && *manifestFile == "":
		return usageErr("an offline check needs --manifest FILE (--client and --manifest-url add to it)")
	case !offline && *rawOrigin == "":
		return usageErr("--origin is required (or --manifest FILE for an offline check)")
	}
	if offline {
		cfg.Dashboard = ""
	}
	r, err := resolver.New(cfg)
	if err != nil {
		return usageErr(err.Error())
	}
	if !offline {
		app, err := r.Resolve(ctx, *id, *rawOrigin)
		return printResolve(e.stdout, e.stderr, app, err, *asJSON)
	}
	manifest, err := readLimited(*manifestFile, resolver.DefaultMaxBytes)
	if err != nil {
		return usageErr(err.Error())
	}
	if *clientFile == "" {
		rep, err := r.CheckManifest(ctx, *id, *manifestURL, manifest)
		var rej *resolver.Rejection
		if err != nil && !errors.As(err, &rej) {
			fmt.Fprintln(e.stderr, "miniapp-host: resolve:", err)
			return exitUsage
		}
		return printReport(e.stdout, e.stderr, rep, *asJSON)
	}
	client, err := readLimited(*clientFile, resolver.DefaultMaxBytes)
	if err != nil {
		return usageErr(err.Error())
	}
	app, err := r.Check(ctx, *id, *manifestURL, manifest, client)
	return printResolve(e.stdout, e.stderr, app, err, *asJSON)
}

// readLimited reads a file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes, the limit of a download", path, limit)
	}
	return data, nil
}

// printResolve prints the outcome of Resolve or Check and returns the exit
// code.
func printResolve(stdout, stderr io.Writer, app *resolver.Miniapp, err error, asJSON bool) int {
	var (
		rej *resolver.Rejection
		und *resolver.Undecided
	)
	switch {
	case err == nil:
		return printReport(stdout, stderr, app.Report, asJSON)
	case errors.As(err, &rej):
		return printReport(stdout, stderr, rej.Report, asJSON)
	case errors.As(err, &und):
		return printReport(stdout, stderr, und.Report, asJSON)
	}
	fmt.Fprintln(stderr, "miniapp-host:", err)
	return exitUsage
}

// printReport prints a resolve's report, as text or as the --json document,
// and returns the exit code of its outcome.
func printReport(stdout, stderr io.Writer, report *resolver.Report, asJSON bool) int {
	code := exitOK
	switch report.Outcome {
	case resolver.OutcomeRejected:
		code = exitRejected
	case resolver.OutcomeUndecided:
		code = exitUndecided
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(report); err != nil {
			fmt.Fprintln(stderr, "miniapp-host:", err)
			return exitUsage
		}
		return code
	}
	report.WriteText(stdout)
	return code
}
