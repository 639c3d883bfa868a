package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrReplayed is returned when a single-use code or refresh token is
// presented a second time. The store has already revoked the grant behind it
// when it returns this error (RFC 6749 §4.1.2 and §10.4, RFC 9700 §4.14.2).
var ErrReplayed = errors.New("store: single-use credential presented twice; its grant is revoked")

// Grant is what a subject approved for a client: the authorization behind
// every token issued from it (docs/service.md §2.6).
type Grant struct {
	ID        string
	ClientID  string
	SubjectID string
	OrgID     string
	Scopes    []string
	// Details is the JSON array of the granted authorization_details.
	Details json.RawMessage
	// Audience lists the resource addresses the access tokens are for.
	Audience       []string
	InstallationID string
	AuthTime       time.Time
	CreatedAt      time.Time
	// RevokedAt is zero while the grant is active.
	RevokedAt time.Time
	// Lineage is the grant_id of FAPI Grant Management (grantmgmt.go)
	// when this grant continues another by merge or replace; "" for a
	// grant that is its own (GrantManagementID).
	Lineage string
	// Supersedes, on a grant being stored, is the live grant it merges or
	// replaces, as the caller read it: that one is revoked in the same
	// transaction if it is still live with the scopes and details read,
	// or nothing is stored (ErrGrantSuperseded). Not stored itself.
	Supersedes *Grant
	// UsedAt is when a token of the grant was last issued or looked up
	// (SubjectGrants only; zero when unknown).
	UsedAt time.Time

	raw *grantScan // columns being scanned; nil outside the store
}

// Revoked reports whether the grant was revoked.
func (g *Grant) Revoked() bool { return !g.RevokedAt.IsZero() }

// Code is an authorization code (RFC 6749 §4.1.2), kept as a hash.
type Code struct {
	Hash        []byte
	GrantID     string
	ClientID    string
	RedirectURI string
	// Challenge is the S256 code_challenge (RFC 7636 §4.2); never empty,
	// because the server refuses authorization requests without one.
	Challenge string
	Nonce     string
	ExpiresAt time.Time
}

// AccessToken is an issued access token, kept as a hash of the JWT.
type AccessToken struct {
	Hash      []byte
	GrantID   string
	JTI       string
	IssuedAt  time.Time
	ExpiresAt time.Time
	Revoked   bool
}

// RefreshToken is an issued refresh token, kept as a hash.
type RefreshToken struct {
	Hash      []byte
	GrantID   string
	IssuedAt  time.Time
	ExpiresAt time.Time
	Used      bool
}

// statements are the prepared statements of the hot paths.
type statements struct {
	client, grant, accessToken, refreshToken    *sql.Stmt // readers
	peekCode                                    *sql.Stmt // reader
	insertGrant, insertCode, insertAT, insertRT *sql.Stmt // writer
	useCode, useRT, codeGrant, rtGrant          *sql.Stmt // writer
	revokeGrant                                 *sql.Stmt // writer
	consent                                     *sql.Stmt // reader
	putConsent                                  *sql.Stmt // writer
}

const grantCols = `g.id, g.client_id, g.subject_id, g.org_id, g.scopes, g.details, g.audience, g.installation_id, g.auth_time, g.created_at, COALESCE(g.revoked_at, 0), g.lineage`

func (st *statements) prepare(ctx context.Context, w, r *sql.DB) error {
	var errs []error
	p := func(db *sql.DB, q string) *sql.Stmt {
		s, err := db.PrepareContext(ctx, q)
		errs = append(errs, err)
		return s
	}
	st.client = p(r, clientSelect+` WHERE id = ? AND removed_at IS NULL`)
	st.grant = p(r, `SELECT `+grantCols+` FROM grants g WHERE g.id = ?`)
	st.accessToken = p(r, `SELECT t.grant_id, t.jti, t.issued_at, t.expires_at, t.revoked, `+grantCols+`
		FROM access_tokens t JOIN grants g ON g.id = t.grant_id WHERE t.hash = ?`)
	st.refreshToken = p(r, `SELECT t.grant_id, t.issued_at, t.expires_at, t.used, `+grantCols+`
		FROM refresh_tokens t JOIN grants g ON g.id = t.grant_id WHERE t.hash = ?`)
	st.peekCode = p(r, `SELECT grant_id, client_id, redirect_uri, challenge, nonce, expires_at, used FROM codes WHERE hash = ?`)
	st.insertGrant = p(w, `INSERT INTO grants(id, client_id, subject_id, org_id, scopes, details, audience, installation_id, auth_time, created_at, lineage)
		VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	st.insertCode = p(w, `INSERT INTO codes(hash, grant_id, client_id, redirect_uri, challenge, nonce, expires_at) VALUES(?, ?, ?, ?, ?, ?, ?)`)
	st.useCode = p(w, `UPDATE codes SET used = 1 WHERE hash = ? AND used = 0
		RETURNING grant_id, client_id, redirect_uri, challenge, nonce, expires_at`)
	st.codeGrant = p(w, `SELECT grant_id FROM codes WHERE hash = ?`)
	st.insertAT = p(w, `INSERT INTO access_tokens(hash, grant_id, jti, issued_at, expires_at) VALUES(?, ?, ?, ?, ?)`)
	st.insertRT = p(w, `INSERT INTO refresh_tokens(hash, grant_id, issued_at, expires_at) VALUES(?, ?, ?, ?)`)
	st.useRT = p(w, `UPDATE refresh_tokens SET used = 1 WHERE hash = ? AND used = 0 RETURNING grant_id, issued_at, expires_at`)
	st.rtGrant = p(w, `SELECT grant_id FROM refresh_tokens WHERE hash = ?`)
	st.revokeGrant = p(w, `UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`)
	// A browser flow reads the remembered consent twice and writes it once.
	st.consent = p(r, consentSelect+` WHERE subject_id = ? AND client_id = ?`)
	st.putConsent = p(w, `INSERT INTO consents(subject_id, client_id, org_id, permissions, account_id, updated_at) VALUES(?, ?, ?, ?, ?, ?)
		ON CONFLICT(subject_id, client_id) DO UPDATE SET org_id = excluded.org_id, permissions = excluded.permissions,
			account_id = excluded.account_id, updated_at = excluded.updated_at`)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: prepare: %w", err)
	}
	return nil
}

func (st *statements) close() {
	for _, s := range []*sql.Stmt{st.client, st.grant, st.peekCode, st.accessToken, st.refreshToken, st.insertGrant, st.insertCode,
		st.insertAT, st.insertRT, st.useCode, st.useRT, st.codeGrant, st.rtGrant, st.revokeGrant, st.consent, st.putConsent} {
		if s != nil {
			s.Close()
		}
	}
}

// CreateGrant stores a new grant and the authorization code that will
// redeem it, in one transaction.
func (s *GrantStore) CreateGrant(ctx context.Context, g *Grant, c *Code) error {
	return s.CreateGrantRemembering(ctx, g, c, nil)
}

// CreateGrantRemembering stores a new grant, the authorization code that
// will redeem it and, when remember is not nil, the subject's consent for
// the client (replacing the previous one, as PutConsent does), in one
// transaction: an approval is one write, and a consent is never kept for
// a grant that was not stored.
func (s *GrantStore) CreateGrantRemembering(ctx context.Context, g *Grant, c *Code, remember *Consent) error {
	ins := s.prepareGrant(g, c, remember)
	if err := s.write(ctx, ins.exec); err != nil {
		ins.failed()
		return err
	}
	ins.cache()
	return nil
}

// grantInsert is the write of an approval: a grant, its code and the
// consent to remember (CreateGrantRemembering, DecidePending).
type grantInsert struct {
	s        *core
	g        *Grant
	c        *Code
	remember *Consent
	aud      string
	perms    string
}

func (s *core) prepareGrant(g *Grant, c *Code, remember *Consent) *grantInsert {
	aud, _ := json.Marshal(nonNil(g.Audience))
	if len(g.Details) == 0 {
		g.Details = json.RawMessage("[]")
	}
	in := &grantInsert{s: s, g: g, c: c, remember: remember, aud: string(aud)}
	if remember != nil && s.remembered(remember) {
		in.remember = nil
	}
	if in.remember != nil {
		perms, _ := json.Marshal(nonNil(remember.Permissions))
		in.perms = string(perms)
	}
	return in
}

// remembered reports whether c is already the subject's remembered consent
// for the client, as far as the consent cache knows while it may answer:
// the same Company, account and permissions. Such a consent is not
// written again; it keeps the time it was given (UpdatedAt). Every
// approval of one subject for one client would otherwise rewrite one row:
// on PostgreSQL concurrent approvals then wait on its lock, each for the
// commit before, and each announces the change to the other instances.
func (s *core) remembered(c *Consent) bool {
	if !s.cacheable() {
		return false
	}
	prev, found, _ := s.consents.get(c.SubjectID, c.ClientID)
	if !found || prev == nil || prev.OrgID != c.OrgID || prev.AccountID != c.AccountID || len(prev.Permissions) != len(c.Permissions) {
		return false
	}
	a, b := slices.Clone(prev.Permissions), slices.Clone(c.Permissions)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func (in *grantInsert) exec(tx *sql.Tx) error {
	s, g, c, remember := in.s, in.g, in.c, in.remember
	if _, err := tx.Stmt(s.stmts.insertGrant).Exec(g.ID, g.ClientID, g.SubjectID, g.OrgID,
		strings.Join(g.Scopes, " "), string(g.Details), in.aud, g.InstallationID, g.AuthTime.Unix(), g.CreatedAt.Unix(), g.Lineage); err != nil {
		return wrap("create grant", err)
	}
	if g.Supersedes != nil {
		if err := s.supersede(tx, g); err != nil {
			return err
		}
	}
	if _, err := tx.Stmt(s.stmts.insertCode).Exec(c.Hash, g.ID, c.ClientID, c.RedirectURI, c.Challenge, c.Nonce, c.ExpiresAt.Unix()); err != nil {
		return wrap("create code", err)
	}
	if remember == nil {
		return nil
	}
	if _, err := tx.Stmt(s.stmts.putConsent).Exec(remember.SubjectID, remember.ClientID, remember.OrgID, in.perms,
		remember.AccountID, remember.UpdatedAt.Unix()); err != nil {
		return wrap("put consent", err)
	}
	return s.announce(tx, Change{Kind: ChangedConsent, Key: ConsentKey(remember.SubjectID, remember.ClientID)})
}

// failed empties the consent cache after a write that may or may not
// have remembered a consent (an error at commit on a lost connection).
func (in *grantInsert) failed() {
	if in.remember != nil {
		in.s.consents.clear()
	}
}

// cache puts the committed grant, code and remembered consent in the
// caches.
func (in *grantInsert) cache() {
	if r := in.remember; r != nil {
		in.s.consents.written(r.SubjectID, r.ClientID, r)
	}
	stored := *in.g
	// Times are kept to the second in the database; cache what a read
	// would return.
	stored.AuthTime, stored.CreatedAt = time.Unix(in.g.AuthTime.Unix(), 0), time.Unix(in.g.CreatedAt.Unix(), 0)
	stored.Supersedes = nil
	in.s.cache.put(nil, &stored)
	if g := in.g; g.Supersedes != nil {
		in.s.cache.revokedGrant(g.Supersedes.ID, stored.CreatedAt)
	}
	code := *in.c
	code.GrantID, code.ExpiresAt = in.g.ID, time.Unix(in.c.ExpiresAt.Unix(), 0)
	in.s.cache.putCode(code, in.g.CreatedAt)
}

// RedeemCode marks a code used and returns it. A code that does not exist
// returns ErrNotFound; a code used before revokes its grant and returns
// ErrReplayed. Expiry and the binding checks (client, redirect_uri, PKCE) are
// the caller's: the code's own client, once checked (PeekCode returns the
// client of a spent code too), has the code spent by a failed attempt, so
// that it cannot be retried with other guesses.
func (s *GrantStore) RedeemCode(ctx context.Context, hash []byte, now time.Time) (*Code, error) {
	defer s.cache.spentCode(hash)
	c := &Code{Hash: hash}
	var exp int64
	var found bool
	var replayed string // grant id of a replayed code
	err := s.write(ctx, func(tx *sql.Tx) error {
		// The conditional UPDATE makes the code single-use: of two
		// concurrent redemptions exactly one sees used = 0.
		err := tx.Stmt(s.stmts.useCode).QueryRow(hash).Scan(&c.GrantID, &c.ClientID, &c.RedirectURI, &c.Challenge, &c.Nonce, &exp)
		if err == nil {
			found = true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return wrap("redeem code", err)
		}
		replayed, err = s.revokeSpent(tx, s.stmts.codeGrant, hash, now)
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case found:
		c.ExpiresAt = time.Unix(exp, 0)
		return c, nil
	case replayed != "":
		s.cache.revokedGrant(replayed, time.Unix(now.Unix(), 0))
		return nil, ErrReplayed
	}
	return nil, ErrNotFound
}

// PeekCode reads a code without spending it, so that the token endpoint can
// check it and sign the tokens before the one write that spends the code
// and stores the tokens (RedeemCodeFor). used reports a spent code.
func (s *GrantStore) PeekCode(ctx context.Context, hash []byte) (c *Code, used bool, err error) {
	if cc, ok := s.cache.code(hash); ok && s.cacheable() {
		return &cc, false, nil
	}
	if s.pg != nil {
		epoch := s.cache.epochNow()
		switch r, found, alone, err := s.pg.groups.reads.code.get(s.quit, string(hash)); {
		case err != nil:
			return nil, false, err
		case alone:
		case !found:
			return nil, false, fmt.Errorf("store: code: %w", ErrNotFound)
		default:
			s.cache.fill(epoch, nil, r.g)
			c := r.c
			return &c, r.used, nil
		}
	}
	c = &Code{Hash: hash}
	var exp int64
	if err := s.stmts.peekCode.QueryRowContext(ctx, hash).Scan(&c.GrantID, &c.ClientID, &c.RedirectURI, &c.Challenge, &c.Nonce, &exp, &used); err != nil {
		return nil, false, wrap("code", err)
	}
	c.ExpiresAt = time.Unix(exp, 0)
	return c, used, nil
}

// RedeemCodeFor spends a code and stores the tokens issued for it in one
// transaction; rt may be nil. If the code was spent meanwhile (a concurrent
// or replayed redemption), nothing is stored, the grant is revoked and
// ErrReplayed is returned.
func (s *GrantStore) RedeemCodeFor(ctx context.Context, hash []byte, now time.Time, at *AccessToken, rt *RefreshToken) error {
	defer s.cache.spentCode(hash)
	if s.pg != nil {
		if err := s.pgOpen(); err != nil {
			return err
		}
		switch done, err := s.redeemGrouped(ctx, hash, at, rt); {
		case err == nil && done:
			s.cache.put(cachedToken(at), nil)
			s.uses.touch(at.GrantID, now)
			return nil
		case err != nil && !retryable(err):
			return err
		}
	}
	var replayed string
	var won bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var grantID string
		var c Code
		var exp int64
		err := tx.Stmt(s.stmts.useCode).QueryRow(hash).Scan(&grantID, &c.ClientID, &c.RedirectURI, &c.Challenge, &c.Nonce, &exp)
		if errors.Is(err, sql.ErrNoRows) {
			replayed, err = s.revokeSpent(tx, s.stmts.codeGrant, hash, now)
			return err
		} else if err != nil {
			return wrap("redeem code", err)
		}
		if grantID != at.GrantID {
			return fmt.Errorf("store: code belongs to grant %q, not %q", grantID, at.GrantID)
		}
		won = true
		return insertTokens(tx, &s.stmts, at, rt)
	})
	switch {
	case err != nil:
		return err
	case won:
		s.cache.put(cachedToken(at), nil)
		s.uses.touch(at.GrantID, now)
		return nil
	case replayed != "":
		s.cache.revokedGrant(replayed, time.Unix(now.Unix(), 0))
	}
	return ErrReplayed
}

// revokeSpent looks up the grant of a spent single-use credential and
// revokes it, in the transaction that found it spent; it returns "" when
// the credential never existed.
func (s *GrantStore) revokeSpent(tx *sql.Tx, lookup *sql.Stmt, hash []byte, now time.Time) (string, error) {
	var grantID string
	err := tx.Stmt(lookup).QueryRow(hash).Scan(&grantID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	} else if err != nil {
		return "", wrap("redeem", err)
	}
	if _, err := tx.Stmt(s.stmts.revokeGrant).Exec(now.Unix(), grantID); err != nil {
		return "", wrap("revoke grant", err)
	}
	return grantID, s.announce(tx, Change{Kind: ChangedGrant, Key: grantID, At: now})
}

// UseRefreshToken marks a refresh token used (rotation, RFC 9700 §4.14.2) and
// returns it. A reused token revokes its grant and returns ErrReplayed.
func (s *GrantStore) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (*RefreshToken, error) {
	t := &RefreshToken{Hash: hash, Used: true}
	var iat, exp int64
	var found bool
	var replayed string
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.Stmt(s.stmts.useRT).QueryRow(hash).Scan(&t.GrantID, &iat, &exp)
		if err == nil {
			found = true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return wrap("use refresh token", err)
		}
		replayed, err = s.revokeSpent(tx, s.stmts.rtGrant, hash, now)
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case found:
		t.IssuedAt, t.ExpiresAt = time.Unix(iat, 0), time.Unix(exp, 0)
		s.uses.touch(t.GrantID, now)
		return t, nil
	case replayed != "":
		s.cache.revokedGrant(replayed, time.Unix(now.Unix(), 0))
		return nil, ErrReplayed
	}
	return nil, ErrNotFound
}

// AddTokens stores the tokens issued from a grant in one transaction; rt may
// be nil.
func (s *GrantStore) AddTokens(ctx context.Context, at *AccessToken, rt *RefreshToken) error {
	err := s.write(ctx, func(tx *sql.Tx) error { return insertTokens(tx, &s.stmts, at, rt) })
	if err != nil {
		return err
	}
	s.cache.put(cachedToken(at), nil)
	return nil
}

func insertTokens(tx *sql.Tx, st *statements, at *AccessToken, rt *RefreshToken) error {
	if _, err := tx.Stmt(st.insertAT).Exec(at.Hash, at.GrantID, at.JTI, at.IssuedAt.Unix(), at.ExpiresAt.Unix()); err != nil {
		return wrap("add access token", err)
	}
	if rt != nil {
		if _, err := tx.Stmt(st.insertRT).Exec(rt.Hash, rt.GrantID, rt.IssuedAt.Unix(), rt.ExpiresAt.Unix()); err != nil {
			return wrap("add refresh token", err)
		}
	}
	return nil
}

// cachedToken is the token as a read would return it: times to the second.
func cachedToken(at *AccessToken) *AccessToken {
	c := *at
	c.IssuedAt, c.ExpiresAt = time.Unix(at.IssuedAt.Unix(), 0), time.Unix(at.ExpiresAt.Unix(), 0)
	return &c
}

// RevokeGrant revokes a grant and with it every token issued from it:
// token lookups read the grant's state, so no token outlives it.
func (s *GrantStore) RevokeGrant(ctx context.Context, id string, now time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Stmt(s.stmts.revokeGrant).Exec(now.Unix(), id); err != nil {
			return wrap("revoke grant", err)
		}
		return s.announce(tx, Change{Kind: ChangedGrant, Key: id, At: now})
	})
	if err != nil {
		return err
	}
	s.cache.revokedGrant(id, time.Unix(now.Unix(), 0))
	return nil
}

// RevokeAccessToken revokes one access token.
func (s *GrantStore) RevokeAccessToken(ctx context.Context, hash []byte) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE access_tokens SET revoked = 1 WHERE hash = ?`, hash); err != nil {
			return wrap("revoke access token", err)
		}
		return s.announce(tx, Change{Kind: ChangedToken, Key: hex.EncodeToString(hash)})
	})
	if err != nil {
		return err
	}
	s.cache.revokedToken(hash)
	return nil
}

// Grant returns a grant by id, or ErrNotFound.
func (s *GrantStore) Grant(ctx context.Context, id string) (*Grant, error) {
	g, epoch := s.cache.grant(id)
	if g != nil && s.cacheable() {
		return g, nil
	}
	if s.pg != nil {
		switch g, found, alone, err := s.pg.groups.reads.grant.get(s.quit, id); {
		case err != nil:
			return nil, err
		case alone:
		case !found:
			return nil, fmt.Errorf("store: grant: %w", ErrNotFound)
		default:
			s.cache.fill(epoch, nil, g)
			return g, nil
		}
	}
	g = &Grant{}
	if err := s.stmts.grant.QueryRowContext(ctx, id).Scan(grantDest(g)...); err != nil {
		return nil, wrap("grant", err)
	}
	if err := finishGrant(g); err != nil {
		return nil, err
	}
	s.cache.fill(epoch, nil, g)
	return g, nil
}

// LookupAccessToken returns an access token by hash with its grant, or
// ErrNotFound.
func (s *GrantStore) LookupAccessToken(ctx context.Context, hash []byte) (*AccessToken, *Grant, error) {
	t, g, epoch := s.cache.lookup(hash)
	if t != nil && s.cacheable() {
		s.uses.touch(g.ID, time.Now())
		return t, g, nil
	}
	t, g = &AccessToken{Hash: hash}, &Grant{}
	var iat, exp int64
	dest := append([]any{&t.GrantID, &t.JTI, &iat, &exp, &t.Revoked}, grantDest(g)...)
	if err := s.stmts.accessToken.QueryRowContext(ctx, hash).Scan(dest...); err != nil {
		return nil, nil, wrap("access token", err)
	}
	t.IssuedAt, t.ExpiresAt = time.Unix(iat, 0), time.Unix(exp, 0)
	if err := finishGrant(g); err != nil {
		return nil, nil, err
	}
	s.cache.fill(epoch, t, g)
	s.uses.touch(g.ID, time.Now())
	return t, g, nil
}

// LookupRefreshToken returns a refresh token by hash with its grant, or
// ErrNotFound.
func (s *GrantStore) LookupRefreshToken(ctx context.Context, hash []byte) (*RefreshToken, *Grant, error) {
	t, g := &RefreshToken{Hash: hash}, &Grant{}
	var iat, exp int64
	dest := append([]any{&t.GrantID, &iat, &exp, &t.Used}, grantDest(g)...)
	if err := s.stmts.refreshToken.QueryRowContext(ctx, hash).Scan(dest...); err != nil {
		return nil, nil, wrap("refresh token", err)
	}
	t.IssuedAt, t.ExpiresAt = time.Unix(iat, 0), time.Unix(exp, 0)
	return t, g, finishGrant(g)
}

// grantScan holds the columns of a grant that need conversion after Scan.
type grantScan struct {
	scopes, details, audience  string
	authTime, created, revoked int64
}

// grantDest returns the Scan destinations of grantCols; finishGrant
// converts what was scanned.
func grantDest(g *Grant) []any {
	raw := &grantScan{}
	g.raw = raw
	return []any{&g.ID, &g.ClientID, &g.SubjectID, &g.OrgID, &raw.scopes, &raw.details, &raw.audience,
		&g.InstallationID, &raw.authTime, &raw.created, &raw.revoked, &g.Lineage}
}

func finishGrant(g *Grant) error {
	raw := g.raw
	g.raw = nil
	g.Scopes = strings.Fields(raw.scopes)
	g.Details = json.RawMessage(raw.details)
	g.AuthTime, g.CreatedAt = time.Unix(raw.authTime, 0), time.Unix(raw.created, 0)
	if raw.revoked != 0 {
		g.RevokedAt = time.Unix(raw.revoked, 0)
	}
	if err := json.Unmarshal([]byte(raw.audience), &g.Audience); err != nil {
		return fmt.Errorf("store: grant %q audience: %w", g.ID, err)
	}
	return nil
}
