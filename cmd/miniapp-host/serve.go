package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/origin"
)

// secretFlags collects repeated --secret CLIENT_ID=SECRET values.
type secretFlags map[string]string

func (s secretFlags) String() string { return "" }

func (s secretFlags) Set(v string) error {
	id, secret, ok := strings.Cut(v, "=")
	if !ok || id == "" || secret == "" {
		return errors.New("want CLIENT_ID=SECRET")
	}
	s[id] = secret
	return nil
}

// originFlags collects repeated --dashboard-origin values.
type originFlags []string

func (o *originFlags) String() string { return strings.Join(*o, " ") }

func (o *originFlags) Set(v string) error {
	if _, err := origin.Parse(v); err != nil {
		return err
	}
	*o = append(*o, v)
	return nil
}

// runServe is `miniapp-host serve`: the reference authorization server,
// its dashboard and the example providers, until interrupted.
func runServe(ctx context.Context, e env) int {
	fs := newFlagSet("serve", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host serve [--db FILE] [--addr HOST:PORT] [--secret CLIENT_ID=SECRET]... [--operator-key KEY] [-v]")
		fmt.Fprintln(w, "prints the address of every role (the ports actually bound, also with port 0) and the seeded clients, then serves until interrupted")
	})
	db := fs.String("db", "", "SQLite database file (default: the user's data directory, miniapp-host/authserver.db)")
	addr := fs.String("addr", authserver.DefaultServiceAddr, "service address (authorization server and {base_url}); the dashboard, signing and invoicing roles take the next three ports unless set")
	dash := fs.String("dashboard-addr", "", "dashboard address")
	signing := fs.String("signing-addr", "", "signing provider address")
	invoicing := fs.String("invoicing-addr", "", "invoicing provider address")
	secrets := secretFlags{}
	fs.Var(secrets, "secret", "fix a seeded confidential client's secret, CLIENT_ID=SECRET (repeatable); the others get a new random secret at each start")
	var dashOrigins originFlags
	fs.Var(&dashOrigins, "dashboard-origin", "an origin, beside the dashboard's own, whose web pages may change state through the dashboard API (repeatable; docs/dashboard.md)")
	opKey := fs.String("operator-key", "", "fix the operator credential of the dashboard's review API (default: a new random key at each start)")
	verbose := fs.Bool("v", false, "log internal errors to stderr")
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(args) > 0 {
		return usageError(e, "serve", fmt.Sprintf("unexpected argument %q: every input is a flag", args[0]))
	}
	if *db == "" {
		p, err := authserver.DefaultDB()
		if err != nil {
			fmt.Fprintln(e.stderr, "miniapp-host:", err)
			return exitUsage
		}
		*db = p
	}
	cfg := authserver.Config{DB: *db, ServiceAddr: *addr, DashboardAddr: *dash, SigningAddr: *signing,
		InvoicingAddr: *invoicing, Secrets: secrets, OperatorKey: *opKey, DashboardOrigins: dashOrigins}
	for i, p := range []*string{&cfg.DashboardAddr, &cfg.SigningAddr, &cfg.InvoicingAddr} {
		if *p == "" {
			*p = nextPort(*addr, i+1)
		}
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(e.stderr, nil))
	}
	srv, err := authserver.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		if errors.As(err, new(*store.LockedError)) {
			fmt.Fprintln(e.stderr, "miniapp-host: one server owns a database; a second one needs its own --db FILE")
		}
		return exitUndecided
	}
	u := srv.URLs()
	fmt.Fprintf(e.stdout, "%-20s%s\n", "database", *db)
	for _, l := range [][2]string{
		{"issuer", u.Issuer}, {"discovery", u.Discovery}, {"authorization", u.Authorization}, {"token", u.Token},
		{"base_url", u.BaseURL}, {"grant endpoint", u.Grant}, {"native consent", u.Native}, {"dashboard_url", u.Dashboard},
		{"signing_base_url", u.SigningBaseURL}, {"invoicing_base_url", u.InvoicingBaseURL},
	} {
		fmt.Fprintf(e.stdout, "%-20s%s\n", l[0], l[1])
	}
	fmt.Fprintf(e.stdout, "\noperator key        %s  (review: miniapp-host review list --key KEY, docs/dashboard.md)\n", srv.OperatorKey())
	fmt.Fprintln(e.stdout, "\nclients (secrets are valid until the server stops unless fixed with --secret):")
	for _, c := range srv.Credentials() {
		fmt.Fprintf(e.stdout, "  %-20s %-12s", c.ClientID, c.Type)
		if c.ClientSecret != "" {
			fmt.Fprintf(e.stdout, " secret %s", c.ClientSecret)
		}
		if len(c.RedirectURIs) > 0 {
			fmt.Fprintf(e.stdout, " redirect_uris %s", strings.Join(c.RedirectURIs, " "))
		}
		if len(c.Roles) > 0 {
			fmt.Fprintf(e.stdout, " roles %s", strings.Join(c.Roles, ","))
		}
		fmt.Fprintln(e.stdout)
	}
	fmt.Fprintln(e.stdout, "\nsubjects: sub_ana, sub_benjamin, sub_carla; companies: org_andes, org_pacifico (docs/authserver.md)")
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUndecided
	}
	return exitOK
}

// nextPort returns addr with its port increased by n, or a free port when
// addr's port is 0 or unreadable.
func nextPort(addr string, n int) string {
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || p == 0 {
		return net.JoinHostPort(host, "0")
	}
	return net.JoinHostPort(host, strconv.Itoa(p+n))
}
