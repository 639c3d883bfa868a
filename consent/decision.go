package consent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// The decision: the subject's answer to the consent screen, checked
// against the model (Validate).

// Decision actions.
const (
	Approve = "approve"
	Deny    = "deny"
)

// Decision is the subject's answer.
//
// An approval grants every requested entry except those it declines: a
// scope by name in DeclinedScopes, an authorization_details object by its
// index in DeclinedDetails. A decision without them approves everything,
// as before per-entry consent. `openid` in an OpenID Connect request
// cannot be declined (Permission.Fixed), and an approval that declines
// every entry is a denial (access_denied).
type Decision struct {
	// Action is Approve or Deny.
	Action string `json:"action"`
	// AccountID names the chosen account when a granted detail needs one.
	// When granted details bind accounts of both owners (a bank_account
	// and an automatic-charge detail), it names the subject's account and
	// CompanyAccountID the Company's.
	AccountID string `json:"account_id,omitempty"`
	// CompanyAccountID names the Company's account bound by granted
	// automatic-charge details; without it AccountID serves for them too.
	CompanyAccountID string `json:"company_account_id,omitempty"`
	// DeclinedScopes are requested scopes the subject does not grant.
	DeclinedScopes []string `json:"declined_scopes,omitempty"`
	// DeclinedDetails are the indexes in authorization_details of the
	// requested objects the subject does not grant.
	DeclinedDetails []int `json:"declined_details,omitempty"`
	// LoweredMaximums lower the `transaction.maximum` of granted
	// automatic-charge objects (docs/service.md §2.4): the subject allows
	// smaller charges than the Miniapp asked for, never larger ones.
	LoweredMaximums []LoweredMaximum `json:"lowered_maximums,omitempty"`
}

// LoweredMaximum is the subject's own `transaction.maximum` for the
// granted object at Index of authorization_details: an amount
// (docs/service.md §2.2 rule 5) from the requested minimum up to the
// requested maximum.
type LoweredMaximum struct {
	Index   int    `json:"index"`
	Maximum string `json:"maximum"`
}

// Errors of Validate.
var (
	ErrUnknownAction     = errors.New("consent: action must be \"approve\" or \"deny\"")
	ErrNotApprovable     = errors.New("consent: a check failed; the request can only be denied")
	ErrAccountRequired   = errors.New("consent: approving this request needs an account_id from the offered accounts")
	ErrAccountNotOffered = errors.New("consent: account_id is not one of the offered accounts")
	// ErrNotRequested is a declined entry the request does not hold.
	ErrNotRequested = errors.New("consent: a declined entry is not one of the requested permissions")
	// ErrFixed is a declined entry that cannot be declined (openid).
	ErrFixed = errors.New("consent: a fixed entry cannot be declined")
	// ErrRuleBroken is a decision whose granted entries break a catalog
	// rule between entries (company-identity without company-addresses).
	ErrRuleBroken = errors.New("consent: the granted entries break a catalog rule")
	// ErrBadMaximum is a lowered maximum that names no granted
	// automatic-charge object, is not an amount, or is outside the
	// requested minimum and maximum.
	ErrBadMaximum = errors.New("consent: a lowered maximum is not valid")
)

// Validate checks a decision against the model: its action, that a check
// failing refuses an approval, the declined entries (requested, not
// fixed), the rules between entries (Permission.Requires, and on a model
// made by Build the catalog's own check of what would be granted), and the
// account when a granted detail needs one. An approval that declines
// everything is valid: it is a denial (Denies).
func (m *Model) Validate(d Decision) error {
	switch d.Action {
	case Deny:
		return nil
	case Approve:
	default:
		return ErrUnknownAction
	}
	if !m.Approvable() {
		return ErrNotApprovable
	}
	scopes, details, err := m.granted(d)
	if err != nil {
		return err
	}
	if len(scopes)+len(details) == 0 {
		return nil // a denial
	}
	if err := m.checkRules(scopes, details); err != nil {
		return err
	}
	if err := m.checkMaximums(d.LoweredMaximums, details); err != nil {
		return err
	}
	return m.checkAccounts(d, details)
}

// checkAccounts checks the accounts a decision binds: one offered account
// of each owner whose account a granted detail binds.
func (m *Model) checkAccounts(d Decision, details []int) error {
	var owners []string
	for _, owner := range []string{OwnerSubject, OwnerCompany} {
		if slices.ContainsFunc(m.Permissions, func(p Permission) bool {
			return p.Kind == KindDetail && p.NeedsAccount && p.AccountOwner == owner && p.Index != nil && slices.Contains(details, *p.Index)
		}) {
			owners = append(owners, owner)
		}
	}
	for _, owner := range owners {
		field, id := d.accountField(owner)
		if len(owners) == 2 && owner == OwnerCompany && d.CompanyAccountID == "" {
			// account_id names the subject's: the Company's needs its own.
			field, id = "company_account_id", ""
		}
		if id == "" {
			return fmt.Errorf("%w: the %s's account for the granted details that bind one (%s)", ErrAccountRequired, ownerWord(owner), field)
		}
		if !slices.ContainsFunc(m.Accounts, func(a Account) bool { return a.ID == id && a.Owner == owner }) {
			return fmt.Errorf("%w: %s %s is not one of the offered accounts of the %s", ErrAccountNotOffered, field, id, ownerWord(owner))
		}
	}
	return nil
}

// AccountFor returns the account a decision binds to the details of an
// owner: CompanyAccountID for the Company when given, else AccountID.
func (d Decision) AccountFor(owner string) string {
	_, id := d.accountField(owner)
	return id
}

func (d Decision) accountField(owner string) (field, id string) {
	if owner == OwnerCompany && d.CompanyAccountID != "" {
		return "company_account_id", d.CompanyAccountID
	}
	return "account_id", d.AccountID
}

// granted returns the scopes and detail indexes an approval grants, after
// checking that each declined entry is requested and may be declined.
func (m *Model) granted(d Decision) (scopes []string, details []int, err error) {
	for i, name := range d.DeclinedScopes {
		k := slices.IndexFunc(m.Permissions, func(p Permission) bool { return p.Kind == KindScope && p.Name == name })
		if k < 0 {
			return nil, nil, fmt.Errorf("%w: declined_scopes[%d] %q is not a requested scope; name one of the scopes in permissions", ErrNotRequested, i, name)
		}
		if m.Permissions[k].Fixed {
			return nil, nil, fmt.Errorf("%w: declined_scopes[%d] %q is the sign-in of an OpenID Connect request; approve it or deny the whole request", ErrFixed, i, name)
		}
	}
	for i, idx := range d.DeclinedDetails {
		if !slices.ContainsFunc(m.Permissions, func(p Permission) bool { return p.Kind == KindDetail && p.Index != nil && *p.Index == idx }) {
			return nil, nil, fmt.Errorf("%w: declined_details[%d] %d is not the index of a requested authorization_details object; use the index of a detail in permissions", ErrNotRequested, i, idx)
		}
	}
	for _, p := range m.Permissions {
		switch {
		case p.Kind == KindScope && !slices.Contains(d.DeclinedScopes, p.Name):
			scopes = append(scopes, p.Name)
		case p.Kind == KindDetail && p.Index != nil && !slices.Contains(d.DeclinedDetails, *p.Index):
			details = append(details, *p.Index)
		}
	}
	return scopes, details, nil
}

// checkRules refuses a grant that breaks a rule between entries: first
// the model's own Requires (what a host that has only the JSON model can
// check), then, on a model made by Build, the catalog's check of the
// request that would be granted.
func (m *Model) checkRules(scopes []string, details []int) error {
	for _, p := range m.Permissions {
		if !grants(p, scopes, details) {
			continue
		}
		for _, r := range p.Requires {
			if !grants(Permission{Kind: r.Kind, Name: r.Name, Index: r.Index}, scopes, details) {
				return fmt.Errorf("%w: %s", ErrRuleBroken, r.Message)
			}
		}
	}
	if m.cat == nil {
		return nil
	}
	if vs := m.recheck(scopes, details); len(vs) > 0 {
		v := vs[0]
		return fmt.Errorf("%w: %s: %s (%s); grant the entries it needs as well, or decline it too", ErrRuleBroken, v.Pointer, v.Message, v.Code)
	}
	return nil
}

// checkMaximums checks the lowered maximums of a decision: each names a
// granted object with a transaction (an automatic charge), once, and is an
// amount from the requested minimum to the requested maximum.
func (m *Model) checkMaximums(lowered []LoweredMaximum, details []int) error {
	for i, lm := range lowered {
		at := fmt.Sprintf("lowered_maximums[%d]", i)
		k := slices.IndexFunc(m.Permissions, func(p Permission) bool { return p.Kind == KindDetail && p.Index != nil && *p.Index == lm.Index })
		switch {
		case k < 0:
			return fmt.Errorf("%w: %s.index %d is not the index of a requested authorization_details object", ErrBadMaximum, at, lm.Index)
		case m.Permissions[k].Limits == nil || m.Permissions[k].Limits.Maximum == "":
			return fmt.Errorf("%w: %s.index %d has no transaction.maximum to lower (only an automatic charge has one)", ErrBadMaximum, at, lm.Index)
		case !slices.Contains(details, lm.Index):
			return fmt.Errorf("%w: %s.index %d is declined; lower the maximum of a granted object only", ErrBadMaximum, at, lm.Index)
		case slices.ContainsFunc(lowered[:i], func(o LoweredMaximum) bool { return o.Index == lm.Index }):
			return fmt.Errorf("%w: %s.index %d is named twice; give one maximum per object", ErrBadMaximum, at, lm.Index)
		}
		l := m.Permissions[k].Limits
		v, ok := amount(lm.Maximum)
		if !ok {
			return fmt.Errorf("%w: %s.maximum %q is not an amount (digits, no leading zero, at most 15: %s)", ErrBadMaximum, at, lm.Maximum, catalog.AmountPattern)
		}
		lo, _ := amount(l.Minimum)
		hi, _ := amount(l.Maximum)
		if v < lo || v > hi {
			return fmt.Errorf("%w: %s.maximum %s is outside the requested limits; give an amount from %s (transaction.minimum) to %s (transaction.maximum)", ErrBadMaximum, at, lm.Maximum, l.Minimum, l.Maximum)
		}
	}
	return nil
}

// amount reads an amount of docs/service.md §2.2 rule 5.
func amount(s string) (int64, bool) {
	if !amountRe.MatchString(s) {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

var amountRe = regexp.MustCompile(catalog.AmountPattern)

// grants reports whether p is among the granted entries.
func grants(p Permission, scopes []string, details []int) bool {
	if p.Kind == KindScope {
		return slices.Contains(scopes, p.Name)
	}
	return p.Index != nil && slices.Contains(details, *p.Index)
}

// recheck runs the catalog on the request that would be granted: the
// granted scopes with their resources, the granted objects as requested,
// the same org_id. The request was valid whole, so any violation is a rule
// between entries that declining broke. Pointers into authorization_details
// are given with the objects' indexes in the original request.
func (m *Model) recheck(scopes []string, details []int) []catalog.Violation {
	req := catalog.Request{Scope: strings.Join(scopes, " "), OrgID: m.orgID}
	for _, s := range scopes {
		if sc, ok := m.cat.Scope(s); ok && !slices.Contains(req.Resource, sc.Resource) {
			req.Resource = append(req.Resource, sc.Resource)
		}
	}
	var texts [][]byte
	for _, det := range m.res.Details {
		if slices.Contains(details, det.Index) {
			texts = append(texts, det.JSON)
		}
	}
	if len(texts) > 0 {
		req.AuthorizationDetails = json.RawMessage("[" + string(bytes.Join(texts, []byte(","))) + "]")
	}
	vs := m.cat.Check(req).Violations
	const prefix = "/authorization_details/"
	for i, v := range vs {
		if !strings.HasPrefix(v.Pointer, prefix) {
			continue
		}
		num, rest, _ := strings.Cut(v.Pointer[len(prefix):], "/")
		if k, err := strconv.Atoi(num); err == nil && k >= 0 && k < len(details) {
			if rest != "" {
				rest = "/" + rest
			}
			vs[i].Pointer = prefix + strconv.Itoa(details[k]) + rest
		}
	}
	return vs
}
