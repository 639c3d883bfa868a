package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// The subject's view of its grants (docs/authserver.md, "Connected
// Miniapps"): the grants a subject holds, when each was last used, and the
// two revocations a subject makes itself: one entry of a grant (a scope or
// one authorization_details object) or the whole grant. Each takes its
// remembered consent with it (docs/service.md §1, the subject's consent), so
// the next sign-in asks again for what was revoked.

// subjectGrantsMigration lets a subject's grants be listed without a scan,
// and keeps when each grant was last used (used_at, Unix seconds, written
// by FlushGrantUses).
const subjectGrantsMigration = `
ALTER TABLE grants ADD COLUMN used_at INTEGER;
CREATE INDEX grants_subject ON grants(subject_id, revoked_at);
`

// MaxSubjectGrants bounds the grants SubjectGrants returns.
const MaxSubjectGrants = 200

// maxPendingUses bounds the grants whose use waits for a flush; past it a
// use is not recorded until the next flush (its grant shows an older last
// use).
const maxPendingUses = 100_000

// grantUses records, in memory, when each grant was last used (a token
// issued from it, or looked up: the grant endpoint, introspection, the
// token endpoint's refresh), until FlushGrantUses writes them. Recording a
// use is a map write under a mutex, never a database write: the grant
// endpoint serves tens of thousands of lookups a second.
type grantUses struct {
	mu sync.Mutex
	at map[string]int64 // grant id -> Unix second of its last use
}

// touch records a use of a grant.
func (u *grantUses) touch(id string, now time.Time) {
	sec := now.Unix()
	u.mu.Lock()
	if u.at == nil {
		u.at = map[string]int64{}
	}
	if prev, ok := u.at[id]; ok {
		if sec > prev {
			u.at[id] = sec
		}
	} else if len(u.at) < maxPendingUses {
		u.at[id] = sec
	}
	u.mu.Unlock()
}

// take returns the recorded uses and starts a new record.
func (u *grantUses) take() map[string]int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	m := u.at
	u.at = nil
	return m
}

// pending returns the recorded use of a grant, 0 for none.
func (u *grantUses) pending(id string) int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.at[id]
}

// FlushGrantUses writes the uses of grants recorded since the last flush
// (a later use never goes back to an earlier one). SubjectGrants flushes
// first, and so does Purge, every 10 minutes: on a shared database the
// uses another instance recorded show once it flushed.
func (s *GrantStore) FlushGrantUses(ctx context.Context) error {
	return s.core.flushGrantUses(ctx)
}

func (s *core) flushGrantUses(ctx context.Context) error {
	uses := s.uses.take()
	if len(uses) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for id, at := range uses {
			if _, err := tx.Exec(`UPDATE grants SET used_at = ? WHERE id = ? AND (used_at IS NULL OR used_at < ?)`, at, id, at); err != nil {
				return wrap("record grant use", err)
			}
		}
		return nil
	})
	if err != nil {
		for id, at := range uses { // kept for the next flush
			s.uses.touch(id, time.Unix(at, 0))
		}
	}
	return err
}

// SubjectGrants returns a subject's grants that are not revoked, newest
// first, at most MaxSubjectGrants, each with UsedAt: the last time a token
// of it was issued (code redemption, refresh) or looked up (the grant
// endpoint, introspection), to the second, or zero when none was since
// this column exists.
func (s *GrantStore) SubjectGrants(ctx context.Context, subjectID string) ([]*Grant, error) {
	if err := s.flushGrantUses(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+grantCols+`, COALESCE(g.used_at, 0) FROM grants g
		WHERE g.subject_id = ? AND g.revoked_at IS NULL ORDER BY g.created_at DESC, g.id DESC LIMIT ?`, subjectID, MaxSubjectGrants)
	if err != nil {
		return nil, wrap("subject grants", err)
	}
	defer rows.Close()
	out := []*Grant{}
	for rows.Next() {
		g := &Grant{}
		var used int64
		if err := rows.Scan(append(grantDest(g), &used)...); err != nil {
			return nil, wrap("subject grants", err)
		}
		if err := finishGrant(g); err != nil {
			return nil, err
		}
		used = max(used, s.uses.pending(g.ID))
		if used != 0 {
			g.UsedAt = time.Unix(used, 0)
		}
		out = append(out, g)
	}
	return out, wrap("subject grants", rows.Err())
}

// Remember is the remembered consent a revocation by the subject sets
// (NarrowGrant, RevokeSubjectGrant), and what it was computed from.
type Remember struct {
	// Consent replaces the subject's remembered consent for the grant's
	// client; one without permissions is forgotten; nil leaves it as it
	// is (HeldBy keep every revoked entry), once HeldBy are checked.
	Consent *Consent
	// HeldBy are the subject's other active grants of the client, as the
	// caller read them, for whose entries Consent keeps what the revoked
	// entries would take away. Each must still be active with the scopes
	// and details read: a concurrent revocation of one of them would
	// leave an entry remembered that no grant holds any more. They are
	// locked in the transaction (on PostgreSQL), with the grant revoked,
	// in the order of their ids, so that two revocations of a subject's
	// grants of one client wait for each other instead of deadlocking.
	HeldBy []*Grant
}

// ErrGrantsChanged is a revocation's refusal when another grant that its
// remembered consent relies on (Remember.HeldBy) was revoked or changed
// meanwhile: nothing changed, and the caller reads the grants again.
var ErrGrantsChanged = errors.New("store: another grant of the client was revoked or changed meanwhile")

// NarrowGrant replaces the scopes and authorization_details of a subject's
// grant by fewer (the subject revoked an entry), and sets the subject's
// remembered consent for the grant's client as remember says; a nil
// remember leaves it as it is. It is one transaction. The grant must
// still be old: active, the subject's, with old's scopes and details;
// otherwise nothing changes and the error is
// ErrNotFound (the grant was revoked or changed meanwhile). Once it
// returns, every token of the grant carries only the rest at the grant
// endpoint and introspection, on this instance and, once the notification
// arrived, on every other.
func (s *GrantStore) NarrowGrant(ctx context.Context, old *Grant, scopes []string, details json.RawMessage, remember *Remember) error {
	if len(details) == 0 {
		details = json.RawMessage("[]")
	}
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := s.lockHeldBy(tx, old.ID, remember); err != nil {
			return err
		}
		res, err := tx.Exec(`UPDATE grants SET scopes = ?, details = ? WHERE id = ? AND subject_id = ? AND revoked_at IS NULL AND scopes = ? AND details = ?`,
			strings.Join(scopes, " "), string(details), old.ID, old.SubjectID, strings.Join(old.Scopes, " "), string(old.Details))
		if err != nil {
			return wrap("narrow grant", err)
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return wrap("narrow grant", err)
		}
		if err := s.announce(tx, Change{Kind: ChangedGrantEntries, Key: old.ID}); err != nil {
			return err
		}
		return s.rememberTx(tx, old.SubjectID, old.ClientID, remember)
	})
	if err != nil {
		s.cache.forgetGrant(old.ID)
		if remember.sets() {
			s.consents.clear() // the write's outcome is unknown to the cache
		}
		return err
	}
	if n == 0 {
		return fmt.Errorf("store: grant %q of %q is revoked or changed: %w", old.ID, old.SubjectID, ErrNotFound)
	}
	s.cache.forgetGrant(old.ID)
	s.remembered(old.SubjectID, old.ClientID, remember)
	return nil
}

// RevokeSubjectGrant revokes a subject's active grant, and with it every
// token issued from it, and sets the subject's remembered consent for the
// grant's client as remember says (nil: leaves it as it is), in one
// transaction. A grant that is not the subject's, or not active, is
// ErrNotFound and nothing changes.
func (s *GrantStore) RevokeSubjectGrant(ctx context.Context, subjectID, grantID string, now time.Time, remember *Remember) error {
	var clientID string
	var found bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		found = false
		if err := s.lockHeldBy(tx, grantID, remember); err != nil {
			return err
		}
		err := tx.QueryRow(`UPDATE grants SET revoked_at = ? WHERE id = ? AND subject_id = ? AND revoked_at IS NULL RETURNING client_id`,
			now.Unix(), grantID, subjectID).Scan(&clientID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return wrap("revoke grant", err)
		}
		found = true
		if err := s.rememberTx(tx, subjectID, clientID, remember); err != nil {
			return err
		}
		return s.announceRevoked(tx, []string{grantID}, now)
	})
	if err != nil {
		if remember.sets() {
			s.consents.clear() // the write's outcome is unknown to the cache
		}
		return err
	}
	if !found {
		return fmt.Errorf("store: active grant %q of %q: %w", grantID, subjectID, ErrNotFound)
	}
	s.cache.revokedGrant(grantID, time.Unix(now.Unix(), 0))
	s.remembered(subjectID, clientID, remember)
	return nil
}

// lockHeldBy checks, in tx, that the grants remember relies on are as
// read (Remember.HeldBy), having locked them and target in the order of
// their ids on PostgreSQL; ErrGrantsChanged when one is not. SQLite's
// single writer runs one transaction at a time: nothing to lock.
func (s *GrantStore) lockHeldBy(tx *sql.Tx, target string, remember *Remember) error {
	if remember == nil || len(remember.HeldBy) == 0 {
		return nil
	}
	ids := []any{target}
	for _, g := range remember.HeldBy {
		ids = append(ids, g.ID)
	}
	q := `SELECT id, scopes, details, revoked_at IS NULL FROM grants WHERE id IN (?` + strings.Repeat(", ?", len(ids)-1) + `) ORDER BY id`
	if s.pg != nil {
		q += ` FOR UPDATE`
	}
	rows, err := tx.Query(q, ids...)
	if err != nil {
		return wrap("lock grants", err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var id, scopes, details string
		var active bool
		if err := rows.Scan(&id, &scopes, &details, &active); err != nil {
			return wrap("lock grants", err)
		}
		for _, g := range remember.HeldBy {
			if g.ID != id {
				continue
			}
			if !active || scopes != strings.Join(g.Scopes, " ") || details != string(g.Details) {
				return fmt.Errorf("store: grant %q: %w", id, ErrGrantsChanged)
			}
			seen++
		}
	}
	if err := rows.Err(); err != nil {
		return wrap("lock grants", err)
	}
	if seen != len(remember.HeldBy) {
		return ErrGrantsChanged
	}
	return nil
}

// rememberTx sets, in tx, the subject's remembered consent for a client to
// remember's: forgotten when it has no permissions, unchanged when there
// is none; the other instances are told. A consent of another subject or
// client is refused.
func (s *GrantStore) rememberTx(tx *sql.Tx, subjectID, clientID string, remember *Remember) error {
	if !remember.sets() {
		return nil
	}
	consent := remember.Consent
	if consent.SubjectID != subjectID || consent.ClientID != clientID {
		return fmt.Errorf("store: a consent of %q for client %q, not the grant's %q and %q", consent.SubjectID, consent.ClientID, subjectID, clientID)
	}
	var err error
	if len(consent.Permissions) == 0 {
		err = forgetConsent(tx, subjectID, clientID)
	} else {
		perms, _ := json.Marshal(nonNil(consent.Permissions))
		_, err = tx.Stmt(s.stmts.putConsent).Exec(consent.SubjectID, consent.ClientID, consent.OrgID, string(perms), consent.AccountID, consent.UpdatedAt.Unix())
	}
	if err != nil {
		return wrap("remembered consent", err)
	}
	return s.announce(tx, Change{Kind: ChangedConsent, Key: ConsentKey(subjectID, clientID)})
}

// sets reports whether r changes the remembered consent.
func (r *Remember) sets() bool { return r != nil && r.Consent != nil }

// remembered updates this instance's cache once rememberTx committed.
func (s *GrantStore) remembered(subjectID, clientID string, remember *Remember) {
	switch {
	case !remember.sets():
	case len(remember.Consent.Permissions) == 0:
		s.consents.written(subjectID, clientID, nil)
	default:
		s.consents.written(subjectID, clientID, remember.Consent)
	}
}

func forgetConsent(tx *sql.Tx, subjectID, clientID string) error {
	_, err := tx.Exec(`DELETE FROM consents WHERE subject_id = ? AND client_id = ?`, subjectID, clientID)
	return err
}
