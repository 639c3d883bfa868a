package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// PushedRequest is a pushed authorization request (RFC 9126 §2): the
// parameters a client pushed, kept until its request_uri is used once at
// the authorization endpoint or expires. It is kept in the database on
// either store, so that any instance sharing it can take it.
type PushedRequest struct {
	// IDHash is the SHA-256 of the request_uri's random part.
	IDHash   []byte
	ClientID string
	// Params are the pushed parameters, client_id included; the server
	// checks them again when it takes the request.
	Params    map[string][]string
	ExpiresAt time.Time
}

// AddPushed stores a pushed request, charged to c (quota_counts, as
// AddPending); a used-up quota is a *QuotaError.
func (s *FlowStore) AddPushed(ctx context.Context, p *PushedRequest, c Charge, now time.Time) error {
	params, err := json.Marshal(p.Params)
	if err != nil {
		return fmt.Errorf("store: pushed request: %w", err)
	}
	end, ns := endOf(p.ExpiresAt, c.Period), now.UnixNano()
	// Losing a pushed request only restarts a sign-in: flow state.
	return s.writeFlowState(ctx, func(tx *sql.Tx) error {
		keys, err := charge(tx, s.pg != nil, c, p.IDHash[0], end, ns)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO pushed_requests(id_hash, client_id, params, quotas, ends_at, expires_at) VALUES(?, ?, ?, ?, ?, ?)`,
			p.IDHash, p.ClientID, string(params), quotaKeys(keys), end, p.ExpiresAt.UnixNano())
		return wrap("add pushed request", err)
	})
}

// TakePushed removes and returns the unexpired pushed request whose id
// hashes to idHash, pushed by clientID: a request_uri is used once (RFC
// 9126 §4), even when two instances are asked at once, since one DELETE
// ... RETURNING gets the row. Unknown, expired, used, or pushed by another
// client is ErrNotFound, and a request pushed by another client is left
// in place.
func (s *FlowStore) TakePushed(ctx context.Context, idHash []byte, clientID string, now time.Time) (*PushedRequest, error) {
	p := &PushedRequest{IDHash: idHash, ClientID: clientID}
	var params, quotas string
	var end, exp int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRow(`DELETE FROM pushed_requests WHERE id_hash = ? AND client_id = ? AND expires_at > ?
			RETURNING params, quotas, ends_at, expires_at`, idHash, clientID, now.UnixNano()).Scan(&params, &quotas, &end, &exp)
		if err != nil {
			return wrap("take pushed request", err)
		}
		return releaseRow(tx, quotas, end)
	})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(params), &p.Params); err != nil {
		return nil, fmt.Errorf("store: pushed request parameters: %w", err)
	}
	p.ExpiresAt = time.Unix(0, exp)
	return p, nil
}
