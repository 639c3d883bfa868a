package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Project is a dashboard project (docs/service.md §2.7).
type Project struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// OperatorCompany is the Company that operates the project: the owner
	// of the accounts an automatic charge may pay (docs/service.md §2.4 beneficiaries).
	// Empty until set by the seed or the operator.
	OperatorCompany string `json:"operator_company,omitempty"`
}

// Address is a postal address (OpenID Connect Core §5.1.1 fields).
type Address struct {
	StreetAddress string `json:"street_address"`
	Locality      string `json:"locality"`
	Region        string `json:"region,omitempty"`
	PostalCode    string `json:"postal_code,omitempty"`
	Country       string `json:"country"`
}

// Profile holds a subject's standard claims (OpenID Connect Core §5.1).
type Profile struct {
	Name                string    `json:"name"`
	GivenName           string    `json:"given_name"`
	FamilyName          string    `json:"family_name"`
	Email               string    `json:"email"`
	EmailVerified       bool      `json:"email_verified"`
	PhoneNumber         string    `json:"phone_number"`
	PhoneNumberVerified bool      `json:"phone_number_verified"`
	Addresses           []Address `json:"addresses"`
}

// Subject is a person who signs in and consents.
type Subject struct {
	ID      string
	Profile Profile
}

// Company is an organization a subject may act for (docs/service.md §2.2 rule 3).
type Company struct {
	ID        string
	Name      string
	LegalID   string
	Country   string
	Addresses []Address
}

// Account is a bank account owned by a subject or by a company.
type Account struct {
	ID        string
	SubjectID string // set for a personal account
	CompanyID string // set for a company account
	Name      string
	Number    string
	Currency  string
}

// PutProject inserts or replaces a project.
func (s *WorldStore) PutProject(ctx context.Context, p Project) error {
	return s.exec(ctx, "put project", `INSERT INTO projects(id, name, operator_company) VALUES(?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET name = excluded.name, operator_company = excluded.operator_company`, p.ID, p.Name, p.OperatorCompany)
}

// CreateProject inserts a new project with the hash of its key; a project
// with the same id is ErrExists.
func (s *WorldStore) CreateProject(ctx context.Context, p Project, keyHash []byte) error {
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
func (s *WorldStore) ProjectKeyHash(ctx context.Context, id string) ([]byte, error) {
	var h []byte
	err := s.r.QueryRowContext(ctx, `SELECT key_hash FROM projects WHERE id = ?`, id).Scan(&h)
	return h, wrap("project key", err)
}

// PutSubject inserts or replaces a subject.
func (s *WorldStore) PutSubject(ctx context.Context, sub Subject) error {
	p, _ := json.Marshal(sub.Profile)
	return s.exec(ctx, "put subject", `INSERT INTO subjects(id, profile) VALUES(?, ?)
		ON CONFLICT(id) DO UPDATE SET profile = excluded.profile`, sub.ID, string(p))
}

// PutCompany inserts or replaces a company.
func (s *WorldStore) PutCompany(ctx context.Context, c Company) error {
	a, _ := json.Marshal(nonNilAddr(c.Addresses))
	return s.exec(ctx, "put company", `INSERT INTO companies(id, name, legal_id, country, addresses) VALUES(?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET name = excluded.name, legal_id = excluded.legal_id,
			country = excluded.country, addresses = excluded.addresses`,
		c.ID, c.Name, c.LegalID, c.Country, string(a))
}

// PutMembership records that a subject may act for a company.
func (s *WorldStore) PutMembership(ctx context.Context, subjectID, companyID, role string) error {
	return s.exec(ctx, "put membership", `INSERT INTO memberships(subject_id, company_id, role) VALUES(?, ?, ?)
		ON CONFLICT(subject_id, company_id) DO UPDATE SET role = excluded.role`, subjectID, companyID, role)
}

// PutAccount inserts or replaces a bank account.
func (s *WorldStore) PutAccount(ctx context.Context, a Account) error {
	return s.exec(ctx, "put account", `INSERT INTO accounts(id, subject_id, company_id, name, number, currency)
		VALUES(?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET subject_id = excluded.subject_id, company_id = excluded.company_id,
			name = excluded.name, number = excluded.number, currency = excluded.currency`,
		a.ID, a.SubjectID, a.CompanyID, a.Name, a.Number, a.Currency)
}

// exec runs one statement through the writer and forgets the cached world,
// which the next read loads again; so do the other processes on a shared
// database, told by c (ChangedWorld when c is empty).
func (s *core) exec(ctx context.Context, op, query string, args ...any) error {
	return s.execChange(ctx, Change{Kind: ChangedWorld}, op, query, args...)
}

func (s *core) execChange(ctx context.Context, c Change, op, query string, args ...any) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(query, args...); err != nil {
			return wrap(op, err)
		}
		return s.announce(tx, c)
	})
	s.forgetWorld()
	return err
}

// Empty reports whether the database holds no project yet, which is how
// the server knows to load the seed world.
func (s *WorldStore) Empty(ctx context.Context) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM projects`).Scan(&n)
	return n == 0, wrap("count projects", err)
}

// wrap prefixes an error with the operation, turning sql.ErrNoRows into
// ErrNotFound.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: %s: %w", op, ErrNotFound)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilAddr(s []Address) []Address {
	if s == nil {
		return []Address{}
	}
	return s
}
