package oauth

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/consent"
)

// consentReads is the real store, counting the reads of remembered
// consents.
type consentReads struct {
	*store.Store
	n atomic.Int64
}

func (c *consentReads) Consent(ctx context.Context, subjectID, clientID string) (*store.Consent, error) {
	c.n.Add(1)
	return c.Store.Consent(ctx, subjectID, clientID)
}

// TestDecisionReadsTheRememberedConsentOnce: a decision reads the
// subject's remembered consent once, for the consent check and for what
// the approval remembers alike, whether the model is built in the
// deciding request (prompt=none, a remembered consent answering for the
// subject, a request read back from a shared database) or was built
// before (the consent page's form); and the approval remembers what it
// granted, so that the next request is Remembered.
func TestDecisionReadsTheRememberedConsentOnce(t *testing.T) {
	reads := &consentReads{}
	s := newTestServerOn(t, func(st *store.Store) Storage { reads.Store = st; return reads })
	ctx := context.Background()
	q := url.Values{"client_id": {"demo-public"}, "redirect_uri": {"http://127.0.0.1:8701/callback"},
		"response_type": {"code"}, "scope": {"openid profile"}, "resource": {"http://127.0.0.1:8600/bank"}, "state": {"s"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	pendingFor := func(t *testing.T) *pending {
		t.Helper()
		v, _, err := s.requests.validateAuthorize(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.flow.newPending(ctx, v, "session", "127.0.0.1", "", "")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	approve := consent.Decision{Action: consent.Approve}

	// The model built before, in another request: the decision reads once.
	p := pendingFor(t)
	m, _, err := s.flow.buildModel(ctx, p, "sub_ana")
	if err != nil {
		t.Fatal(err)
	}
	if m.Remembered {
		t.Fatal("the first request is Remembered")
	}
	reads.n.Store(0)
	_, m, prior, err := s.flow.recordedModel(ctx, p)
	if err != nil || m == nil {
		t.Fatalf("recorded model %v, %v", m, err)
	}
	if _, err := s.flow.decide(ctx, p, "sub_ana", approve, prior); err != nil {
		t.Fatal(err)
	}
	if n := reads.n.Load(); n != 1 {
		t.Fatalf("the decision on a recorded model read the remembered consent %d times, want 1", n)
	}

	// The model built in the deciding request: one read for both.
	reads.n.Store(0)
	p = pendingFor(t)
	m, prior, err = s.flow.buildModel(ctx, p, "sub_ana")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Remembered {
		t.Fatalf("after an approval the same request is not Remembered: checks %+v", m.Checks)
	}
	to, err := s.flow.decide(ctx, p, "sub_ana", approve, prior)
	if err != nil {
		t.Fatal(err)
	}
	if n := reads.n.Load(); n != 1 {
		t.Fatalf("building the model and deciding read the remembered consent %d times, want 1", n)
	}
	if u, err := url.Parse(to); err != nil || u.Query().Get("code") == "" {
		t.Fatalf("the approval's redirect %q has no code", to)
	}
}
