package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/miniapp-host/miniapp-host/resolver"
)

// defaultDashboardURL is the dashboard role of the embedded reference
// server when it runs with its defaults (beside the catalog defaults).
const defaultDashboardURL = "http://127.0.0.1:8601"

// runResolve is `miniapp-host resolve`: resolve a Miniapp by origin and id
// (spec 4.3), or check a manifest and a client configuration offline. Exit
// codes: 0 accepted, 1 rejected, 2 usage or unreadable input, 3 could not
// decide. The --json document is described in docs/resolve.md.
func runResolve(ctx context.Context, e env) int {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var (
		cfg          resolver.Config
		rawOrigin    = fs.String("origin", "", "the Miniapp's origin, e.g. https://app.example")
		id           = fs.String("id", "", "the Miniapp's id; must equal the manifest's id")
		asJSON       = fs.Bool("json", false, "print the report as a JSON document (docs/resolve.md)")
		manifestFile = fs.String("manifest", "", "offline: read the manifest from FILE instead of downloading it")
		clientFile   = fs.String("client", "", "offline: read the client configuration from FILE")
		manifestURL  = fs.String("manifest-url", "", "offline: the URL the manifest will be served from")
	)
	fs.StringVar(&cfg.Dashboard, "dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "allow plain http on hosts that are not loopback (tests only)")
	fs.DurationVar(&cfg.Timeout, "timeout", resolver.DefaultTimeout, "time limit of each download")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: miniapp-host resolve --origin O --id ID [--dashboard URL] [--json] [--insecure] [--timeout D]")
		fmt.Fprintln(e.stderr, "       miniapp-host resolve --manifest FILE --client FILE --manifest-url URL --id ID [--json] [--insecure]")
		fmt.Fprintln(e.stderr, "exit 0 accepted, 1 rejected, 2 usage or unreadable input, 3 could not decide")
		fs.PrintDefaults()
	}
	if err := fs.Parse(e.args); err != nil {
		return flagExit(err)
	}
	offline := *manifestFile != "" || *clientFile != "" || *manifestURL != ""
	usageErr := func(msg string) int {
		fmt.Fprintln(e.stderr, "miniapp-host: resolve:", msg)
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	case *id == "":
		return usageErr("--id is required")
	case cfg.Timeout <= 0:
		return usageErr("--timeout must be positive")
	case offline && *rawOrigin != "":
		return usageErr("--origin resolves online; --manifest, --client and --manifest-url check offline: use one or the other")
	case offline && (*manifestFile == "" || *clientFile == "" || *manifestURL == ""):
		return usageErr("offline mode needs --manifest, --client and --manifest-url")
	case !offline && *rawOrigin == "":
		return usageErr("--origin is required (or --manifest, --client and --manifest-url for offline mode)")
	}
	if offline {
		cfg.Dashboard = ""
	}
	r, err := resolver.New(cfg)
	if err != nil {
		return usageErr(err.Error())
	}

	var app *resolver.Miniapp
	if offline {
		manifest, err := readLimited(*manifestFile, resolver.DefaultMaxBytes)
		if err != nil {
			return usageErr(err.Error())
		}
		client, err := readLimited(*clientFile, resolver.DefaultMaxBytes)
		if err != nil {
			return usageErr(err.Error())
		}
		app, err = r.Check(ctx, *id, *manifestURL, manifest, client)
		return printResolve(e.stdout, e.stderr, app, err, *asJSON)
	}
	app, err = r.Resolve(ctx, *id, *rawOrigin)
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

// printResolve prints the outcome and returns the exit code.
func printResolve(stdout, stderr io.Writer, app *resolver.Miniapp, err error, asJSON bool) int {
	var (
		rej    *resolver.Rejection
		und    *resolver.Undecided
		report *resolver.Report
		code   int
	)
	switch {
	case err == nil:
		report, code = app.Report, exitOK
	case errors.As(err, &rej):
		report, code = rej.Report, exitRejected
	case errors.As(err, &und):
		report, code = und.Report, exitUndecided
	default:
		fmt.Fprintln(stderr, "miniapp-host:", err)
		return exitUsage
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
	switch code {
	case exitOK:
		s := report.Miniapp
		fmt.Fprintf(stdout, "accepted: %s (%s)\n", s.Name, report.ID)
		row := func(k, v string) { fmt.Fprintf(stdout, "  %-16s %s\n", k, v) }
		row("origin", s.Origin)
		row("manifest", s.ManifestURL)
		row("start URL", s.StartURL)
		if s.AuthURL != "" {
			row("auth URL", s.AuthURL)
		}
		row("loads", s.LoadURL)
		row("client", fmt.Sprintf("%s (%s)", s.ClientID, s.ClientType))
		row("allowed origins", strings.Join(s.AllowedOrigins, " "))
	case exitRejected:
		fmt.Fprintf(stdout, "rejected at stage %s: %d reason(s)\n", rej.Stage, len(rej.Reasons))
		for _, r := range rej.Reasons {
			printReason(stdout, r)
		}
	case exitUndecided:
		fmt.Fprintf(stdout, "could not decide at stage %s (%s): %s\n", und.Stage, und.Code, und.Message)
		fmt.Fprintln(stdout, "  nothing was rejected; try again when the server answers")
	}
	for _, st := range report.Stages {
		for _, n := range st.Notes {
			if strings.Contains(n, "matches nothing") {
				fmt.Fprintf(stdout, "  note (%s): %s\n", st.Stage, n)
			}
		}
	}
	return code
}

func printReason(w io.Writer, r resolver.Reason) {
	where := ""
	if r.Pointer != "" {
		where = " at " + r.Pointer
	}
	fmt.Fprintf(w, "  - %s/%s%s\n", r.Stage, r.Code, where)
	fmt.Fprintf(w, "    %s\n", r.Message)
	if r.Hint != "" {
		fmt.Fprintf(w, "    hint: %s\n", r.Hint)
	}
}
