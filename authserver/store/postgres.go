package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL. The Store runs the same queries and the same migrations on
// PostgreSQL as on SQLite (through jackc/pgx v5 and database/sql), so that
// several server instances can share one database. What differs is below:
//
//   - Placeholders: the queries are written with "?" and rewritten to
//     PostgreSQL's "$1", "$2", ... once, where the driver receives them
//     (rebindConn).
//   - Types in migrations: SQLite's INTEGER (64-bit) is BIGINT, BLOB is
//     BYTEA, and a table's implicit rowid, which some listings order by, is
//     an explicit BIGSERIAL column (pgSchema).
//   - Writes: PostgreSQL runs concurrent write transactions itself, so there
//     is no single writer goroutine; each write is its own transaction.
//     Flow state's (writeFlowState) commit asynchronously, on a pool of
//     their own; a decision's and a code redemption's common case is one
//     statement (pgwrites.go), and so is a native request's admission
//     (pgpending.go); concurrent ones are sent together, in one statement
//     (pggroup.go).
//   - Lost connections (a restart of PostgreSQL): what changed nothing is
//     run again on a new connection (rebindConn).
//   - Schema version: a table, since PRAGMA user_version is SQLite's.
//   - Several processes: migrations and the first start's seeding run under
//     an advisory lock (Exclusive), and every write that another process may
//     hold in a cache announces itself with NOTIFY (coherence.go).

// IsPostgres reports whether a database name is a PostgreSQL connection URL
// (postgres:// or postgresql://) rather than a SQLite file path.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// libpqKeyword matches the start of a libpq keyword/value connection
// string (PostgreSQL's documentation, "Connection Strings", §34.1.1 of
// PostgreSQL 17): one of libpq's parameter keywords, then '=', spaces
// allowed around it.
var libpqKeyword = regexp.MustCompile(`(?i)^\s*(host|hostaddr|port|dbname|user|password|passfile|require_auth|channel_binding|` +
	`connect_timeout|client_encoding|options|application_name|fallback_application_name|keepalives|keepalives_idle|` +
	`keepalives_interval|keepalives_count|tcp_user_timeout|replication|gssencmode|sslmode|requiressl|sslnegotiation|` +
	`sslcompression|sslcert|sslkey|sslkeylogfile|sslpassword|sslcertmode|sslrootcert|sslcrl|sslcrldir|sslsni|requirepeer|` +
	`ssl_min_protocol_version|ssl_max_protocol_version|krbsrvname|gsslib|gssdelegation|service|target_session_attrs|` +
	`load_balance_hosts)\s*=`)

// CheckName checks a database name: a postgres:// or postgresql:// URL, or
// a SQLite file path. A libpq keyword/value connection string
// (`host=db dbname=mh password=…`) is neither: taken for a path it would
// create a SQLite file of that name and print it, so it is refused,
// naming the URL to give instead. The error never repeats the name (it
// may hold a password).
func CheckName(db string) error {
	if db == "" {
		return errors.New("store: empty database name: give a SQLite file path or a postgres:// URL")
	}
	if !IsPostgres(db) && libpqKeyword.MatchString(db) {
		return errors.New("store: the database is a libpq keyword/value connection string (host=… dbname=…); " +
			"give a URL instead, postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...] (docs/deploy.md), " +
			"or ./NAME for a SQLite file whose name starts so")
	}
	return nil
}

// lockKey is the advisory lock key of Exclusive and of migrations: any
// 64-bit number of our own; this one spells "mhstore" in ASCII.
const lockKey = 0x6d6873746f7265

// openPostgres connects to the database at dsn and brings its schema up to
// date.
func openPostgres(ctx context.Context, dsn string, o Options) (_ *Store, err error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's message repeats the URL, password included; name the rule.
		return nil, fmt.Errorf("store: the PostgreSQL URL is not valid (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...]): %v", redact(err))
	}
	n := max(8, 4*runtime.GOMAXPROCS(0))
	db := openPool(stdlib.GetConnector(*cfg), n)
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if err := db.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("store: connect to PostgreSQL at %s: %w", cfg.Host, err)
	}
	if err := migratePostgres(ctx, db); err != nil {
		return nil, err
	}
	// Flow state's writes (writeFlowState) have a pool of their own whose
	// connections commit without waiting for the WAL flush: the setting
	// travels with the connection's start-up, so that such a write costs
	// no statement more than a durable one.
	acfg := cfg.Copy()
	acfg.RuntimeParams["synchronous_commit"] = "off"
	adb := openPool(stdlib.GetConnector(*acfg), n)
	defer func() {
		if err != nil {
			adb.Close()
		}
	}()
	s := newStore(&core{w: db, r: db, pg: &pgState{cfg: cfg, async: adb}, cache: newCache(cachedRecords), consents: newConsentCache(consentCacheBytes), quit: make(chan struct{})})
	s.metrics = o.Metrics
	if err := s.stmts.prepare(ctx, db, db); err != nil {
		return nil, err
	}
	if err := s.startListener(ctx, o); err != nil {
		s.stmts.close()
		return nil, err
	}
	s.pg.groups.start(s.core)
	return s, nil
}

// urlPassword is the password of a URL's userinfo, and passwordParam a
// parameter holding one (password=, sslpassword=; in a query or a
// keyword/value connection string), wherever a database name is printed.
var (
	urlPassword   = regexp.MustCompile(`(://[^:/@\s]*:)[^/?#\s]*@`)
	passwordParam = regexp.MustCompile(`(?i)((?:^|[?&;\s])[a-z_]*password=)(?:'(?:[^'\\]|\\.)*'|[^&;\s"']*)`)
)

// Redact returns a database name, or a message that repeats one, without
// the password it holds: a PostgreSQL URL's userinfo password and every
// password= or sslpassword= parameter become xxxxx. A SQLite path is
// returned as it is.
func Redact(s string) string {
	s = urlPassword.ReplaceAllString(s, "${1}xxxxx@")
	return passwordParam.ReplaceAllString(s, "${1}xxxxx")
}

// redact drops a URL's password from a driver's error.
func redact(err error) string { return Redact(err.Error()) }

// pgState is what a Store on PostgreSQL has beside its pool.
type pgState struct {
	cfg    *pgx.ConnConfig
	async  *sql.DB      // connections with synchronous_commit off (writeFlowState)
	local  localPending // native requests this instance admitted (pgpending.go)
	groups pgGroups     // batchers of the one-statement writes (pggroup.go)

	listenerDone chan struct{} // closed when the listener goroutine returns
	cancel       context.CancelFunc
}

// writePG runs fn in a transaction of its own. The transaction does not
// follow ctx once begun, for the same reason as on SQLite: the caller must
// learn whether a code was spent. A transaction that is not durable runs
// on a connection of pgState.async, and commits without waiting for its
// WAL to reach the disk (writeFlowState).
//
// A transaction PostgreSQL chose as a deadlock's victim, or could not
// serialise, did nothing: it is run again, a few times at most.
// Admissions that pass a full quota shard on to another (flowstate.go)
// can rarely wait on each other's rows in a cycle.
func (s *core) writePG(ctx context.Context, durable bool, fn func(tx *sql.Tx) error) error {
	lost := false
	for try := 1; ; try++ {
		err := s.writePGOnce(ctx, durable, fn)
		if try < 3 && retryable(err) {
			continue
		}
		// A connection lost before the COMMIT was sent: the
		// transaction did nothing, and runs once more on another
		// connection (rebindConn).
		if (errors.Is(err, errConnLost) || errors.Is(err, driver.ErrBadConn)) && !lost {
			lost = true
			continue
		}
		return err
	}
}

// retryable reports whether err is PostgreSQL's refusal of a transaction
// that did nothing and may be run again: a deadlock's victim, or a
// serialisation failure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

func (s *core) writePGOnce(ctx context.Context, durable bool, fn func(tx *sql.Tx) error) error {
	select {
	case <-s.quit:
		return errClosed
	default:
	}
	db := s.w
	if !durable {
		db = s.pg.async
	}
	tx, err := db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		// Not errConnLost (pgx's own COMMIT, not a statement of ours):
		// a COMMIT whose connection was lost may have committed.
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// Exclusive runs fn while no other process on the same database runs an
// Exclusive fn: on PostgreSQL under a session advisory lock, on SQLite
// directly (the Store owns the file). Servers starting at once on one
// database seed it, create keys and set credentials inside it, so that one
// of them does it and the others find it done.
func (s *Store) Exclusive(ctx context.Context, fn func() error) error {
	if s.pg == nil {
		return fn()
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return wrap("exclusive", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(?)`, int64(lockKey)); err != nil {
		return wrap("exclusive", err)
	}
	ferr := fn()
	_, err = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(?)`, int64(lockKey))
	if err != nil {
		// A lock that could not be released would hold every other
		// instance's start; dropping the connection releases it.
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return errors.Join(ferr, wrap("exclusive", err))
}

// migratePostgres applies the migrations the database has not seen, under
// the advisory lock, so that instances starting at once migrate once.
func migratePostgres(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(lockKey)); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	var v int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version(version) VALUES(0)`); err != nil {
			return fmt.Errorf("store: migrate: %w", err)
		}
	case err != nil:
		return fmt.Errorf("store: read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("store: database schema version %d is newer than this program (%d)", v, len(migrations))
	}
	// PostgreSQL's DDL is transactional: every migration and the version
	// bump commit together or not at all.
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, pgSchema(migrations[i])); err != nil {
			return fmt.Errorf("store: migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, len(migrations)); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return tx.Commit()
}

var (
	createTable = regexp.MustCompile(`(?s)CREATE TABLE (\w+) \((.*?)\n\)( WITHOUT ROWID)?;`)
	integerType = regexp.MustCompile(`\bINTEGER\b`)
	blobType    = regexp.MustCompile(`\bBLOB\b`)
)

// pgSchema translates a migration written for SQLite into PostgreSQL's
// dialect: INTEGER is SQLite's 64-bit integer (BIGINT), BLOB is BYTEA, and
// a table with a rowid gets it as a column, so that "ORDER BY rowid" keeps
// meaning insertion order.
func pgSchema(m string) string {
	m = createTable.ReplaceAllStringFunc(m, func(t string) string {
		p := createTable.FindStringSubmatch(t)
		if p[3] != "" {
			return "CREATE TABLE " + p[1] + " (" + p[2] + "\n);"
		}
		return "CREATE TABLE " + p[1] + " (\n\trowid BIGSERIAL," + p[2] + "\n);"
	})
	return blobType.ReplaceAllString(integerType.ReplaceAllString(m, "BIGINT"), "BYTEA")
}

// openPool is a database/sql pool of at most n of pgx's connections,
// each a rebindConn.
func openPool(c driver.Connector, n int) *sql.DB {
	p := &pool{idle: n}
	db := sql.OpenDB(rebindConnector{c, p})
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	p.db = db
	return db
}

// pool is what a pool's connections know of it.
type pool struct {
	db   *sql.DB
	idle int
}

// purge closes the pool's idle connections. A connection that finds
// PostgreSQL gone (a restart, a crash, its sessions ended) calls it: the
// pool's other connections were opened to the same server and are most
// likely dead too, and database/sql would hand each out once more, to a
// statement that may then not know whether it committed. The next
// statements open new connections instead.
func (p *pool) purge() {
	p.db.SetMaxIdleConns(0)
	p.db.SetMaxIdleConns(p.idle)
}

// rebindConnector makes pgx's connections take "?" placeholders.
type rebindConnector struct {
	driver.Connector
	pool *pool
}

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rebindConn{conn.(*stdlib.Conn), c.pool}, nil
}

// rebindConn is pgx's connection with every query's placeholders rewritten
// and a lost connection reported as database/sql expects (below); its
// other methods (named values, resets) are pgx's.
//
// A lost connection. When PostgreSQL restarts (a crash, a failover), every
// pooled connection is dead, and database/sql learns it only by using one:
// pgx pings a connection before reuse only once it was idle for a second.
// database/sql discards a connection and runs the operation again on
// another when the driver answers driver.ErrBadConn, which the driver may
// do only when the operation changed nothing on the server. pgx's
// statements answer it only on some paths when the query never left the
// process. Here BEGIN and PREPARE, which change nothing however far they
// went, a plain SELECT, and any statement that never left the process
// answer driver.ErrBadConn on a lost connection (mark). Another statement
// that lost its connection in the middle of a transaction (after its
// BEGIN) is an error that says so (errConnLost), on which writePG runs
// the transaction again: its COMMIT was never sent. A connection lost
// during a COMMIT, or during a write that is a transaction of its own
// (pgwrites.go), is an error: whether it committed is unknown.
type rebindConn struct {
	*stdlib.Conn
	pool *pool
}

// lost reports whether err left the connection closed: pgx closes it on
// every failure of the connection itself (and on PostgreSQL's FATAL
// errors, which end the session), never on an error that leaves the
// session usable, such as a statement's refusal.
func (c *rebindConn) lost(err error) bool {
	if err == nil || !c.Conn.Conn().IsClosed() {
		return false
	}
	c.pool.purge()
	return true
}

func (c *rebindConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c *rebindConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, rebind(q))
	if c.lost(err) && ctx.Err() == nil {
		return nil, driver.ErrBadConn
	}
	if err != nil {
		return nil, err
	}
	return &rebindStmt{st.(*stdlib.Stmt), c, q}, nil
}

// rebindStmt is pgx's prepared statement, whose errors are marked as the
// connection's (mark).
type rebindStmt struct {
	*stdlib.Stmt
	c *rebindConn
	q string
}

func (s *rebindStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.Stmt.ExecContext(ctx, args)
	return r, s.c.mark(ctx, s.q, err)
}

func (s *rebindStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.Stmt.QueryContext(ctx, args)
	return r, s.c.mark(ctx, s.q, err)
}

func (c *rebindConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *rebindConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	if c.lost(err) && ctx.Err() == nil {
		return nil, driver.ErrBadConn
	}
	return tx, err
}

func (c *rebindConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.ExecContext(ctx, rebind(q), args)
	return r, c.mark(ctx, q, err)
}

func (c *rebindConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.Conn.QueryContext(ctx, rebind(q), args)
	return r, c.mark(ctx, q, err)
}

// IsValid (driver.Validator) keeps a closed connection out of the pool
// when it is given back.
func (c *rebindConn) IsValid() bool { return !c.Conn.Conn().IsClosed() }

// errConnLost marks a statement's failure that closed its connection.
var errConnLost = errors.New("store: the connection to PostgreSQL was lost")

// mark is a statement's error as database/sql and writePG should see it.
// A lost connection is driver.ErrBadConn when the statement changed
// nothing: pgx says it never left the process (pgconn.SafeToRetry, which
// pgx's stdlib checks only on some paths: a query's write error reaches
// us through its rows), or it is a plain SELECT. Otherwise it is wrapped
// in errConnLost.
func (c *rebindConn) mark(ctx context.Context, q string, err error) error {
	if !c.lost(err) || errors.Is(err, driver.ErrBadConn) {
		return err
	}
	if ctx.Err() == nil && (pgconn.SafeToRetry(err) || readOnly(q)) {
		return driver.ErrBadConn
	}
	return fmt.Errorf("%w: %w", errConnLost, err)
}

// readOnly reports whether q is a SELECT that writes nothing (pg_notify's
// is the only SELECT of the Store that has an effect).
func readOnly(q string) bool {
	return strings.HasPrefix(strings.TrimSpace(q), "SELECT") && !strings.Contains(q, "pg_notify") && !strings.Contains(q, "pg_advisory")
}

// rebound caches rewritten queries: the Store's queries are a fixed set of
// constant strings.
var rebound sync.Map // string -> string

// rebind rewrites "?" placeholders to "$1", "$2", ... outside string
// literals, quoted identifiers and comments.
func rebind(q string) string {
	if r, ok := rebound.Load(q); ok {
		return r.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(q[i+1:], c)
			if j < 0 { // unterminated: the server will say so
				b.WriteString(q[i:])
				i = len(q)
				continue
			}
			b.WriteString(q[i : i+j+2])
			i += j + 1
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '?':
			n++
			fmt.Fprintf(&b, "$%d", n)
		default:
			b.WriteByte(c)
		}
	}
	r := b.String()
	rebound.Store(q, r)
	return r
}
