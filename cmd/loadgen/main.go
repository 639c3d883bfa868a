// Command loadgen measures the reference authorization server on loopback:
// token endpoint requests per second, GET {base_url}/authorization requests
// per second, and full native flows per second (submit, decide, token);
// -only fapi times FAPI 2.0 flows beside plain ones (fapi.go). It
// starts the server in-process on a temporary database, so the figures
// include the client's own cost on the same cores. Every phase is bounded
// in time and in count.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/authserver/store/pgserver"
	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

const (
	hostSecret = "loadgen-host-secret-of-runs"
	redirect   = "https://loadgen.example/cb"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// gen is one load run against one server.
type gen struct {
	u          authserver.URLs
	profile    string // CPU profile file prefix; each timed phase writes PREFIX-N
	phases     int
	hc         *http.Client
	conc       int
	dur        time.Duration
	max        int64
	confSecret string
	// operatorKey approves the fapi phase's project policy.
	operatorKey string
	// dbCPU is the CPU time the database server has used, when loadgen
	// started it (-db postgres); nil otherwise.
	dbCPU func() time.Duration
	// affinity keeps each worker's requests on one instance, as a
	// balancer with session affinity would (worker w on instance w mod n);
	// without it every request goes to the next instance in turn.
	affinity bool
}

// flags are loadgen's flags.
type flags struct {
	dur, warmup          time.Duration
	conc, instances      int
	affinity             bool
	rounds               int
	max, driftN, driftWn int64
	only, driftProfile   string
	profile, dbURL       string
}

func parseFlags() flags {
	var f flags
	flag.DurationVar(&f.dur, "duration", 5*time.Second, "length of each phase")
	flag.DurationVar(&f.warmup, "warmup", 0, "flows run untimed before the flow phase (the database's connections and caches warm up)")
	flag.IntVar(&f.conc, "c", 32, "concurrent clients")
	flag.Int64Var(&f.max, "n", 200_000, "maximum requests (or flows) per phase")
	flag.StringVar(&f.only, "only", "", "run one phase: token, grant, flow, fapi or drift (fapi and drift are not run by default)")
	flag.IntVar(&f.rounds, "rounds", 3, "rounds of the fapi phase: each runs a plain flow phase, then a FAPI 2.0 flow phase")
	flag.Int64Var(&f.driftN, "drift-flows", 100_000, "browser flows of the drift phase")
	flag.Int64Var(&f.driftWn, "drift-window", 1_000, "flows at the start and the end of the drift phase whose CPU is compared")
	flag.StringVar(&f.driftProfile, "drift-profile-prefix", "", "write CPU profiles of the drift phase's start and end to PREFIX-start.pprof and PREFIX-end.pprof, and its live heap at the end to PREFIX-end.heap")
	flag.StringVar(&f.profile, "cpuprofile", "", "write a CPU profile of each timed phase to FILE-1, FILE-2...")
	flag.IntVar(&f.instances, "instances", 1, "server instances on the database (above 1 needs PostgreSQL); requests go to each in turn")
	flag.BoolVar(&f.affinity, "affinity", false, "with -instances: each client's requests go to one instance (client w to instance w mod n), as a balancer with session affinity sends them, instead of each request to the next instance in turn")
	flag.StringVar(&f.dbURL, "db", "", "the database: a PostgreSQL URL (postgres://...) of an empty database, or \"postgres\" for a temporary PostgreSQL server with default durability (pgserver); default a new SQLite file")
	flag.Parse()
	return f
}

func run() error {
	f := parseFlags()
	dir, err := os.MkdirTemp("", "loadgen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, dbCPU, stopDB, err := openDB(ctx, f.dbURL, filepath.Join(dir, "load.db"))
	if err != nil {
		return err
	}
	defer stopDB()
	if f.instances > 1 && !store.IsPostgres(db) {
		return errors.New("-instances above 1 needs -db postgres or a PostgreSQL URL: one SQLite file serves one instance")
	}
	g, closeAll, err := newGen(ctx, db, f.instances, f.conc)
	defer closeAll()
	if err != nil {
		return err
	}
	g.profile, g.dur, g.max, g.dbCPU, g.affinity = f.profile, f.dur, f.max, dbCPU, f.affinity
	targets := g.hc.Transport.(*roundRobin).targets
	spread := "each request to the next"
	if f.affinity {
		spread = "each client's requests to one"
	}
	fmt.Printf("loadgen: GOMAXPROCS=%d NumCPU=%d, %d concurrent clients, %s per phase (max %d), server and client in one process on loopback, %d instance(s) on %s (%s)%s\n",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), f.conc, f.dur, f.max, len(targets), dbKind(db), spread, loadavg())
	defer printDone(db)
	return g.runPhases(f)
}

// newGen starts the server instances on db and registers the loadgen
// client; closeAll closes what was started, also after an error.
func newGen(ctx context.Context, db string, instances, conc int) (*gen, func(), error) {
	srv, targets, closeAll, err := startInstances(ctx, db, instances)
	if err != nil {
		return nil, closeAll, err
	}
	cred, err := srv.RegisterClient(ctx, authserver.ClientSpec{ID: "loadgen", Confidential: true, RedirectURIs: []string{redirect}, IDTokenAlg: "ES256"})
	if err != nil {
		return nil, closeAll, err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: conc * 2, MaxConnsPerHost: conc * 2}
	return &gen{u: srv.URLs(), operatorKey: srv.OperatorKey(), conc: conc, confSecret: cred.ClientSecret,
		hc: &http.Client{Transport: &roundRobin{base: tr, service: targets[0], targets: targets}}}, closeAll, nil
}

// openDB is the database of the run: a new SQLite file at sqlite, a
// temporary PostgreSQL server's database for "postgres", or the URL given;
// stop stops what it started. cpu is the CPU time of the PostgreSQL
// server loadgen started, nil for another database.
func openDB(ctx context.Context, dbURL, sqlite string) (db string, cpu func() time.Duration, stop func(), err error) {
	switch dbURL {
	case "":
		return sqlite, nil, func() {}, nil
	case "postgres":
		c, err := pgserver.StartWith(ctx, pgserver.Options{Durable: true})
		if err != nil {
			return "", nil, nil, err
		}
		db, err := c.NewDatabase(ctx)
		if err != nil {
			c.Stop()
			return "", nil, nil, err
		}
		return db, func() time.Duration { return serverCPU(c.Pid()) }, func() { c.Stop() }, nil
	}
	return dbURL, nil, func() {}, nil
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// serverCPU is the CPU time of PostgreSQL's server process pid and its
// children (its backends and workers, each in a session of its own): each
// live one's user and system time, and the server's children's time,
// which holds those of the children that exited. 0 where /proc cannot
// tell.
func serverCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state,
		// ppid, pgrp, ..., utime (14th of the line), stime, cutime, cstime.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 15 || (f[1] != strconv.Itoa(pid) && e.Name() != strconv.Itoa(pid)) {
			continue
		}
		n := 2 // utime, stime
		if e.Name() == strconv.Itoa(pid) {
			n = 4 // and the children's
		}
		for _, v := range f[11 : 11+n] {
			t, _ := strconv.ParseInt(v, 10, 64)
			ticks += t
		}
	}
	return time.Duration(ticks) * clockTick
}

// startInstances starts the server instances on db: further instances on
// the same database answer for the first's public addresses, as behind a
// proxy (docs/deploy.md); the client spreads its requests over their
// listeners in turn (targets). closeAll closes every one started, also
// after an error.
func startInstances(ctx context.Context, db string, instances int) (srv *authserver.Server, targets []string, closeAll func(), err error) {
	var started []*authserver.Server
	closeAll = func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Close()
		}
	}
	// The token phase makes its codes before it times their redemption;
	// on a slower store that takes longer than a code's default minute.
	oc := oauth.Config{CodeTTL: 10 * time.Minute}
	srv, err = authserver.Start(ctx, authserver.Config{DB: db, OAuth: oc,
		Secrets: map[string]string{"miniapp-host": hostSecret}})
	if err != nil {
		return nil, nil, closeAll, err
	}
	started = append(started, srv)
	u := srv.URLs()
	targets = []string{srv.ListenAddrs().Service}
	for range instances - 1 {
		more, err := authserver.Start(ctx, authserver.Config{DB: db, Issuer: u.Issuer, DashboardURL: u.Dashboard,
			SigningURL:   strings.TrimSuffix(u.SigningBaseURL, authserver.ProviderPath),
			InvoicingURL: strings.TrimSuffix(u.InvoicingBaseURL, authserver.ProviderPath), OAuth: oc,
			Secrets: map[string]string{"miniapp-host": hostSecret}})
		if err != nil {
			return nil, nil, closeAll, err
		}
		started = append(started, more)
		targets = append(targets, more.ListenAddrs().Service)
	}
	return srv, targets, closeAll, nil
}

// printDone prints the end of the run: the load and the size of the
// SQLite write-ahead log.
func printDone(db string) {
	var wal int64
	if fi, err := os.Stat(db + "-wal"); err == nil {
		wal = fi.Size()
	}
	fmt.Printf("loadgen: done%s; WAL %.1f MiB\n", loadavg(), float64(wal)/(1<<20))
}

// runPhases runs the phase -only names, or token, grant and flow.
func (g *gen) runPhases(f flags) error {
	if f.only == "" || f.only == "token" {
		if err := g.tokenPhase(); err != nil {
			return err
		}
	}
	// GET {base_url}/authorization with one token.
	if f.only == "" || f.only == "grant" {
		if err := g.grantPhase(); err != nil {
			return err
		}
	}
	if f.only == "" || f.only == "flow" {
		g.flowPhase(f.warmup)
	}
	if f.only == "drift" {
		return g.driftPhase(f.driftN, f.driftWn, f.driftProfile)
	}
	if f.only == "fapi" {
		return g.fapiPhase(g.operatorKey, f.rounds)
	}
	return nil
}

// tokenPhase times the token endpoint: codes are made first, then only
// their redemption is timed.
func (g *gen) tokenPhase() error {
	for _, scope := range []string{"bank_accounts:read", "openid bank_accounts:read"} {
		n := g.estimate(scope)
		codes, err := g.codes(scope, n)
		if err != nil {
			return err
		}
		var next atomic.Int64
		r := g.phase(int64(len(codes)), func(g *gen) error {
			i := next.Add(1) - 1
			if i >= int64(len(codes)) {
				return errDone
			}
			return g.exchange(codes[i])
		})
		fmt.Printf("token endpoint (authorization_code, scope %q): %s\n", scope, r)
	}
	return nil
}

func (g *gen) grantPhase() error {
	c, err := g.codes("bank_accounts:read", 1)
	if err != nil {
		return err
	}
	tok, err := g.exchangeToken(c[0])
	if err != nil {
		return err
	}
	r := g.phase(g.max, func(g *gen) error { return g.grant(tok) })
	fmt.Printf("GET /authorization: %s\n", r)
	return nil
}

// flowPhase runs full native flows, without and with an ID token (RS256
// signing dominates the second).
// warmup > 0 runs flows of both kinds for that long first, untimed.
func (g *gen) flowPhase(warmup time.Duration) {
	flow := func(scope string) func(*gen) error {
		return func(g *gen) error {
			cs, err := g.codes(scope, 1)
			if err != nil {
				return err
			}
			return g.exchange(cs[0])
		}
	}
	if warmup > 0 {
		dur, profile := g.dur, g.profile
		g.dur, g.profile = warmup/2, ""
		for _, scope := range []string{"bank_accounts:read", "openid bank_accounts:read"} {
			if r := g.phase(g.max, flow(scope)); r.firstErr != nil {
				fmt.Printf("warm-up (scope %q): %s\n", scope, r)
			}
		}
		g.dur, g.profile = dur, profile
	}
	for _, scope := range []string{"bank_accounts:read", "openid bank_accounts:read"} {
		r := g.phase(g.max, flow(scope))
		fmt.Printf("full native flow (submit, decide, token; scope %q): %s\n", scope, r)
	}
}

var errDone = errors.New("done")

// cpuTime is the CPU time the process has used. On a shared machine it
// shows how much of the two cores the run actually got.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadavg describes the machine's load, which matters on shared cores;
// empty where /proc/loadavg does not exist.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return "; load average " + strings.Join(f[:3], " ")
}

// result is one phase's outcome.
type result struct {
	ok, failed int64
	elapsed    time.Duration
	cpu        time.Duration // user and system CPU of the whole process (server and client)
	dbCPU      time.Duration // the PostgreSQL server's, when loadgen started it
	firstErr   error
}

func (r result) String() string {
	s := fmt.Sprintf("%.0f/s (%d ok, %d failed in %.2fs; process CPU %.2f cores, %.0f per CPU-second)",
		float64(r.ok)/r.elapsed.Seconds(), r.ok, r.failed, r.elapsed.Seconds(),
		r.cpu.Seconds()/r.elapsed.Seconds(), float64(r.ok)/r.cpu.Seconds())
	if r.dbCPU > 0 {
		s += fmt.Sprintf("; PostgreSQL CPU %.2f cores, %.0f per CPU-second of both", r.dbCPU.Seconds()/r.elapsed.Seconds(),
			float64(r.ok)/(r.cpu+r.dbCPU).Seconds())
	}
	if r.firstErr != nil {
		s += "; first error: " + r.firstErr.Error()
	}
	return s
}

// phase runs op from conc workers until the duration passes or max
// operations were started; each worker passes op its own gen (worker).
func (g *gen) phase(max int64, op func(*gen) error) result {
	var ok, failed, started atomic.Int64
	var once sync.Once
	var first error
	if g.profile != "" {
		g.phases++
		f, err := os.Create(fmt.Sprintf("%s-%d", g.profile, g.phases))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	stop := time.Now().Add(g.dur)
	dbCPU := func() time.Duration { return 0 }
	if g.dbCPU != nil {
		dbCPU = g.dbCPU
	}
	begin, cpu0, db0 := time.Now(), cpuTime(), dbCPU()
	var wg sync.WaitGroup
	for w := range g.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := g.worker(w)
			for time.Now().Before(stop) && started.Add(1) <= max {
				err := op(g)
				switch {
				case errors.Is(err, errDone):
					return
				case err != nil:
					failed.Add(1)
					once.Do(func() { first = err })
				default:
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return result{ok: ok.Load(), failed: failed.Load(), elapsed: time.Since(begin), cpu: cpuTime() - cpu0, dbCPU: dbCPU() - db0, firstErr: first}
}

// estimate is how many codes to prepare for a token phase: enough for the
// phase at 20,000 req/s, within max.
func (g *gen) estimate(string) int {
	n := int(g.dur.Seconds() * 8_000)
	if int64(n) > g.max {
		n = int(g.max)
	}
	return n
}

type code struct{ code, verifier string }

// codes runs n native authorizations (submit and approve) concurrently.
func (g *gen) codes(scope string, n int) ([]code, error) {
	out := make([]code, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for w := range min(g.conc, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := g.worker(w)
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				c, err := g.authorize(scope)
				if err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
				out[i] = c
			}
		}()
	}
	wg.Wait()
	return out, first
}

// authorize submits a request through the native API and approves it.
func (g *gen) authorize(scope string) (code, error) {
	b := make([]byte, 32)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(v))
	q := url.Values{"client_id": {"loadgen"}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {scope},
		"resource": {g.u.BaseURL}, "state": {"s"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}, "nonce": {"n"}}
	var sub struct {
		RequestID string `json:"request_id"`
	}
	if err := g.postJSON(g.u.Native, map[string]string{"authorization_url": g.u.Authorization + "?" + q.Encode(), "subject": "sub_ana"}, &sub); err != nil {
		return code{}, err
	}
	var dec struct {
		RedirectURL string `json:"redirect_url"`
	}
	if err := g.postJSON(g.u.Native+"/"+sub.RequestID+"/decision", map[string]string{"action": "approve"}, &dec); err != nil {
		return code{}, err
	}
	ru, err := url.Parse(dec.RedirectURL)
	if err != nil {
		return code{}, err
	}
	return code{ru.Query().Get("code"), v}, nil
}

func (g *gen) postJSON(u string, body, out any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(b))
	req.SetBasicAuth("miniapp-host", hostSecret)
	req.Header.Set("Content-Type", "application/json")
	return g.send(req, out)
}

// maxAnswer caps an answer loadgen reads (a token, a grant, a native
// consent's screen).
const maxAnswer = 4 << 20

// send sends req and decodes its 2xx JSON answer into out (nil: none).
func (g *gen) send(req *http.Request, out any) error {
	_, err := jsonhttp.Call(g.hc, req, maxAnswer, out)
	return err
}

func (g *gen) exchange(c code) error {
	_, err := g.exchangeToken(c)
	return err
}

func (g *gen) exchangeToken(c code) (string, error) {
	f := url.Values{"grant_type": {"authorization_code"}, "code": {c.code}, "redirect_uri": {redirect}, "code_verifier": {c.verifier}}
	req, _ := http.NewRequest(http.MethodPost, g.u.Token, strings.NewReader(f.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("loadgen", g.confSecret)
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if err := g.send(req, &tr); err != nil {
		return "", err
	}
	return tr.AccessToken, nil
}

func (g *gen) grant(tok string) error {
	req, _ := http.NewRequest(http.MethodGet, g.u.Grant, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Client-Id", "loadgen")
	req.Header.Set("X-Client-Secret", g.confSecret)
	return g.send(req, nil)
}

// roundRobin sends each request for the service to the next instance's
// listener in turn, as a round-robin proxy would, without a proxy's cost.
type roundRobin struct {
	base    http.RoundTripper
	service string // the first instance's listener, the host of every public service URL
	targets []string
	next    atomic.Uint64
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(rr.targets) > 1 && req.URL.Host == rr.service {
		r := req.Clone(req.Context())
		r.URL.Host = rr.targets[rr.next.Add(1)%uint64(len(rr.targets))]
		req = r
	}
	return rr.base.RoundTrip(req)
}

// pinned sends every request for the service to one instance's listener,
// as a balancer with session affinity sends one client's.
type pinned struct {
	base    http.RoundTripper
	service string
	target  string
}

func (p *pinned) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == p.service && p.target != p.service {
		r := req.Clone(req.Context())
		r.URL.Host = p.target
		req = r
	}
	return p.base.RoundTrip(req)
}

// worker is the gen worker w runs its operations with: g itself, or with
// affinity a copy whose requests all go to instance w mod n.
func (g *gen) worker(w int) *gen {
	rr, ok := g.hc.Transport.(*roundRobin)
	if !g.affinity || !ok || len(rr.targets) < 2 {
		return g
	}
	c := *g
	c.hc = &http.Client{Transport: &pinned{base: rr.base, service: rr.service, target: rr.targets[w%len(rr.targets)]}}
	return &c
}

func dbKind(db string) string {
	if store.IsPostgres(db) {
		return "PostgreSQL"
	}
	return "SQLite"
}
