package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

// The onboarding and review commands (docs/dashboard.md) are thin calls of
// the dashboard API: each action turns its flags and arguments into one
// request. A read prints the answer; a change prints one line saying what
// was done; with --json both print the dashboard's answer as it came. A
// refusal prints the dashboard's error with every violation. Exit codes: 0
// done, 1 refused by the dashboard, 2 usage or unreadable input, 3 dashboard
// unreachable or failing.

// keyEnv is the environment variable read when --key is not given.
const keyEnv = "MINIAPP_HOST_KEY"

// request is one dashboard call.
type request struct {
	method, path string
	body         any
}

// action is one subcommand of a group: its usage line, the number of
// positional arguments, its own flags, how it builds the request, and, for
// an action that changes something, the line that confirms what was done.
type action struct {
	usage   string
	nargs   int
	flags   func(fs *flag.FlagSet) func(args []string) (request, error)
	confirm func(fs *flag.FlagSet, args []string, ans answer) string
}

// answer is a decoded JSON answer of the dashboard, for confirmations.
type answer map[string]any

// str is the string member k, or "" when it is absent or not a string.
func (a answer) str(k string) string {
	s, _ := a[k].(string)
	return s
}

// flagValue is the value of fs's flag name.
func flagValue(fs *flag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// submitted confirms a submission for review.
func submitted(_ *flag.FlagSet, _ []string, a answer) string {
	return fmt.Sprintf("submitted %s %s of project %s for review: %s; the operator decides with 'miniapp-host review approve|reject %s'",
		strings.ReplaceAll(a.str("kind"), "_", " "), a.str("id"), a.str("project_id"), a.str("status"), a.str("id"))
}

// decided confirms a review decision.
func decided(_ *flag.FlagSet, _ []string, a answer) string {
	line := fmt.Sprintf("%s %s submission %s of project %s", a.str("status"), strings.ReplaceAll(a.str("kind"), "_", " "), a.str("id"), a.str("project_id"))
	if id := a.str("assigned_id"); id != "" {
		line += ", assigned id " + id
	}
	if r := a.str("reason"); r != "" {
		line += fmt.Sprintf(": %q", r)
	}
	return line
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

// credentialAddFlags reads credential add's flags into the body of POST
// .../credentials.
func credentialAddFlags(e env, fs *flag.FlagSet) func([]string) (request, error) {
	p := projectFlag(fs)
	typ := fs.String("type", "", "public or confidential (an app that runs on a server; gets a client_secret, or authenticates with private_key_jwt given --jwks or --jwks-uri)")
	name := fs.String("name", "", "a name for the consent screen (default: the project's)")
	var redirects, origins repeated
	fs.Var(&redirects, "redirect-uri", "a redirect URI (repeatable)")
	fs.Var(&origins, "origin", "an allowed origin (repeatable)")
	settings := securityFlags(fs, e)
	return func([]string) (request, error) {
		path, err := needProject(*p)
		if err != nil {
			return request{}, err
		}
		body := map[string]any{"type": *typ, "name": *name, "redirect_uris": nonNil(redirects), "allowed_origins": nonNil(origins)}
		if err := settings(body); err != nil {
			return request{}, err
		}
		return request{"POST", path + "/credentials", body}, nil
	}
}

// credentialUpdateFlags reads credential update's flags into the body of
// PATCH .../credentials/{client_id}: each list given (or cleared) and
// each setting replaces the credential's.
func credentialUpdateFlags(e env, fs *flag.FlagSet) func([]string) (request, error) {
	p := projectFlag(fs)
	var redirects, origins repeated
	fs.Var(&redirects, "redirect-uri", "a redirect URI (repeatable): the ones given replace the credential's")
	fs.Var(&origins, "origin", "an allowed origin (repeatable): the ones given replace the credential's")
	clearRedirects := fs.Bool("clear-redirect-uris", false, "remove every redirect URI")
	clearOrigins := fs.Bool("clear-origins", false, "remove every allowed origin")
	settings := securityFlags(fs, e)
	return func(a []string) (request, error) {
		path, err := needProject(*p)
		if err != nil {
			return request{}, err
		}
		body := map[string]any{}
		for _, l := range []struct {
			member, flag, clearFlag string
			list                    repeated
			clear                   bool
		}{{"redirect_uris", "redirect-uri", "clear-redirect-uris", redirects, *clearRedirects},
			{"allowed_origins", "origin", "clear-origins", origins, *clearOrigins}} {
			switch {
			case l.clear && l.list != nil:
				return request{}, fmt.Errorf("--%s and --%s contradict each other: give one", l.flag, l.clearFlag)
			case l.clear || l.list != nil:
				body[l.member] = nonNil(l.list)
			}
		}
		if err := settings(body); err != nil {
			return request{}, err
		}
		if len(body) == 0 {
			return request{}, errors.New("give --redirect-uri, --origin, --clear-redirect-uris, --clear-origins, or a setting (--jwks, --jwks-uri, --profile, --require-par, --dpop-bound, --dpop-nonce, --grant-management-action-required): each replaces the credential's")
		}
		return request{"PATCH", path + "/credentials/" + url.PathEscape(a[0]), body}, nil
	}
}

// credentialUpdateText prints the credential's lists and settings after
// an update.
func credentialUpdateText(fs *flag.FlagSet, _ []string, a answer) string {
	list := func(k string) string {
		v, _ := a[k].([]any)
		if len(v) == 0 {
			return "none"
		}
		out := make([]string, len(v))
		for i, x := range v {
			out[i], _ = x.(string)
		}
		return strings.Join(out, " ")
	}
	return fmt.Sprintf("updated credential %s of project %s: redirect_uris %s; allowed_origins %s",
		a.str("client_id"), flagValue(fs, "project"), list("redirect_uris"), list("allowed_origins")) + securitySummary(a)
}

// groups are the dashboard command groups, by top-level command.
func groups(e env) map[string]map[string]action {
	return map[string]map[string]action{
		"project": {
			"create": {"NAME", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				return func(a []string) (request, error) {
					return request{"POST", "/api/projects", map[string]string{"name": a[0]}}, nil
				}
			}, func(_ *flag.FlagSet, _ []string, a answer) string {
				return fmt.Sprintf("created project %s %q; its key, shown only this once: %s (pass it with --key, or export %s)",
					a.str("id"), a.str("name"), a.str("key"), keyEnv)
			}},
			"show": {"--project ID", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func([]string) (request, error) {
					path, err := needProject(*p)
					return request{"GET", path, nil}, err
				}
			}, nil},
		},
		"credential": {
			"add": {"--project ID --type public|confidential [--name N] [--redirect-uri U]... [--origin O]... [--jwks FILE | --jwks-uri URL] [--profile fapi2] [--require-par] [--dpop-bound] [--dpop-nonce]", 0, func(fs *flag.FlagSet) func([]string) (request, error) { return credentialAddFlags(e, fs) }, func(fs *flag.FlagSet, _ []string, a answer) string {
				line := fmt.Sprintf("added %s credential %s (%q) to project %s", a.str("client_type"), a.str("client_id"), a.str("name"), flagValue(fs, "project"))
				if sec := a.str("client_secret"); sec != "" {
					line += "; its client_secret, shown only this once: " + sec
				}
				return line + securitySummary(a)
			}},
			"list": {"--project ID", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func([]string) (request, error) {
					path, err := needProject(*p)
					return request{"GET", path + "/credentials", nil}, err
				}
			}, nil},
			"rotate": {"--project ID CLIENT_ID", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func(a []string) (request, error) {
					path, err := needProject(*p)
					return request{"POST", path + "/credentials/" + url.PathEscape(a[0]) + "/rotate", nil}, err
				}
			}, func(fs *flag.FlagSet, _ []string, a answer) string {
				return fmt.Sprintf("rotated the secret of credential %s of project %s; the old one no longer works; the new client_secret, shown only this once: %s",
					a.str("client_id"), flagValue(fs, "project"), a.str("client_secret"))
			}},
			"update": {"--project ID CLIENT_ID [--redirect-uri U]... [--origin O]... [--clear-redirect-uris] [--clear-origins] [--jwks FILE | --jwks-uri URL] [--profile fapi2|\"\"] [--require-par[=false]] [--dpop-bound[=false]] [--dpop-nonce[=false]] [--grant-management-action-required[=false]]", 1, func(fs *flag.FlagSet) func([]string) (request, error) { return credentialUpdateFlags(e, fs) }, credentialUpdateText},
			"remove": {"--project ID CLIENT_ID", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				p := projectFlag(fs)
				return func(a []string) (request, error) {
					path, err := needProject(*p)
					return request{"DELETE", path + "/credentials/" + url.PathEscape(a[0]), nil}, err
				}
			}, func(fs *flag.FlagSet, args []string, _ answer) string {
				return fmt.Sprintf("removed credential %s from project %s; its grants are revoked and its tokens no longer work", args[0], flagValue(fs, "project"))
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
			}, submitted},
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
			}, submitted},
			"list": {"", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				return func([]string) (request, error) { return request{"GET", "/api/resource-servers", nil}, nil }
			}, nil},
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
			}, submitted},
			"list": {"", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
				return func([]string) (request, error) { return request{"GET", "/api/miniapps", nil}, nil }
			}, nil},
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
			}, nil},
			"approve": {"SUBMISSION_ID [--reason R]", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				reason := fs.String("reason", "", "why (optional)")
				return func(a []string) (request, error) {
					return request{"POST", "/api/review/" + url.PathEscape(a[0]) + "/approve", map[string]string{"reason": *reason}}, nil
				}
			}, decided},
			"reject": {"SUBMISSION_ID --reason R", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
				reason := fs.String("reason", "", "why, so that the project knows what to change (required)")
				return func(a []string) (request, error) {
					return request{"POST", "/api/review/" + url.PathEscape(a[0]) + "/reject", map[string]string{"reason": *reason}}, nil
				}
			}, decided},
		},
	}
}

// securityFlags adds the flags of a credential's FAPI 2.0 settings
// (docs/fapi.md, "Credential settings") and returns the function that puts
// those given into a request body: --jwks (a JWK Set file, - for stdin)
// or --jwks-uri (either sets private_key_jwt), --profile, and the switches
// --require-par, --dpop-bound and --dpop-nonce (a switch given =false
// clears the setting; one left out keeps it).
func securityFlags(fs *flag.FlagSet, e env) func(body map[string]any) error {
	jwks := fs.String("jwks", "", "a file holding the credential's public keys, a JWK Set (- for stdin): it then authenticates with private_key_jwt")
	jwksURI := fs.String("jwks-uri", "", "the https URL where the client publishes its public keys: it then authenticates with private_key_jwt")
	profile := fs.String("profile", "", `the credential's profile: fapi2 (PAR, DPoP and private_key_jwt required), or "" to leave it`)
	fs.Bool("require-par", false, "its authorization requests must be pushed (RFC 9126)")
	fs.Bool("dpop-bound", false, "its token requests must carry a DPoP proof (RFC 9449)")
	fs.Bool("dpop-nonce", false, "its DPoP proofs must carry a server nonce")
	fs.Bool("grant-management-action-required", false, "its authorization requests must carry grant_management_action (docs/authserver.md, \"Grant management\")")
	return func(body map[string]any) error {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		switch {
		case given["jwks"] && given["jwks-uri"]:
			return errors.New("--jwks and --jwks-uri contradict each other: give the keys or where they are published, not both")
		case given["jwks"]:
			set, err := readJSONFile(e, *jwks)
			if err != nil {
				return fmt.Errorf("--jwks: %w", err)
			}
			body["jwks"], body["token_endpoint_auth_method"] = set, "private_key_jwt"
		case given["jwks-uri"]:
			body["jwks_uri"], body["token_endpoint_auth_method"] = *jwksURI, "private_key_jwt"
		}
		if given["profile"] {
			body["profile"] = *profile
		}
		for flagName, member := range map[string]string{"require-par": "require_pushed_authorization_requests",
			"dpop-bound": "dpop_bound_access_tokens", "dpop-nonce": "require_dpop_nonce",
			"grant-management-action-required": "grant_management_action_required"} {
			if given[flagName] {
				body[member] = flagValue(fs, flagName) == "true"
			}
		}
		return nil
	}
}

// securitySummary is what a confirmation says of a credential's settings,
// when it has any beyond a secret.
func securitySummary(a answer) string {
	var parts []string
	switch {
	case a.str("jwks_uri") != "":
		parts = append(parts, "authenticates with private_key_jwt, keys at "+a.str("jwks_uri"))
	case a["jwks"] != nil:
		parts = append(parts, "authenticates with private_key_jwt, keys registered")
	}
	if p := a.str("profile"); p != "" {
		parts = append(parts, "profile "+p)
	}
	for _, m := range []string{"require_pushed_authorization_requests", "dpop_bound_access_tokens", "require_dpop_nonce", "grant_management_action_required"} {
		if on, _ := a[m].(bool); on {
			parts = append(parts, m)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
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

// runDashboard runs an action of a command group: its flags and
// arguments become one request of the dashboard API, whose answer or
// refusal is printed.
func runDashboard(ctx context.Context, e env, group string) int {
	acts := groups(e)[group]
	name, code, ok := pickAction(e, group, acts)
	if !ok {
		return code
	}
	act := acts[name]
	cmd := group + " " + name
	fs := newFlagSet(cmd, func(w io.Writer) {
		fmt.Fprintf(w, "usage: miniapp-host %s %s [--dashboard URL] [--key KEY] [--json]\n", cmd, act.usage)
	})
	dash := fs.String("dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	key := fs.String("key", "", "the project's key, or the operator key for review (default $"+keyEnv+"; for review $"+operatorKeyEnv+" first)")
	asJSON := fs.Bool("json", false, "print the dashboard's answer as it came (also its error, on a refusal)")
	build := act.flags(fs)
	args, code, ok := parseFlags(e, fs, e.args[1:])
	if !ok {
		return code
	}
	if len(args) != act.nargs {
		return usageError(e, cmd, fmt.Sprintf("want %d argument(s), got %d: miniapp-host %s %s", act.nargs, len(args), cmd, act.usage))
	}
	req, err := build(args)
	if err != nil {
		return usageError(e, cmd, err.Error())
	}
	k := dashboardKey(e, group, *key)
	c := &dashboard.Client{BaseURL: *dash, Key: k}
	out, err := c.Do(ctx, req.method, req.path, req.body)
	if err != nil {
		return dashboardFailed(e, cmd, group, *dash, k != "", *asJSON, err)
	}
	if *asJSON {
		if out != nil {
			fmt.Fprintln(e.stdout, string(out))
		}
		return exitOK
	}
	var confirm func(answer) string
	if act.confirm != nil {
		confirm = func(ans answer) string { return act.confirm(fs, args, ans) }
	}
	return printAnswer(e, cmd, out, confirm)
}

// pickAction returns the action named by the group's first argument; help
// asked for, no action or an unknown one end the command with the group's
// usage (and code).
func pickAction(e env, group string, acts map[string]action) (name string, code int, ok bool) {
	names := make([]string, 0, len(acts))
	for n := range acts {
		names = append(names, n)
	}
	sort.Strings(names)
	groupUsage := func(w io.Writer) {
		for _, n := range names {
			fmt.Fprintf(w, "usage: miniapp-host %s %s %s [--dashboard URL] [--key KEY] [--json]\n", group, n, acts[n].usage)
		}
		fmt.Fprintf(w, "\nRun 'miniapp-host %s ACTION -h' for an action's flags (docs/dashboard.md).\n", group)
	}
	if len(e.args) == 0 {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: an action is required\n", group)
		groupUsage(e.stderr)
		return "", exitUsage, false
	}
	switch e.args[0] {
	case "-h", "-help", "--help", "help":
		groupUsage(e.stdout)
		return "", exitOK, false
	}
	if _, ok := acts[e.args[0]]; !ok {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: unknown action %q\n", group, e.args[0])
		groupUsage(e.stderr)
		return "", exitUsage, false
	}
	return e.args[0], exitOK, true
}

// dashboardKey is the key to send: --key, else for review the operator
// key's variable (which serve and playground read), else keyEnv.
func dashboardKey(e env, group, key string) string {
	if key == "" && group == "review" {
		key = e.envVar(operatorKeyEnv)
	}
	if key == "" {
		key = e.envVar(keyEnv)
	}
	return key
}

// dashboardFailed reports a call that did not succeed: a refusal (with
// --json, also the dashboard's error as it came) as refused, or as could
// not decide for a 5xx; no answer at all with how to reach the server.
func dashboardFailed(e env, cmd, group, dash string, keySent, asJSON bool, err error) int {
	var ae *dashboard.APIError
	if !errors.As(err, &ae) {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: %v\n", cmd, err)
		fmt.Fprintf(e.stderr, "miniapp-host: is the server running? 'miniapp-host serve' prints its dashboard_url; pass it with --dashboard (now %s)\n", dash)
		return exitUndecided
	}
	if asJSON {
		fmt.Fprintln(e.stdout, string(ae.Body))
	}
	printRefusal(e.stderr, cmd, group, keySent, ae)
	if ae.Status >= 500 {
		return exitUndecided
	}
	return exitRejected
}

// printAnswer prints the dashboard's answer out: the line confirm makes of
// it for an action that changes something (confirm not nil), else the
// answer indented.
func printAnswer(e env, cmd string, out []byte, confirm func(answer) string) int {
	if confirm != nil {
		var ans answer
		if out != nil {
			if err := json.Unmarshal(out, &ans); err != nil {
				fmt.Fprintf(e.stderr, "miniapp-host: %s: the answer is not a JSON object: %v\n", cmd, err)
				return exitUndecided
			}
		}
		fmt.Fprintln(e.stdout, confirm(ans))
		return exitOK
	}
	if out == nil {
		return exitOK
	}
	var b bytes.Buffer
	if err := json.Indent(&b, out, "", "  "); err != nil {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: %v\n", cmd, err)
		return exitUndecided
	}
	fmt.Fprintln(e.stdout, b.String())
	return exitOK
}

// printRefusal prints the dashboard's error: its status, code, field and
// message, every violation it lists (field, rule, fix), and for a missing
// or refused key how to authenticate.
func printRefusal(w io.Writer, cmd, group string, keySent bool, ae *dashboard.APIError) {
	line := fmt.Sprintf("miniapp-host: %s: the dashboard refused it (%d %s)", cmd, ae.Status, ae.Err.Code)
	if ae.Err.Field != "" {
		line += " at " + ae.Err.Field
	}
	if ae.Err.Message != "" {
		line += ": " + ae.Err.Message
	}
	fmt.Fprintln(w, line)
	vs, _ := ae.Err.Violations.([]any)
	if len(vs) > 0 {
		fmt.Fprintf(w, "  %d violation(s):\n", len(vs))
	}
	for _, v := range vs {
		m, _ := v.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		rule := str("code")
		if st := str("stage"); st != "" {
			rule = st + "/" + rule
		}
		field := str("pointer")
		if field == "" {
			field = "(the document)"
		}
		fmt.Fprintf(w, "  - %s: %s: %s\n", field, rule, str("message"))
		if h := str("hint"); h != "" {
			fmt.Fprintf(w, "    fix: %s\n", h)
		}
	}
	if ae.Status != http.StatusUnauthorized && ae.Err.Code != "operator_only" {
		return
	}
	which, vars := "the project's key (printed once by 'miniapp-host project create')", "the "+keyEnv+" environment variable"
	if group == "review" {
		which = "the operator key ('operator key' in the output of 'miniapp-host serve' or 'miniapp-host playground', or their --operator-key)"
		vars = "the " + operatorKeyEnv + " or " + keyEnv + " environment variable"
	}
	how := "authenticate"
	if keySent {
		how = "the key sent is not the right one; authenticate"
	}
	fmt.Fprintf(w, "  %s with --key KEY or %s: %s\n", how, vars, which)
}
