package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// verdict is a check's line of the consent model together with the rule it
// applied and the values it compared. The consent model carries the line;
// the dry run (explain.go, docs/dashboard.md "Explain") shows all of it, so
// the real authorization and the dry run are told by one function.
type verdict struct {
	consent.Check
	// Rule is what the check requires, with the page that documents it.
	Rule string
	// Values are what the rule compared, by name.
	Values map[string]any
}

// Rules of the checks, as the dry run states them.
const (
	ruleProjectApproval = "every requested scope and authorization_details type is in the approved scope policy of the client's project (docs/service.md §1; docs/dashboard.md, \"Submissions and review\")"
	ruleConsent         = "the subject consented before, for this client and the same org_id, to every requested permission, and the request has no prompt=consent; otherwise the subject is asked (docs/native-consent.md, \"Checks\")"
	ruleCompanyAccess   = "with org_id, the subject is a member of the Company it names and may act for it (docs/service.md §2.2 rule 3)"
	ruleAccountOwner    = "each account in the identifiers of a bank_account detail is an account of the subject (docs/service.md §2.3)"
	ruleBeneficiaries   = "each account in the beneficiaries of a detail is an account of the operator Company of the client's project (docs/service.md §2.4)"
)

// projectCheck passes when every requested scope and type is in the
// project's approved policy.
func (s *consentFlow) projectCheck(ctx context.Context, v *validated) (verdict, error) {
	pol, err := s.st.ApprovedPolicy(ctx, v.client.ProjectID)
	if err != nil {
		return verdict{}, err
	}
	filled := func(names []string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = s.fill(n)
		}
		return out
	}
	scopes, types := filled(pol.Scopes), filled(pol.Types)
	vals := map[string]any{"project": v.client.ProjectID, "approved_scopes": nonNil(scopes), "approved_types": nonNil(types)}
	fail := func(what string, inPolicy func(store.Policy) bool) (verdict, error) {
		msg, err := s.notApproved(ctx, v.client.ProjectID, what, func(pol store.Policy) bool {
			pol.Scopes, pol.Types = filled(pol.Scopes), filled(pol.Types)
			return inPolicy(pol)
		})
		if err != nil {
			return verdict{}, err
		}
		vals["not_approved"] = what
		return verdict{consent.Check{Name: consent.CheckProjectApproval, Outcome: consent.Fail, Code: consent.CodeProjectNotApproved, Message: msg},
			ruleProjectApproval, vals}, nil
	}
	for _, sc := range v.result.Scopes {
		if !slices.Contains(scopes, sc) {
			return fail(fmt.Sprintf("scope %q", sc), func(pol store.Policy) bool { return slices.Contains(pol.Scopes, sc) })
		}
	}
	for _, d := range v.result.Details {
		if !slices.Contains(types, d.Type.Name) {
			return fail(fmt.Sprintf("authorization_details type %q (index %d)", d.Type.Name, d.Index),
				func(pol store.Policy) bool { return slices.Contains(pol.Types, d.Type.Name) })
		}
	}
	return verdict{consent.Check{Name: consent.CheckProjectApproval, Outcome: consent.Pass}, ruleProjectApproval, vals}, nil
}

// nonNil is l, or an empty list for none: a value shown as [] rather than
// null.
func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// notApproved says why what (a scope or type) is refused by the project
// approval, and what to do: when a pending policy review of the project asks
// for it (inPolicy), that the review is pending and how the operator
// approves it; when the pending reviews do not ask for it, that they do
// not; else how the project asks for it. It reads the submissions only on
// this path, a refusal.
func (s *consentFlow) notApproved(ctx context.Context, projectID, what string, inPolicy func(store.Policy) bool) (string, error) {
	subs, err := s.st.Submissions(ctx, store.SubmissionFilter{ProjectID: projectID, Kind: store.KindPolicy, Status: store.StatusPending})
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

// priorConsent is the subject's remembered consent for a client, read once
// for a decision (readPrior): the consent check (consentCheck) and what
// the approval remembers (consentToRemember) both use this one reading.
type priorConsent struct {
	c *store.Consent // nil: none is remembered
}

// readPrior reads the subject's remembered consent for the client.
func (s *consentFlow) readPrior(ctx context.Context, subjectID, clientID string) (*priorConsent, error) {
	c, err := s.st.Consent(ctx, subjectID, clientID)
	if errors.Is(err, store.ErrNotFound) {
		return &priorConsent{}, nil
	} else if err != nil {
		return nil, err
	}
	return &priorConsent{c: c}, nil
}

// consentCheck passes when the subject already consented (prior), for
// this client and Company, to every requested permission and the client
// did not send prompt=consent; otherwise the subject is asked. It returns
// the remembered consent when it passed.
func consentCheck(v *validated, prior *priorConsent) (verdict, *store.Consent) {
	vals := map[string]any{"requested": nonNil(consent.Keys(v.result)), "org_id": v.req.OrgID}
	if v.req.Prompt != "" {
		vals["prompt"] = v.req.Prompt
	}
	chk := verdict{consent.Check{Name: consent.CheckConsent, Outcome: consent.Ask, Message: "the subject is asked"}, ruleConsent, vals}
	c := prior.c
	if c != nil {
		vals["remembered"], vals["remembered_org_id"] = nonNil(c.Permissions), c.OrgID
	}
	switch {
	case c == nil:
		vals["remembered"] = []string{}
		return chk, nil
	case v.req.Prompt == "consent":
		chk.Message = "prompt=consent: the subject is asked again"
		return chk, nil
	case c.OrgID != v.req.OrgID || !consent.Covered(c.Permissions, consent.Keys(v.result)):
		chk.Message = "the request asks for something the subject has not consented to yet"
		return chk, nil
	}
	chk.Outcome, chk.Message = consent.Pass, "the subject consented to every requested permission on "+c.UpdatedAt.Format("2006-01-02 15:04 UTC")
	return chk, c
}

// companyCheck is the Company access of a request with org_id: the subject
// may act for the Company (docs/service.md §2.2 rule 3). It returns the
// Company's accounts when the subject may.
func companyCheck(ctx context.Context, st memberships, co *store.Company, subjectID string) (verdict, []store.Account, error) {
	member, err := st.MemberOf(ctx, subjectID, co.ID)
	if err != nil {
		return verdict{}, nil, err
	}
	chk := verdict{consent.Check{Name: consent.CheckCompanyAccess, Outcome: consent.Pass}, ruleCompanyAccess,
		map[string]any{"org_id": co.ID, "subject": subjectID, "member": member}}
	if !member {
		chk.Outcome, chk.Code = consent.Fail, consent.CodeCompanyAccessDenied
		chk.Message = fmt.Sprintf("org_id: the subject may not act for Company %s", co.ID)
		return chk, nil, nil
	}
	ca, err := st.AccountsOf(ctx, "", co.ID)
	return chk, ca, err
}

// memberships are what the Company check reads.
type memberships interface {
	MemberOf(ctx context.Context, subjectID, companyID string) (bool, error)
	AccountsOf(ctx context.Context, subjectID, companyID string) ([]store.Account, error)
}

// resourceChecks are the resource's controls that a request can be checked
// against before approval: identifiers must be the subject's own accounts,
// and beneficiaries accounts of the project's operator Company (docs/service.md §2.3,
// 2.4). Company access is checked in buildModel, where the Company's
// accounts are gathered.
func (s *consentFlow) resourceChecks(ctx context.Context, v *validated, subjectID string, proj store.Project) ([]verdict, error) {
	var out []verdict
	st := s.st
	var idents, benefs []string
	for _, d := range v.result.Details {
		if d.Type.Key == "bank_account" {
			idents = append(idents, catalog.Strings(d.Object["identifiers"])...)
		}
		benefs = append(benefs, catalog.Strings(d.Object["beneficiaries"])...)
	}
	ids := func(as []store.Account) []string {
		out := []string{}
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	if len(idents) > 0 {
		own, err := st.AccountsOf(ctx, subjectID, "")
		if err != nil {
			return nil, err
		}
		chk := verdict{consent.Check{Name: consent.CheckAccountOwner, Outcome: consent.Pass}, ruleAccountOwner,
			map[string]any{"identifiers": idents, "subject": subjectID, "subject_accounts": ids(own)}}
		for _, id := range idents {
			if !slices.ContainsFunc(own, func(a store.Account) bool { return a.ID == id }) {
				chk.Check = consent.Check{Name: consent.CheckAccountOwner, Outcome: consent.Fail, Code: consent.CodeAccountNotOwned,
					Message: fmt.Sprintf("identifiers: account %s is not an account of the subject", id)}
				chk.Values["not_owned"] = id
				break
			}
		}
		out = append(out, chk)
	}
	if len(benefs) > 0 {
		var ops []store.Account
		if proj.OperatorCompany != "" {
			var err error
			if ops, err = st.AccountsOf(ctx, "", proj.OperatorCompany); err != nil {
				return nil, err
			}
		}
		chk := verdict{consent.Check{Name: consent.CheckBeneficiaries, Outcome: consent.Pass}, ruleBeneficiaries,
			map[string]any{"beneficiaries": benefs, "project": proj.ID, "operator_company": proj.OperatorCompany, "operator_accounts": ids(ops)}}
		for _, id := range benefs {
			if !slices.ContainsFunc(ops, func(a store.Account) bool { return a.ID == id }) {
				msg := fmt.Sprintf("beneficiaries: account %s does not belong to the operator of project %s", id, proj.ID)
				if proj.OperatorCompany == "" {
					msg = fmt.Sprintf("beneficiaries: project %s has no operator Company, so no account can be a beneficiary", proj.ID)
				}
				chk.Check = consent.Check{Name: consent.CheckBeneficiaries, Outcome: consent.Fail, Code: consent.CodeBeneficiaryNotAllowed, Message: msg}
				chk.Values["not_allowed"] = id
				break
			}
		}
		out = append(out, chk)
	}
	return out, nil
}

// consentToRemember is what an approval leaves as the subject's consent
// for the client: the granted entries (a declined one is asked again),
// added to what was consented before (prior) for the same Company, or
// replacing it for another.
func consentToRemember(p *pending, prior *priorConsent, granted *catalog.Result, subject, accountID string, now time.Time) *store.Consent {
	keys := consent.Keys(granted)
	c := &store.Consent{SubjectID: subject, ClientID: p.v.client.ID, OrgID: p.v.req.OrgID, AccountID: accountID, UpdatedAt: now}
	if prev := prior.c; prev != nil && prev.OrgID == c.OrgID {
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
	return c
}
