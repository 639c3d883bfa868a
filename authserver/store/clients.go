package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The OAuth clients of projects (ClientStore): registered by the seed, the
// dashboard and `miniapp-host dev`, read by the OAuth server on every
// request. A removed client keeps its row (its grants reference it) and its
// id, which is never reused.

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

// Client returns a client by id, or ErrNotFound.
func (s *ClientStore) Client(ctx context.Context, id string) (*Client, error) {
	rows, err := s.stmts.client.QueryContext(ctx, id)
	if err != nil {
		return nil, wrap("client", err)
	}
	cs, err := scanClients(rows)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, ErrNotFound
	}
	return cs[0], nil
}

// Clients returns every client, ordered by id.
func (s *ClientStore) Clients(ctx context.Context) ([]*Client, error) {
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

// PutClient inserts or replaces a client.
func (s *ClientStore) PutClient(ctx context.Context, c *Client) error {
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

// AddClient inserts a new client; an existing id, even of a removed
// client, is ErrExists, so that a removed credential's id never comes back.
func (s *ClientStore) AddClient(ctx context.Context, c *Client) error {
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
func (s *ClientStore) ProjectClients(ctx context.Context, projectID string) ([]*Client, error) {
	rows, err := s.r.QueryContext(ctx, clientSelect+` WHERE project_id = ? AND removed_at IS NULL ORDER BY rowid`, projectID)
	if err != nil {
		return nil, wrap("project clients", err)
	}
	return scanClients(rows)
}

// SetClientSecret replaces a confidential client's secret hash.
func (s *ClientStore) SetClientSecret(ctx context.Context, id string, hash []byte) error {
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
func (s *ClientStore) SetClientAddresses(ctx context.Context, id string, redirectURIs, allowedOrigins []string) error {
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

// SetResourceServer gives every confidential client of a project the
// Resource Server role for resource, so that it may read the grants of
// tokens issued for that resource (GET {base_url}/authorization).
func (s *ClientStore) SetResourceServer(ctx context.Context, projectID, resource string) error {
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
func (s *ClientStore) RemoveClient(ctx context.Context, id string, now time.Time) error {
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
