package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// Default endpoints of the catalog commands: the addresses of the embedded
// reference server's roles when it runs with its defaults.
const (
	defaultBaseURL          = "http://127.0.0.1:8600/bank"
	defaultSigningBaseURL   = "http://127.0.0.1:8602/api"
	defaultInvoicingBaseURL = "http://127.0.0.1:8603/api"
)

// runCatalog is `miniapp-host catalog` (print the catalog) and
// `miniapp-host catalog check` (check one request document).
func runCatalog(_ context.Context, e env) int {
	check := len(e.args) > 0 && e.args[0] == "check"
	name := "catalog"
	if check {
		name, e.args = "catalog check", e.args[1:]
	}
	fs := newFlagSet(name, func(w io.Writer) {
		if check {
			fmt.Fprintln(w, "usage: miniapp-host catalog check [--json] [--base-url U] [--signing-base-url U] [--invoicing-base-url U] [FILE|-]")
			fmt.Fprintln(w, `reads {"scope": "...", "resource": "...", "authorization_details": [...], "org_id": "..."} (every member optional)`)
			fmt.Fprintln(w, "from FILE, or standard input for - or no FILE")
			fmt.Fprintln(w, "exit 0 valid, 1 invalid, 2 unreadable input or usage")
		} else {
			fmt.Fprintln(w, "usage: miniapp-host catalog [--json] [--base-url U] [--signing-base-url U] [--invoicing-base-url U]")
			fmt.Fprintln(w, "       miniapp-host catalog check [--json] [FILE|-]")
		}
	})
	var ep catalog.Endpoints
	fs.StringVar(&ep.BaseURL, "base-url", defaultBaseURL, "the service's resource address ({base_url})")
	fs.StringVar(&ep.SigningBaseURL, "signing-base-url", defaultSigningBaseURL, "the signing provider's resource address")
	fs.StringVar(&ep.InvoicingBaseURL, "invoicing-base-url", defaultInvoicingBaseURL, "the invoicing provider's resource address")
	asJSON := fs.Bool("json", false, "print a JSON document")
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	cat, err := catalog.New(ep)
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUsage
	}
	if !check {
		if len(args) > 0 {
			return usageError(e, "catalog", fmt.Sprintf("takes no arguments (did you mean 'catalog check %s'?)", args[0]))
		}
		return printCatalog(e.stdout, cat, *asJSON)
	}
	if len(args) > 1 {
		return usageError(e, "catalog check", fmt.Sprintf("reads one FILE (or - for standard input), got %d", len(args)))
	}
	file := ""
	if len(args) == 1 {
		file = args[0]
	}
	data, err := readInput(e, file, catalog.MaxRequestBytes)
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUsage
	}
	res, err := cat.CheckDocument(data)
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUsage
	}
	return printViolations(e.stdout, res.Violations, *asJSON)
}

// readInput reads FILE, or standard input for "" and "-", refusing more than
// limit bytes without reading them all.
func readInput(e env, path string, limit int64) ([]byte, error) {
	var r io.Reader = e.stdin
	name := "standard input"
	if path != "" && path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, name = f, path
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes; a request document is refused past that", name, limit)
	}
	return data, nil
}

// catalogEntry is one row of `miniapp-host catalog`.
type catalogEntry struct {
	Name     string          `json:"name"`
	Kind     string          `json:"kind"`
	Provider string          `json:"provider"`
	Resource string          `json:"resource"`
	Meaning  string          `json:"meaning"`
	Company  bool            `json:"company_scoped"`
	Actions  []catalogAction `json:"actions,omitempty"`
}

type catalogAction struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

func printCatalog(w io.Writer, cat *catalog.Catalog, asJSON bool) int {
	var rows []catalogEntry
	base := cat.Endpoints().BaseURL
	for _, s := range cat.Scopes() {
		rows = append(rows, catalogEntry{Name: s.Name, Kind: "scope", Provider: string(catalog.Banking), Resource: base, Meaning: s.Meaning})
	}
	for _, t := range cat.Types() {
		row := catalogEntry{Name: t.Name, Kind: "authorization_details", Provider: string(t.Provider), Resource: t.Resource, Meaning: t.Meaning, Company: t.CompanyScoped}
		for _, a := range t.Actions {
			row.Actions = append(row.Actions, catalogAction{a.Name, a.Meaning})
		}
		rows = append(rows, row)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"permissions": rows})
		return exitOK
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tPROVIDER\tACTIONS")
	for _, r := range rows {
		var acts []string
		for _, a := range r.Actions {
			acts = append(acts, a.Name)
		}
		actions := strings.Join(acts, ",")
		if actions == "" {
			actions = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Kind, r.Provider, actions)
	}
	tw.Flush()
	return exitOK
}

func printViolations(w io.Writer, vs []catalog.Violation, asJSON bool) int {
	code := exitOK
	if len(vs) > 0 {
		code = exitRejected
	}
	if asJSON {
		if vs == nil {
			vs = []catalog.Violation{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Valid      bool                `json:"valid"`
			Violations []catalog.Violation `json:"violations"`
		}{len(vs) == 0, vs})
		return code
	}
	if len(vs) == 0 {
		fmt.Fprintln(w, "valid")
		return code
	}
	for _, v := range vs {
		fmt.Fprintf(w, "%s\t%s\t%s\n", v.Pointer, v.Code, v.Message)
	}
	return code
}
