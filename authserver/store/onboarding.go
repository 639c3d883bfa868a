package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Onboarding records (docs/service.md §2.7, §5.8): project keys, the operator
// credential, credentials added by projects, and the submissions the
// operator reviews. Keys are random 256-bit values, kept as SHA-256 hashes
// like client secrets.

// ErrExists is returned when a record to create already exists.
var ErrExists = errors.New("store: already exists")

// ErrDecided is returned when a submission under review was already
// approved or rejected.
var ErrDecided = errors.New("store: submission already decided")

// CreateProject inserts a new project with the hash of its key; a project
// with the same id is ErrExists.
func (s *Store) CreateProject(ctx context.Context, p Project, keyHash []byte) error {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO projects(id, name, operator_company, key_hash) VALUES(?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
			p.ID, p.Name, p.OperatorCompany, keyHash)
		if err != nil {
			return wrap("create project", err)
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return wrap("create project", err)
		}
		return s.announce(tx, Change{Kind: ChangedWorld})
	})
	s.forgetWorld()
	if err == nil && n == 0 {
		return fmt.Errorf("store: create project %q: %w", p.ID, ErrExists)
	}
	return err
}

// ProjectKeyHash returns the hash of a project's key; nil for a seeded
// project, which has no key (it is managed by the operator).
func (s *Store) ProjectKeyHash(ctx context.Context, id string) ([]byte, error) {
	var h []byte
	err := s.r.QueryRowContext(ctx, `SELECT key_hash FROM projects WHERE id = ?`, id).Scan(&h)
	return h, wrap("project key", err)
}

// Setting returns a stored setting, or ErrNotFound.
func (s *Store) Setting(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	err := s.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&v)
	return v, wrap("setting "+name, err)
}

// PutSetting stores a setting.
func (s *Store) PutSetting(ctx context.Context, name string, value []byte) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO settings(name, value) VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value`, name, value)
		return wrap("put setting", err)
	})
}

// AddClient inserts a new client; an existing id, even of a removed
// client, is ErrExists, so that a removed credential's id never comes back.
func (s *Store) AddClient(ctx context.Context, c *Client) error {
	ru, _ := json.Marshal(nonNil(c.RedirectURIs))
	ao, _ := json.Marshal(nonNil(c.AllowedOrigins))
	ro, _ := json.Marshal(nonNil(c.Roles))
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO clients(id, project_id, name, type, secret_hash, redirect_uris, allowed_origins, roles, resource, id_token_alg)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
			c.ID, c.ProjectID, c.Name, string(c.Type), c.SecretHash, string(ru), string(ao), string(ro), c.Resource, c.idTokenAlg())
		if err != nil {
			return wrap("add client", err)
		}
		n, err = res.RowsAffected()
		return wrap("add client", err)
	})
	if err == nil && n == 0 {
		return fmt.Errorf("store: add client %q: %w", c.ID, ErrExists)
	}
	return err
}

// ProjectClients returns a project's clients in the order they were
// added (rowid), so that listings read as the project built them.
func (s *Store) ProjectClients(ctx context.Context, projectID string) ([]*Client, error) {
	rows, err := s.r.QueryContext(ctx, clientSelect+` WHERE project_id = ? AND removed_at IS NULL ORDER BY rowid`, projectID)
	if err != nil {
		return nil, wrap("project clients", err)
	}
	return scanClients(rows)
}

// SetResourceServer gives every confidential client of a project the
// Resource Server role for resource, so that it may read the grants of
// tokens issued for that resource (GET {base_url}/authorization).
func (s *Store) SetResourceServer(ctx context.Context, projectID, resource string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.Query(`SELECT id, roles FROM clients WHERE project_id = ? AND type = 'confidential' AND removed_at IS NULL`, projectID)
		if err != nil {
			return wrap("set resource server", err)
		}
		roles := map[string]string{}
		for rows.Next() {
			var id, ro string
			if err := rows.Scan(&id, &ro); err != nil {
				rows.Close()
				return wrap("set resource server", err)
			}
			roles[id] = ro
		}
		if err := rows.Err(); err != nil {
			return wrap("set resource server", err)
		}
		for id, ro := range roles {
			var rs []string
			if err := json.Unmarshal([]byte(ro), &rs); err != nil {
				return fmt.Errorf("store: client %q roles: %w", id, err)
			}
			if !slices.Contains(rs, RoleResourceServer) {
				rs = append(rs, RoleResourceServer)
			}
			b, _ := json.Marshal(rs)
			if _, err := tx.Exec(`UPDATE clients SET resource = ?, roles = ? WHERE id = ?`, resource, string(b), id); err != nil {
				return wrap("set resource server", err)
			}
		}
		return s.announce(tx, Change{Kind: ChangedClient})
	})
}

// RemoveClient removes a client and revokes every grant issued to it, so
// that no token of the removed credential keeps working. The row stays,
// marked removed, because its grants reference it.
func (s *Store) RemoveClient(ctx context.Context, id string, now time.Time) error {
	var n int64
	var revoked []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE clients SET removed_at = ?, secret_hash = NULL WHERE id = ? AND removed_at IS NULL`, now.Unix(), id)
		if err != nil {
			return wrap("remove client", err)
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return wrap("remove client", err)
		}
		rows, err := tx.Query(`UPDATE grants SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL RETURNING id`, now.Unix(), id)
		if err != nil {
			return wrap("remove client", err)
		}
		defer rows.Close()
		revoked = revoked[:0]
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				return wrap("remove client", err)
			}
			revoked = append(revoked, g)
		}
		if err := rows.Err(); err != nil {
			return wrap("remove client", err)
		}
		if _, err = tx.Exec(`DELETE FROM consents WHERE client_id = ?`, id); err != nil {
			return wrap("remove client", err)
		}
		return s.announceRevoked(tx, revoked, now, Change{Kind: ChangedClient, Key: id}, Change{Kind: ChangedConsent})
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("store: remove client %q: %w", id, ErrNotFound)
	}
	s.consents.clear() // the client's consents were deleted
	for _, g := range revoked {
		s.cache.revokedGrant(g, time.Unix(now.Unix(), 0))
	}
	return nil
}

// Submission kinds: what a project asks the operator to review.
const (
	KindPolicy         = "policy"
	KindResourceServer = "resource_server"
	KindMiniapp        = "miniapp"
)

// Submission statuses.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusRejected = "rejected"
)

// Submission is something a project submitted for the operator's review: a
// scope policy, a Resource Server declaration or a published Miniapp's
// manifest (docs/service.md §5.8).
type Submission struct {
	ID        string          `json:"id"`
	ProjectID string          `json:"project_id"`
	Kind      string          `json:"kind"`
	Body      json.RawMessage `json:"body"`
	Status    string          `json:"status"`
	Reason    string          `json:"reason,omitempty"`
	// AssignedID is the Resource Server id assigned on approval.
	AssignedID string    `json:"assigned_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	DecidedAt  time.Time `json:"decided_at,omitzero"`
}

// AddSubmission stores a new pending submission.
func (s *Store) AddSubmission(ctx context.Context, sub *Submission) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO submissions(id, project_id, kind, body, created_at) VALUES(?, ?, ?, ?, ?)`,
			sub.ID, sub.ProjectID, sub.Kind, string(sub.Body), sub.CreatedAt.Unix())
		return wrap("add submission", err)
	})
}

// SubmissionFilter selects submissions; empty fields match everything.
type SubmissionFilter struct {
	ID, ProjectID, Kind, Status string
}

const submissionSelect = `SELECT id, project_id, kind, body, status, reason, assigned_id, created_at, COALESCE(decided_at, 0) FROM submissions`

// Submissions returns the submissions matching f, oldest first (in the
// order they were submitted within one second).
func (s *Store) Submissions(ctx context.Context, f SubmissionFilter) ([]*Submission, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"id", f.ID}, {"project_id", f.ProjectID}, {"kind", f.Kind}, {"status", f.Status}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	q := submissionSelect
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.r.QueryContext(ctx, q+" ORDER BY created_at, rowid", args...)
	if err != nil {
		return nil, wrap("submissions", err)
	}
	defer rows.Close()
	out := []*Submission{}
	for rows.Next() {
		var sub Submission
		var body string
		var created, decided int64
		if err := rows.Scan(&sub.ID, &sub.ProjectID, &sub.Kind, &body, &sub.Status, &sub.Reason, &sub.AssignedID, &created, &decided); err != nil {
			return nil, wrap("submissions", err)
		}
		sub.Body, sub.CreatedAt = json.RawMessage(body), time.Unix(created, 0).UTC()
		if decided != 0 {
			sub.DecidedAt = time.Unix(decided, 0).UTC()
		}
		out = append(out, &sub)
	}
	return out, wrap("submissions", rows.Err())
}

// Submission returns one submission, or ErrNotFound.
func (s *Store) Submission(ctx context.Context, id string) (*Submission, error) {
	subs, err := s.Submissions(ctx, SubmissionFilter{ID: id})
	if err != nil {
		return nil, err
	}
	if len(subs) == 0 {
		return nil, fmt.Errorf("store: submission %q: %w", id, ErrNotFound)
	}
	return subs[0], nil
}

// DecideSubmission approves or rejects a pending submission, once: a
// submission already decided is ErrDecided, an unknown one ErrNotFound.
func (s *Store) DecideSubmission(ctx context.Context, id, status, reason, assignedID string, now time.Time) error {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE submissions SET status = ?, reason = ?, assigned_id = ?, decided_at = ?
			WHERE id = ? AND status = 'pending'`, status, reason, assignedID, now.Unix(), id)
		if err != nil {
			return wrap("decide submission", err)
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return wrap("decide submission", err)
		}
		return s.announce(tx, Change{Kind: ChangedReview, Key: id})
	})
	if n > 0 {
		// After the commit: a reader that started before it labelled its
		// result with the old generation, which is now ignored.
		s.policies.gen.Add(1)
	}
	if err != nil || n > 0 {
		return err
	}
	if _, err := s.Submission(ctx, id); err != nil {
		return err
	}
	return fmt.Errorf("store: submission %q: %w", id, ErrDecided)
}

// Policy is a project's scope policy: the catalog scopes and
// authorization_details types it may request (docs/service.md §1, the project's
// approval). Type names are as in discovery; seeded policies may hold the
// endpoint placeholders ({base_url}, {signing_origin}...).
type Policy struct {
	Scopes []string `json:"scopes"`
	Types  []string `json:"types"`
}

// policyCache memoises ApprovedPolicy: every authorization asks for it
// (the project's approval check) and it changes only when the operator
// decides a submission. Each entry carries the generation it was read in;
// DecideSubmission moves the generation on, so an entry read before a
// decision is never used after it.
type policyCache struct {
	gen atomic.Uint64
	m   sync.Map // project id -> policyEntry
}

type policyEntry struct {
	gen uint64
	p   Policy
}

// ApprovedPolicy returns the union of a project's approved policies. The
// caller may keep but not change the slices.
func (s *Store) ApprovedPolicy(ctx context.Context, projectID string) (Policy, error) {
	gen := s.policies.gen.Load()
	if e, ok := s.policies.m.Load(projectID); ok && e.(policyEntry).gen == gen && s.cacheable() {
		return e.(policyEntry).p, nil
	}
	p, err := s.readApprovedPolicy(ctx, projectID)
	if err == nil {
		s.policies.m.Store(projectID, policyEntry{gen, p})
	}
	return p, err
}

func (s *Store) readApprovedPolicy(ctx context.Context, projectID string) (Policy, error) {
	subs, err := s.Submissions(ctx, SubmissionFilter{ProjectID: projectID, Kind: KindPolicy, Status: StatusApproved})
	if err != nil {
		return Policy{}, err
	}
	var out Policy
	for _, sub := range subs {
		var p Policy
		if err := json.Unmarshal(sub.Body, &p); err != nil {
			return Policy{}, fmt.Errorf("store: policy %s: %w", sub.ID, err)
		}
		out.Scopes = append(out.Scopes, p.Scopes...)
		out.Types = append(out.Types, p.Types...)
	}
	return out, nil
}
