package oauth

import (
	"context"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// fapiStorage is what the FAPI 2.0 parts of the server (docs/fapi.md)
// need of the store, and nothing else: each client's security settings,
// pushed authorization requests (RFC 9126) and single-use ids (client
// assertions, DPoP proofs). *store.Store satisfies it; New finds it in
// Config.Store.
type fapiStorage interface {
	// ClientSettings returns a client's settings (the zero value when it
	// has none).
	ClientSettings(ctx context.Context, clientID string) (store.ClientSettings, error)
	// AddPushed stores a pushed request under its quotas.
	AddPushed(ctx context.Context, p *store.PushedRequest, c store.Charge, now time.Time) error
	// TakePushed removes and returns a client's unexpired pushed request;
	// store.ErrNotFound when it is unknown, used, expired or another's.
	TakePushed(ctx context.Context, idHash []byte, clientID string, now time.Time) (*store.PushedRequest, error)
	// UseJTI records a single-use id until exp; store.ErrJTIUsed when it
	// was recorded before and has not expired.
	UseJTI(ctx context.Context, key []byte, exp, now time.Time) error
	// Setting and PutSetting keep the DPoP nonce key, which instances
	// sharing a database share.
	Setting(ctx context.Context, name string) ([]byte, error)
	PutSetting(ctx context.Context, name string, value []byte) error
	// Exclusive runs fn while no other instance on the database runs an
	// Exclusive fn (creating the nonce key once).
	Exclusive(ctx context.Context, fn func() error) error
	// Shared reports whether several instances share the database, and
	// Cacheable whether what was read may be kept in memory.
	Shared() bool
	Cacheable() bool
}

var _ fapiStorage = (*store.Store)(nil)
