package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/miniapp-host/miniapp-host/authserver/metrics"
	"github.com/miniapp-host/miniapp-host/authserver/oauth"
	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// meteredStorage times the OAuth server's store operations and counts
// their outcomes (metrics.StoreOp), by a fixed name per operation: the
// operations of a sign-in, a token request and a grant lookup. The
// others, rare (keys, settings written at start, submissions), pass
// through unmeasured, as does any method oauth.Storage gains later.
//
// With a tracer, each of those operations is also a span, store.NAME with
// the operation's outcome (docs/deploy.md, "Traces"), child of the
// request's span.
type meteredStorage struct {
	oauth.Storage
	m  *metrics.Metrics
	tr trace.Tracer // nil: no spans
}

// meterStorage returns st measured by m and traced by tr, or st itself
// with neither.
func meterStorage(st oauth.Storage, m *metrics.Metrics, tr trace.Tracer) oauth.Storage {
	if m == nil && tr == nil {
		return st
	}
	return meteredStorage{Storage: st, m: m, tr: tr}
}

// storeOp is one measured operation, from begin to end.
type storeOp struct {
	ctx   context.Context // the operation's: its span's, with a tracer
	m     *metrics.Metrics
	name  string
	start time.Time
	span  trace.Span // nil without a tracer
}

// begin starts the measure, and the span, of operation name.
func (m meteredStorage) begin(ctx context.Context, name string) storeOp {
	op := storeOp{ctx: ctx, m: m.m, name: name, start: time.Now()}
	if m.tr != nil {
		op.ctx, op.span = m.tr.Start(ctx, "store."+name, trace.WithAttributes(attribute.String("db.operation.name", name)))
	}
	return op
}

// end records the operation's outcome.
func (op storeOp) end(err error) {
	outcome := storeOutcome(err)
	op.m.StoreOp(op.name, op.start, outcome)
	if op.span != nil {
		op.span.SetAttributes(attribute.String("miniapp.store.outcome", outcome))
		if outcome == metrics.OutcomeError {
			op.span.SetStatus(codes.Error, "")
		}
		op.span.End()
	}
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
	op := m.begin(ctx, "client")
	v, err := m.Storage.Client(op.ctx, id)
	op.end(err)
	return v, err
}

func (m meteredStorage) ClientSettings(ctx context.Context, clientID string) (store.ClientSettings, error) {
	op := m.begin(ctx, "client_settings")
	v, err := m.Storage.ClientSettings(op.ctx, clientID)
	op.end(err)
	return v, err
}

func (m meteredStorage) Project(ctx context.Context, id string) (store.Project, error) {
	op := m.begin(ctx, "project")
	v, err := m.Storage.Project(op.ctx, id)
	op.end(err)
	return v, err
}

func (m meteredStorage) Subject(ctx context.Context, id string) (store.Subject, error) {
	op := m.begin(ctx, "subject")
	v, err := m.Storage.Subject(op.ctx, id)
	op.end(err)
	return v, err
}

func (m meteredStorage) Subjects(ctx context.Context) ([]store.Subject, error) {
	op := m.begin(ctx, "subjects")
	v, err := m.Storage.Subjects(op.ctx)
	op.end(err)
	return v, err
}

func (m meteredStorage) Company(ctx context.Context, id string) (store.Company, error) {
	op := m.begin(ctx, "company")
	v, err := m.Storage.Company(op.ctx, id)
	op.end(err)
	return v, err
}

func (m meteredStorage) MemberOf(ctx context.Context, subjectID, companyID string) (bool, error) {
	op := m.begin(ctx, "member_of")
	v, err := m.Storage.MemberOf(op.ctx, subjectID, companyID)
	op.end(err)
	return v, err
}

func (m meteredStorage) AccountsOf(ctx context.Context, subjectID, companyID string) ([]store.Account, error) {
	op := m.begin(ctx, "accounts_of")
	v, err := m.Storage.AccountsOf(op.ctx, subjectID, companyID)
	op.end(err)
	return v, err
}

func (m meteredStorage) ApprovedPolicy(ctx context.Context, projectID string) (store.Policy, error) {
	op := m.begin(ctx, "approved_policy")
	v, err := m.Storage.ApprovedPolicy(op.ctx, projectID)
	op.end(err)
	return v, err
}

func (m meteredStorage) AddSession(ctx context.Context, se *store.Session, c store.Charge, now time.Time) error {
	op := m.begin(ctx, "add_session")
	err := m.Storage.AddSession(op.ctx, se, c, now)
	op.end(err)
	return err
}

func (m meteredStorage) ReplaceSession(ctx context.Context, old []byte, se *store.Session, c store.Charge, now time.Time) error {
	op := m.begin(ctx, "replace_session")
	err := m.Storage.ReplaceSession(op.ctx, old, se, c, now)
	op.end(err)
	return err
}

func (m meteredStorage) Session(ctx context.Context, idHash []byte, now time.Time) (*store.Session, error) {
	op := m.begin(ctx, "session")
	v, err := m.Storage.Session(op.ctx, idHash, now)
	op.end(err)
	return v, err
}

func (m meteredStorage) AddPending(ctx context.Context, p *store.PendingRequest, c store.Charge, now time.Time) error {
	op := m.begin(ctx, "add_pending")
	err := m.Storage.AddPending(op.ctx, p, c, now)
	op.end(err)
	return err
}

func (m meteredStorage) Pending(ctx context.Context, idHash []byte, now time.Time) (*store.PendingRequest, error) {
	op := m.begin(ctx, "pending")
	v, err := m.Storage.Pending(op.ctx, idHash, now)
	op.end(err)
	return v, err
}

func (m meteredStorage) SetPendingSubject(ctx context.Context, idHash []byte, subject string) error {
	op := m.begin(ctx, "set_pending_subject")
	err := m.Storage.SetPendingSubject(op.ctx, idHash, subject)
	op.end(err)
	return err
}

func (m meteredStorage) DeletePending(ctx context.Context, idHash []byte) error {
	op := m.begin(ctx, "delete_pending")
	err := m.Storage.DeletePending(op.ctx, idHash)
	op.end(err)
	return err
}

func (m meteredStorage) DecidePending(ctx context.Context, idHash []byte, subject string, now time.Time, g *store.Grant, c *store.Code, remember *store.Consent) error {
	op := m.begin(ctx, "decide_pending")
	err := m.Storage.DecidePending(op.ctx, idHash, subject, now, g, c, remember)
	op.end(err)
	return err
}

func (m meteredStorage) CreateGrantRemembering(ctx context.Context, g *store.Grant, c *store.Code, remember *store.Consent) error {
	op := m.begin(ctx, "create_grant")
	err := m.Storage.CreateGrantRemembering(op.ctx, g, c, remember)
	op.end(err)
	return err
}

func (m meteredStorage) RedeemCode(ctx context.Context, hash []byte, now time.Time) (*store.Code, error) {
	op := m.begin(ctx, "redeem_code")
	v, err := m.Storage.RedeemCode(op.ctx, hash, now)
	op.end(err)
	return v, err
}

func (m meteredStorage) RedeemCodeFor(ctx context.Context, hash []byte, now time.Time, at *store.AccessToken, rt *store.RefreshToken) error {
	op := m.begin(ctx, "redeem_code_for")
	err := m.Storage.RedeemCodeFor(op.ctx, hash, now, at, rt)
	op.end(err)
	return err
}

func (m meteredStorage) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (*store.RefreshToken, error) {
	op := m.begin(ctx, "use_refresh_token")
	v, err := m.Storage.UseRefreshToken(op.ctx, hash, now)
	op.end(err)
	return v, err
}

func (m meteredStorage) AddTokens(ctx context.Context, at *store.AccessToken, rt *store.RefreshToken) error {
	op := m.begin(ctx, "add_tokens")
	err := m.Storage.AddTokens(op.ctx, at, rt)
	op.end(err)
	return err
}

func (m meteredStorage) Grant(ctx context.Context, id string) (*store.Grant, error) {
	op := m.begin(ctx, "grant")
	v, err := m.Storage.Grant(op.ctx, id)
	op.end(err)
	return v, err
}

func (m meteredStorage) RevokeGrant(ctx context.Context, id string, now time.Time) error {
	op := m.begin(ctx, "revoke_grant")
	err := m.Storage.RevokeGrant(op.ctx, id, now)
	op.end(err)
	return err
}

func (m meteredStorage) RevokeAccessToken(ctx context.Context, hash []byte) error {
	op := m.begin(ctx, "revoke_access_token")
	err := m.Storage.RevokeAccessToken(op.ctx, hash)
	op.end(err)
	return err
}

func (m meteredStorage) LiveGrant(ctx context.Context, grantID string) (*store.Grant, error) {
	op := m.begin(ctx, "live_grant")
	v, err := m.Storage.LiveGrant(op.ctx, grantID)
	op.end(err)
	return v, err
}

func (m meteredStorage) RevokeGrantID(ctx context.Context, grantID string, now time.Time) (bool, error) {
	op := m.begin(ctx, "revoke_grant_id")
	v, err := m.Storage.RevokeGrantID(op.ctx, grantID, now)
	op.end(err)
	return v, err
}

func (m meteredStorage) SubjectGrants(ctx context.Context, subjectID string) ([]*store.Grant, error) {
	op := m.begin(ctx, "subject_grants")
	v, err := m.Storage.SubjectGrants(op.ctx, subjectID)
	op.end(err)
	return v, err
}

func (m meteredStorage) NarrowGrant(ctx context.Context, old *store.Grant, scopes []string, details json.RawMessage, remember *store.Remember) error {
	op := m.begin(ctx, "narrow_grant")
	err := m.Storage.NarrowGrant(op.ctx, old, scopes, details, remember)
	op.end(err)
	return err
}

func (m meteredStorage) RevokeSubjectGrant(ctx context.Context, subjectID, grantID string, now time.Time, remember *store.Remember) error {
	op := m.begin(ctx, "revoke_subject_grant")
	err := m.Storage.RevokeSubjectGrant(op.ctx, subjectID, grantID, now, remember)
	op.end(err)
	return err
}

func (m meteredStorage) Consent(ctx context.Context, subjectID, clientID string) (*store.Consent, error) {
	op := m.begin(ctx, "consent")
	v, err := m.Storage.Consent(op.ctx, subjectID, clientID)
	op.end(err)
	return v, err
}

func (m meteredStorage) Consents(ctx context.Context, subjectID string) ([]*store.Consent, error) {
	op := m.begin(ctx, "consents")
	v, err := m.Storage.Consents(op.ctx, subjectID)
	op.end(err)
	return v, err
}

func (m meteredStorage) RevokeConsent(ctx context.Context, subjectID, clientID string, now time.Time) error {
	op := m.begin(ctx, "revoke_consent")
	err := m.Storage.RevokeConsent(op.ctx, subjectID, clientID, now)
	op.end(err)
	return err
}

func (m meteredStorage) AddPushed(ctx context.Context, p *store.PushedRequest, c store.Charge, now time.Time) error {
	op := m.begin(ctx, "add_pushed")
	err := m.Storage.AddPushed(op.ctx, p, c, now)
	op.end(err)
	return err
}

func (m meteredStorage) TakePushed(ctx context.Context, idHash []byte, clientID string, now time.Time) (*store.PushedRequest, error) {
	op := m.begin(ctx, "take_pushed")
	v, err := m.Storage.TakePushed(op.ctx, idHash, clientID, now)
	op.end(err)
	return v, err
}

func (m meteredStorage) UseJTI(ctx context.Context, key []byte, exp, now time.Time) error {
	op := m.begin(ctx, "use_jti")
	err := m.Storage.UseJTI(op.ctx, key, exp, now)
	op.end(err)
	return err
}

func (m meteredStorage) Setting(ctx context.Context, name string) ([]byte, error) {
	op := m.begin(ctx, "setting")
	v, err := m.Storage.Setting(op.ctx, name)
	op.end(err)
	return v, err
}

func (m meteredStorage) PeekCode(ctx context.Context, hash []byte) (*store.Code, bool, error) {
	op := m.begin(ctx, "peek_code")
	c, used, err := m.Storage.PeekCode(op.ctx, hash)
	op.end(err)
	return c, used, err
}

func (m meteredStorage) LookupAccessToken(ctx context.Context, hash []byte) (*store.AccessToken, *store.Grant, error) {
	op := m.begin(ctx, "lookup_access_token")
	at, g, err := m.Storage.LookupAccessToken(op.ctx, hash)
	op.end(err)
	return at, g, err
}

func (m meteredStorage) LookupRefreshToken(ctx context.Context, hash []byte) (*store.RefreshToken, *store.Grant, error) {
	op := m.begin(ctx, "lookup_refresh_token")
	rt, g, err := m.Storage.LookupRefreshToken(op.ctx, hash)
	op.end(err)
	return rt, g, err
}
