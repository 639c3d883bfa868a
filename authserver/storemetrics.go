package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// meteredStorage times the OAuth server's store operations and counts
// their outcomes (metrics.StoreOp), by a fixed name per operation: the
// operations of a sign-in, a token request and a grant lookup. The
// others, rare (keys, settings written at start, submissions), pass
// through unmeasured, as does any method oauth.Storage gains later.
type meteredStorage struct {
	oauth.Storage
	m *metrics.Metrics
}

// meterStorage returns st measured by m, or st itself without metrics.
func meterStorage(st oauth.Storage, m *metrics.Metrics) oauth.Storage {
	if m == nil {
		return st
	}
	return meteredStorage{Storage: st, m: m}
}

// storeOutcome sorts a store error into the outcomes of metrics.StoreOp:
// a missing record and a store rule's refusal are answers, not failures.
func storeOutcome(err error) string {
	switch {
	case err == nil:
		return metrics.OutcomeOK
	case errors.Is(err, store.ErrNotFound):
		return metrics.OutcomeNotFound
	case errors.Is(err, store.ErrReplayed), errors.Is(err, store.ErrJTIUsed), errors.Is(err, store.ErrGrantsChanged),
		errors.Is(err, store.ErrGrantSuperseded), errors.As(err, new(*store.QuotaError)):
		return metrics.OutcomeRefused
	}
	return metrics.OutcomeError
}

func (m meteredStorage) Client(ctx context.Context, id string) (*store.Client, error) {
	start := time.Now()
	v, err := m.Storage.Client(ctx, id)
	m.m.StoreOp("client", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) ClientSettings(ctx context.Context, clientID string) (store.ClientSettings, error) {
	start := time.Now()
	v, err := m.Storage.ClientSettings(ctx, clientID)
	m.m.StoreOp("client_settings", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) Project(ctx context.Context, id string) (store.Project, error) {
	start := time.Now()
	v, err := m.Storage.Project(ctx, id)
	m.m.StoreOp("project", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) Subject(ctx context.Context, id string) (store.Subject, error) {
	start := time.Now()
	v, err := m.Storage.Subject(ctx, id)
	m.m.StoreOp("subject", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) Subjects(ctx context.Context) ([]store.Subject, error) {
	start := time.Now()
	v, err := m.Storage.Subjects(ctx)
	m.m.StoreOp("subjects", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) Company(ctx context.Context, id string) (store.Company, error) {
	start := time.Now()
	v, err := m.Storage.Company(ctx, id)
	m.m.StoreOp("company", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) MemberOf(ctx context.Context, subjectID, companyID string) (bool, error) {
	start := time.Now()
	v, err := m.Storage.MemberOf(ctx, subjectID, companyID)
	m.m.StoreOp("member_of", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) AccountsOf(ctx context.Context, subjectID, companyID string) ([]store.Account, error) {
	start := time.Now()
	v, err := m.Storage.AccountsOf(ctx, subjectID, companyID)
	m.m.StoreOp("accounts_of", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) ApprovedPolicy(ctx context.Context, projectID string) (store.Policy, error) {
	start := time.Now()
	v, err := m.Storage.ApprovedPolicy(ctx, projectID)
	m.m.StoreOp("approved_policy", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) AddSession(ctx context.Context, se *store.Session, c store.Charge, now time.Time) error {
	start := time.Now()
	err := m.Storage.AddSession(ctx, se, c, now)
	m.m.StoreOp("add_session", start, storeOutcome(err))
	return err
}

func (m meteredStorage) ReplaceSession(ctx context.Context, old []byte, se *store.Session, c store.Charge, now time.Time) error {
	start := time.Now()
	err := m.Storage.ReplaceSession(ctx, old, se, c, now)
	m.m.StoreOp("replace_session", start, storeOutcome(err))
	return err
}

func (m meteredStorage) Session(ctx context.Context, idHash []byte, now time.Time) (*store.Session, error) {
	start := time.Now()
	v, err := m.Storage.Session(ctx, idHash, now)
	m.m.StoreOp("session", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) AddPending(ctx context.Context, p *store.PendingRequest, c store.Charge, now time.Time) error {
	start := time.Now()
	err := m.Storage.AddPending(ctx, p, c, now)
	m.m.StoreOp("add_pending", start, storeOutcome(err))
	return err
}

func (m meteredStorage) Pending(ctx context.Context, idHash []byte, now time.Time) (*store.PendingRequest, error) {
	start := time.Now()
	v, err := m.Storage.Pending(ctx, idHash, now)
	m.m.StoreOp("pending", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) SetPendingSubject(ctx context.Context, idHash []byte, subject string) error {
	start := time.Now()
	err := m.Storage.SetPendingSubject(ctx, idHash, subject)
	m.m.StoreOp("set_pending_subject", start, storeOutcome(err))
	return err
}

func (m meteredStorage) DeletePending(ctx context.Context, idHash []byte) error {
	start := time.Now()
	err := m.Storage.DeletePending(ctx, idHash)
	m.m.StoreOp("delete_pending", start, storeOutcome(err))
	return err
}

func (m meteredStorage) DecidePending(ctx context.Context, idHash []byte, subject string, now time.Time, g *store.Grant, c *store.Code, remember *store.Consent) error {
	start := time.Now()
	err := m.Storage.DecidePending(ctx, idHash, subject, now, g, c, remember)
	m.m.StoreOp("decide_pending", start, storeOutcome(err))
	return err
}

func (m meteredStorage) CreateGrantRemembering(ctx context.Context, g *store.Grant, c *store.Code, remember *store.Consent) error {
	start := time.Now()
	err := m.Storage.CreateGrantRemembering(ctx, g, c, remember)
	m.m.StoreOp("create_grant", start, storeOutcome(err))
	return err
}

func (m meteredStorage) RedeemCode(ctx context.Context, hash []byte, now time.Time) (*store.Code, error) {
	start := time.Now()
	v, err := m.Storage.RedeemCode(ctx, hash, now)
	m.m.StoreOp("redeem_code", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) RedeemCodeFor(ctx context.Context, hash []byte, now time.Time, at *store.AccessToken, rt *store.RefreshToken) error {
	start := time.Now()
	err := m.Storage.RedeemCodeFor(ctx, hash, now, at, rt)
	m.m.StoreOp("redeem_code_for", start, storeOutcome(err))
	return err
}

func (m meteredStorage) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (*store.RefreshToken, error) {
	start := time.Now()
	v, err := m.Storage.UseRefreshToken(ctx, hash, now)
	m.m.StoreOp("use_refresh_token", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) AddTokens(ctx context.Context, at *store.AccessToken, rt *store.RefreshToken) error {
	start := time.Now()
	err := m.Storage.AddTokens(ctx, at, rt)
	m.m.StoreOp("add_tokens", start, storeOutcome(err))
	return err
}

func (m meteredStorage) Grant(ctx context.Context, id string) (*store.Grant, error) {
	start := time.Now()
	v, err := m.Storage.Grant(ctx, id)
	m.m.StoreOp("grant", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) RevokeGrant(ctx context.Context, id string, now time.Time) error {
	start := time.Now()
	err := m.Storage.RevokeGrant(ctx, id, now)
	m.m.StoreOp("revoke_grant", start, storeOutcome(err))
	return err
}

func (m meteredStorage) RevokeAccessToken(ctx context.Context, hash []byte) error {
	start := time.Now()
	err := m.Storage.RevokeAccessToken(ctx, hash)
	m.m.StoreOp("revoke_access_token", start, storeOutcome(err))
	return err
}

func (m meteredStorage) LiveGrant(ctx context.Context, grantID string) (*store.Grant, error) {
	start := time.Now()
	v, err := m.Storage.LiveGrant(ctx, grantID)
	m.m.StoreOp("live_grant", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) RevokeGrantID(ctx context.Context, grantID string, now time.Time) (bool, error) {
	start := time.Now()
	v, err := m.Storage.RevokeGrantID(ctx, grantID, now)
	m.m.StoreOp("revoke_grant_id", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) SubjectGrants(ctx context.Context, subjectID string) ([]*store.Grant, error) {
	start := time.Now()
	v, err := m.Storage.SubjectGrants(ctx, subjectID)
	m.m.StoreOp("subject_grants", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) NarrowGrant(ctx context.Context, old *store.Grant, scopes []string, details json.RawMessage, remember *store.Remember) error {
	start := time.Now()
	err := m.Storage.NarrowGrant(ctx, old, scopes, details, remember)
	m.m.StoreOp("narrow_grant", start, storeOutcome(err))
	return err
}

func (m meteredStorage) RevokeSubjectGrant(ctx context.Context, subjectID, grantID string, now time.Time, remember *store.Remember) error {
	start := time.Now()
	err := m.Storage.RevokeSubjectGrant(ctx, subjectID, grantID, now, remember)
	m.m.StoreOp("revoke_subject_grant", start, storeOutcome(err))
	return err
}

func (m meteredStorage) Consent(ctx context.Context, subjectID, clientID string) (*store.Consent, error) {
	start := time.Now()
	v, err := m.Storage.Consent(ctx, subjectID, clientID)
	m.m.StoreOp("consent", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) Consents(ctx context.Context, subjectID string) ([]*store.Consent, error) {
	start := time.Now()
	v, err := m.Storage.Consents(ctx, subjectID)
	m.m.StoreOp("consents", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) RevokeConsent(ctx context.Context, subjectID, clientID string, now time.Time) error {
	start := time.Now()
	err := m.Storage.RevokeConsent(ctx, subjectID, clientID, now)
	m.m.StoreOp("revoke_consent", start, storeOutcome(err))
	return err
}

func (m meteredStorage) AddPushed(ctx context.Context, p *store.PushedRequest, c store.Charge, now time.Time) error {
	start := time.Now()
	err := m.Storage.AddPushed(ctx, p, c, now)
	m.m.StoreOp("add_pushed", start, storeOutcome(err))
	return err
}

func (m meteredStorage) TakePushed(ctx context.Context, idHash []byte, clientID string, now time.Time) (*store.PushedRequest, error) {
	start := time.Now()
	v, err := m.Storage.TakePushed(ctx, idHash, clientID, now)
	m.m.StoreOp("take_pushed", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) UseJTI(ctx context.Context, key []byte, exp, now time.Time) error {
	start := time.Now()
	err := m.Storage.UseJTI(ctx, key, exp, now)
	m.m.StoreOp("use_jti", start, storeOutcome(err))
	return err
}

func (m meteredStorage) Setting(ctx context.Context, name string) ([]byte, error) {
	start := time.Now()
	v, err := m.Storage.Setting(ctx, name)
	m.m.StoreOp("setting", start, storeOutcome(err))
	return v, err
}

func (m meteredStorage) PeekCode(ctx context.Context, hash []byte) (*store.Code, bool, error) {
	start := time.Now()
	c, used, err := m.Storage.PeekCode(ctx, hash)
	m.m.StoreOp("peek_code", start, storeOutcome(err))
	return c, used, err
}

func (m meteredStorage) LookupAccessToken(ctx context.Context, hash []byte) (*store.AccessToken, *store.Grant, error) {
	start := time.Now()
	at, g, err := m.Storage.LookupAccessToken(ctx, hash)
	m.m.StoreOp("lookup_access_token", start, storeOutcome(err))
	return at, g, err
}

func (m meteredStorage) LookupRefreshToken(ctx context.Context, hash []byte) (*store.RefreshToken, *store.Grant, error) {
	start := time.Now()
	rt, g, err := m.Storage.LookupRefreshToken(ctx, hash)
	m.m.StoreOp("lookup_refresh_token", start, storeOutcome(err))
	return rt, g, err
}
