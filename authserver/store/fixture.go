package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Fixtures of a development server (docs/dashboard.md, "Fixtures"): test
// identities and decisions written in one transaction, and every
// decision of a subject or a client forgotten in one.

// Membership is a subject's membership of a Company.
type Membership struct {
	SubjectID string
	CompanyID string
	Role      string
}

// Fixture is what ApplyFixture writes. Its caller has checked it against
// the world (references, owners, the catalog); the store re-checks, in the
// transaction, what a concurrent write could have changed since.
type Fixture struct {
	Subjects    []Subject
	Companies   []Company
	Memberships []Membership
	Accounts    []Account
	// Consents replace the remembered consent of their subject and
	// client; one equal to the stored one (Company, account, permissions)
	// keeps its time.
	Consents []*Consent
	// Grants are written by id: a new one is stored, a stored one (the
	// same subject's and client's) gets the scopes, details, Company,
	// audience and installation of the fixture. A grant with RevokedAt
	// set is revoked at that time unless it already is. A stored revoked
	// grant that the fixture wants active starts again: active, its time
	// the fixture's, every code and token issued from it before deleted.
	Grants []*Grant
	// Tokens are access tokens of the fixture's grants, stored with them.
	Tokens []*AccessToken
}

// FixtureConflictError is ApplyFixture's refusal of a record that the
// stored one forbids (an account of another owner, a grant of another
// subject or client): nothing was written.
type FixtureConflictError struct {
	Kind  string // "account" or "grant"
	Index int    // in Fixture.Accounts or Fixture.Grants
	ID    string
	Msg   string
}

func (e *FixtureConflictError) Error() string {
	return fmt.Sprintf("store: fixture %s %s: %s", e.Kind, e.ID, e.Msg)
}

// ApplyFixture writes f in one transaction: all of it, or nothing (a
// *FixtureConflictError, or a storage error).
func (s *Store) ApplyFixture(ctx context.Context, f *Fixture) error {
	var changed []grantChange
	var dropped []droppedCred
	err := s.write(ctx, func(tx *sql.Tx) error {
		changed, dropped = changed[:0], dropped[:0]
		if err := writeFixtureWorld(tx, f); err != nil {
			return err
		}
		if err := s.announce(tx, Change{Kind: ChangedWorld}); err != nil {
			return err
		}
		if err := s.writeFixtureConsents(tx, f.Consents); err != nil {
			return err
		}
		for i, g := range f.Grants {
			ch, err := s.fixtureGrant(tx, i, g, &dropped)
			if err != nil {
				return err
			}
			changed = append(changed, grantChange{g.ID, ch})
		}
		for _, at := range f.Tokens {
			if err := insertTokens(tx, &s.stmts, at, nil); err != nil {
				return err
			}
		}
		return nil
	})
	s.forgetWorld()
	if err != nil {
		s.consents.clear() // the outcome is unknown to the caches: read anew
		for _, g := range f.Grants {
			s.cache.forgetGrant(g.ID)
		}
		return err
	}
	s.fixtureWritten(f, changed, dropped)
	return nil
}

// grantChange is a grant a fixture wrote, and when the write revoked it
// (zero if it did not).
type grantChange struct {
	id      string
	revoked time.Time
}

// writeFixtureWorld writes a fixture's subjects, companies, memberships
// and accounts in tx. An account never changes owner: the update applies
// only to the same owner's account, and no row written is a conflict.
func writeFixtureWorld(tx *sql.Tx, f *Fixture) error {
	for _, sub := range f.Subjects {
		p, _ := json.Marshal(sub.Profile)
		if _, err := tx.Exec(`INSERT INTO subjects(id, profile) VALUES(?, ?)
			ON CONFLICT(id) DO UPDATE SET profile = excluded.profile`, sub.ID, string(p)); err != nil {
			return wrap("fixture subject", err)
		}
	}
	for _, c := range f.Companies {
		a, _ := json.Marshal(nonNilAddr(c.Addresses))
		if _, err := tx.Exec(`INSERT INTO companies(id, name, legal_id, country, addresses) VALUES(?, ?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET name = excluded.name, legal_id = excluded.legal_id,
				country = excluded.country, addresses = excluded.addresses`,
			c.ID, c.Name, c.LegalID, c.Country, string(a)); err != nil {
			return wrap("fixture company", err)
		}
	}
	for _, m := range f.Memberships {
		if _, err := tx.Exec(`INSERT INTO memberships(subject_id, company_id, role) VALUES(?, ?, ?)
			ON CONFLICT(subject_id, company_id) DO UPDATE SET role = excluded.role`, m.SubjectID, m.CompanyID, m.Role); err != nil {
			return wrap("fixture membership", err)
		}
	}
	for i, a := range f.Accounts {
		res, err := tx.Exec(`INSERT INTO accounts(id, subject_id, company_id, name, number, currency)
			VALUES(?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET name = excluded.name, number = excluded.number, currency = excluded.currency
			WHERE COALESCE(accounts.subject_id, '') = COALESCE(excluded.subject_id, '')
				AND COALESCE(accounts.company_id, '') = COALESCE(excluded.company_id, '')`,
			a.ID, a.SubjectID, a.CompanyID, a.Name, a.Number, a.Currency)
		if err != nil {
			return wrap("fixture account", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return wrap("fixture account", err)
		} else if n == 0 {
			return &FixtureConflictError{Kind: "account", Index: i, ID: a.ID, Msg: "the account is stored as another owner's"}
		}
	}
	return nil
}

// writeFixtureConsents writes a fixture's remembered consents in tx,
// each announced; a consent written unchanged keeps its updated_at.
func (s *Store) writeFixtureConsents(tx *sql.Tx, consents []*Consent) error {
	for _, c := range consents {
		perms, _ := json.Marshal(nonNil(c.Permissions))
		if _, err := tx.Exec(`INSERT INTO consents(subject_id, client_id, org_id, permissions, account_id, updated_at) VALUES(?, ?, ?, ?, ?, ?)
			ON CONFLICT(subject_id, client_id) DO UPDATE SET org_id = excluded.org_id, permissions = excluded.permissions,
				account_id = excluded.account_id,
				updated_at = CASE WHEN consents.org_id = excluded.org_id AND consents.permissions = excluded.permissions
					AND consents.account_id = excluded.account_id THEN consents.updated_at ELSE excluded.updated_at END`,
			c.SubjectID, c.ClientID, c.OrgID, string(perms), c.AccountID, c.UpdatedAt.Unix()); err != nil {
			return wrap("fixture consent", err)
		}
		if err := s.announce(tx, Change{Kind: ChangedConsent, Key: ConsentKey(c.SubjectID, c.ClientID)}); err != nil {
			return err
		}
	}
	return nil
}

// fixtureWritten brings this instance's caches up to a committed
// fixture: its consents and grants read anew, the codes and tokens it
// deleted spent, the grants it revoked revoked.
func (s *Store) fixtureWritten(f *Fixture, changed []grantChange, dropped []droppedCred) {
	for _, c := range f.Consents {
		s.consents.forget(c.SubjectID, c.ClientID)
	}
	for _, d := range dropped {
		if d.code != nil {
			s.cache.spentCode(d.code)
		} else {
			s.cache.mu.Lock()
			s.cache.dropToken(string(d.token))
			s.cache.mu.Unlock()
		}
	}
	for _, ch := range changed {
		if !ch.revoked.IsZero() {
			s.cache.revokedGrant(ch.id, time.Unix(ch.revoked.Unix(), 0))
		}
		s.cache.forgetGrant(ch.id)
	}
}

// fixtureGrant writes one grant of a fixture in tx and returns when it
// was revoked by this write (zero if it was not).
func (s *Store) fixtureGrant(tx *sql.Tx, i int, g *Grant, dropped *[]droppedCred) (time.Time, error) {
	row := fixtureGrantRow{g: g, details: g.Details, scopes: strings.Join(g.Scopes, " ")}
	if len(row.details) == 0 {
		row.details = json.RawMessage("[]")
	}
	row.aud, _ = json.Marshal(nonNil(g.Audience))
	q := `SELECT client_id, subject_id, scopes, details, org_id, COALESCE(revoked_at, 0) FROM grants WHERE id = ?`
	if s.pg != nil {
		q += ` FOR UPDATE`
	}
	var client, subject, oldScopes, oldDetails, oldOrg string
	var revoked int64
	err := tx.QueryRow(q, g.ID).Scan(&client, &subject, &oldScopes, &oldDetails, &oldOrg, &revoked)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.Stmt(s.stmts.insertGrant).Exec(g.ID, g.ClientID, g.SubjectID, g.OrgID, row.scopes, string(row.details), string(row.aud),
			g.InstallationID, g.AuthTime.Unix(), g.CreatedAt.Unix(), ""); err != nil {
			return time.Time{}, wrap("fixture grant", err)
		}
	case err != nil:
		return time.Time{}, wrap("fixture grant", err)
	case client != g.ClientID || subject != g.SubjectID:
		return time.Time{}, &FixtureConflictError{Kind: "grant", Index: i, ID: g.ID,
			Msg: fmt.Sprintf("the grant is stored as %s's for client %s", subject, client)}
	case revoked != 0 && !g.Revoked():
		return time.Time{}, s.restartGrant(tx, row, dropped)
	default:
		if oldScopes != row.scopes || oldDetails != string(row.details) || oldOrg != g.OrgID {
			if err := s.updateGrantEntries(tx, row); err != nil {
				return time.Time{}, err
			}
		}
		if revoked != 0 {
			return time.Time{}, nil // revoked before: it keeps its time
		}
	}
	if !g.Revoked() {
		return time.Time{}, nil
	}
	if _, err := tx.Stmt(s.stmts.revokeGrant).Exec(g.RevokedAt.Unix(), g.ID); err != nil {
		return time.Time{}, wrap("fixture grant", err)
	}
	return g.RevokedAt, s.announce(tx, Change{Kind: ChangedGrant, Key: g.ID, At: g.RevokedAt})
}

// fixtureGrantRow is a fixture's grant with its columns as stored.
type fixtureGrantRow struct {
	g       *Grant
	details json.RawMessage
	aud     []byte
	scopes  string
}

// restartGrant starts a grant revoked since (a reset, a revocation) that
// the file wants active again, as a new grant of the same id. What was
// issued from it before is deleted, so that no earlier code or token comes
// back to life, and a spent refresh token presented again is unknown
// rather than a replay that revokes the grant. These deletes scan the
// tables (no index by grant: store.go, migration 5), a development
// server's cost only.
func (s *Store) restartGrant(tx *sql.Tx, row fixtureGrantRow, dropped *[]droppedCred) error {
	g := row.g
	for _, q := range []struct {
		sql   string
		codes bool
	}{{`DELETE FROM codes WHERE grant_id = ? RETURNING hash`, true}, {`DELETE FROM access_tokens WHERE grant_id = ? RETURNING hash`, false}} {
		hashes, err := deleteReturning(tx, q.sql, g.ID)
		if err != nil {
			return wrap("fixture grant", err)
		}
		for _, h := range hashes {
			if q.codes {
				*dropped = append(*dropped, droppedCred{code: h})
				continue
			}
			*dropped = append(*dropped, droppedCred{token: h})
			// Another instance may hold the token in its cache:
			// there it answers revoked until it reads it again.
			if err := s.announce(tx, Change{Kind: ChangedToken, Key: hex.EncodeToString(h)}); err != nil {
				return err
			}
		}
	}
	if _, err := tx.Exec(`DELETE FROM refresh_tokens WHERE grant_id = ?`, g.ID); err != nil {
		return wrap("fixture grant", err)
	}
	if _, err := tx.Exec(`UPDATE grants SET org_id = ?, scopes = ?, details = ?, audience = ?, installation_id = ?,
		auth_time = ?, created_at = ?, revoked_at = NULL, used_at = NULL WHERE id = ?`,
		g.OrgID, row.scopes, string(row.details), string(row.aud), g.InstallationID, g.AuthTime.Unix(), g.CreatedAt.Unix(), g.ID); err != nil {
		return wrap("fixture grant", err)
	}
	return s.announce(tx, Change{Kind: ChangedGrantEntries, Key: g.ID})
}

// updateGrantEntries writes a stored grant's new entries (its
// organization, scopes, details, audience and installation), announced.
func (s *Store) updateGrantEntries(tx *sql.Tx, row fixtureGrantRow) error {
	g := row.g
	if _, err := tx.Exec(`UPDATE grants SET org_id = ?, scopes = ?, details = ?, audience = ?, installation_id = ? WHERE id = ?`,
		g.OrgID, row.scopes, string(row.details), string(row.aud), g.InstallationID, g.ID); err != nil {
		return wrap("fixture grant", err)
	}
	return s.announce(tx, Change{Kind: ChangedGrantEntries, Key: g.ID})
}

// droppedCred is a code or access token a fixture deleted, to drop from
// the cache once committed.
type droppedCred struct{ code, token []byte }

// deleteReturning runs a DELETE ... RETURNING hash and returns the hashes.
func deleteReturning(tx *sql.Tx, q string, args ...any) ([][]byte, error) {
	rows, err := tx.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var h []byte
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// Forgotten is what ForgetDecisions forgot.
type Forgotten struct {
	// Consents are the forgotten remembered consents.
	Consents []*Consent
	// Grants are the ids of the grants it revoked.
	Grants []string
}

// ForgetDecisions forgets, in one transaction, every decision of a
// subject, of a client, or of one subject for one client ("" matches
// any; at least one must be given): their remembered consents are deleted
// and their active grants revoked at now, and with them every token
// issued from those grants. Nothing else changes.
func (s *ConsentStore) ForgetDecisions(ctx context.Context, subjectID, clientID string, now time.Time) (*Forgotten, error) {
	if subjectID == "" && clientID == "" {
		return nil, errors.New("store: forget decisions: name a subject, a client, or both")
	}
	var where []string
	var args []any
	if subjectID != "" {
		where, args = append(where, "subject_id = ?"), append(args, subjectID)
	}
	if clientID != "" {
		where, args = append(where, "client_id = ?"), append(args, clientID)
	}
	cond := strings.Join(where, " AND ")
	out := &Forgotten{}
	err := s.write(ctx, func(tx *sql.Tx) error {
		out.Consents, out.Grants = nil, nil
		rows, err := tx.Query(`DELETE FROM consents WHERE `+cond+` RETURNING subject_id, client_id`, args...)
		if err != nil {
			return wrap("forget consents", err)
		}
		for rows.Next() {
			c := &Consent{}
			if err := rows.Scan(&c.SubjectID, &c.ClientID); err != nil {
				rows.Close()
				return wrap("forget consents", err)
			}
			out.Consents = append(out.Consents, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrap("forget consents", err)
		}
		rows, err = tx.Query(`UPDATE grants SET revoked_at = ? WHERE revoked_at IS NULL AND `+cond+` RETURNING id`,
			append([]any{now.Unix()}, args...)...)
		if err != nil {
			return wrap("forget grants", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return wrap("forget grants", err)
			}
			out.Grants = append(out.Grants, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrap("forget grants", err)
		}
		cs := make([]Change, len(out.Consents))
		for i, c := range out.Consents {
			cs[i] = Change{Kind: ChangedConsent, Key: ConsentKey(c.SubjectID, c.ClientID)}
		}
		return s.announceRevoked(tx, out.Grants, now, cs...)
	})
	if err != nil {
		s.consents.clear() // the outcome is unknown to the cache
		return nil, err
	}
	for _, c := range out.Consents {
		s.consents.written(c.SubjectID, c.ClientID, nil)
	}
	for _, g := range out.Grants {
		s.cache.revokedGrant(g, time.Unix(now.Unix(), 0))
	}
	return out, nil
}
