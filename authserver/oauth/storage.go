package oauth

import (
	"context"
	"encoding/json"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Storage is everything the OAuth server keeps between requests, as the
// server needs it: read this file first to know what the protocol side
// asks of its database. Config.Store takes one value that has all of it;
// package store's *Store is that value (SQLite for one process, PostgreSQL
// for instances that share a database, docs/authserver.md "Storage").
//
// The interfaces are grouped by concern, each used by the code named on it.
// The handlers take narrower ones still, declared beside each handler
// (doc.go, "Handlers"): Server.wire hands each the part of the Storage it
// declares, and no handler holds the whole of it.
//
//   - Clients and World: the registered clients and the seed world
//     (projects, subjects, companies, memberships, accounts). Read on
//     every request; written by the dashboard and the seed, never here.
//   - Reviews: the operator's decisions on a project's scope policy,
//     which the consent screen's project check reads (checks.go).
//   - FlowState: browser sessions and pending authorization requests kept
//     in the database, used only when Instances.Shared (flowstate.go); one
//     process keeps them in memory instead.
//   - Grants: grants, authorization codes, access and refresh tokens: the
//     token, grant, introspection and revocation endpoints.
//   - Consents: the consents a subject asked to be remembered.
//   - Keys: the signing keys, created on first start (keys.go).
//   - Instances: whether other server instances share the database, how
//     this one hears of their changes, and how they take turns.
//
// Records, errors and keys are package store's types (store.Client,
// store.ErrNotFound, store.SecretKey...): the interfaces are the seam, not
// a second data model.
//
// What an implementation must guarantee, on one process and across
// instances on one database alike (the server's security rests on it):
//
//   - Single use. A code is spent once (RedeemCode, RedeemCodeFor) and a
//     refresh token is used once (UseRefreshToken), however many requests,
//     on however many instances, race for it: exactly one wins. The others,
//     and every later attempt, get store.ErrReplayed, and the grant behind
//     the credential is revoked in the same transaction (RFC 6749 §4.1.2,
//     RFC 9700 §4.14.2). A credential that never existed is
//     store.ErrNotFound.
//   - A decision is made once. DecidePending consumes a pending request
//     and stores the approval's grant, code and remembered consent in one
//     transaction; of concurrent decisions one is stored and the others get
//     store.ErrNotFound with nothing stored.
//   - One write, one transaction. Each method that stores several records
//     stores all or none: CreateGrantRemembering (grant, code, consent),
//     RedeemCodeFor (the spend and the tokens), ReplaceSession (the old
//     session's deletion and the new one), RevokeConsent (the consent and
//     the grants issued on it).
//   - Revocation holds. Once RevokeGrant, RevokeConsent,
//     RevokeSubjectGrant, NarrowGrant (for the entries it removed) or
//     RevokeAccessToken returns, no lookup through this instance returns
//     the credential as valid (token lookups read their grant's state), and
//     none through another instance once the change reached it: within one
//     notification, and never from a cache while changes may go unheard
//     (Instances.Cacheable).
//   - Quotas are exact. AddSession, ReplaceSession and AddPending admit a
//     row only within its store.Charge; a used-up quota is a
//     *store.QuotaError and nothing is stored, even when instances admit
//     rows at once. (The store spreads a quota's count over shards, each
//     admitting its part of the limit; a quota refuses only when every
//     shard is full.)
//   - Durable grants. Once a method that stores a grant, code or token
//     returns, the record survives a crash of the database. Flow state
//     (sessions, pending requests, quota counts) may lose its last writes
//     in a crash, going back to what it was a moment before: a sign-in
//     starts again. Spending a code or a refresh token, and decisions,
//     are durable like grants.
//   - Not found is store.ErrNotFound (possibly wrapped), never a nil record.
//
// A write whose context ends after it was queued is still awaited: the
// caller learns whether a code was spent.
type Storage interface {
	Clients
	World
	Reviews
	FlowState
	Grants
	Consents
	Keys
	Settings
	PushedRequests
	UsedIDs
	Instances
}

// Clients are the registered OAuth clients.
type Clients interface {
	// Client returns a client that was not removed, or store.ErrNotFound.
	// The server caches clients (clientCache) while Instances.Cacheable,
	// and drops them on Server.InvalidateClient or a store.ChangedClient.
	Client(ctx context.Context, id string) (*store.Client, error)
	// ClientSettings returns a client's security settings (PAR, DPoP,
	// the FAPI 2.0 profile, its public keys: docs/fapi.md); the zero value
	// when it has none.
	ClientSettings(ctx context.Context, clientID string) (store.ClientSettings, error)
}

// World is the seed world: projects, subjects, companies, memberships and
// accounts, which the sign-in and consent pages and the resource checks
// read.
type World interface {
	// Project returns a project, or store.ErrNotFound.
	Project(ctx context.Context, id string) (store.Project, error)
	// Subject returns a subject, or store.ErrNotFound.
	Subject(ctx context.Context, id string) (store.Subject, error)
	// Subjects returns every subject, ordered by id (the sign-in page).
	Subjects(ctx context.Context) ([]store.Subject, error)
	// Company returns a company, or store.ErrNotFound.
	Company(ctx context.Context, id string) (store.Company, error)
	// MemberOf reports whether a subject may act for a company.
	MemberOf(ctx context.Context, subjectID, companyID string) (bool, error)
	// AccountsOf returns a subject's accounts (companyID "") or a
	// company's (subjectID ""), ordered by id.
	AccountsOf(ctx context.Context, subjectID, companyID string) ([]store.Account, error)
}

// Reviews are the operator's review of what projects submit (docs/dashboard.md),
// as far as the project check reads it.
type Reviews interface {
	// ApprovedPolicy returns the union of a project's approved scope
	// policies (the zero Policy for none). The caller may keep but not
	// change its slices.
	ApprovedPolicy(ctx context.Context, projectID string) (store.Policy, error)
	// Submissions returns the submissions that match f, oldest first.
	Submissions(ctx context.Context, f store.SubmissionFilter) ([]*store.Submission, error)
}

// FlowState is the state of flows in progress kept in a shared database
// (Instances.Shared): browser sessions and pending authorization requests,
// each counted against quotas (store.Charge). Rows are keyed by the
// SHA-256 of their id: the id itself is a secret the browser or host holds.
type FlowState interface {
	// AddSession stores a new session, charged to c.
	AddSession(ctx context.Context, se *store.Session, c store.Charge, now time.Time) error
	// ReplaceSession deletes the session old, if it is still there, and
	// stores se charged to c, in one transaction (sign-in gives the browser
	// a new session id).
	ReplaceSession(ctx context.Context, old []byte, se *store.Session, c store.Charge, now time.Time) error
	// Session returns the live session of idHash, or store.ErrNotFound.
	Session(ctx context.Context, idHash []byte, now time.Time) (*store.Session, error)
	// AddPending stores a pending request, charged to c.
	AddPending(ctx context.Context, p *store.PendingRequest, c store.Charge, now time.Time) error
	// Pending returns the unexpired pending request of idHash, or
	// store.ErrNotFound.
	Pending(ctx context.Context, idHash []byte, now time.Time) (*store.PendingRequest, error)
	// SetPendingSubject records the subject a request is decided for;
	// store.ErrNotFound when the request is gone.
	SetPendingSubject(ctx context.Context, idHash []byte, subject string) error
	// DeletePending removes a request that will not be decided, giving its
	// quotas back.
	DeletePending(ctx context.Context, idHash []byte) error
	// DecidePending consumes an unexpired request recorded for subject
	// (any subject when "") and, for an approval (g not nil), stores g, c
	// and remember as CreateGrantRemembering does, in the same transaction.
	// A request already consumed, expired or recorded for another subject
	// is store.ErrNotFound, and nothing is stored.
	DecidePending(ctx context.Context, idHash []byte, subject string, now time.Time, g *store.Grant, c *store.Code, remember *store.Consent) error
}

// Grants are grants, authorization codes and tokens. Codes and tokens are
// kept by key (store.SecretKey, store.AccessTokenKey), never in clear.
type Grants interface {
	// CreateGrantRemembering stores a grant, the code that redeems it and,
	// when remember is not nil, the subject's consent for the client, in
	// one transaction.
	CreateGrantRemembering(ctx context.Context, g *store.Grant, c *store.Code, remember *store.Consent) error
	// PeekCode reads a code without spending it; used reports a spent one,
	// which is returned whole too: the token endpoint checks its client
	// before it acts on a spent code (exchangeCode).
	PeekCode(ctx context.Context, hash []byte) (c *store.Code, used bool, err error)
	// RedeemCode spends a code and returns it (a refused redemption spends
	// it too). A spent code is store.ErrReplayed and revokes its grant.
	RedeemCode(ctx context.Context, hash []byte, now time.Time) (*store.Code, error)
	// RedeemCodeFor spends a code and stores the tokens issued for it (rt
	// may be nil) in one transaction. A code spent meanwhile stores
	// nothing, revokes its grant and is store.ErrReplayed.
	RedeemCodeFor(ctx context.Context, hash []byte, now time.Time, at *store.AccessToken, rt *store.RefreshToken) error
	// UseRefreshToken spends a refresh token (rotation). A used one is
	// store.ErrReplayed and revokes its grant.
	UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (*store.RefreshToken, error)
	// AddTokens stores the tokens of a refresh (rt may be nil).
	AddTokens(ctx context.Context, at *store.AccessToken, rt *store.RefreshToken) error
	// Grant returns a grant, revoked or not, or store.ErrNotFound.
	Grant(ctx context.Context, id string) (*store.Grant, error)
	// LookupAccessToken returns an access token with its grant's current
	// state, or store.ErrNotFound.
	LookupAccessToken(ctx context.Context, hash []byte) (*store.AccessToken, *store.Grant, error)
	// LookupRefreshToken returns a refresh token with its grant's current
	// state, or store.ErrNotFound.
	LookupRefreshToken(ctx context.Context, hash []byte) (*store.RefreshToken, *store.Grant, error)
	// RevokeGrant revokes a grant and so every token issued from it.
	RevokeGrant(ctx context.Context, id string, now time.Time) error
	// RevokeAccessToken revokes one access token.
	RevokeAccessToken(ctx context.Context, hash []byte) error
	// LiveGrant returns the unrevoked grant of a grant_id (FAPI Grant
	// Management), read from the database, or store.ErrNotFound.
	LiveGrant(ctx context.Context, grantID string) (*store.Grant, error)
	// RevokeGrantID revokes every live grant of a grant_id, and so their
	// tokens, on every instance as RevokeGrant does; it reports whether
	// one was live.
	RevokeGrantID(ctx context.Context, grantID string, now time.Time) (bool, error)
	SubjectGrants
}

// SubjectGrants are a subject's own view of its grants (connected.go).
type SubjectGrants interface {
	// SubjectGrants returns a subject's active grants, newest first, each
	// with store.Grant.UsedAt.
	SubjectGrants(ctx context.Context, subjectID string) ([]*store.Grant, error)
	// NarrowGrant replaces an active grant's scopes and details by fewer
	// and sets (or, without permissions, forgets; nil: keeps) the
	// remembered consent in one transaction; store.ErrNotFound when old is
	// no longer current, store.ErrGrantsChanged when a grant the consent
	// relies on is not (store.Remember). Once it returns the grant holds
	// only the rest, as RevokeGrant holds.
	NarrowGrant(ctx context.Context, old *store.Grant, scopes []string, details json.RawMessage, remember *store.Remember) error
	// RevokeSubjectGrant revokes a subject's active grant and sets the
	// remembered consent of its client as NarrowGrant does, in one
	// transaction; store.ErrNotFound when the subject has no such active
	// grant, store.ErrGrantsChanged as NarrowGrant.
	RevokeSubjectGrant(ctx context.Context, subjectID, grantID string, now time.Time, remember *store.Remember) error
}

// Consents are the consents subjects asked to be remembered (docs/service.md
// §1: the subject's consent is one of the three checks). They are written
// with the grant that approved them (Grants.CreateGrantRemembering,
// FlowState.DecidePending).
type Consents interface {
	// Consent returns a subject's consent for a client, or
	// store.ErrNotFound.
	Consent(ctx context.Context, subjectID, clientID string) (*store.Consent, error)
	// Consents returns every consent of a subject, by client id.
	Consents(ctx context.Context, subjectID string) ([]*store.Consent, error)
	// RevokeConsent forgets a consent and revokes the grants issued on it,
	// in one transaction; a consent that does not exist is
	// store.ErrNotFound.
	RevokeConsent(ctx context.Context, subjectID, clientID string, now time.Time) error
}

// Keys are the private signing keys, kept so that tokens signed before a
// restart still verify after it.
type Keys interface {
	// Keys returns every key, oldest first.
	Keys(ctx context.Context) ([]store.Key, error)
	// AddKey stores a key; other instances hear store.ChangedKeys.
	AddKey(ctx context.Context, k store.Key) error
}

// Settings are the server's own named values, shared by the instances on
// one database (the key that authenticates DPoP nonces, docs/fapi.md).
type Settings interface {
	// Setting returns a setting, or store.ErrNotFound.
	Setting(ctx context.Context, name string) ([]byte, error)
	// PutSetting stores a setting, replacing an earlier value.
	PutSetting(ctx context.Context, name string, value []byte) error
}

// PushedRequests are pushed authorization requests (RFC 9126), kept in the
// database on SQLite and PostgreSQL alike and counted against quotas.
type PushedRequests interface {
	// AddPushed stores a pushed request, charged to c.
	AddPushed(ctx context.Context, p *store.PushedRequest, c store.Charge, now time.Time) error
	// TakePushed removes and returns a client's unexpired pushed request,
	// once even across instances; store.ErrNotFound when it is unknown,
	// used, expired or another client's.
	TakePushed(ctx context.Context, idHash []byte, clientID string, now time.Time) (*store.PushedRequest, error)
}

// UsedIDs are single-use ids (the jti of client assertions and DPoP
// proofs) recorded in the database while instances share it
// (Instances.Shared); a server that owns its database keeps them in memory.
type UsedIDs interface {
	// UseJTI records key until exp; store.ErrJTIUsed when it was recorded
	// before and has not expired.
	UseJTI(ctx context.Context, key []byte, exp, now time.Time) error
}

// Instances is what running beside other server instances on one
// database takes. On SQLite one process owns the database: Shared is false,
// Cacheable true, OnChange never calls, and Exclusive just runs fn.
type Instances interface {
	// Shared reports whether other instances may use the database at the
	// same time; flow state then lives in the database (FlowState).
	Shared() bool
	// Cacheable reports whether a cache kept above the store may answer a
	// read now: false while changes by other instances may go unheard.
	Cacheable() bool
	// OnChange registers fn to hear of the changes other instances
	// commit, and store.ChangedAll after a gap; fn must not block.
	OnChange(fn func(store.Change))
	// Exclusive runs fn while no other instance runs an Exclusive fn
	// (creating the signing keys on first start).
	Exclusive(ctx context.Context, fn func() error) error
}
