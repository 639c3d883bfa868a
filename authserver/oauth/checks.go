package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/consent"
)

// The three checks of docs/service.md §1 that apply beside the catalog, each a
// consent.Check in the model so that a developer sees which one said no:
// the project's approval (its approved scope policy), the subject's consent
// (remembered per subject and client), and the resource's controls
// (company access, account ownership, beneficiaries). Transaction limits,
// the last resource control, are enforced when a charge is made
// (handleCharge).

// projectCheck passes when every requested scope and type is in the
// project's approved policy.
func (s *Server) projectCheck(ctx context.Context, p *pending) (consent.Check, error) {
	pol, err := s.cfg.Store.ApprovedPolicy(ctx, p.v.client.ProjectID)
	if err != nil {
		return consent.Check{}, err
	}
	filled := func(names []string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = s.fill(n)
		}
		return out
	}
	scopes, types := filled(pol.Scopes), filled(pol.Types)
	fail := func(what string, inPolicy func(store.Policy) bool) (consent.Check, error) {
		msg, err := s.notApproved(ctx, p.v.client.ProjectID, what, func(pol store.Policy) bool {
			pol.Scopes, pol.Types = filled(pol.Scopes), filled(pol.Types)
			return inPolicy(pol)
		})
		if err != nil {
			return consent.Check{}, err
		}
		return consent.Check{Name: consent.CheckProjectApproval, Outcome: consent.Fail, Code: consent.CodeProjectNotApproved, Message: msg}, nil
	}
	for _, sc := range p.v.result.Scopes {
		if !slices.Contains(scopes, sc) {
			return fail(fmt.Sprintf("scope %q", sc), func(pol store.Policy) bool { return slices.Contains(pol.Scopes, sc) })
		}
	}
	for _, d := range p.v.result.Details {
		if !slices.Contains(types, d.Type.Name) {
			return fail(fmt.Sprintf("authorization_details type %q (index %d)", d.Type.Name, d.Index),
				func(pol store.Policy) bool { return slices.Contains(pol.Types, d.Type.Name) })
		}
	}
	return consent.Check{Name: consent.CheckProjectApproval, Outcome: consent.Pass}, nil
}

// notApproved says why what (a scope or type) is refused by the project
// approval, and what to do: when a pending policy review of the project asks
// for it (inPolicy), that the review is pending and how the operator
// approves it; when the pending reviews do not ask for it, that they do
// not; else how the project asks for it. It reads the submissions only on
// this path, a refusal.
func (s *Server) notApproved(ctx context.Context, projectID, what string, inPolicy func(store.Policy) bool) (string, error) {
	subs, err := s.cfg.Store.Submissions(ctx, store.SubmissionFilter{ProjectID: projectID, Kind: store.KindPolicy, Status: store.StatusPending})
	if err != nil {
		return "", err
	}
	var pending []string
	for _, sub := range subs {
		var pol store.Policy
		if err := json.Unmarshal(sub.Body, &pol); err != nil {
			return "", fmt.Errorf("oauth: policy submission %s: %w", sub.ID, err)
		}
		if inPolicy(pol) {
			return fmt.Sprintf("%s is not in the approved policy of project %s yet: policy review %s asks for it and is pending; "+
				"the operator approves it with miniapp-host review approve %s (docs/dashboard.md), or with Approve under Pending reviews in the playground's launcher",
				what, projectID, sub.ID, sub.ID), nil
		}
		pending = append(pending, sub.ID)
	}
	if len(pending) > 0 {
		return fmt.Sprintf("%s is not in the approved policy of project %s, nor in its pending policy review %s; "+
			"the project asks the operator to approve it (miniapp-host policy request, docs/dashboard.md)",
			what, projectID, strings.Join(pending, ", ")), nil
	}
	return fmt.Sprintf("%s is not in the approved policy of project %s; "+
		"the project asks the operator to approve it (miniapp-host policy request, docs/dashboard.md)", what, projectID), nil
}

// consentCheck passes when the subject already consented, for this client
// and Company, to every requested permission and the client did not send
// prompt=consent; otherwise the subject is asked.
func (s *Server) consentCheck(ctx context.Context, p *pending, subjectID string) (consent.Check, *store.Consent, error) {
	chk := consent.Check{Name: consent.CheckConsent, Outcome: consent.Ask, Message: "the subject is asked"}
	c, err := s.cfg.Store.Consent(ctx, subjectID, p.v.client.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return chk, nil, nil
	case err != nil:
		return chk, nil, err
	case p.v.req.Prompt == "consent":
		chk.Message = "prompt=consent: the subject is asked again"
		return chk, nil, nil
	case c.OrgID != p.v.req.OrgID || !consent.Covered(c.Permissions, consent.Keys(p.v.result)):
		chk.Message = "the request asks for something the subject has not consented to yet"
		return chk, nil, nil
	}
	chk.Outcome, chk.Message = consent.Pass, "the subject consented to every requested permission on "+c.UpdatedAt.Format("2006-01-02 15:04 UTC")
	return chk, c, nil
}

// resourceChecks are the resource's controls that a request can be checked
// against before approval: identifiers must be the subject's own accounts,
// and beneficiaries accounts of the project's operator Company (docs/service.md §2.3,
// 2.4). Company access is checked in buildModel, where the Company's
// accounts are gathered.
func (s *Server) resourceChecks(ctx context.Context, p *pending, subjectID string, proj store.Project) ([]consent.Check, error) {
	var out []consent.Check
	st := s.cfg.Store
	var idents, benefs []string
	for _, d := range p.v.result.Details {
		if d.Type.Key == "bank_account" {
			idents = append(idents, catalog.Strings(d.Object["identifiers"])...)
		}
		benefs = append(benefs, catalog.Strings(d.Object["beneficiaries"])...)
	}
	if len(idents) > 0 {
		own, err := st.AccountsOf(ctx, subjectID, "")
		if err != nil {
			return nil, err
		}
		chk := consent.Check{Name: consent.CheckAccountOwner, Outcome: consent.Pass}
		for _, id := range idents {
			if !slices.ContainsFunc(own, func(a store.Account) bool { return a.ID == id }) {
				chk = consent.Check{Name: consent.CheckAccountOwner, Outcome: consent.Fail, Code: consent.CodeAccountNotOwned,
					Message: fmt.Sprintf("identifiers: account %s is not an account of the subject", id)}
				break
			}
		}
		out = append(out, chk)
	}
	if len(benefs) > 0 {
		chk := consent.Check{Name: consent.CheckBeneficiaries, Outcome: consent.Pass}
		var ops []store.Account
		if proj.OperatorCompany != "" {
			var err error
			if ops, err = st.AccountsOf(ctx, "", proj.OperatorCompany); err != nil {
				return nil, err
			}
		}
		for _, id := range benefs {
			if !slices.ContainsFunc(ops, func(a store.Account) bool { return a.ID == id }) {
				msg := fmt.Sprintf("beneficiaries: account %s does not belong to the operator of project %s", id, proj.ID)
				if proj.OperatorCompany == "" {
					msg = fmt.Sprintf("beneficiaries: project %s has no operator Company, so no account can be a beneficiary", proj.ID)
				}
				chk = consent.Check{Name: consent.CheckBeneficiaries, Outcome: consent.Fail, Code: consent.CodeBeneficiaryNotAllowed, Message: msg}
				break
			}
		}
		out = append(out, chk)
	}
	return out, nil
}

// consentToRemember is what an approval leaves as the subject's consent
// for the client: the granted entries (a declined one is asked again),
// added to what was consented before for the same Company, or replacing
// it for another.
func (s *Server) consentToRemember(ctx context.Context, p *pending, granted *catalog.Result, subject, accountID string) (*store.Consent, error) {
	keys := consent.Keys(granted)
	c := &store.Consent{SubjectID: subject, ClientID: p.v.client.ID, OrgID: p.v.req.OrgID, AccountID: accountID, UpdatedAt: s.cfg.Now()}
	prev, err := s.cfg.Store.Consent(ctx, subject, p.v.client.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	case prev.OrgID == c.OrgID:
		for _, k := range prev.Permissions {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		if c.AccountID == "" {
			c.AccountID = prev.AccountID
		}
	}
	c.Permissions = keys
	return c, nil
}
