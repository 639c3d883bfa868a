// Package store is the reference authorization server's storage: an
// embedded SQLite database (pure-Go driver, WAL mode), or a PostgreSQL one
// that several instances share (docs/authserver.md, "Several instances on
// one database"), holding the seed world (projects, clients, subjects,
// companies, accounts), the signing keys, and every grant, code and token.
// The same queries and migrations serve both, and the same code path a file
// on disk and the temporary files of tests.
//
// Secrets never reach the database in clear: client secrets, authorization
// codes, access tokens and refresh tokens are stored as SHA-256 hashes. They
// are random 256-bit values, so a fast hash is the right one; a slow
// password hash would only cost throughput (RFC 6819 §5.1.4.1.3).
package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
)

// ErrNotFound is returned when a looked-up record does not exist.
var ErrNotFound = errors.New("store: not found")

// Store is an open database, in parts by concern: each part is the
// storage of one kind of record, and all of them share one core (the
// connections, the writer, the caches, the notifications between
// processes). The parts are embedded, so a Store has every part's methods;
// a part can also be handed on alone (st.GrantStore). The methods declared
// on Store itself concern the whole database.
//
// Its consumers declare what they need of it, grouped the same way:
// package oauth in its storage.go, package dashboard in its.
type Store struct {
	*core

	*ClientStore  // OAuth clients (clients.go)
	*WorldStore   // projects, subjects, companies, memberships, accounts (world.go, worldcache.go)
	*ReviewStore  // submissions under review, approved policies, settings (onboarding.go)
	*FlowStore    // browser sessions and pending requests of a shared database (flowstate.go)
	*GrantStore   // grants, codes, access and refresh tokens (grants.go)
	*ConsentStore // remembered consents (consents.go)
	*KeyStore     // signing keys (keys.go)
}

// ClientStore keeps the OAuth clients of projects.
type ClientStore struct{ *core }

// WorldStore keeps the seed world and the projects, read from a snapshot
// in memory (worldcache.go).
type WorldStore struct{ *core }

// ReviewStore keeps what projects submit for the operator's review, the
// policies approved, and the server's settings (the operator credential).
type ReviewStore struct{ *core }

// FlowStore keeps the state of flows in progress for server instances
// that share a database: browser sessions, pending authorization requests
// and the quota counts that bound both.
type FlowStore struct{ *core }

// GrantStore keeps grants, authorization codes and access and refresh
// tokens.
type GrantStore struct{ *core }

// ConsentStore keeps the consents subjects asked to be remembered.
type ConsentStore struct{ *core }

// KeyStore keeps the private signing keys.
type KeyStore struct{ *core }

// newStore gives the parts their shared core.
func newStore(c *core) *Store {
	return &Store{core: c, ClientStore: &ClientStore{c}, WorldStore: &WorldStore{c}, ReviewStore: &ReviewStore{c},
		FlowStore: &FlowStore{c}, GrantStore: &GrantStore{c}, ConsentStore: &ConsentStore{c}, KeyStore: &KeyStore{c}}
}

// core is what the parts of a Store share. One connection writes (SQLite
// has one writer at a time; queueing in Go is cheaper than SQLITE_BUSY
// retries) and a pool of read-only connections reads, which WAL lets run
// beside the writer.
type core struct {
	w  *sql.DB // the single writer connection, used only by the writer goroutine
	r  *sql.DB // read-only pool
	cp *sql.DB // the checkpointer's connection

	stmts    statements
	cache    *cache
	consents *consentCache
	wc       worldCache
	policies policyCache // approved policies, by project (onboarding.go)

	ops        chan *writeOp
	quit       chan struct{}
	writerDone chan struct{}
	cpDone     chan struct{}
	closeOnce  sync.Once

	lock *dbLock // held from Open to Close; nil where the platform has no file locks

	pg  *pgState  // nil on SQLite (postgres.go)
	coh coherence // notifications between processes (coherence.go)

	uses grantUses // grants used since the last flush (subjectgrants.go)

	events eventState // audit events' trims and instance id (events.go)

	metrics *metrics.Metrics // batches and notifications (docs/deploy.md, "Metrics"); nil records none
}

// Options tune OpenWith.
type Options struct {
	// Logger receives notices about the files (a mode tightened); nil
	// discards them.
	Logger *slog.Logger
	// Metrics records the store's batches and notifications; nil none.
	Metrics *metrics.Metrics
}

// Open opens a database and brings its schema up to date. It is OpenWith
// without options.
func Open(ctx context.Context, db string) (*Store, error) {
	return OpenWith(ctx, db, Options{})
}

// OpenWith opens a database and brings its schema up to date: a
// PostgreSQL database when db is a postgres:// or postgresql:// URL
// (postgres.go), which several processes may share, else the SQLite
// file at path db, created if needed; any other name is refused
// (CheckName). The Store owns a SQLite file until Close: a second
// Open of it, in this process or another, fails with a *LockedError naming
// the owner (lock.go). The database, its WAL and shared-memory files and
// the lock file are readable by their owner only (0600); an existing file
// that others could read is restricted, and a notice is logged.
func OpenWith(ctx context.Context, path string, o Options) (_ *Store, err error) {
	if err := CheckName(path); err != nil {
		return nil, err
	}
	if IsPostgres(path) {
		return openPostgres(ctx, path, o)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	lock, err := acquireLock(path, o.Logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.release()
		}
	}()
	if err := secureFiles(path, o.Logger); err != nil {
		return nil, err
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		// NORMAL is durable across application crashes in WAL mode; only a
		// power loss can drop the last transactions, which a local
		// development server can afford.
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "foreign_keys(1)")
		for i := 0; i+1 < len(extra); i += 2 {
			q.Add(extra[i], extra[i+1])
		}
		return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	}
	// The writer never checkpoints: a checkpoint syncs the files, and in
	// the commit path that stalls every request waiting for a write. The
	// checkpointer goroutine does it on its own connection instead.
	//
	// The writer's page cache is small (4 MiB). At the end of every
	// commit SQLite drops the pages past the end of the database from it
	// (pager_end_transaction, pcache1TruncateUnsafe), and that walks the
	// whole cache: with 32 MiB it was, after 60,000 browser flows, the
	// largest growth in the CPU per flow (cmd/loadgen -only drift
	// -drift-profile-prefix), while a small cache costs a few page reads
	// from the WAL or the OS's file cache. Codes and tokens are keyed by
	// random hashes, so once the tables outgrow any cache each insert
	// touches an uncached page anyway.
	w, err := sql.Open("sqlite", dsn("_txlock", "immediate", "_pragma", "wal_autocheckpoint(0)", "_pragma", "cache_size(-4096)"))
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, err
	}
	// Readers keep a larger cache (32 MiB) for the read-mostly world
	// tables; SQLite empties a reader's cache whenever the database
	// changed since its last transaction.
	r, err := sql.Open("sqlite", dsn("_pragma", "query_only(1)", "_pragma", "cache_size(-32768)"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	n := runtime.GOMAXPROCS(0) * 2
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxLifetime(0)
	cp, err := sql.Open("sqlite", dsn())
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	cp.SetMaxOpenConns(1)
	s := newStore(&core{lock: lock, w: w, r: r, cp: cp, cache: newCache(cachedRecords), consents: newConsentCache(consentCacheBytes), ops: make(chan *writeOp),
		quit: make(chan struct{}), writerDone: make(chan struct{}), cpDone: make(chan struct{})})
	s.metrics = o.Metrics
	go s.writer()
	go s.checkpointer()
	if err := s.stmts.prepare(ctx, w, r); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close waits for queued writes, then closes the database.
func (s *Store) Close() error {
	var err error
	if s.pg != nil {
		s.closeOnce.Do(func() {
			close(s.quit)
			s.pg.groups.wg.Wait()
			s.pg.cancel()
			<-s.pg.listenerDone
			s.stmts.close()
			err = errors.Join(s.w.Close(), s.pg.async.Close())
		})
		return err
	}
	s.closeOnce.Do(func() {
		// The writer finishes its batch and stops; later writes see quit.
		close(s.quit)
		<-s.writerDone
		<-s.cpDone
		s.stmts.close()
		err = errors.Join(s.r.Close(), s.cp.Close(), s.w.Close(), s.lock.release())
	})
	return err
}

// checkpointInterval is how often the WAL is copied back into the database.
const checkpointInterval = 250 * time.Millisecond

// maxWALFrames bounds the WAL (16,384 pages of 4 KiB: 64 MiB).
const maxWALFrames = 16384

// checkpointer copies the WAL into the database in the background, so that
// the writer never waits for a file sync in its commit path. A PASSIVE
// checkpoint blocks no one; but under constant load readers always hold
// some WAL frames, so the WAL is never restarted and would grow without
// bound. Past maxWALFrames a TRUNCATE checkpoint waits for the readers,
// briefly holds off the writer, and empties the WAL.
func (s *core) checkpointer() {
	defer close(s.cpDone)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			// A failed or partial checkpoint is retried at the next tick;
			// the data is safe in the WAL meanwhile.
			var busy, frames, done int
			if err := s.cp.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done); err != nil {
				continue
			}
			if frames > maxWALFrames {
				s.cp.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
			}
		}
	}
}

// Hash is the SHA-256 of a secret, the only form in which secrets are kept.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// migrations are applied in order; PRAGMA user_version records how many ran.
// Append only: an applied migration never changes.
var migrations = []string{
	`
CREATE TABLE keys (
	kid        TEXT PRIMARY KEY,
	alg        TEXT NOT NULL,
	der        BLOB NOT NULL,   -- PKCS #8
	created_at INTEGER NOT NULL
);
CREATE TABLE projects (
	id   TEXT PRIMARY KEY,
	name TEXT NOT NULL
);
CREATE TABLE clients (
	id              TEXT PRIMARY KEY,
	project_id      TEXT NOT NULL REFERENCES projects(id),
	name            TEXT NOT NULL,
	type            TEXT NOT NULL CHECK (type IN ('public', 'confidential')),
	secret_hash     BLOB,
	redirect_uris   TEXT NOT NULL,  -- JSON array of strings
	allowed_origins TEXT NOT NULL,  -- JSON array of strings
	roles           TEXT NOT NULL,  -- JSON array of strings
	resource        TEXT NOT NULL
);
CREATE TABLE subjects (
	id      TEXT PRIMARY KEY,
	profile TEXT NOT NULL           -- JSON
);
CREATE TABLE companies (
	id        TEXT PRIMARY KEY,
	name      TEXT NOT NULL,
	legal_id  TEXT NOT NULL,
	country   TEXT NOT NULL,
	addresses TEXT NOT NULL         -- JSON array
);
CREATE TABLE memberships (
	subject_id TEXT NOT NULL REFERENCES subjects(id),
	company_id TEXT NOT NULL REFERENCES companies(id),
	role       TEXT NOT NULL,
	PRIMARY KEY (subject_id, company_id)
);
CREATE TABLE accounts (
	id         TEXT PRIMARY KEY,
	subject_id TEXT REFERENCES subjects(id),
	company_id TEXT REFERENCES companies(id),
	name       TEXT NOT NULL,
	number     TEXT NOT NULL,
	currency   TEXT NOT NULL,
	CHECK ((subject_id IS NULL) <> (company_id IS NULL))
);
CREATE TABLE grants (
	id              TEXT PRIMARY KEY,
	client_id       TEXT NOT NULL REFERENCES clients(id),
	subject_id      TEXT NOT NULL,
	org_id          TEXT NOT NULL,
	scopes          TEXT NOT NULL,  -- space-delimited
	details         TEXT NOT NULL,  -- JSON array, the granted authorization_details
	audience        TEXT NOT NULL,  -- JSON array
	installation_id TEXT NOT NULL,
	auth_time       INTEGER NOT NULL,
	created_at      INTEGER NOT NULL,
	revoked_at      INTEGER
);
CREATE TABLE codes (
	hash         BLOB PRIMARY KEY,
	grant_id     TEXT NOT NULL REFERENCES grants(id),
	client_id    TEXT NOT NULL,
	redirect_uri TEXT NOT NULL,
	challenge    TEXT NOT NULL,
	nonce        TEXT NOT NULL,
	expires_at   INTEGER NOT NULL,
	used         INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE access_tokens (
	hash       BLOB PRIMARY KEY,
	grant_id   TEXT NOT NULL REFERENCES grants(id),
	jti        TEXT NOT NULL,
	issued_at  INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	revoked    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX access_tokens_grant ON access_tokens(grant_id);
CREATE TABLE refresh_tokens (
	hash       BLOB PRIMARY KEY,
	grant_id   TEXT NOT NULL REFERENCES grants(id),
	issued_at  INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	used       INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX refresh_tokens_grant ON refresh_tokens(grant_id);
`,
	// 2: onboarding and review (docs/service.md §5): project keys, the operator
	// credential, submissions under review, remembered consent, and
	// removable credentials. A removed client keeps its row (its grants
	// reference it) and its id, which is never reused.
	`
ALTER TABLE projects ADD COLUMN key_hash BLOB;
ALTER TABLE projects ADD COLUMN operator_company TEXT NOT NULL DEFAULT '';
ALTER TABLE clients ADD COLUMN removed_at INTEGER;
CREATE INDEX clients_project ON clients(project_id);
CREATE INDEX grants_client ON grants(client_id);
CREATE TABLE settings (
	name  TEXT PRIMARY KEY,
	value BLOB NOT NULL
);
CREATE TABLE submissions (
	id          TEXT PRIMARY KEY,
	project_id  TEXT NOT NULL REFERENCES projects(id),
	kind        TEXT NOT NULL CHECK (kind IN ('policy', 'resource_server', 'miniapp')),
	body        TEXT NOT NULL,  -- JSON: the policy, declaration or manifest as submitted
	status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
	reason      TEXT NOT NULL DEFAULT '',
	assigned_id TEXT NOT NULL DEFAULT '',  -- the Resource Server id given on approval (docs/service.md §5.8 c)
	created_at  INTEGER NOT NULL,
	decided_at  INTEGER
);
CREATE INDEX submissions_project ON submissions(project_id, kind, status);
CREATE INDEX submissions_status ON submissions(status, kind);
CREATE TABLE consents (
	subject_id  TEXT NOT NULL,
	client_id   TEXT NOT NULL,
	org_id      TEXT NOT NULL,
	permissions TEXT NOT NULL,  -- JSON array of permission keys
	account_id  TEXT NOT NULL,
	updated_at  INTEGER NOT NULL,
	PRIMARY KEY (subject_id, client_id)
) WITHOUT ROWID;
`,
	// 3: the algorithm of each client's ID tokens (OpenID Connect Dynamic
	// Client Registration 1.0 §2, id_token_signed_response_alg).
	`
ALTER TABLE clients ADD COLUMN id_token_alg TEXT NOT NULL DEFAULT 'RS256' CHECK (id_token_alg IN ('RS256', 'ES256', 'EdDSA'));
`,
	// 4: the state of flows in progress, for server instances that share a
	// database (flowstate.go): browser sessions, pending authorization
	// requests and the quota counts that bound both. Times are Unix
	// nanoseconds; ends_at is when a row stops counting against its quotas.
	`
CREATE TABLE sessions (
	id_hash    BLOB PRIMARY KEY,  -- SHA-256 of the session id; the id itself is the cookie, a secret
	bind       BLOB NOT NULL,     -- what the browser's pending requests name it by, kept across sign-in
	source     BLOB NOT NULL,     -- the source address, 16 bytes
	subject    TEXT NOT NULL,     -- empty until signed in
	evict      TEXT NOT NULL,     -- the quota whose oldest session gives way to a new one; empty for none
	quotas     TEXT NOT NULL,     -- JSON array of the quota keys charged
	ends_at    INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_ends ON sessions(ends_at);
CREATE INDEX sessions_evict ON sessions(evict, ends_at, expires_at);
CREATE TABLE pending_requests (
	id_hash    BLOB PRIMARY KEY,  -- SHA-256 of the request id
	params     TEXT NOT NULL,     -- JSON object: the authorization request's parameters as received
	bind       BLOB NOT NULL,     -- browser flow: the binding of the session that started it
	source     TEXT NOT NULL,     -- browser flow: the source address
	host       TEXT NOT NULL,     -- native flow: the host client
	subject    TEXT NOT NULL,     -- empty until a subject is chosen
	quotas     TEXT NOT NULL,
	ends_at    INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX pending_requests_ends ON pending_requests(ends_at);
CREATE TABLE quota_counts (
	quota   TEXT NOT NULL,
	ends_at INTEGER NOT NULL,     -- the rows counted here stop counting then
	n       INTEGER NOT NULL,
	PRIMARY KEY (quota, ends_at)
) WITHOUT ROWID;
CREATE INDEX quota_counts_ends ON quota_counts(ends_at);
`,
	// 5: no query reads tokens by grant (a token's lookup reads its
	// grant's state instead, and grants are never deleted), so the two
	// grant_id indexes only cost a B-tree insert on a random page per
	// token issued. Were grants ever deleted, the foreign keys would want
	// them back.
	`
DROP INDEX access_tokens_grant;
DROP INDEX refresh_tokens_grant;
`,
	// 6: FAPI 2.0 (clientsettings.go).
	fapiMigration,
	// 7: FAPI Grant Management (grantmgmt.go).
	grantManagementMigration,
	// 8: the subject's view of its grants (subjectgrants.go).
	subjectGrantsMigration,
	// 9: the audit events (events.go).
	eventsMigration,
}

// migrate applies the migrations the database has not seen, each in its own
// transaction together with the version bump.
func migrate(ctx context.Context, db *sql.DB) error {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("store: database schema version %d is newer than this program (%d)", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("store: migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: migration %d: %w", i+1, err)
		}
		// PRAGMA takes no bound parameters; i is our own integer.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: migration %d: %w", i+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store: migration %d: %w", i+1, err)
		}
	}
	return nil
}
