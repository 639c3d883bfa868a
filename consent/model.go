// Package consent turns an authorization request that the catalog has
// validated into the consent screen's model: who asks (project and client),
// for whom (subject, company), each permission with its catalog meaning, its
// actions and limits, and the bank accounts the subject may choose from; and
// it checks the subject's Decision against that model.
//
// The model is plain data, JSON-serialisable, free of HTTP and storage: the
// reference server's consent page, its native-consent API and the host's
// consent view all render the same Model.
package consent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// Party names a project.
type Party struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Client is the OAuth client that asks.
type Client struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Type is "public" or "confidential".
	Type string `json:"type"`
}

// Subject is the person asked.
type Subject struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
}

// Company is the Company chosen with org_id (docs/service.md §2.2 rule 3).
type Company struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	LegalID string `json:"legal_id"`
	Country string `json:"country"`
}

// Account owners.
const (
	OwnerSubject = "subject"
	OwnerCompany = "company"
)

// Account is a bank account the subject could bind to the authorization.
type Account struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Number   string `json:"number"`
	Currency string `json:"currency"`
	// Owner is OwnerSubject or OwnerCompany.
	Owner string `json:"owner"`
}

// Permission kinds.
const (
	KindScope  = "scope"
	KindDetail = "detail"
)

// Action is one requested action with its catalog meaning.
type Action struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// Permission is one line of the consent screen: a scope or an
// authorization_details object.
type Permission struct {
	Kind string `json:"kind"`
	// Name is the scope name or the detail's `type`.
	Name string `json:"name"`
	// Key is the detail type's short key ("bank_account", "documents"...).
	Key     string `json:"key,omitempty"`
	Meaning string `json:"meaning"`
	// Provider and Resource say who will act on a detail.
	Provider string `json:"provider,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Index is the detail's position in authorization_details.
	Index   *int     `json:"index,omitempty"`
	Actions []Action `json:"actions,omitempty"`
	Limits  *Limits  `json:"limits,omitempty"`
	// NeedsAccount is true when approving binds one of Model.Accounts to
	// this detail (the current resolver selects one account, docs/service.md §2.3).
	NeedsAccount bool `json:"needs_account,omitempty"`
	// AccountOwner says whose account a detail that NeedsAccount binds:
	// OwnerSubject (bank_account) or OwnerCompany (automatic-charge, whose
	// sources are the Company's, docs/service.md §2.4).
	AccountOwner string `json:"account_owner,omitempty"`
	// CompanyScoped is true on a detail that acts for the request's
	// Company (docs/service.md §2.2 rule 3): the consent screen names the
	// Company beside it.
	CompanyScoped bool `json:"company_scoped,omitempty"`
	// Fixed is true when the entry cannot be declined: `openid` in an
	// OpenID Connect request (declining it would make the request no
	// sign-in at all). Every other entry can be declined (Decision).
	Fixed bool `json:"fixed,omitempty"`
	// Requires lists the entries this one is granted only together with,
	// by a catalog rule (company-identity needs company-addresses, and the
	// reverse): a decision that grants this entry and declines one of
	// those is refused with the requirement's message.
	Requires []Requirement `json:"requires,omitempty"`
}

// Entry names the permission as a form value: "scope " and the scope
// name, or "detail " and the detail's index.
func (p Permission) Entry() string {
	if p.Kind == KindDetail && p.Index != nil {
		return "detail " + strconv.Itoa(*p.Index)
	}
	return "scope " + p.Name
}

// Declined is the decision's declined entries when a form granted only
// the entries named in granted (values of Entry): every permission that
// is not fixed and not named there.
func (m *Model) Declined(granted []string) (scopes []string, details []int) {
	for _, p := range m.Permissions {
		if p.Fixed || slices.Contains(granted, p.Entry()) {
			continue
		}
		if p.Kind == KindScope {
			scopes = append(scopes, p.Name)
		} else if p.Index != nil {
			details = append(details, *p.Index)
		}
	}
	return scopes, details
}

// Requirement is an entry that must be granted with another, and why.
type Requirement struct {
	// Kind is KindScope or KindDetail; Name is the scope name or the
	// detail's type, Index the detail's position in authorization_details.
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Index   *int   `json:"index,omitempty"`
	Message string `json:"message"`
}

// Limits are the bounds a detail puts on what it grants, as requested.
// Amounts are strings of digits in CLP (docs/service.md §2.2 rule 5).
type Limits struct {
	Currency          string          `json:"currency,omitempty"`
	Minimum           string          `json:"minimum,omitempty"`
	Maximum           string          `json:"maximum,omitempty"`
	Budget            *Budget         `json:"budget,omitempty"`
	Selection         *Selection      `json:"selection,omitempty"`
	Identifiers       []string        `json:"identifiers,omitempty"`
	Sources           []string        `json:"sources,omitempty"`
	Beneficiaries     []string        `json:"beneficiaries,omitempty"`
	AccountBinding    *AccountBinding `json:"account_binding,omitempty"`
	SubjectIdentifier string          `json:"subject_identifier,omitempty"`
}

// Budget is an automatic charge's cumulative budget (accepted, not enforced:
// docs/service.md §2.4).
type Budget struct {
	Amount   string `json:"amount"`
	Unit     string `json:"unit"`
	Count    int64  `json:"count"`
	TimeZone string `json:"time_zone"`
}

// Selection is how many accounts a detail asks the subject to pick.
type Selection struct {
	Min int64 `json:"min,omitempty"`
	Max int64 `json:"max,omitempty"`
}

// AccountBinding is the automatic charge's account binding (docs/service.md §2.4).
type AccountBinding struct {
	Key           string `json:"key"`
	SuggestedName string `json:"suggested_name"`
	Editable      bool   `json:"editable"`
}

// Check outcomes. Ask is the subject-consent check's outcome while the
// subject is being asked: it does not block an approval, which is the
// answer.
const (
	Pass = "pass"
	Fail = "fail"
	Ask  = "ask"
)

// Check names: the catalog, and the three checks of docs/service.md §1 that apply
// beside it (the project's approval, the subject's consent, the resource's
// controls: company access, account ownership, beneficiaries, a fitting
// account).
const (
	CheckCatalog         = "catalog"
	CheckProjectApproval = "project_approval"
	CheckConsent         = "consent"
	CheckCompanyAccess   = "company_access"
	CheckAccountOwner    = "account_ownership"
	CheckBeneficiaries   = "beneficiaries"
	CheckAccounts        = "accounts"
)

// Codes are the stable error codes of failed checks: an approval of a
// model with a failed check is refused with the first failed check's code
// (docs/native-consent.md).
const (
	CodeProjectNotApproved    = "project_not_approved"
	CodeCompanyAccessDenied   = "company_access_denied"
	CodeAccountNotOwned       = "account_not_owned"
	CodeBeneficiaryNotAllowed = "beneficiary_not_allowed"
	CodeNoFittingAccount      = "no_fitting_account"
)

// Check is the outcome of one of the checks that apply beside the catalog
// (docs/service.md §1: project approval, subject consent, resource controls). A model
// with a failed check can only be denied.
type Check struct {
	Name    string `json:"name"`
	Outcome string `json:"outcome"`
	// Code is the error code of a failed check.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Model is the consent screen.
type Model struct {
	Project     Party        `json:"project"`
	Client      Client       `json:"client"`
	Subject     Subject      `json:"subject"`
	Company     *Company     `json:"company,omitempty"`
	Permissions []Permission `json:"permissions"`
	// Accounts are the accounts the subject may choose from; when
	// AccountRequired, an approval names exactly one of them.
	Accounts        []Account `json:"accounts"`
	AccountRequired bool      `json:"account_required"`
	Checks          []Check   `json:"checks"`
	// Remembered is true when the subject already consented to every
	// requested permission for this client (and Company): the host need
	// not show the screen, and approving with RememberedAccount (when an
	// account is required) answers for the subject.
	Remembered        bool   `json:"remembered,omitempty"`
	RememberedAccount string `json:"remembered_account,omitempty"`

	// Set by Build, for Validate's catalog check of what a decision
	// grants; absent from a model read back from JSON.
	cat   *catalog.Catalog
	res   *catalog.Result
	orgID string
}

// Approvable reports whether no check failed.
func (m *Model) Approvable() bool { return m.Failed() == nil }

// Failed returns the first failed check, or nil.
func (m *Model) Failed() *Check {
	for i, c := range m.Checks {
		if c.Outcome == Fail {
			return &m.Checks[i]
		}
	}
	return nil
}

// Input is what Build needs besides the catalog.
type Input struct {
	Project Party
	Client  Client
	Subject Subject
	Company *Company
	// Candidates are every account of the subject and of the Company; Build
	// offers those that fit the requested details.
	Candidates []Account
	// Result is the catalog's reading of the request; it must be valid.
	Result *catalog.Result
	// Checks are outcomes computed by the caller (company access...).
	Checks []Check
	// OrgID is the request's org_id, "" without one.
	OrgID string
}

// Build makes the consent model of a valid request.
func Build(cat *catalog.Catalog, in Input) *Model {
	m := &Model{
		Project: in.Project, Client: in.Client, Subject: in.Subject, Company: in.Company,
		Permissions: []Permission{}, Accounts: []Account{}, Checks: append([]Check{{Name: CheckCatalog, Outcome: Pass}}, in.Checks...),
		cat: cat, res: in.Result, orgID: in.OrgID,
	}
	if m.orgID == "" && in.Company != nil {
		m.orgID = in.Company.ID
	}
	for _, s := range in.Result.Scopes {
		sc, _ := cat.Scope(s)
		// openid makes the request an OpenID Connect sign-in: it is
		// granted with any approval (OpenID Connect Core §3.1.2.1).
		m.Permissions = append(m.Permissions, Permission{Kind: KindScope, Name: s, Meaning: sc.Meaning, Fixed: s == "openid"})
	}
	// Each owner's accounts are narrowed by the details that bind one of
	// them: a bank_account detail binds an account of the subject, an
	// automatic-charge detail one of the Company (docs/service.md §2.3,
	// §2.4). An approval binds one account per owner (Decision.AccountFor),
	// so a request with both kinds offers both owners' fitting accounts.
	offered := map[string][]Account{}
	for _, d := range in.Result.Details {
		p := Permission{Kind: KindDetail, Name: d.Type.Name, Key: d.Type.Key, Meaning: d.Type.Meaning,
			Provider: string(d.Type.Provider), Resource: d.Type.Resource, Index: &d.Index, Limits: limitsOf(d.Object),
			CompanyScoped: d.Type.CompanyScoped}
		for _, a := range d.Actions {
			act, _ := d.Type.Action(a)
			p.Actions = append(p.Actions, Action{Name: a, Meaning: act.Meaning})
		}
		if owner, named := accountNeed(d); owner != "" {
			p.NeedsAccount, p.AccountOwner = true, owner
			m.AccountRequired = true
			fit, seen := offered[owner]
			if !seen {
				fit = slices.DeleteFunc(slices.Clone(in.Candidates), func(a Account) bool { return a.Owner != owner })
			}
			offered[owner] = slices.DeleteFunc(fit, func(a Account) bool { return len(named) > 0 && !slices.Contains(named, a.ID) })
		}
		m.Permissions = append(m.Permissions, p)
	}
	m.requirements()
	if m.AccountRequired {
		for _, a := range in.Candidates {
			if slices.ContainsFunc(offered[a.Owner], func(b Account) bool { return b.ID == a.ID }) {
				m.Accounts = append(m.Accounts, a)
			}
		}
		chk := Check{Name: CheckAccounts, Outcome: Pass}
		for _, owner := range []string{OwnerSubject, OwnerCompany} {
			if fit, need := offered[owner]; need && len(fit) == 0 {
				chk = Check{Name: CheckAccounts, Outcome: Fail, Code: CodeNoFittingAccount,
					Message: fmt.Sprintf("no account of the %s fits every requested detail that binds one", ownerWord(owner))}
				break
			}
		}
		m.Checks = append(m.Checks, chk)
	}
	return m
}

// ownerWord names an account owner in a message.
func ownerWord(owner string) string {
	if owner == OwnerCompany {
		return "Company"
	}
	return "subject"
}

// AccountOwners returns the owners whose account an approval of every
// entry binds, subject first.
func (m *Model) AccountOwners() []string {
	var owners []string
	for _, o := range []string{OwnerSubject, OwnerCompany} {
		if slices.ContainsFunc(m.Permissions, func(p Permission) bool { return p.NeedsAccount && p.AccountOwner == o }) {
			owners = append(owners, o)
		}
	}
	return owners
}

// AccountsOf returns the offered accounts of one owner (the consent page
// shows one choice per owner).
func (m *Model) AccountsOf(owner string) []Account {
	var out []Account
	for _, a := range m.Accounts {
		if a.Owner == owner {
			out = append(out, a)
		}
	}
	return out
}

// accountNeed says whose account a detail binds and which accounts the
// request already named: bank_account binds one of the subject's accounts,
// automatic-charge one of the Company's (its paying source).
func accountNeed(d catalog.Detail) (owner string, named []string) {
	switch d.Type.Key {
	case "bank_account":
		return OwnerSubject, catalog.Strings(d.Object["identifiers"])
	case "automatic-charge":
		return OwnerCompany, catalog.Strings(d.Object["sources"])
	}
	return "", nil
}

func limitsOf(obj map[string]any) *Limits {
	l := &Limits{
		Identifiers:   catalog.Strings(obj["identifiers"]),
		Sources:       catalog.Strings(obj["sources"]),
		Beneficiaries: catalog.Strings(obj["beneficiaries"]),
	}
	if t, ok := obj["transaction"].(map[string]any); ok {
		l.Currency, l.Minimum, l.Maximum = str(t["currency"]), str(t["minimum"]), str(t["maximum"])
	}
	if b, ok := obj["budget"].(map[string]any); ok {
		iv, _ := b["interval"].(map[string]any)
		l.Budget = &Budget{Amount: str(b["amount"]), Unit: str(iv["unit"]), Count: num(iv["count"]), TimeZone: str(b["time_zone"])}
	}
	if s, ok := obj["selection"].(map[string]any); ok {
		l.Selection = &Selection{Min: num(s["min"]), Max: num(s["max"])}
	}
	if ab, ok := obj["account_binding"].(map[string]any); ok {
		name, _ := ab["name"].(map[string]any)
		ed, _ := name["editable"].(bool)
		l.AccountBinding = &AccountBinding{Key: str(ab["key"]), SuggestedName: str(name["suggested"]), Editable: ed}
	}
	if s, ok := obj["subject"].(map[string]any); ok {
		l.SubjectIdentifier = str(s["identifier"])
	}
	if l.Currency == "" && l.Budget == nil && l.Selection == nil && l.AccountBinding == nil && l.SubjectIdentifier == "" &&
		len(l.Identifiers)+len(l.Sources)+len(l.Beneficiaries) == 0 {
		return nil
	}
	return l
}

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

// requirements fills in Permission.Requires: for each entry that can be
// declined, the catalog checks the request without it, and every object
// that a violation then points at requires that entry.
func (m *Model) requirements() {
	if len(m.Permissions) < 2 {
		return
	}
	var scopes []string
	var details []int
	for _, p := range m.Permissions {
		if p.Kind == KindScope {
			scopes = append(scopes, p.Name)
		} else if p.Index != nil {
			details = append(details, *p.Index)
		}
	}
	for e, p := range m.Permissions {
		if p.Fixed {
			continue
		}
		var vs []catalog.Violation
		if p.Kind == KindScope {
			vs = m.recheck(slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return s == p.Name }), details)
		} else {
			vs = m.recheck(scopes, slices.DeleteFunc(slices.Clone(details), func(i int) bool { return i == *p.Index }))
		}
		for _, v := range vs {
			for j := range m.Permissions {
				q := &m.Permissions[j]
				if j == e || q.Index == nil || !strings.HasPrefix(v.Pointer+"/", "/authorization_details/"+strconv.Itoa(*q.Index)+"/") {
					continue
				}
				if slices.ContainsFunc(q.Requires, func(r Requirement) bool { return r.Kind == p.Kind && r.Name == p.Name && sameIndex(r.Index, p.Index) }) {
					continue
				}
				q.Requires = append(q.Requires, Requirement{Kind: p.Kind, Name: p.Name, Index: p.Index,
					Message: fmt.Sprintf("%s is granted only together with %s (catalog rule %s): grant both or decline both", label(*q), label(p), v.Code)})
			}
		}
	}
}

func sameIndex(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// label names an entry for a message: "scope profile", or
// "authorization_details/1 (company-addresses)".
func label(p Permission) string {
	if p.Kind == KindScope {
		return "scope " + p.Name
	}
	name := p.Key
	if name == "" {
		name = p.Name
	}
	return fmt.Sprintf("authorization_details/%d (%s)", *p.Index, name)
}

// Granted is what a decision grants of a request: the requested scopes
// and objects less the declined ones (all of them for a denial). The
// decision must have passed Validate.
func Granted(res *catalog.Result, d Decision) *catalog.Result {
	g := &catalog.Result{}
	if d.Action != Approve {
		return g
	}
	for _, s := range res.Scopes {
		if !slices.Contains(d.DeclinedScopes, s) {
			g.Scopes = append(g.Scopes, s)
		}
	}
	for _, det := range res.Details {
		if slices.Contains(d.DeclinedDetails, det.Index) {
			continue
		}
		if k := slices.IndexFunc(d.LoweredMaximums, func(lm LoweredMaximum) bool { return lm.Index == det.Index }); k >= 0 {
			det = lowered(det, d.LoweredMaximums[k].Maximum)
		}
		g.Details = append(g.Details, det)
	}
	return g
}

// lowered is det with its transaction.maximum set to maximum: what the
// grant holds, and what is remembered as consented (Keys), so that the
// requested maximum is asked for again.
func lowered(det catalog.Detail, maximum string) catalog.Detail {
	t, ok := det.Object["transaction"].(map[string]any)
	if !ok {
		return det
	}
	obj := maps.Clone(det.Object)
	tx := maps.Clone(t)
	tx["maximum"] = maximum
	obj["transaction"] = tx
	det.Object = obj
	if js, err := json.Marshal(obj); err == nil {
		det.JSON = js
	}
	return det
}

// Denies reports whether a decision, which passed Validate, is a denial:
// "deny", or an approval that declines every requested entry.
func Denies(res *catalog.Result, d Decision) bool {
	g := Granted(res, d)
	return len(g.Scopes)+len(g.Details) == 0
}

// NeedsAccount reports whether a detail of res binds an account.
func NeedsAccount(res *catalog.Result) bool {
	return slices.ContainsFunc(res.Details, func(d catalog.Detail) bool { o, _ := accountNeed(d); return o != "" })
}

// GrantedDetails returns the authorization_details that an approval grants:
// the requested objects it does not decline, with the chosen account bound
// in place of a selection (bank_account gets `identifiers`,
// automatic-charge gets `sources`). The decision must have passed
// Validate.
func GrantedDetails(res *catalog.Result, d Decision) (json.RawMessage, error) {
	granted := Granted(res, d).Details
	out := make([]map[string]any, 0, len(granted))
	for _, det := range granted {
		obj := make(map[string]any, len(det.Object))
		for k, v := range det.Object {
			obj[k] = v
		}
		if owner, _ := accountNeed(det); owner != "" && d.AccountFor(owner) != "" {
			field := "identifiers"
			if owner == OwnerCompany {
				field = "sources"
			}
			delete(obj, "selection")
			obj[field] = []string{d.AccountFor(owner)}
		}
		out = append(out, obj)
	}
	js, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("consent: %w", err)
	}
	return js, nil
}

func str(v any) string { s, _ := v.(string); return s }

func num(v any) int64 {
	if n, ok := v.(json.Number); ok {
		i, _ := n.Int64()
		return i
	}
	return 0
}
