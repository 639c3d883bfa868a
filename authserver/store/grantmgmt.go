package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// FAPI Grant Management for OAuth 2.0 (docs/authserver.md, "Grant
// management"). A client names a grant by its grant_id to merge new
// permissions into it or to replace it. The store keeps one row per
// approval, as before: a merge or a replace stores a new grant whose
// Lineage is the grant_id, and revokes the live grant of that grant_id in
// the same transaction (Grant.Supersedes). So the tokens issued before
// end as every revocation ends them, on every instance (a ChangedGrant
// notification), while the grant_id stays the same for the client.

// grantManagementMigration adds the grant_id a grant continues. The index
// holds only grants made by merge or replace.
const grantManagementMigration = `
ALTER TABLE grants ADD COLUMN lineage TEXT NOT NULL DEFAULT '';
CREATE INDEX grants_lineage ON grants(lineage) WHERE lineage <> '';
`

// ErrGrantSuperseded is returned when the grant that a merge or replace
// names was revoked, merged or replaced after it was read: nothing was
// stored.
var ErrGrantSuperseded = errors.New("store: the grant to merge or replace was revoked or changed meanwhile")

// GrantManagementID is the grant's grant_id (FAPI Grant Management §5):
// the id of the first grant of its lineage.
func (g *Grant) GrantManagementID() string {
	if g.Lineage != "" {
		return g.Lineage
	}
	return g.ID
}

// supersede revokes the live grant g merges or replaces, in the
// transaction that stores g, and announces it. It compares and swaps: the
// grant must still be live, the same subject's and client's, with the
// scopes and details it was read with (g.Supersedes). Otherwise (revoked,
// superseded by a concurrent merge, or narrowed by the subject meanwhile:
// NarrowGrant) it is ErrGrantSuperseded and nothing is stored, so that a
// merge never brings back an entry the subject revoked after the merge
// read the grant.
func (s *core) supersede(tx *sql.Tx, g *Grant) error {
	old := g.Supersedes
	details := old.Details
	if len(details) == 0 {
		details = json.RawMessage("[]")
	}
	res, err := tx.Exec(`UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL AND client_id = ? AND subject_id = ?
		AND scopes = ? AND details = ?`,
		g.CreatedAt.Unix(), old.ID, g.ClientID, g.SubjectID, strings.Join(old.Scopes, " "), string(details))
	if err != nil {
		return wrap("supersede grant", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return wrap("supersede grant", err)
	} else if n != 1 {
		return ErrGrantSuperseded
	}
	return s.announce(tx, Change{Kind: ChangedGrant, Key: old.ID, At: g.CreatedAt})
}

// LiveGrant returns the grant in force of a grant_id: the grant of that id
// or lineage that is not revoked; ErrNotFound when there is none (unknown,
// or revoked). It reads the database, never a cache: a merge or a
// revocation by another instance counts at once.
func (s *GrantStore) LiveGrant(ctx context.Context, grantID string) (*Grant, error) {
	g := &Grant{}
	err := s.r.QueryRowContext(ctx, `SELECT `+grantCols+` FROM grants g
		WHERE (g.id = ? OR (g.lineage = ? AND g.lineage <> '')) AND g.revoked_at IS NULL
		ORDER BY g.created_at DESC LIMIT 1`, grantID, grantID).Scan(grantDest(g)...)
	if err != nil {
		return nil, wrap("grant", err)
	}
	return g, finishGrant(g)
}

// RevokeGrantID revokes every live grant of a grant_id (FAPI Grant
// Management §6.2), and so every token issued from any of them; it
// reports whether one was live. A merge committed while it ran (its new
// grant unseen by the revocation) is revoked by a second pass.
func (s *GrantStore) RevokeGrantID(ctx context.Context, grantID string, now time.Time) (bool, error) {
	revoked := false
	for pass := 0; pass < 3; pass++ {
		var ids []string
		err := s.write(ctx, func(tx *sql.Tx) error {
			ids = ids[:0]
			rows, err := tx.Query(`UPDATE grants SET revoked_at = ? WHERE (id = ? OR (lineage = ? AND lineage <> '')) AND revoked_at IS NULL RETURNING id`,
				now.Unix(), grantID, grantID)
			if err != nil {
				return wrap("revoke grant", err)
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return wrap("revoke grant", err)
				}
				ids = append(ids, id)
			}
			if err := rows.Close(); err != nil {
				return wrap("revoke grant", err)
			}
			for _, id := range ids {
				if err := s.announce(tx, Change{Kind: ChangedGrant, Key: id, At: now}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return revoked, err
		}
		for _, id := range ids {
			s.cache.revokedGrant(id, time.Unix(now.Unix(), 0))
		}
		revoked = revoked || len(ids) > 0
		if _, err := s.LiveGrant(ctx, grantID); errors.Is(err, ErrNotFound) {
			return revoked, nil
		} else if err != nil {
			return revoked, err
		}
	}
	return revoked, fmt.Errorf("store: grant %s: still live after revoking it three times", grantID)
}
