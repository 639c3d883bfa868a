package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

// The onboarding and review commands (docs/dashboard.md) are thin calls of
// the dashboard API: each action turns its flags and arguments into one
// request, and prints the JSON answer. Exit codes: 0 done, 1 refused by the
// dashboard, 2 usage or unreadable input, 3 dashboard unreachable or failing.

// keyEnv is the environment variable read when --key is not given.
const keyEnv = "MINIAPP_HOST_KEY"

// request is one dashboard call.
type request struct {
	method, path string
	body         any
}

// action is one subcommand of a group: its usage line, the number of
// positional arguments, its own flags, and how it builds the request.
type action struct {
	usage string
	nargs int
	flags func(fs *flag.FlagSet) func(args []string) (request, error)
}

// repeated collects a repeatable string flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// projectFlag adds the required --project flag and returns its value.
func projectFlag(fs *flag.FlagSet) *string {
	return fs.String("project", "", "the project id (required)")
}

func needProject(p string) (string, error) {
	if p == "" {
		return "", errors.New("--project is required")
	}
	return "/api/projects/" + url.PathEscape(p), nil
}

// readJSONFile reads a JSON document from FILE, or stdin for "-".
func readJSONFile(e env, name string) (json.RawMessage, error) {
	var raw []byte
	var err error
	if name == "-" {
		var b bytes.Buffer
		_, err = b.ReadFrom(e.stdin)
		raw = b.Bytes()
	} else {
		raw, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%s is not a JSON document", name)
	}
	return raw, nil
}

// groups are the dashboard command groups, by top-level command.
func groups(e env) map[string]map[string]action {
	return map[string]map[string]action{
		"project": {
			"create": {"NAME", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				return func(a []string) (request, error) {
					return request{"POST", "/api/projects", map[string]string{"name": a[0]}}, nil
				}
			}},
			"show": {"--project ID", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func([]string) (request, error) {
					path, err := needProject(*p)
					return request{"GET", path, nil}, err
				}
			}},
		},
		"credential": {
			"add": {"--project ID --type public|confidential [--name N] [--redirect-uri U]... [--origin O]...", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				typ := fs.String("type", "", "public or confidential (an app that runs on a server; gets a client_secret)")
				name := fs.String("name", "", "a name for the consent screen (default: the project's)")
				var redirects, origins repeated
				fs.Var(&redirects, "redirect-uri", "a redirect URI (repeatable)")
				fs.Var(&origins, "origin", "an allowed origin (repeatable)")
				return func([]string) (request, error) {
					path, err := needProject(*p)
					return request{"POST", path + "/credentials", map[string]any{"type": *typ, "name": *name,
						"redirect_uris": nonNil(redirects), "allowed_origins": nonNil(origins)}}, err
				}
			}},
			"list": {"--project ID", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func([]string) (request, error) {
					path, err := needProject(*p)
					return request{"GET", path + "/credentials", nil}, err
				}
			}},
			"rotate": {"--project ID CLIENT_ID", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func(a []string) (request, error) {
					path, err := needProject(*p)
					return request{"POST", path + "/credentials/" + url.PathEscape(a[0]) + "/rotate", nil}, err
				}
			}},
			"remove": {"--project ID CLIENT_ID", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func(a []string) (request, error) {
					path, err := needProject(*p)
					return request{"DELETE", path + "/credentials/" + url.PathEscape(a[0]), nil}, err
				}
			}},
		},
		"policy": {
			"request": {"--project ID [--scope S]... [--type T]...", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				var scopes, types repeated
				fs.Var(&scopes, "scope", "a catalog scope (repeatable)")
				fs.Var(&types, "type", "an authorization_details type, as in discovery (repeatable)")
				return func([]string) (request, error) {
					path, err := needProject(*p)
					return request{"POST", path + "/policy", map[string]any{"scopes": nonNil(scopes), "types": nonNil(types)}}, err
				}
			}},
		},
		"rs": {
			"declare": {"--project ID FILE (a Resource Server declaration without id; - for stdin)", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func(a []string) (request, error) {
					path, err := needProject(*p)
					if err != nil {
						return request{}, err
					}
					decl, err := readJSONFile(e, a[0])
					return request{"POST", path + "/resource-servers", decl}, err
				}
			}},
			"list": {"", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				return func([]string) (request, error) { return request{"GET", "/api/resource-servers", nil}, nil }
			}},
		},
		"miniapp": {
			"submit": {"--project ID --origin O FILE (the published manifest; - for stdin)", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				o := fs.String("origin", "", "the origin that serves the manifest (required)")
				return func(a []string) (request, error) {
					path, err := needProject(*p)
					if err != nil {
						return request{}, err
					}
					m, err := readJSONFile(e, a[0])
					return request{"POST", path + "/miniapps", map[string]any{"origin": *o, "manifest": m}}, err
				}
			}},
			"list": {"", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				return func([]string) (request, error) { return request{"GET", "/api/miniapps", nil}, nil }
			}},
		},
		"review": {
			"list": {"[--status pending|approved|rejected] [--kind policy|resource_server|miniapp]", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				st := fs.String("status", "pending", "the submissions' status; empty for all")
				kind := fs.String("kind", "", "the submissions' kind; empty for all")
				return func([]string) (request, error) {
					q := url.Values{}
					if *st != "" {
						q.Set("status", *st)
					}
					if *kind != "" {
						q.Set("kind", *kind)
					}
					return request{"GET", "/api/review?" + q.Encode(), nil}, nil
				}
			}},
			"approve": {"SUBMISSION_ID [--reason R]", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				reason := fs.String("reason", "", "why (optional)")
				return func(a []string) (request, error) {
					return request{"POST", "/api/review/" + url.PathEscape(a[0]) + "/approve", map[string]string{"reason": *reason}}, nil
				}
			}},
			"reject": {"SUBMISSION_ID --reason R", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				reason := fs.String("reason", "", "why, so that the project knows what to change (required)")
				return func(a []string) (request, error) {
					return request{"POST", "/api/review/" + url.PathEscape(a[0]) + "/reject", map[string]string{"reason": *reason}}, nil
				}
			}},
		},
	}
}

func nonNil(r repeated) []string {
	if r == nil {
		return []string{}
	}
	return r
}

// dashboardCommand returns the run function of a command group.
func dashboardCommand(group string) func(ctx context.Context, e env) int {
	return func(ctx context.Context, e env) int { return runDashboard(ctx, e, group) }
}

func runDashboard(ctx context.Context, e env, group string) int {
	acts := groups(e)[group]
	names := make([]string, 0, len(acts))
	for n := range acts {
		names = append(names, n)
	}
	sort.Strings(names)
	groupUsage := func() {
		for _, n := range names {
			fmt.Fprintf(e.stderr, "usage: miniapp-host %s %s %s [--dashboard URL] [--key KEY]\n", group, n, acts[n].usage)
		}
	}
	if len(e.args) == 0 || e.args[0] == "-h" || e.args[0] == "--help" {
		groupUsage()
		if len(e.args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	act, ok := acts[e.args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: unknown action %q\n", group, e.args[0])
		groupUsage()
		return exitUsage
	}
	fs := flag.NewFlagSet(group+" "+e.args[0], flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	dash := fs.String("dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	key := fs.String("key", "", "the project's key, or the operator credential for review (default $"+keyEnv+")")
	build := act.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: miniapp-host %s %s %s [--dashboard URL] [--key KEY]\n", group, e.args[0], act.usage)
		fs.PrintDefaults()
	}
	args, err := parseInterspersed(fs, e.args[1:])
	if err != nil {
		return flagExit(err)
	}
	if len(args) != act.nargs {
		fmt.Fprintf(e.stderr, "miniapp-host: %s %s: want %d argument(s), got %d\n", group, e.args[0], act.nargs, len(args))
		fs.Usage()
		return exitUsage
	}
	req, err := build(args)
	if err != nil {
		fmt.Fprintf(e.stderr, "miniapp-host: %s %s: %v\n", group, e.args[0], err)
		return exitUsage
	}
	if *key == "" {
		*key = os.Getenv(keyEnv)
	}
	c := &dashboard.Client{BaseURL: *dash, Key: *key}
	out, err := c.Do(ctx, req.method, req.path, req.body)
	var ae *dashboard.APIError
	switch {
	case errors.As(err, &ae) && ae.Status < 500:
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitRejected
	case err != nil:
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUndecided
	}
	if out != nil {
		var b bytes.Buffer
		json.Indent(&b, out, "", "  ")
		fmt.Fprintln(e.stdout, b.String())
	}
	return exitOK
}

// parseInterspersed parses flags placed before, between or after the
// positional arguments ("review approve ID --reason R"), which the flag
// package alone stops at.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
