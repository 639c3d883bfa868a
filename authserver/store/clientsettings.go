package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// fapiMigration adds what the FAPI 2.0 Security Profile needs
// (docs/fapi.md): each client's security settings (PAR, DPoP,
// private_key_jwt keys), pushed authorization requests (RFC 9126, par.go)
// and the single-use ids of client assertions and DPoP proofs (replay.go).
// Times are Unix nanoseconds.
const fapiMigration = `
CREATE TABLE client_settings (
	client_id TEXT PRIMARY KEY,
	settings  TEXT NOT NULL       -- JSON: ClientSettings
);
CREATE TABLE pushed_requests (
	id_hash    BLOB PRIMARY KEY,  -- SHA-256 of the request_uri's random part
	client_id  TEXT NOT NULL,
	params     TEXT NOT NULL,     -- JSON object: the pushed parameters
	quotas     TEXT NOT NULL,
	ends_at    INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX pushed_requests_ends ON pushed_requests(ends_at);
CREATE TABLE used_jtis (
	jti_hash   BLOB PRIMARY KEY,  -- SHA-256 of what the id is unique within and the id
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX used_jtis_expires ON used_jtis(expires_at);
`

// ClientSettings are a client's security settings beside its registration
// (docs/fapi.md). The zero value is a client with none of them: it may use
// PAR and DPoP, and is not required to.
type ClientSettings struct {
	// JWKS is the client's public keys (RFC 7517 JWK Set) for
	// private_key_jwt client authentication (RFC 7523, OpenID Connect
	// Core §9); a confidential client with keys has no secret.
	JWKS json.RawMessage `json:"jwks,omitempty"`
	// JWKSURI is, instead of JWKS, the https URL where the client
	// publishes its public keys (RFC 7591 §2, jwks_uri); the server
	// fetches and caches them (docs/fapi.md, "Keys at a jwks_uri").
	JWKSURI string `json:"jwks_uri,omitempty"`
	// RequirePAR: authorization requests must be pushed (RFC 9126 §6,
	// require_pushed_authorization_requests).
	RequirePAR bool `json:"require_pushed_authorization_requests,omitempty"`
	// DPoPBound: access tokens must be DPoP-bound (RFC 9449 §5.2,
	// dpop_bound_access_tokens): a token request without a proof is refused.
	DPoPBound bool `json:"dpop_bound_access_tokens,omitempty"`
	// DPoPNonce: every DPoP proof of the client must carry a nonce the
	// server gave (RFC 9449 §8, §9).
	DPoPNonce bool `json:"require_dpop_nonce,omitempty"`
	// GrantManagementActionRequired: every authorization request of the
	// client must carry grant_management_action (FAPI Grant Management
	// §5.2, grant_management_action_required).
	GrantManagementActionRequired bool `json:"grant_management_action_required,omitempty"`
	// Profile is "" or ProfileFAPI2.
	Profile string `json:"profile,omitempty"`
}

// Keyed reports whether the client authenticates with private_key_jwt:
// it registered keys, inline or at a jwks_uri, and has no secret.
func (cs ClientSettings) Keyed() bool { return len(cs.JWKS) > 0 || cs.JWKSURI != "" }

// ProfileFAPI2 is the FAPI 2.0 Security Profile: PAR, DPoP and
// private_key_jwt required, short-lived codes (docs/fapi.md).
const ProfileFAPI2 = "fapi2"

// ClientSettings returns a client's settings; a client that has none has
// the zero value.
func (s *ClientStore) ClientSettings(ctx context.Context, clientID string) (ClientSettings, error) {
	var raw string
	err := s.r.QueryRowContext(ctx, `SELECT settings FROM client_settings WHERE client_id = ?`, clientID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return ClientSettings{}, nil
	} else if err != nil {
		return ClientSettings{}, wrap("client settings", err)
	}
	var cs ClientSettings
	if err := json.Unmarshal([]byte(raw), &cs); err != nil {
		return ClientSettings{}, fmt.Errorf("store: client settings of %q: %w", clientID, err)
	}
	return cs, nil
}

// PutClientSettings replaces a client's settings. The change is announced
// like every change of a client, so that the caches of other instances on
// a shared database drop the old ones. Settings may be stored before the
// client itself, so that a client never exists without them.
func (s *ClientStore) PutClientSettings(ctx context.Context, clientID string, cs ClientSettings) error {
	b, err := json.Marshal(cs)
	if err != nil {
		return fmt.Errorf("store: client settings of %q: %w", clientID, err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO client_settings(client_id, settings) VALUES(?, ?)
			ON CONFLICT(client_id) DO UPDATE SET settings = excluded.settings`, clientID, string(b)); err != nil {
			return wrap("put client settings", err)
		}
		return s.announce(tx, Change{Kind: ChangedClient, Key: clientID})
	})
}
