// Package consent holds the whole consent decision. It turns an
// authorization request that the catalog has validated into the consent
// screen's model (screen.go: Build): who asks (project and client), for
// whom (subject, company), each permission with its catalog meaning, its
// actions and limits, the bank accounts the subject may choose from, and,
// from the subject's remembered consent, whether the screen may be skipped
// (remember.go). It checks the subject's Decision against that model
// (decision.go: Validate) and says what a decision grants, in one call
// (grant.go: GrantOf).
//
// The model is plain data, JSON-serialisable, free of HTTP and storage: the
// reference server's consent page, its native-consent API and the host's
// consent view all render the same Model.
package consent

import (
	"encoding/json"
	"fmt"
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
	// Remembered is the subject's remembered consent for the client when
	// it covers every requested permission (the caller's CheckConsent
	// passed), nil otherwise. Build decides whether the model is
	// Remembered (remember.go).
	Remembered *Remembered
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
	m.remember(in.Remembered)
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

func str(v any) string { s, _ := v.(string); return s }

func num(v any) int64 {
	if n, ok := v.(json.Number); ok {
		i, _ := n.Int64()
		return i
	}
	return 0
}
