package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

// miniapp-host fixture apply|reset: the development server's consent
// fixtures and test identities (docs/dashboard.md, "Fixtures"), through
// the dashboard's /api/dev/fixtures routes with the operator key.

// fixtureActions are fixture's actions: usage, arguments, flags and the
// request they make.
func fixtureActions(e env) map[string]action {
	return map[string]action{
		"apply": {"FILE|-", 1, func(fs *flag.FlagSet) func([]string) (request, error) {
			return func(a []string) (request, error) {
				raw, err := readJSONFile(e, a[0])
				return request{"POST", "/api/dev/fixtures", raw}, err
			}
		}, fixtureApplied},
		"reset": {"[--subject S] [--client ID]", 0, func(fs *flag.FlagSet) func([]string) (request, error) {
			sub := fs.String("subject", "", "forget this subject's decisions (sub_...)")
			client := fs.String("client", "", "forget this client's decisions (its client_id); with --subject, that subject's for this client only")
			return func([]string) (request, error) {
				if *sub == "" && *client == "" {
					return request{}, errors.New("name whose decisions to forget: --subject S, --client ID, or both")
				}
				body := map[string]string{}
				if *sub != "" {
					body["subject"] = *sub
				}
				if *client != "" {
					body["client_id"] = *client
				}
				return request{"POST", "/api/dev/fixtures/reset", body}, nil
			}
		}, fixtureReset},
	}
}

// fixtureApplied confirms an apply: the counts, and each grant's access
// token, which the grant endpoint and introspection answer for.
func fixtureApplied(_ *flag.FlagSet, args []string, a answer) string {
	count := func(kind string) int {
		m, _ := a[kind].(map[string]any)
		n, _ := m["count"].(float64)
		return int(n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "applied %s: %d subject(s), %d company(ies), %d membership(s), %d account(s), %d consent(s), %d grant(s)",
		args[0], count("subjects"), count("companies"), count("memberships"), count("accounts"), count("consents"), count("grants"))
	g, _ := a["grants"].(map[string]any)
	toks, _ := g["tokens"].([]any)
	for _, t := range toks {
		m, _ := t.(map[string]any)
		state := "active"
		if m["revoked"] == true {
			state = "revoked"
		}
		exp, _ := m["expires_in"].(float64)
		fmt.Fprintf(&b, "\n  grant %v (%s): access token %v (expires in %d s)", m["grant_id"], state, m["access_token"], int(exp))
	}
	return b.String()
}

// fixtureReset confirms a reset.
func fixtureReset(fs *flag.FlagSet, _ []string, a answer) string {
	n := func(k string) int { f, _ := a[k].(float64); return int(f) }
	var whose []string
	if s := flagValue(fs, "subject"); s != "" {
		whose = append(whose, "subject "+s)
	}
	if c := flagValue(fs, "client"); c != "" {
		whose = append(whose, "client "+c)
	}
	return fmt.Sprintf("forgot %d remembered consent(s) and revoked %d grant(s) of %s: the next authorization shows the consent screen again",
		n("consents_forgotten"), n("grants_revoked"), strings.Join(whose, " and "))
}

// runFixture runs fixture apply|reset.
func runFixture(ctx context.Context, e env) int {
	const group = "fixture"
	acts := fixtureActions(e)
	name, code, ok := pickAction(e, group, acts)
	if !ok {
		return code
	}
	act := acts[name]
	cmd := group + " " + name
	fs := newFlagSet(cmd, func(w io.Writer) {
		fmt.Fprintf(w, "usage: miniapp-host %s %s [--dashboard URL] [--key KEY] [--json]\n", cmd, act.usage)
		fmt.Fprintln(w, "\nA development server's test identities and decisions (docs/dashboard.md, \"Fixtures\"), with the operator key.")
	})
	dash := fs.String("dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	key := fs.String("key", "", "the operator key (default $"+operatorKeyEnv+", then $"+keyEnv+")")
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
	k := *key
	if k == "" {
		k = e.envVar(operatorKeyEnv)
	}
	if k == "" {
		k = e.envVar(keyEnv)
	}
	c := &dashboard.Client{BaseURL: *dash, Key: k}
	out, err := c.Do(ctx, req.method, req.path, req.body)
	if err != nil {
		var ae *dashboard.APIError
		if errors.As(err, &ae) && ae.Err.Code == "development_only" {
			if *asJSON {
				fmt.Fprintln(e.stdout, string(ae.Body))
			}
			fmt.Fprintf(e.stderr, "miniapp-host: %s: this server has no development controls: its issuer is not on loopback "+
				"(the embedded server of playground, open and dev has them, and serve with a loopback --issuer)\n", cmd)
			return exitRejected
		}
		// The operator's key, as for review.
		return dashboardFailed(e, cmd, "review", *dash, k != "", *asJSON, err)
	}
	if *asJSON {
		fmt.Fprintln(e.stdout, string(out))
		return exitOK
	}
	var ans answer
	if err := json.Unmarshal(out, &ans); err != nil {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: the answer is not a JSON object: %v\n", cmd, err)
		return exitUndecided
	}
	fmt.Fprintln(e.stdout, act.confirm(fs, args, ans))
	return exitOK
}
