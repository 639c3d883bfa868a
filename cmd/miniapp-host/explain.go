package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

// runExplain is `miniapp-host explain`: the dry run of an authorization
// request on a development server (docs/dashboard.md, "Explain"), through
// POST /api/dev/explain with the operator key.
func runExplain(ctx context.Context, e env) int {
	const cmd = "explain"
	fs := newFlagSet(cmd, func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host explain --client ID --subject S [--scope \"a b\"] [--authorization-details FILE|-] [--org-id O] [--json]")
		fmt.Fprintln(w, "       miniapp-host explain AUTHORIZE_URL --subject S [--json]")
		fmt.Fprintln(w, "           [--dashboard URL] [--key KEY]")
		fmt.Fprintln(w, "\nThe dry run of an authorization request on a development server: each check")
		fmt.Fprintln(w, "(docs/service.md §1) passed or refused with its rule and the values it compared,")
		fmt.Fprintln(w, "the consent screen and the grant and token claims that would result, without a")
		fmt.Fprintln(w, "sign-in and without writing anything (docs/dashboard.md, \"Explain\").")
		fmt.Fprintln(w, "Exit codes: 0 every check passes, 1 one refuses, 2 usage or bad input, 3 could not decide.")
	})
	dash := fs.String("dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	key := fs.String("key", "", "the operator key (default $"+operatorKeyEnv+", then $"+keyEnv+")")
	asJSON := fs.Bool("json", false, "print the report as the dashboard sent it")
	client := fs.String("client", "", "the client_id of the request")
	subject := fs.String("subject", "", "the subject who would decide, such as sub_ana (required)")
	scope := fs.String("scope", "", "the scopes, space-separated")
	details := fs.String("authorization-details", "", "a file holding the authorization_details JSON array, or - for stdin")
	org := fs.String("org-id", "", "the org_id: the Company the request acts for")
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	body, msg := explainBody(e, args, explainFlags{client: *client, subject: *subject, scope: *scope, details: *details, org: *org})
	if msg != "" {
		return usageError(e, cmd, msg)
	}
	c := &dashboard.Client{BaseURL: *dash, Key: dashboardKey(e, "review", *key)}
	out, err := c.Do(ctx, http.MethodPost, "/api/dev/explain", body)
	if err != nil {
		return explainFailed(e, *dash, *asJSON, err)
	}
	var rep explainReport
	if err := json.Unmarshal(out, &rep); err != nil {
		fmt.Fprintf(e.stderr, "miniapp-host: explain: the answer is not a report: %v\n", err)
		return exitUndecided
	}
	if *asJSON {
		fmt.Fprintln(e.stdout, string(out))
	} else {
		printExplanation(e.stdout, &rep)
	}
	return verdictCode(e, rep.Verdict)
}

// explainFlags are the flags of explain that make its request.
type explainFlags struct {
	client, subject, scope, details, org string
}

// explainBody is the body of POST /api/dev/explain: a whole authorize URL
// (args) or the request's parts, for a subject; a usage error otherwise.
func explainBody(e env, args []string, f explainFlags) (map[string]any, string) {
	body := map[string]any{"subject": f.subject}
	switch {
	case len(args) > 1:
		return nil, fmt.Sprintf("want at most one argument, the authorize URL, got %d", len(args))
	case f.subject == "":
		return nil, "--subject is required: the subject who would decide, such as sub_ana"
	case len(args) == 1:
		if f.client != "" || f.scope != "" || f.details != "" || f.org != "" {
			return nil, "give either an AUTHORIZE_URL or --client with --scope, --authorization-details and --org-id, not both"
		}
		body["authorize_url"] = args[0]
	case f.client == "":
		return nil, "--client is required (or give a whole AUTHORIZE_URL)"
	default:
		body["client_id"], body["scope"], body["org_id"] = f.client, f.scope, f.org
		if f.details != "" {
			raw, err := readJSONFile(e, f.details)
			if err != nil {
				return nil, "--authorization-details: " + err.Error()
			}
			body["authorization_details"] = raw
		}
	}
	return body, ""
}

// verdictCode is the exit code of a report's verdict.
func verdictCode(e env, verdict string) int {
	switch verdict {
	case "approvable":
		return exitOK
	case "refused":
		return exitRejected
	}
	fmt.Fprintf(e.stderr, "miniapp-host: explain: the report's verdict %q is neither approvable nor refused\n", verdict)
	return exitUndecided
}

// explainFailed reports a dry run that was not answered with a report:
// bad input (400) is a usage error; anything else could not decide.
func explainFailed(e env, dash string, asJSON bool, err error) int {
	var ae *dashboard.APIError
	if !errors.As(err, &ae) {
		fmt.Fprintf(e.stderr, "miniapp-host: explain: %v\n", err)
		fmt.Fprintf(e.stderr, "miniapp-host: is the server running? 'miniapp-host serve' and 'miniapp-host playground' print its dashboard_url; pass it with --dashboard (now %s)\n", dash)
		return exitUndecided
	}
	if asJSON {
		fmt.Fprintln(e.stdout, string(ae.Body))
	}
	if ae.Err.Code == "development_only" {
		fmt.Fprintln(e.stderr, "miniapp-host: explain: this server has no development controls: its issuer is not on loopback (docs/dashboard.md, \"Development controls\")")
		return exitUndecided
	}
	printRefusal(e.stderr, "explain", "review", ae.Err.Code != "missing_key", ae)
	if ae.Status == http.StatusBadRequest {
		return exitUsage
	}
	return exitUndecided
}

// explainReport is the part of the dry run's report that the text shows
// (docs/dashboard.md, "Explain").
type explainReport struct {
	Verdict string `json:"verdict"`
	Request struct {
		ClientID string `json:"client_id"`
		Subject  string `json:"subject"`
	} `json:"request"`
	RefusedBy  *explainCheck   `json:"refused_by"`
	Checks     []explainCheck  `json:"checks"`
	Consent    *explainConsent `json:"consent"`
	Remembered bool            `json:"consent_remembered"`
	Grant      *explainGrant   `json:"grant"`
	Tokens     *explainTokens  `json:"tokens"`
}

// explainConsent is the consent screen of a report.
type explainConsent struct {
	Project struct{ ID, Name string } `json:"project"`
	Client  struct{ ID, Name string } `json:"client"`
	Subject struct{ ID, Name string } `json:"subject"`
	Company *struct {
		ID, Name string
	} `json:"company"`
	Permissions []struct {
		Kind    string `json:"kind"`
		Name    string `json:"name"`
		Meaning string `json:"meaning"`
		Index   *int   `json:"index"`
		Actions []struct {
			Name, Meaning string
		} `json:"actions"`
		Limits json.RawMessage `json:"limits"`
	} `json:"permissions"`
	Accounts []struct {
		ID, Name, Number, Currency, Owner string
	} `json:"accounts"`
}

// explainGrant is the grant of a report.
type explainGrant struct {
	Scopes                 []string        `json:"scopes"`
	AuthorizationDetails   json.RawMessage `json:"authorization_details"`
	OrgID                  string          `json:"org_id"`
	AccountID              string          `json:"account_id"`
	CompanyAccountID       string          `json:"company_account_id"`
	Audience               []string        `json:"audience"`
	ConsumerInstallationID string          `json:"consumer_installation_id"`
}

// explainTokens is the token claims of a report.
type explainTokens struct {
	TokenType   string `json:"token_type"`
	Code        int64  `json:"code_lifetime_seconds"`
	AccessToken struct {
		Iss, Sub, Scope string
		Aud             any
		ClientID        string `json:"client_id"`
		OrgID           string `json:"org_id"`
		Lifetime        int64  `json:"lifetime_seconds"`
	} `json:"access_token"`
	IDToken *struct {
		Iss, Sub, Aud, Azp string
		Lifetime           int64 `json:"lifetime_seconds"`
	} `json:"id_token"`
	RefreshToken *struct {
		Lifetime int64 `json:"lifetime_seconds"`
	} `json:"refresh_token"`
}

type explainCheck struct {
	Name    string         `json:"name"`
	Check   string         `json:"check"`
	Outcome string         `json:"outcome"`
	Code    string         `json:"code"`
	Rule    string         `json:"rule"`
	Message string         `json:"message"`
	Values  map[string]any `json:"values"`
}

// outcomeWord is a check's outcome as the text prints it.
func outcomeWord(o string) string {
	switch o {
	case "pass":
		return "PASS"
	case "fail":
		return "REFUSED"
	}
	return strings.ToUpper(o)
}

// printExplanation prints a report: the verdict, each check on its own
// line with its rule and values, the consent screen and the claims.
func printExplanation(w io.Writer, r *explainReport) {
	head := fmt.Sprintf("explain %s for %s: ", r.Request.ClientID, r.Request.Subject)
	if f := r.RefusedBy; f != nil {
		head += fmt.Sprintf("REFUSED by %s (%s check, %s)", f.Name, strings.ReplaceAll(f.Check, "_", " "), f.Code)
	} else {
		head += "every check passes"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, "\nchecks:")
	for _, c := range r.Checks {
		printCheck(w, c)
	}
	if m := r.Consent; m != nil {
		shown := "shown"
		if r.RefusedBy != nil {
			shown = "shown with Deny only: a check refused"
		} else if r.Remembered {
			shown = "not shown: the subject consented to all of it before"
		}
		printConsent(w, m, shown)
	}
	if g := r.Grant; g != nil {
		printGrant(w, g)
	}
	if t := r.Tokens; t != nil {
		printTokens(w, t)
	}
}

// printCheck prints a check: its outcome, name, code and message, then
// its rule and values.
func printCheck(w io.Writer, c explainCheck) {
	line := fmt.Sprintf("  %-8s %s (%s)", outcomeWord(c.Outcome), c.Name, strings.ReplaceAll(c.Check, "_", " "))
	if c.Code != "" {
		line += " " + c.Code
	}
	if c.Message != "" {
		line += ": " + c.Message
	}
	fmt.Fprintln(w, line)
	fmt.Fprintf(w, "           rule: %s\n", c.Rule)
	if v := valuesText(c.Values); v != "" {
		fmt.Fprintf(w, "           values: %s\n", v)
	}
}

// printConsent prints the consent screen: who asks whom, each permission
// with its actions and limits, and the accounts to pick.
func printConsent(w io.Writer, m *explainConsent, shown string) {
	fmt.Fprintf(w, "\nconsent screen (%s):\n", shown)
	who := fmt.Sprintf("  %s (client %s of project %s, %s) asks %s (%s)", m.Client.Name, m.Client.ID, m.Project.ID, m.Project.Name, m.Subject.Name, m.Subject.ID)
	if m.Company != nil {
		who += fmt.Sprintf(" for Company %s (%s)", m.Company.Name, m.Company.ID)
	}
	fmt.Fprintln(w, who)
	for _, p := range m.Permissions {
		entry := "scope " + p.Name
		if p.Index != nil {
			entry = fmt.Sprintf("detail %d %s", *p.Index, p.Name)
		}
		fmt.Fprintf(w, "  - %s: %s\n", entry, p.Meaning)
		for _, a := range p.Actions {
			fmt.Fprintf(w, "      action %s: %s\n", a.Name, a.Meaning)
		}
		if len(p.Limits) > 0 && string(p.Limits) != "null" {
			fmt.Fprintf(w, "      limits: %s\n", compactJSON(p.Limits))
		}
	}
	if len(m.Accounts) > 0 {
		fmt.Fprintln(w, "  accounts to pick:")
		for _, a := range m.Accounts {
			fmt.Fprintf(w, "    %s %s %s %s (%s's)\n", a.ID, a.Name, a.Number, a.Currency, a.Owner)
		}
	}
}

// printGrant prints the grant an approval of every entry would make.
func printGrant(w io.Writer, g *explainGrant) {
	fmt.Fprintln(w, "\ngrant (an approval of every entry):")
	fmt.Fprintf(w, "  scopes: %s\n", strings.Join(g.Scopes, " "))
	fmt.Fprintf(w, "  authorization_details: %s\n", compactJSON(g.AuthorizationDetails))
	if g.OrgID != "" {
		fmt.Fprintf(w, "  org_id: %s\n", g.OrgID)
	}
	if g.AccountID != "" {
		fmt.Fprintf(w, "  account bound: %s\n", g.AccountID)
	}
	if g.CompanyAccountID != "" {
		fmt.Fprintf(w, "  Company account bound: %s\n", g.CompanyAccountID)
	}
	fmt.Fprintf(w, "  audience: %s\n", strings.Join(g.Audience, " "))
	fmt.Fprintf(w, "  consumer_installation_id: %s\n", g.ConsumerInstallationID)
}

// printTokens prints the claims of the tokens and the codes' lifetime.
func printTokens(w io.Writer, t *explainTokens) {
	fmt.Fprintf(w, "\ntokens (%s):\n", t.TokenType)
	a := t.AccessToken
	line := fmt.Sprintf("  access_token: iss=%s sub=%s aud=%s client_id=%s scope=%q", a.Iss, a.Sub, valueText(a.Aud), a.ClientID, a.Scope)
	if a.OrgID != "" {
		line += " org_id=" + a.OrgID
	}
	fmt.Fprintf(w, "%s, for %ds\n", line, a.Lifetime)
	if id := t.IDToken; id != nil {
		fmt.Fprintf(w, "  id_token: iss=%s sub=%s aud=%s azp=%s, for %ds\n", id.Iss, id.Sub, id.Aud, id.Azp, id.Lifetime)
	}
	if rt := t.RefreshToken; rt != nil {
		fmt.Fprintf(w, "  refresh_token: for %ds\n", rt.Lifetime)
	}
	fmt.Fprintf(w, "  authorization code: for %ds\n", t.Code)
}

// valuesText is a check's values as name=value pairs, by name.
func valuesText(vals map[string]any) string {
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + valueText(vals[n])
	}
	return strings.Join(parts, " ")
}

// valueText is one value: a string as it is (quoted when empty or with
// spaces), a list in brackets, anything else as compact JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" || strings.ContainsAny(x, " \t") {
			return fmt.Sprintf("%q", x)
		}
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = valueText(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// compactJSON is raw on one line.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
