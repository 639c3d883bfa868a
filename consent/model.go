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
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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
}

// Build makes the consent model of a valid request.
func Build(cat *catalog.Catalog, in Input) *Model {
	m := &Model{
		Project: in.Project, Client: in.Client, Subject: in.Subject, Company: in.Company,
		Permissions: []Permission{}, Accounts: []Account{}, Checks: append([]Check{{Name: CheckCatalog, Outcome: Pass}}, in.Checks...),
	}
	for _, s := range in.Result.Scopes {
		sc, _ := cat.Scope(s)
		m.Permissions = append(m.Permissions, Permission{Kind: KindScope, Name: s, Meaning: sc.Meaning})
	}
	offered := slices.Clone(in.Candidates)
	for _, d := range in.Result.Details {
		p := Permission{Kind: KindDetail, Name: d.Type.Name, Key: d.Type.Key, Meaning: d.Type.Meaning,
			Provider: string(d.Type.Provider), Resource: d.Type.Resource, Index: &d.Index, Limits: limitsOf(d.Object)}
		for _, a := range d.Actions {
			act, _ := d.Type.Action(a)
			p.Actions = append(p.Actions, Action{Name: a, Meaning: act.Meaning})
		}
		if owner, named := accountNeed(d); owner != "" {
			p.NeedsAccount = true
			m.AccountRequired = true
			offered = slices.DeleteFunc(offered, func(a Account) bool {
				return a.Owner != owner || (len(named) > 0 && !slices.Contains(named, a.ID))
			})
		}
		m.Permissions = append(m.Permissions, p)
	}
	if m.AccountRequired {
		if offered != nil {
			m.Accounts = offered // never null in JSON: Accounts starts as []
		}
		if len(offered) == 0 {
			m.Checks = append(m.Checks, Check{Name: CheckAccounts, Outcome: Fail, Code: CodeNoFittingAccount,
				Message: "no account of the subject fits every requested detail"})
		} else {
			m.Checks = append(m.Checks, Check{Name: CheckAccounts, Outcome: Pass})
		}
	}
	return m
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
type Decision struct {
	// Action is Approve or Deny.
	Action string `json:"action"`
	// AccountID names the chosen account when the model requires one.
	AccountID string `json:"account_id,omitempty"`
}

// Errors of Validate.
var (
	ErrUnknownAction     = errors.New("consent: action must be \"approve\" or \"deny\"")
	ErrNotApprovable     = errors.New("consent: a check failed; the request can only be denied")
	ErrAccountRequired   = errors.New("consent: approving this request needs an account_id from the offered accounts")
	ErrAccountNotOffered = errors.New("consent: account_id is not one of the offered accounts")
)

// Validate checks a decision against the model.
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
	if !m.AccountRequired {
		return nil
	}
	if d.AccountID == "" {
		return ErrAccountRequired
	}
	if !slices.ContainsFunc(m.Accounts, func(a Account) bool { return a.ID == d.AccountID }) {
		return ErrAccountNotOffered
	}
	return nil
}

// GrantedDetails returns the authorization_details that an approval grants:
// the requested objects, with the chosen account bound in place of a
// selection (bank_account gets `identifiers`, automatic-charge gets
// `sources`). The decision must have passed Validate.
func GrantedDetails(res *catalog.Result, d Decision) (json.RawMessage, error) {
	out := make([]map[string]any, 0, len(res.Details))
	for _, det := range res.Details {
		obj := make(map[string]any, len(det.Object))
		for k, v := range det.Object {
			obj[k] = v
		}
		if owner, _ := accountNeed(det); owner != "" && d.AccountID != "" {
			field := "identifiers"
			if owner == OwnerCompany {
				field = "sources"
			}
			delete(obj, "selection")
			obj[field] = []string{d.AccountID}
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
