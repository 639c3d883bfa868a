package store

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
)

// worldCache keeps the seed world (projects, subjects, companies,
// memberships, accounts) in memory: it is small, changes only through this
// Store, and the consent screen reads five of its tables per request.
type worldCache struct {
	mu   sync.Mutex // guards below
	gen  uint64     // incremented by every world write
	snap *world
}

// maxWorldBytes bounds the snapshot kept in memory. The seed world takes a
// few kilobytes; a world an operator grew past the bound is read from the
// database on every use instead of pinning that much memory.
const maxWorldBytes = 32 << 20

// size estimates the memory the snapshot holds: its records' JSON length
// twice (strings and structure), and a map slot per entry.
func (w *world) size() int {
	n := 0
	for _, v := range []any{w.projects, w.subjects, w.companies, w.accounts} {
		b, _ := json.Marshal(v)
		n += 2 * len(b)
	}
	return n + 64*(len(w.projects)+len(w.bySubject)+len(w.companies)+len(w.members))
}

// world is one consistent snapshot of the world tables.
type world struct {
	projects  map[string]Project
	subjects  []Subject // ordered by id
	bySubject map[string]int
	companies map[string]Company
	members   map[[2]string]bool
	accounts  []Account // ordered by id
}

// forgetWorld drops the snapshot after a world write has committed.
func (s *core) forgetWorld() {
	s.wc.mu.Lock()
	s.wc.gen++
	s.wc.snap = nil
	s.wc.mu.Unlock()
}

// loadWorld returns the snapshot, reading the tables when there is none.
func (s *WorldStore) loadWorld(ctx context.Context) (*world, error) {
	s.wc.mu.Lock()
	snap, gen := s.wc.snap, s.wc.gen
	s.wc.mu.Unlock()
	if snap != nil && s.cacheable() {
		return snap, nil
	}
	w, err := s.readWorld(ctx)
	if err != nil {
		return nil, err
	}
	fits := w.size() <= maxWorldBytes
	s.wc.mu.Lock()
	if s.wc.gen == gen && fits { // no write since the read began
		s.wc.snap = w
	}
	s.wc.mu.Unlock()
	return w, nil
}

func (s *WorldStore) readWorld(ctx context.Context) (*world, error) {
	w := &world{projects: map[string]Project{}, bySubject: map[string]int{}, companies: map[string]Company{}, members: map[[2]string]bool{}}
	tx, err := s.r.BeginTx(ctx, nil) // one read transaction: a consistent snapshot
	if err != nil {
		return nil, wrap("world", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, name, operator_company FROM projects`)
	if err != nil {
		return nil, wrap("projects", err)
	}
	for rows.Next() {
		var p Project
		if err := rows.Scan(&p.ID, &p.Name, &p.OperatorCompany); err != nil {
			rows.Close()
			return nil, wrap("projects", err)
		}
		w.projects[p.ID] = p
	}
	rows.Close()
	if rows, err = tx.QueryContext(ctx, `SELECT id, profile FROM subjects ORDER BY id`); err != nil {
		return nil, wrap("subjects", err)
	}
	for rows.Next() {
		var sub Subject
		var p string
		if err := rows.Scan(&sub.ID, &p); err != nil {
			rows.Close()
			return nil, wrap("subjects", err)
		}
		if err := json.Unmarshal([]byte(p), &sub.Profile); err != nil {
			rows.Close()
			return nil, wrap("subjects", err)
		}
		w.bySubject[sub.ID] = len(w.subjects)
		w.subjects = append(w.subjects, sub)
	}
	rows.Close()
	if rows, err = tx.QueryContext(ctx, `SELECT id, name, legal_id, country, addresses FROM companies`); err != nil {
		return nil, wrap("companies", err)
	}
	for rows.Next() {
		var c Company
		var a string
		if err := rows.Scan(&c.ID, &c.Name, &c.LegalID, &c.Country, &a); err != nil {
			rows.Close()
			return nil, wrap("companies", err)
		}
		if err := json.Unmarshal([]byte(a), &c.Addresses); err != nil {
			rows.Close()
			return nil, wrap("companies", err)
		}
		w.companies[c.ID] = c
	}
	rows.Close()
	if rows, err = tx.QueryContext(ctx, `SELECT subject_id, company_id FROM memberships`); err != nil {
		return nil, wrap("memberships", err)
	}
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			rows.Close()
			return nil, wrap("memberships", err)
		}
		w.members[k] = true
	}
	rows.Close()
	if rows, err = tx.QueryContext(ctx, `SELECT id, COALESCE(subject_id, ''), COALESCE(company_id, ''), name, number, currency FROM accounts ORDER BY id`); err != nil {
		return nil, wrap("accounts", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Account
		if err := rows.Scan(&a.ID, &a.SubjectID, &a.CompanyID, &a.Name, &a.Number, &a.Currency); err != nil {
			return nil, wrap("accounts", err)
		}
		w.accounts = append(w.accounts, a)
	}
	return w, wrap("accounts", rows.Err())
}

// Project returns a project by id, or ErrNotFound.
func (s *WorldStore) Project(ctx context.Context, id string) (Project, error) {
	w, err := s.loadWorld(ctx)
	if err != nil {
		return Project{}, err
	}
	p, ok := w.projects[id]
	if !ok && s.pg != nil {
		// Created by another instance a moment ago, before its
		// notification reached this one: the dashboard's next request
		// after creating a project may come here.
		err := s.r.QueryRowContext(ctx, `SELECT id, name, operator_company FROM projects WHERE id = ?`, id).Scan(&p.ID, &p.Name, &p.OperatorCompany)
		if err == nil {
			s.forgetWorld()
		}
		return p, wrap("project", err)
	}
	if !ok {
		return Project{}, ErrNotFound
	}
	return p, nil
}

// Subject returns a subject by id, or ErrNotFound.
func (s *WorldStore) Subject(ctx context.Context, id string) (Subject, error) {
	w, err := s.loadWorld(ctx)
	if err != nil {
		return Subject{}, err
	}
	i, ok := w.bySubject[id]
	if !ok {
		return Subject{}, ErrNotFound
	}
	return w.subjects[i], nil
}

// Subjects returns every subject, ordered by id.
func (s *WorldStore) Subjects(ctx context.Context) ([]Subject, error) {
	w, err := s.loadWorld(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Clone(w.subjects), nil
}

// Company returns a company by id, or ErrNotFound.
func (s *WorldStore) Company(ctx context.Context, id string) (Company, error) {
	w, err := s.loadWorld(ctx)
	if err != nil {
		return Company{}, err
	}
	c, ok := w.companies[id]
	if !ok {
		return Company{}, ErrNotFound
	}
	return c, nil
}

// MemberOf reports whether a subject may act for a company.
func (s *WorldStore) MemberOf(ctx context.Context, subjectID, companyID string) (bool, error) {
	w, err := s.loadWorld(ctx)
	if err != nil {
		return false, err
	}
	return w.members[[2]string{subjectID, companyID}], nil
}

// AccountsOf returns the accounts of a subject (companyID empty) or of a
// company, ordered by id.
func (s *WorldStore) AccountsOf(ctx context.Context, subjectID, companyID string) ([]Account, error) {
	w, err := s.loadWorld(ctx)
	if err != nil {
		return nil, err
	}
	var out []Account
	for _, a := range w.accounts {
		if (companyID == "" && a.SubjectID == subjectID && a.SubjectID != "") || (companyID != "" && a.CompanyID == companyID) {
			out = append(out, a)
		}
	}
	return out, nil
}
