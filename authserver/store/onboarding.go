package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Onboarding records (docs/service.md §2.7, §5.8), the ReviewStore: the submissions the
// operator reviews, the policies approved, and the settings, which hold
// the operator credential. Project keys are the WorldStore's
// (CreateProject) and the credentials projects add the ClientStore's
// (AddClient). Keys are random 256-bit values, kept as SHA-256 hashes like
// client secrets.

// ErrExists is returned when a record to create already exists.
var ErrExists = errors.New("store: already exists")

// ErrDecided is returned when a submission under review was already
// approved or rejected.
var ErrDecided = errors.New("store: submission already decided")

// Setting returns a stored setting, or ErrNotFound.
func (s *ReviewStore) Setting(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	err := s.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&v)
	return v, wrap("setting "+name, err)
}

// PutSetting stores a setting.
func (s *ReviewStore) PutSetting(ctx context.Context, name string, value []byte) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO settings(name, value) VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value`, name, value)
		return wrap("put setting", err)
	})
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
func (s *ReviewStore) AddSubmission(ctx context.Context, sub *Submission) error {
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
func (s *ReviewStore) Submissions(ctx context.Context, f SubmissionFilter) ([]*Submission, error) {
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
func (s *ReviewStore) Submission(ctx context.Context, id string) (*Submission, error) {
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
func (s *ReviewStore) DecideSubmission(ctx context.Context, id, status, reason, assignedID string, now time.Time) error {
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
func (s *ReviewStore) ApprovedPolicy(ctx context.Context, projectID string) (Policy, error) {
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

func (s *ReviewStore) readApprovedPolicy(ctx context.Context, projectID string) (Policy, error) {
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
