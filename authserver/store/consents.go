package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Consent is what a subject approved for a client, remembered so that the
// subject is not asked again when nothing new is requested (docs/service.md §1: the
// subject's consent is one of the three checks).
type Consent struct {
	SubjectID string `json:"subject"`
	ClientID  string `json:"client_id"`
	// OrgID is the Company the consent was given for; empty without one.
	OrgID string `json:"org_id,omitempty"`
	// Permissions are the keys of the consented permissions (one per scope
	// and per requested authorization_details object).
	Permissions []string `json:"permissions"`
	// AccountID is the account bound at the consent, if any.
	AccountID string    `json:"account_id,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Consent returns the remembered consent of a subject for a client, or
// ErrNotFound. It is served from memory once read (consentCache), except
// on a shared database while other instances' changes may go unheard.
func (s *ConsentStore) Consent(ctx context.Context, subjectID, clientID string) (*Consent, error) {
	cacheable := s.cacheable()
	c, found, epoch := s.consents.get(subjectID, clientID)
	if found && cacheable {
		if c == nil {
			return nil, fmt.Errorf("store: consent: %w", ErrNotFound)
		}
		return c, nil
	}
	rows, err := s.stmts.consent.QueryContext(ctx, subjectID, clientID)
	if err != nil {
		return nil, wrap("consents", err)
	}
	cs, err := scanConsents(rows)
	if err != nil {
		return nil, err
	}
	if !cacheable {
		if len(cs) == 0 {
			return nil, fmt.Errorf("store: consent: %w", ErrNotFound)
		}
		return cs[0], nil
	}
	if len(cs) == 0 {
		s.consents.fill(epoch, subjectID, clientID, nil)
		return nil, fmt.Errorf("store: consent: %w", ErrNotFound)
	}
	s.consents.fill(epoch, subjectID, clientID, cs[0])
	// The caller gets its own copy, as from the cache.
	c, _, _ = s.consents.get(subjectID, clientID)
	if c == nil {
		c = cs[0]
	}
	return c, nil
}

// Consents returns every remembered consent of a subject, by client id.
func (s *ConsentStore) Consents(ctx context.Context, subjectID string) ([]*Consent, error) {
	rows, err := s.r.QueryContext(ctx, consentSelect+` WHERE subject_id = ? ORDER BY client_id`, subjectID)
	if err != nil {
		return nil, wrap("consents", err)
	}
	return scanConsents(rows)
}

const consentSelect = `SELECT subject_id, client_id, org_id, permissions, account_id, updated_at FROM consents`

// scanConsents reads and closes rows of consentSelect.
func scanConsents(rows *sql.Rows) ([]*Consent, error) {
	defer rows.Close()
	out := []*Consent{}
	for rows.Next() {
		var c Consent
		var perms string
		var at int64
		if err := rows.Scan(&c.SubjectID, &c.ClientID, &c.OrgID, &perms, &c.AccountID, &at); err != nil {
			return nil, wrap("consents", err)
		}
		if err := json.Unmarshal([]byte(perms), &c.Permissions); err != nil {
			return nil, wrap("consents", err)
		}
		c.UpdatedAt = time.Unix(at, 0).UTC()
		out = append(out, &c)
	}
	return out, wrap("consents", rows.Err())
}

// PutConsent remembers a consent, replacing the previous one of the same
// subject and client.
func (s *ConsentStore) PutConsent(ctx context.Context, c *Consent) error {
	perms, _ := json.Marshal(nonNil(c.Permissions))
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Stmt(s.stmts.putConsent).Exec(c.SubjectID, c.ClientID, c.OrgID, string(perms), c.AccountID, c.UpdatedAt.Unix()); err != nil {
			return wrap("put consent", err)
		}
		return s.announce(tx, Change{Kind: ChangedConsent, Key: ConsentKey(c.SubjectID, c.ClientID)})
	})
	if err != nil {
		s.consents.clear() // the write's outcome is unknown to the cache: read it anew
		return err
	}
	s.consents.written(c.SubjectID, c.ClientID, c)
	return nil
}

// RevokeConsent forgets a subject's consent for a client and revokes the
// grants issued on it, so that the client's tokens stop working and the
// next request asks again. A consent that does not exist is ErrNotFound.
func (s *ConsentStore) RevokeConsent(ctx context.Context, subjectID, clientID string, now time.Time) error {
	var n int64
	var revoked []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM consents WHERE subject_id = ? AND client_id = ?`, subjectID, clientID)
		if err != nil {
			return wrap("revoke consent", err)
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return wrap("revoke consent", err)
		}
		rows, err := tx.Query(`UPDATE grants SET revoked_at = ? WHERE client_id = ? AND subject_id = ? AND revoked_at IS NULL RETURNING id`,
			now.Unix(), clientID, subjectID)
		if err != nil {
			return wrap("revoke consent", err)
		}
		defer rows.Close()
		revoked = revoked[:0]
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				return wrap("revoke consent", err)
			}
			revoked = append(revoked, g)
		}
		if err := rows.Err(); err != nil {
			return wrap("revoke consent", err)
		}
		return s.announceRevoked(tx, revoked, now, Change{Kind: ChangedConsent, Key: ConsentKey(subjectID, clientID)})
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("store: consent of %q for %q: %w", subjectID, clientID, ErrNotFound)
	}
	s.consents.written(subjectID, clientID, nil)
	for _, g := range revoked {
		s.cache.revokedGrant(g, time.Unix(now.Unix(), 0))
	}
	return nil
}
