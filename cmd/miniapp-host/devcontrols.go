package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
	"github.com/miniapp-host/miniapp-host/authserver/devctl"
)

// The development controls' commands, fault and clock (docs/dashboard.md,
// "Development controls"), call the dashboard's /api/dev/ routes with the
// operator key. What the CLI can check before sending (an unknown
// endpoint or error code, a duration that is not one, no effect or two)
// it refuses itself, naming the flag; the server checks everything again.

// devAction is one action of fault or clock.
type devAction struct {
	usage string
	// build reads the action's flags and arguments into one request, or a
	// usage error naming the flag.
	build func(fs *flag.FlagSet) func(args []string) (request, error)
	// text prints a successful answer without --json.
	text func(w io.Writer, ans json.RawMessage) error
}

func devCommand(group string) func(ctx context.Context, e env) int {
	return func(ctx context.Context, e env) int { return runDevControl(ctx, e, group) }
}

func devGroups() map[string]map[string]devAction {
	return map[string]map[string]devAction{
		"fault": {
			"add": {"--endpoint E --client ID [--subject S] (--error CODE [--description D] | --status N [--retry-after SECONDS] | --delay D | --drop) [--times N]",
				faultAddFlags, faultAddText},
			"list":  {"", faultListFlags, faultListText},
			"clear": {"[ID] [--client ID]", faultClearFlags, faultClearText},
		},
		"clock": {
			"advance": {"DURATION", clockFlags(clockAdvanceBody), clockText},
			"set":     {"TIME", clockFlags(clockSetBody), clockText},
			"reset":   {"", clockFlags(nil), clockText},
			"show":    {"", clockFlags(nil), clockText},
		},
	}
}

// faultAddText prints the fault added.
func faultAddText(w io.Writer, ans json.RawMessage) error {
	var f devctl.FaultView
	if err := json.Unmarshal(ans, &f); err != nil {
		return err
	}
	fmt.Fprintln(w, "added "+faultLine(f))
	return nil
}

// faultListFlags reads fault list, which takes nothing.
func faultListFlags(fs *flag.FlagSet) func([]string) (request, error) {
	return func(a []string) (request, error) {
		if len(a) != 0 {
			return request{}, fmt.Errorf("list takes no arguments, got %q", a)
		}
		return request{"GET", "/api/dev/faults", nil}, nil
	}
}

// faultListText prints the faults, one a line.
func faultListText(w io.Writer, ans json.RawMessage) error {
	var l struct{ Faults []devctl.FaultView }
	if err := json.Unmarshal(ans, &l); err != nil {
		return err
	}
	if len(l.Faults) == 0 {
		fmt.Fprintln(w, "no faults")
	}
	for _, f := range l.Faults {
		fmt.Fprintln(w, faultLine(f))
	}
	return nil
}

// faultClearFlags reads fault clear: one fault id, --client, or neither
// for every fault.
func faultClearFlags(fs *flag.FlagSet) func([]string) (request, error) {
	client := fs.String("client", "", "clear only the faults of this client_id")
	return func(a []string) (request, error) {
		switch {
		case len(a) > 1:
			return request{}, fmt.Errorf("clear takes at most one fault id, got %q", a)
		case len(a) == 1 && *client != "":
			return request{}, errors.New("give a fault id or --client, not both")
		case len(a) == 1:
			if !strings.HasPrefix(a[0], "flt_") {
				return request{}, fmt.Errorf("%q is no fault id: ids start with flt_ ('miniapp-host fault list' shows them)", a[0])
			}
			return request{"DELETE", "/api/dev/faults/" + url.PathEscape(a[0]), nil}, nil
		case *client != "":
			return request{"DELETE", "/api/dev/faults?client_id=" + url.QueryEscape(*client), nil}, nil
		}
		return request{"DELETE", "/api/dev/faults", nil}, nil
	}
}

// faultClearText prints what was removed.
func faultClearText(w io.Writer, ans json.RawMessage) error {
	var m struct {
		ID      string `json:"id"`
		Removed *int   `json:"removed"`
	}
	if err := json.Unmarshal(ans, &m); err != nil {
		return err
	}
	if m.Removed != nil {
		fmt.Fprintf(w, "removed %d fault(s)\n", *m.Removed)
	} else {
		fmt.Fprintf(w, "removed fault %s\n", m.ID)
	}
	return nil
}

// clockAdvanceBody is the body of clock advance DURATION.
func clockAdvanceBody(a string) (map[string]any, error) {
	d, err := time.ParseDuration(a)
	if err != nil || d <= 0 {
		return nil, fmt.Errorf("DURATION %q is not a positive Go duration: write one such as 61s, 10m or 1h30m", a)
	}
	return map[string]any{"advance": a}, nil
}

// clockSetBody is the body of clock set TIME.
func clockSetBody(a string) (map[string]any, error) {
	if _, err := time.Parse(time.RFC3339Nano, a); err != nil {
		return nil, fmt.Errorf("TIME %q is not an RFC 3339 time: write one such as 2027-01-01T00:00:00Z", a)
	}
	return map[string]any{"set": a}, nil
}

// faultAddArgs are the flags of fault add.
type faultAddArgs struct {
	endpoint, client, subject, code, desc, delay *string
	status, retry, times                         *int
	drop                                         *bool
}

// faultAddFlags reads the flags of fault add into the body of POST
// /api/dev/faults.
func faultAddFlags(fs *flag.FlagSet) func([]string) (request, error) {
	f := faultAddArgs{
		endpoint: fs.String("endpoint", "", "the endpoint: "+strings.Join(devctl.FaultEndpoints, ", ")+" (required)"),
		client:   fs.String("client", "", "the client_id whose requests get the fault (required)"),
		subject:  fs.String("subject", "", "only the requests of this subject"),
		code:     fs.String("error", "", "effect: answer this OAuth error code of the endpoint"),
		desc:     fs.String("description", "", "the error_description of --error"),
		status:   fs.Int("status", 0, "effect: answer this HTTP status (400-599) with the endpoint's error body"),
		retry:    fs.Int("retry-after", 0, "with --status: Retry-After, in seconds"),
		delay:    fs.String("delay", "", "effect: hold each request this long (a Go duration such as 2s), then answer for real"),
		drop:     fs.Bool("drop", false, "effect: close the connection without an answer"),
		times:    fs.Int("times", 0, "only the next N matching requests (default: until cleared)"),
	}
	return func(a []string) (request, error) {
		if len(a) != 0 {
			return request{}, fmt.Errorf("add takes flags only, got the arguments %q", a)
		}
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		body, err := f.body(set)
		if err != nil {
			return request{}, err
		}
		return request{"POST", "/api/dev/faults", body}, nil
	}
}

// body checks the flags (set: those given) and makes the body: the
// target, then exactly one effect.
func (f faultAddArgs) body(set map[string]bool) (map[string]any, error) {
	switch {
	case *f.endpoint == "":
		return nil, errors.New("--endpoint is required: one of " + strings.Join(devctl.FaultEndpoints, ", "))
	case !slices.Contains(devctl.FaultEndpoints, *f.endpoint):
		return nil, fmt.Errorf("--endpoint %q is no endpoint a fault can be injected at: use one of %s", *f.endpoint, strings.Join(devctl.FaultEndpoints, ", "))
	case *f.client == "":
		return nil, errors.New("--client is required: the client_id whose requests get the fault")
	}
	n := 0
	for _, fl := range []string{"error", "status", "delay", "drop"} {
		if set[fl] {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("give exactly one effect: --error CODE, --status N, --delay D or --drop")
	}
	body := map[string]any{"endpoint": *f.endpoint, "client_id": *f.client}
	if *f.subject != "" {
		body["subject"] = *f.subject
	}
	if set["times"] {
		body["times"] = *f.times
	}
	return body, f.effect(set, body)
}

// effect checks the one effect given and adds it to body.
func (f faultAddArgs) effect(set map[string]bool, body map[string]any) error {
	switch {
	case set["description"] && !set["error"]:
		return errors.New("--description goes with --error only")
	case set["retry-after"] && !set["status"]:
		return errors.New("--retry-after goes with --status only")
	case set["error"]:
		if kinds := devctl.FaultKinds(*f.endpoint); !slices.Contains(kinds, *f.code) {
			return fmt.Errorf("--error %q is not an error the %s endpoint gives: use one of %s", *f.code, *f.endpoint, strings.Join(kinds, ", "))
		}
		body["error"] = *f.code
		if set["description"] {
			body["error_description"] = *f.desc
		}
	case set["status"]:
		body["status"] = *f.status
		if set["retry-after"] {
			body["retry_after"] = *f.retry
		}
	case set["delay"]:
		if _, err := time.ParseDuration(*f.delay); err != nil {
			return fmt.Errorf("--delay %q is not a duration: write a Go duration such as 500ms, 3s or 1m", *f.delay)
		}
		body["delay"] = *f.delay
	default:
		if !*f.drop {
			return errors.New("--drop=false is no effect: give --drop")
		}
		body["drop"] = true
	}
	return nil
}

// faultLine is one fault on one line.
func faultLine(f devctl.FaultView) string {
	parts := []string{f.ID, "endpoint=" + f.Endpoint, "client=" + f.ClientID}
	if f.Subject != "" {
		parts = append(parts, "subject="+f.Subject)
	}
	switch {
	case f.Error != "":
		e := "error=" + f.Error
		if f.ErrorDescription != "" {
			e += " " + strconv.Quote(f.ErrorDescription)
		}
		parts = append(parts, e)
	case f.Status != 0:
		s := "status=" + strconv.Itoa(f.Status)
		if f.RetryAfter != 0 {
			s += " retry-after=" + strconv.Itoa(f.RetryAfter)
		}
		parts = append(parts, s)
	case f.Delay != "":
		parts = append(parts, "delay="+f.Delay)
	case f.Drop:
		parts = append(parts, "drop")
	}
	if f.Remaining == nil {
		parts = append(parts, "until cleared")
	} else {
		parts = append(parts, fmt.Sprintf("remaining=%d of %d", *f.Remaining, f.Times))
	}
	return strings.Join(parts, "  ")
}

// clockFlags builds a clock action: arg makes the POST body of the one
// argument; nil for show (GET) and reset.
func clockFlags(arg func(string) (map[string]any, error)) func(fs *flag.FlagSet) func([]string) (request, error) {
	return func(fs *flag.FlagSet) func([]string) (request, error) {
		return func(a []string) (request, error) {
			name := fs.Name()[len("clock "):]
			switch {
			case arg != nil && len(a) != 1:
				return request{}, fmt.Errorf("%s takes one argument, got %d", name, len(a))
			case arg == nil && len(a) != 0:
				return request{}, fmt.Errorf("%s takes no arguments, got %q", name, a)
			case arg != nil:
				body, err := arg(a[0])
				return request{"POST", "/api/dev/clock", body}, err
			case name == "reset":
				return request{"POST", "/api/dev/clock", map[string]any{"reset": true}}, nil
			}
			return request{"GET", "/api/dev/clock", nil}, nil
		}
	}
}

func clockText(w io.Writer, ans json.RawMessage) error {
	var st devctl.ClockState
	if err := json.Unmarshal(ans, &st); err != nil {
		return err
	}
	fmt.Fprintf(w, "clock %s (offset %s from real time %s)\n", st.Now, st.Offset, st.Real)
	return nil
}

// runDevControl runs an action of fault or clock.
func runDevControl(ctx context.Context, e env, group string) int {
	g := devGroup{name: group, acts: devGroups()[group]}
	if len(e.args) == 0 {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: an action is required\n", group)
		g.usage(e.stderr)
		return exitUsage
	}
	name := e.args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		g.usage(e.stdout)
		return exitOK
	}
	act, ok := g.acts[name]
	if !ok {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: unknown action %q\n", group, name)
		g.usage(e.stderr)
		return exitUsage
	}
	cmd := group + " " + name
	fs := newFlagSet(cmd, func(w io.Writer) { fmt.Fprintln(w, g.usageLine(name)) })
	dash := fs.String("dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url})")
	key := fs.String("key", "", "the operator key (default $"+operatorKeyEnv+", else $"+keyEnv+")")
	asJSON := fs.Bool("json", false, "print the dashboard's answer as it came (also its error, on a refusal)")
	build := act.build(fs)
	args, code, ok := parseFlags(e, fs, e.args[1:])
	if !ok {
		return code
	}
	req, err := build(args)
	if err != nil {
		return usageError(e, cmd, err.Error())
	}
	k := *key
	for _, v := range []string{operatorKeyEnv, keyEnv} {
		if k == "" {
			k = e.envVar(v)
		}
	}
	c := &dashboard.Client{BaseURL: *dash, Key: k}
	out, err := c.Do(ctx, req.method, req.path, req.body)
	if err != nil {
		return devControlFailed(e, cmd, *dash, k != "", *asJSON, err)
	}
	if *asJSON {
		fmt.Fprintln(e.stdout, string(out))
		return exitOK
	}
	if err := act.text(e.stdout, out); err != nil {
		fmt.Fprintf(e.stderr, "miniapp-host: %s: the answer is not of the documented form: %v\n", cmd, err)
		return exitUndecided
	}
	return exitOK
}

// devGroup is fault or clock with its actions.
type devGroup struct {
	name string
	acts map[string]devAction
}

// usageLine is the usage of one action.
func (g devGroup) usageLine(n string) string {
	return strings.Join(strings.Fields("usage: miniapp-host "+g.name+" "+n+" "+g.acts[n].usage+" [--dashboard URL] [--key KEY] [--json]"), " ")
}

// usage prints every action's usage, by name.
func (g devGroup) usage(w io.Writer) {
	names := make([]string, 0, len(g.acts))
	for n := range g.acts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintln(w, g.usageLine(n))
	}
	fmt.Fprintf(w, "\nWith the operator key of a development server (docs/dashboard.md, \"Development controls\").\nRun 'miniapp-host %s ACTION -h' for an action's flags.\n", g.name)
}

// devControlFailed reports a control the dashboard did not answer: a
// server without development controls is refused; anything else as every
// dashboard command reports it.
func devControlFailed(e env, cmd, dash string, hasKey, asJSON bool, err error) int {
	var ae *dashboard.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusForbidden && ae.Err.Code == "development_only" {
		if asJSON {
			fmt.Fprintln(e.stdout, string(ae.Body))
		}
		fmt.Fprintf(e.stderr, "miniapp-host: %s: this server has no development controls: its issuer is not on loopback (docs/dashboard.md, \"Development controls\")\n", cmd)
		return exitRejected
	}
	return dashboardFailed(e, cmd, "review", dash, hasKey, asJSON, err)
}
