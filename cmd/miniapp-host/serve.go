package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/metrics"
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

// serveEnv are the environment variables of serve's flags; a flag given on
// the command line wins.
var serveEnv = map[string]string{
	"db":            "MINIAPP_HOST_DB",
	"issuer":        "MINIAPP_HOST_ISSUER",
	"dashboard-url": "MINIAPP_HOST_DASHBOARD_URL",
	"signing-url":   "MINIAPP_HOST_SIGNING_URL",
	"invoicing-url": "MINIAPP_HOST_INVOICING_URL",
	"trusted-proxy": "MINIAPP_HOST_TRUSTED_PROXIES",
}

// serveFlags are the flags of `miniapp-host serve`.
type serveFlags struct {
	trusted, db, addr, dash, signing, invoicing *string
	issuer, dashURL, signURL, invURL            *string
	trustAny, verbose                           *bool
	metricsAddr                                 *string // --metrics-addr, with --metrics-public (docs/deploy.md, "Metrics")
	metricsPublic                               *bool
	log                                         *logFlags // --log-format, --log-level (docs/deploy.md, "Logs")
	eventsKeep                                  *int      // --events-keep (docs/deploy.md, "Audit events")
	drain, shutdownTimeout                      *time.Duration
	secrets                                     secretFlags
	dashOrigins                                 originFlags
	opKey                                       func() (key, source string) // --operator-key, else MINIAPP_HOST_OPERATOR_KEY
}

func serveUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: miniapp-host serve [--db FILE] [--addr HOST:PORT] [--issuer URL] [--dashboard-url URL] [--signing-url URL] [--invoicing-url URL]")
	fmt.Fprintln(w, "                          [--trusted-proxy CIDR,...] [--trust-any-proxy] [--secret CLIENT_ID=SECRET]... [--operator-key KEY] [--drain DURATION] [--shutdown-timeout DURATION] [-v]")
	fmt.Fprintln(w, "                          [--metrics-addr HOST:PORT [--metrics-public]] [--log-format text|json] [--log-level debug|info|warn|error] [--events-keep N]")
	fmt.Fprintln(w, "prints the address of every role (the ports actually bound, also with port 0) and the seeded clients, then serves until interrupted")
	fmt.Fprintln(w, "every listener answers GET /healthz and GET /readyz; behind a reverse proxy give every instance the proxy's addresses (docs/deploy.md)")
	fmt.Fprintln(w, "environment: MINIAPP_HOST_DB, MINIAPP_HOST_ISSUER, MINIAPP_HOST_DASHBOARD_URL, MINIAPP_HOST_SIGNING_URL, MINIAPP_HOST_INVOICING_URL, MINIAPP_HOST_TRUSTED_PROXIES, "+operatorKeyEnv+" (a flag wins)")
}

func newServeFlags(fs *flag.FlagSet, e env) *serveFlags {
	f := &serveFlags{
		trusted:         fs.String("trusted-proxy", "", "the reverse proxies in front of this instance, addresses or CIDR networks separated by commas: per-source limits then count the client they name in X-Forwarded-For; a network only inside a private one (docs/deploy.md)"),
		trustAny:        fs.Bool("trust-any-proxy", false, "allow a --trusted-proxy network wider than one host outside the private networks (every peer in it may name any client)"),
		db:              fs.String("db", "", "the database: a SQLite file (default: the user's data directory, miniapp-host/authserver.db), or a postgres:// URL that several instances share (docs/deploy.md)"),
		addr:            fs.String("addr", authserver.DefaultServiceAddr, "service address (authorization server and {base_url}); the dashboard, signing and invoicing roles take the next three ports unless set"),
		dash:            fs.String("dashboard-addr", "", "dashboard address"),
		signing:         fs.String("signing-addr", "", "signing provider address"),
		invoicing:       fs.String("invoicing-addr", "", "invoicing provider address"),
		issuer:          fs.String("issuer", "", "the service's public address, the issuer, e.g. https://id.example.com: discovery, every endpoint and {base_url} follow from it (default: http:// and the service address)"),
		dashURL:         fs.String("dashboard-url", "", "the dashboard's public origin, {dashboard_url} (default: http:// and the dashboard address)"),
		signURL:         fs.String("signing-url", "", "the signing provider's public origin; {signing_base_url} is it followed by /api"),
		invURL:          fs.String("invoicing-url", "", "the invoicing provider's public origin; {invoicing_base_url} is it followed by /api"),
		drain:           fs.Duration("drain", 0, "on SIGTERM or SIGINT, keep serving this long with /readyz answering 503, so that a reverse proxy stops sending requests first (e.g. 5s behind a proxy)"),
		shutdownTimeout: fs.Duration("shutdown-timeout", 10*time.Second, "at shutdown, let the requests in flight finish for at most this long, then cut them off"),
		secrets:         secretFlags{},
	}
	fs.Var(f.secrets, "secret", "fix a seeded confidential client's secret, CLIENT_ID=SECRET, of at least 128 bits: 22 base64url characters or 32 hex digits (repeatable); the others get a new random secret at each start")
	fs.Var(&f.dashOrigins, "dashboard-origin", "an origin, beside the dashboard's own, whose web pages may change state through the dashboard API (repeatable; docs/dashboard.md)")
	f.opKey = operatorKeyFlag(fs, e)
	f.verbose = fs.Bool("v", false, "log internal errors to stderr")
	f.metricsAddr = fs.String("metrics-addr", "", "serve Prometheus metrics at /metrics on this loopback HOST:PORT, such as 127.0.0.1:9464 (docs/deploy.md, \"Metrics\"); default none")
	f.metricsPublic = fs.Bool("metrics-public", false, "allow a --metrics-addr off loopback (keep it behind a firewall: the metrics say how the server is used)")
	f.log = addLogFlags(fs)
	f.eventsKeep = fs.Int("events-keep", audit.DefaultKeep, "how many audit events the database keeps, the newest (docs/deploy.md, \"Audit events\")")
	return f
}

// runServe is `miniapp-host serve`: the reference authorization server,
// its dashboard and the example providers, until interrupted; then a
// graceful shutdown (docs/deploy.md).
func runServe(ctx context.Context, e env) int {
	fs := newFlagSet("serve", serveUsage)
	f := newServeFlags(fs, e)
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(args) > 0 {
		return usageError(e, "serve", fmt.Sprintf("unexpected argument %q: every input is a flag", args[0]))
	}
	source := f.fromEnv(fs, e)
	cfg, code, ok := f.config(e, source)
	if !ok {
		return code
	}
	srv, err := authserver.Start(ctx, cfg)
	if err != nil {
		return serveStartError(e, err, source)
	}
	_, opKeySource := f.opKey()
	public := *f.issuer != "" || *f.dashURL != "" || *f.signURL != "" || *f.invURL != ""
	printServe(e, srv, *f.db, opKeySource, public)
	<-ctx.Done()
	return stopServe(e, srv, *f.drain, *f.shutdownTimeout)
}

// fromEnv gives each flag not on the command line its environment
// variable's value (serveEnv), and returns where each value came from, to
// name it in an error.
func (f *serveFlags) fromEnv(fs *flag.FlagSet, e env) map[string]string {
	source := map[string]string{}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range map[string]*string{"db": f.db, "issuer": f.issuer, "dashboard-url": f.dashURL, "signing-url": f.signURL,
		"invoicing-url": f.invURL, "trusted-proxy": f.trusted} {
		source[name] = "--" + name
		if ev := e.envVar(serveEnv[name]); !set[name] && ev != "" {
			*v, source[name] = ev, serveEnv[name]
		}
	}
	return source
}

// config is the server's configuration from the flags, validated
// (authserver.Config.Validate); a usage error is reported as runServe's
// exit code.
func (f *serveFlags) config(e env, source map[string]string) (authserver.Config, int, bool) {
	proxies, err := httplimit.ParseProxies(*f.trusted)
	if err != nil {
		return authserver.Config{}, usageError(e, "serve", source["trusted-proxy"]+": "+err.Error()), false
	}
	if *f.drain < 0 || *f.shutdownTimeout <= 0 {
		return authserver.Config{}, usageError(e, "serve", "--drain is a duration of 0 or more and --shutdown-timeout one above 0, such as 5s"), false
	}
	if *f.db == "" {
		p, err := authserver.DefaultDB()
		if err != nil {
			fmt.Fprintln(e.stderr, "miniapp-host:", err)
			return authserver.Config{}, exitUsage, false
		}
		*f.db = p
	}
	if err := store.CheckName(*f.db); err != nil {
		return authserver.Config{}, usageError(e, "serve", source["db"]+": "+strings.TrimPrefix(err.Error(), "store: ")), false
	}
	opKey, _ := f.opKey()
	cfg := authserver.Config{DB: *f.db, ServiceAddr: *f.addr, DashboardAddr: *f.dash, SigningAddr: *f.signing,
		InvoicingAddr: *f.invoicing, Issuer: *f.issuer, DashboardURL: *f.dashURL, SigningURL: *f.signURL, InvoicingURL: *f.invURL,
		Secrets: f.secrets, OperatorKey: opKey, DashboardOrigins: f.dashOrigins, HTTP: httplimit.Config{TrustedProxies: proxies},
		TrustAnyProxy: *f.trustAny, MetricsAddr: *f.metricsAddr, MetricsPublic: *f.metricsPublic, EventsKeep: *f.eventsKeep}
	if *f.eventsKeep < 1 {
		return cfg, usageError(e, "serve", fmt.Sprintf("--events-keep %d: give how many audit events to keep, 1 or more (default %d)", *f.eventsKeep, audit.DefaultKeep)), false
	}
	if *f.metricsAddr != "" {
		if err := metrics.CheckAddr(*f.metricsAddr, *f.metricsPublic); err != nil {
			return cfg, usageError(e, "serve", metricsMessage(err)), false
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError(e, "serve", configMessage(err, source)), false
	}
	for i, p := range []*string{&cfg.DashboardAddr, &cfg.SigningAddr, &cfg.InvoicingAddr} {
		if *p == "" {
			*p = nextPort(*f.addr, i+1)
		}
	}
	if cfg.Logger, err = f.log.logger(e.stderr, *f.verbose); err != nil {
		return cfg, usageError(e, "serve", err.Error()), false
	}
	return cfg, 0, true
}

// configMessage names the flag (or the environment variable, source) of a
// setting authserver.Config.Validate refuses.
func configMessage(err error, source map[string]string) string {
	if se := (*authserver.SettingError)(nil); errors.As(err, &se) {
		return settingMessage(se, source["trusted-proxy"])
	}
	var ae *authserver.AddressError
	if !errors.As(err, &ae) {
		return err.Error()
	}
	field := map[string]string{"Issuer": "issuer", "DashboardURL": "dashboard-url", "SigningURL": "signing-url", "InvoicingURL": "invoicing-url"}
	return fmt.Sprintf("%s %q: %s", source[field[ae.Field]], ae.Value, ae.Rule)
}

// serveStartError reports why the server did not start: a setting it
// refuses as a usage error, a database another server owns with what to
// do, anything else as could not decide.
func serveStartError(e env, err error, source map[string]string) int {
	if se := (*authserver.SettingError)(nil); errors.As(err, &se) {
		return usageError(e, "serve", settingMessage(se, source["trusted-proxy"]))
	}
	fmt.Fprintln(e.stderr, "miniapp-host:", err)
	if errors.As(err, new(*store.LockedError)) {
		fmt.Fprintln(e.stderr, "miniapp-host: one server owns a database; a second one needs its own --db FILE")
	}
	return exitUndecided
}

// printServe prints what serve started: its warnings, every address (with
// public addresses, also where this instance listens), the operator key,
// the seeded clients and the seed world's subjects.
func printServe(e env, srv *authserver.Server, db, opKeySource string, public bool) {
	for _, w := range srv.Warnings() {
		fmt.Fprintln(e.stderr, "miniapp-host: serve: warning:", w)
	}
	u := srv.URLs()
	fmt.Fprintf(e.stdout, "%-20s%s\n", "database", store.Redact(db))
	for _, l := range [][2]string{
		{"issuer", u.Issuer}, {"discovery", u.Discovery}, {"authorization", u.Authorization}, {"token", u.Token},
		{"base_url", u.BaseURL}, {"grant endpoint", u.Grant}, {"native consent", u.Native}, {"dashboard_url", u.Dashboard},
		{"signing_base_url", u.SigningBaseURL}, {"invoicing_base_url", u.InvoicingBaseURL},
	} {
		fmt.Fprintf(e.stdout, "%-20s%s\n", l[0], l[1])
	}
	if u.Metrics != "" {
		fmt.Fprintf(e.stdout, "%-20s%s\n", "metrics", u.Metrics)
	}
	if public {
		// The public addresses above are the proxy's; say where this
		// instance itself listens, for the proxy's upstreams and probes.
		la := srv.ListenAddrs()
		for _, l := range [][2]string{{"service", la.Service}, {"dashboard", la.Dashboard}, {"signing", la.Signing}, {"invoicing", la.Invoicing}} {
			fmt.Fprintf(e.stdout, "%-20s%s\n", "listen "+l[0], l[1])
		}
	}
	fmt.Fprintln(e.stdout)
	printOperatorKey(e.stdout, 20, srv.OperatorKey(), opKeySource, u.Dashboard)
	fmt.Fprintln(e.stdout, "\nclients (secrets are valid until the server stops unless fixed with --secret):")
	for _, c := range srv.Credentials() {
		printCredential(e.stdout, c)
	}
	fmt.Fprintln(e.stdout, "\nsubjects: sub_ana, sub_benjamin, sub_carla; companies: org_andes, org_pacifico (docs/authserver.md)")
}

// printCredential prints a seeded client's line: its secret only when this
// start made it.
func printCredential(w io.Writer, c authserver.Credential) {
	fmt.Fprintf(w, "  %-20s %-12s", c.ClientID, c.Type)
	switch {
	case c.SecretGiven:
		fmt.Fprint(w, " secret as given (--secret)")
	case c.ClientSecret != "":
		fmt.Fprintf(w, " secret %s", c.ClientSecret)
	case c.Type == "confidential":
		fmt.Fprint(w, " secret kept: set by another instance (fix it with --secret)")
	}
	if len(c.RedirectURIs) > 0 {
		fmt.Fprintf(w, " redirect_uris %s", strings.Join(c.RedirectURIs, " "))
	}
	if len(c.Roles) > 0 {
		fmt.Fprintf(w, " roles %s", strings.Join(c.Roles, ","))
	}
	fmt.Fprintln(w)
}

// stopServe shuts serve down gracefully: readiness turns to 503 at once,
// the server keeps serving for the drain period, then refuses new
// connections and lets the requests in flight finish within the timeout
// (authserver.Server.Shutdown). Each further interrupt (env.hurry) skips
// one wait: the drain, then the requests in flight.
func stopServe(e env, srv *authserver.Server, drain, timeout time.Duration) int {
	srv.Drain()
	if drain > 0 {
		fmt.Fprintf(e.stderr, "miniapp-host: stopping: /readyz answers 503, serving %s more (--drain); interrupt again to skip it\n", drain)
		t := time.NewTimer(drain)
		select {
		case <-t.C:
		case <-e.hurry:
		}
		t.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-e.hurry:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUndecided
	}
	return exitOK
}

// settingMessage names the flag of a setting serve refuses.
func settingMessage(se *authserver.SettingError, proxySource string) string {
	switch se.Field {
	case "OperatorKey":
		return "--operator-key: " + se.Rule
	case "Secrets":
		return fmt.Sprintf("--secret %s=…: %s", se.Key, se.Rule)
	case "HTTP.TrustedProxies":
		return fmt.Sprintf("%s %s: %s", proxySource, se.Key, se.Rule)
	case "MetricsAddr":
		return metricsMessage(&metrics.AddrError{Addr: se.Key, Rule: se.Rule})
	}
	return se.Error()
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

// operatorKeyEnv is the environment variable of --operator-key, read by
// serve and playground.
const operatorKeyEnv = "MINIAPP_HOST_OPERATOR_KEY"

// operatorKeyFlag adds --operator-key to a command that runs a reference
// server (serve, playground); the function it returns gives the flag's
// value, else operatorKeyEnv's, else "" (a new random key at each start).
func operatorKeyFlag(fs *flag.FlagSet, e env) func() (key, source string) {
	key := fs.String("operator-key", "", "fix the operator credential of the dashboard's review API, of at least 128 bits like --secret (default: $"+operatorKeyEnv+", else a new random key at each start)")
	return func() (string, string) {
		if *key != "" {
			return *key, "--operator-key"
		}
		if v := e.envVar(operatorKeyEnv); v != "" {
			return v, operatorKeyEnv
		}
		return "", ""
	}
}

// printOperatorKey prints the operator key line of serve and playground,
// its label padded to width: the key when this start made it, with how to
// use it; "as given" with where from (source) when it was given, since a
// terminal's scrollback or a service's log is no place for it; "kept" when
// another instance on a shared database set it.
func printOperatorKey(w io.Writer, width int, key, source, dashboard string) {
	switch {
	case source != "":
		fmt.Fprintf(w, "%-*sas given (%s)\n", width, "operator key", source)
	case key == "":
		// A shared database whose key another instance set (docs/authserver.md, "Several instances").
		fmt.Fprintf(w, "%-*skept: set by another instance on this database (fix it with --operator-key)\n", width, "operator key")
	default:
		fmt.Fprintf(w, "%-*s%s  (review: miniapp-host review list --dashboard %s --key KEY, or %s=KEY; docs/dashboard.md)\n",
			width, "operator key", key, dashboard, operatorKeyEnv)
	}
}

// metricsMessage names --metrics-addr in the refusal of its address, with
// the fix.
func metricsMessage(err error) string {
	ae, ok := err.(*metrics.AddrError)
	if !ok {
		return "--metrics-addr: " + err.Error()
	}
	msg := fmt.Sprintf("--metrics-addr %q: %s", ae.Addr, ae.Rule)
	if ae.Rule == metrics.NotLoopback {
		msg += "; give a loopback address such as 127.0.0.1:9464, or add --metrics-public to serve them on this one"
	}
	return msg
}
