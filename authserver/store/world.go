package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// ClientType distinguishes clients that can keep a secret (RFC 6749 §2.1).
type ClientType string

// The two client types; the strings are the dashboard API's `client_type`.
const (
	Public       ClientType = "public"
	Confidential ClientType = "confidential"
)

// Client roles beyond an ordinary OAuth client.
const (
	// RoleHost may call the native-consent API on behalf of subjects.
	RoleHost = "host"
	// RoleResourceServer may read grants of tokens whose audience is its
	// Resource (GET {base_url}/authorization, introspection).
	RoleResourceServer = "resource_server"
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

// Client is an OAuth client registered under a project.
type Client struct {
	ID             string
	ProjectID      string
	Name           string
	Type           ClientType
	SecretHash     []byte // nil for a public client
	RedirectURIs   []string
	AllowedOrigins []string
	Roles          []string
	// Resource is the resource address of a Resource Server client.
	Resource string
	// IDTokenAlg signs the client's ID tokens (OpenID Connect Dynamic
	// Client Registration 1.0 §2, id_token_signed_response_alg): one of
	// IDTokenAlgs; "" is RS256, the default OpenID Connect Core §15.1
	// requires every relying party to accept.
	IDTokenAlg string
}

// IDTokenAlgs are the ID token algorithms a client may register.
var IDTokenAlgs = []string{"RS256", "ES256", "EdDSA"}

// DefaultIDTokenAlg is the ID token algorithm of a client that chose none.
const DefaultIDTokenAlg = "RS256"

func (c *Client) idTokenAlg() string {
	if c.IDTokenAlg == "" {
		return DefaultIDTokenAlg
	}
	return c.IDTokenAlg
}

// HasRole reports whether the client has the role.
func (c *Client) HasRole(role string) bool {
	for _, r := range c.Roles {
		if r == role {
			return true
		}
	}
	return false
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
func (s *Store) PutProject(ctx context.Context, p Project) error {
	return s.exec(ctx, "put project", `INSERT INTO projects(id, name, operator_company) VALUES(?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET name = excluded.name, operator_company = excluded.operator_company`, p.ID, p.Name, p.OperatorCompany)
}

// PutClient inserts or replaces a client.
func (s *Store) PutClient(ctx context.Context, c *Client) error {
	ru, _ := json.Marshal(nonNil(c.RedirectURIs))
	ao, _ := json.Marshal(nonNil(c.AllowedOrigins))
	ro, _ := json.Marshal(nonNil(c.Roles))
	return s.execChange(ctx, Change{Kind: ChangedClient, Key: c.ID}, "put client", `INSERT INTO clients(id, project_id, name, type, secret_hash, redirect_uris, allowed_origins, roles, resource, id_token_alg)
		VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET project_id = excluded.project_id, name = excluded.name, type = excluded.type,
			secret_hash = excluded.secret_hash, redirect_uris = excluded.redirect_uris,
			allowed_origins = excluded.allowed_origins, roles = excluded.roles, resource = excluded.resource,
			id_token_alg = excluded.id_token_alg, removed_at = NULL`,
		c.ID, c.ProjectID, c.Name, string(c.Type), c.SecretHash, string(ru), string(ao), string(ro), c.Resource, c.idTokenAlg())
}

// SetClientSecret replaces a confidential client's secret hash.
func (s *Store) SetClientSecret(ctx context.Context, id string, hash []byte) error {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE clients SET secret_hash = ? WHERE id = ? AND type = 'confidential'`, hash, id)
		if err != nil {
			return wrap("set client secret", err)
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return wrap("set client secret", err)
		}
		return s.announce(tx, Change{Kind: ChangedClient, Key: id})
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("store: set client secret: confidential client %q: %w", id, ErrNotFound)
	}
	return nil
}

// SetClientAddresses replaces a client's redirect URIs and allowed
// origins (the dashboard's credential update). Like every change of a
// client it is announced, so that the client caches of other instances on a
// shared database drop the old ones.
func (s *Store) SetClientAddresses(ctx context.Context, id string, redirectURIs, allowedOrigins []string) error {
	ru, _ := json.Marshal(nonNil(redirectURIs))
	ao, _ := json.Marshal(nonNil(allowedOrigins))
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE clients SET redirect_uris = ?, allowed_origins = ? WHERE id = ? AND removed_at IS NULL`,
			string(ru), string(ao), id)
		if err != nil {
			return wrap("set client addresses", err)
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return wrap("set client addresses", err)
		}
		return s.announce(tx, Change{Kind: ChangedClient, Key: id})
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("store: set client addresses: client %q: %w", id, ErrNotFound)
	}
	return nil
}

// Clients returns every client, ordered by id.
func (s *Store) Clients(ctx context.Context) ([]*Client, error) {
	rows, err := s.r.QueryContext(ctx, clientSelect+` WHERE removed_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, wrap("clients", err)
	}
	return scanClients(rows)
}

const clientSelect = `SELECT id, project_id, name, type, secret_hash, redirect_uris, allowed_origins, roles, resource, id_token_alg FROM clients`

func scanClients(rows *sql.Rows) ([]*Client, error) {
	defer rows.Close()
	var out []*Client
	for rows.Next() {
		var c Client
		var typ, ru, ao, ro string
		if err := rows.Scan(&c.ID, &c.ProjectID, &c.Name, &typ, &c.SecretHash, &ru, &ao, &ro, &c.Resource, &c.IDTokenAlg); err != nil {
			return nil, wrap("client", err)
		}
		c.Type = ClientType(typ)
		if err := errors.Join(json.Unmarshal([]byte(ru), &c.RedirectURIs), json.Unmarshal([]byte(ao), &c.AllowedOrigins),
			json.Unmarshal([]byte(ro), &c.Roles)); err != nil {
			return nil, fmt.Errorf("store: client %q: %w", c.ID, err)
		}
		out = append(out, &c)
	}
	return out, wrap("clients", rows.Err())
}

// PutSubject inserts or replaces a subject.
func (s *Store) PutSubject(ctx context.Context, sub Subject) error {
	p, _ := json.Marshal(sub.Profile)
	return s.exec(ctx, "put subject", `INSERT INTO subjects(id, profile) VALUES(?, ?)
		ON CONFLICT(id) DO UPDATE SET profile = excluded.profile`, sub.ID, string(p))
}

// PutCompany inserts or replaces a company.
func (s *Store) PutCompany(ctx context.Context, c Company) error {
	a, _ := json.Marshal(nonNilAddr(c.Addresses))
	return s.exec(ctx, "put company", `INSERT INTO companies(id, name, legal_id, country, addresses) VALUES(?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET name = excluded.name, legal_id = excluded.legal_id,
			country = excluded.country, addresses = excluded.addresses`,
		c.ID, c.Name, c.LegalID, c.Country, string(a))
}

// PutMembership records that a subject may act for a company.
func (s *Store) PutMembership(ctx context.Context, subjectID, companyID, role string) error {
	return s.exec(ctx, "put membership", `INSERT INTO memberships(subject_id, company_id, role) VALUES(?, ?, ?)
		ON CONFLICT(subject_id, company_id) DO UPDATE SET role = excluded.role`, subjectID, companyID, role)
}

// PutAccount inserts or replaces a bank account.
func (s *Store) PutAccount(ctx context.Context, a Account) error {
	return s.exec(ctx, "put account", `INSERT INTO accounts(id, subject_id, company_id, name, number, currency)
		VALUES(?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET subject_id = excluded.subject_id, company_id = excluded.company_id,
			name = excluded.name, number = excluded.number, currency = excluded.currency`,
		a.ID, a.SubjectID, a.CompanyID, a.Name, a.Number, a.Currency)
}

// exec runs one statement through the writer and forgets the cached world,
// which the next read loads again; so do the other processes on a shared
// database, told by c (ChangedWorld when c is empty).
func (s *Store) exec(ctx context.Context, op, query string, args ...any) error {
	return s.execChange(ctx, Change{Kind: ChangedWorld}, op, query, args...)
}

func (s *Store) execChange(ctx context.Context, c Change, op, query string, args ...any) error {
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
func (s *Store) Empty(ctx context.Context) (bool, error) {
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
