package devctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
	"github.com/miniapp-host/miniapp-host/consent"
	"github.com/miniapp-host/miniapp-host/jsonpointer"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

// Fixtures (docs/dashboard.md, "Fixtures"): test identities and
// decisions applied from one file in one transaction, and every decision
// of a subject or client forgotten in one call.

// FixtureStore is what the fixtures read and write: the world, the
// registered clients, and the two writes of package store's fixture.go.
type FixtureStore interface {
	// Subject returns a subject, or store.ErrNotFound.
	Subject(ctx context.Context, id string) (store.Subject, error)
	// Company returns a company, or store.ErrNotFound.
	Company(ctx context.Context, id string) (store.Company, error)
	// MemberOf reports whether a subject may act for a company.
	MemberOf(ctx context.Context, subjectID, companyID string) (bool, error)
	// AccountsOf returns a subject's accounts (companyID "") or a
	// company's (subjectID "").
	AccountsOf(ctx context.Context, subjectID, companyID string) ([]store.Account, error)
	// Client returns a client that was not removed, or store.ErrNotFound.
	Client(ctx context.Context, id string) (*store.Client, error)
	// ApplyFixture writes a fixture in one transaction, all or nothing.
	ApplyFixture(ctx context.Context, f *store.Fixture) error
	// ForgetDecisions forgets the remembered consents and revokes the
	// active grants of a subject, a client, or both, in one transaction.
	ForgetDecisions(ctx context.Context, subjectID, clientID string, now time.Time) (*store.Forgotten, error)
}

// Authority is what the fixtures take from the OAuth server: the catalog
// in force, which checks a fixture's scopes and authorization_details as
// the authorization endpoint checks a request's, and what an approval
// adds to a grant and its token.
type Authority interface {
	// Catalog returns the catalog in force.
	Catalog() *catalog.Catalog
	// CompleteGrant sets a grant's audience and installation id as an
	// approval of granted would.
	CompleteGrant(g *store.Grant, granted *catalog.Result)
	// MintAccessToken signs an access token of a grant without storing
	// it, and returns its lifetime.
	MintAccessToken(ctx context.Context, g *store.Grant) (string, *store.AccessToken, time.Duration, error)
}

// CodeUnknownReference is a fixture's refusal of a name that neither the
// file nor the store holds.
const CodeUnknownReference = "unknown_reference"

// fixtureVersion is the one version of the fixture file.
const fixtureVersion = 1

// maxFixtureEntries bounds each list of a fixture file.
const maxFixtureEntries = 1000

func (c *Controls) fixtureRoutes() {
	// POST /api/dev/fixtures: apply a fixture file; /reset: forget decisions.
	c.mux.HandleFunc("POST /api/dev/fixtures", c.handleFixtureApply)
	c.mux.HandleFunc("POST /api/dev/fixtures/reset", c.handleFixtureReset)
}

// The parsed fixture file (docs/dashboard.md, "Fixtures"). Each record
// keeps the JSON pointer it was read at, for the refusals of the checks
// that follow parsing.

type fixtureFile struct {
	Subjects  []fxSubject
	Companies []fxCompany
	Consents  []fxConsent
	Grants    []fxGrant
}

type fxSubject struct {
	ptr       string
	ID        string
	Profile   store.Profile
	Accounts  []fxAccount
	Companies []fxMembership
}

type fxAccount struct {
	ptr                    string
	ID, Name, Number, Curr string
}

type fxMembership struct {
	ptr      string
	ID, Role string
}

type fxCompany struct {
	ptr                        string
	ID, Name, LegalID, Country string
	Addresses                  []store.Address
	Accounts                   []fxAccount
}

// fxDecision is what a consent and a grant share: who, for which client,
// and what.
type fxDecision struct {
	ptr       string
	Subject   string
	ClientID  string
	OrgID     string
	Scope     []string
	Details   json.RawMessage // nil when absent
	AccountID string          // consents only
}

type fxConsent struct{ fxDecision }

type fxGrant struct {
	fxDecision
	ID      string
	Revoked bool
}

var (
	subjectIDRe = regexp.MustCompile(`^sub_[a-z0-9_]{1,60}$`)
	companyIDRe = regexp.MustCompile(`^org_[a-z0-9_]{1,60}$`)
	uuidRe      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	currencyRe  = regexp.MustCompile(`^[A-Z]{3}$`)
	countryRe   = regexp.MustCompile(`^[A-Z]{2}$`)
)

// fieldErr is a refusal at a pointer.
func fieldErr(code, ptr, format string, a ...any) *Error {
	return &Error{Code: code, Field: ptr, Message: fmt.Sprintf(format, a...)}
}

// parseFixture reads a fixture file: strict JSON (no member named twice,
// bounded numbers and nesting), every member known, every value of its
// type and form. A refusal is an *Error at the JSON pointer of the value.
func parseFixture(data []byte) (*fixtureFile, error) {
	v, err := strictjson.Decode(data, strictjson.Limits{})
	if err != nil {
		e := &Error{Code: CodeInvalidBody, Message: "the fixture file is not one JSON document: " + err.Error()}
		var se *strictjson.SyntaxError
		if errors.As(err, &se) {
			e.Field = se.Pointer
		}
		return nil, e
	}
	p := &parser{}
	root := p.object(v, "", "version", "subjects", "companies", "consents", "grants")
	if p.err != nil {
		return nil, p.err
	}
	if _, ok := root["version"]; !ok {
		return nil, fieldErr(CodeMissingField, "/version", `the fixture file names its version: add "version": %d`, fixtureVersion)
	}
	if n, ok := root["version"].(json.Number); !ok || n.String() != strconv.Itoa(fixtureVersion) {
		return nil, fieldErr(CodeInvalidField, "/version", `version must be the number %d, the one version of the fixture file (docs/dashboard.md, "Fixtures")`, fixtureVersion)
	}
	f := &fixtureFile{}
	for i, el := range p.list(root, "", "subjects") {
		f.Subjects = append(f.Subjects, p.subject(el, "/subjects/"+strconv.Itoa(i)))
	}
	for i, el := range p.list(root, "", "companies") {
		f.Companies = append(f.Companies, p.company(el, "/companies/"+strconv.Itoa(i)))
	}
	for i, el := range p.list(root, "", "consents") {
		ptr := "/consents/" + strconv.Itoa(i)
		m := p.object(el, ptr, "subject", "client_id", "org_id", "scope", "authorization_details", "account_id")
		d := p.decision(m, ptr)
		d.AccountID = p.str(m, ptr, "account_id", false)
		if d.AccountID != "" && !uuidRe.MatchString(d.AccountID) {
			p.fail(fieldErr(CodeInvalidField, ptr+"/account_id", "account_id %q is no account id: an account id is a UUID in lower case", d.AccountID))
		}
		f.Consents = append(f.Consents, fxConsent{d})
	}
	for i, el := range p.list(root, "", "grants") {
		ptr := "/grants/" + strconv.Itoa(i)
		m := p.object(el, ptr, "id", "subject", "client_id", "org_id", "scope", "authorization_details", "revoked")
		g := fxGrant{ID: p.str(m, ptr, "id", true)}
		if p.err == nil && !uuidRe.MatchString(g.ID) {
			p.fail(fieldErr(CodeInvalidField, ptr+"/id", "grant id %q is no grant id: a grant id is a UUID in lower case, such as 0193a7c0-0000-7000-8000-00000000a001", g.ID))
		}
		g.fxDecision = p.decision(m, ptr)
		g.Revoked = p.boolean(m, ptr, "revoked")
		f.Grants = append(f.Grants, g)
	}
	if p.err != nil {
		return nil, p.err
	}
	if err := f.unique(); err != nil {
		return nil, err
	}
	return f, nil
}

// parser walks a decoded fixture file, keeping the first refusal.
type parser struct{ err *Error }

func (p *parser) fail(e *Error) {
	if p.err == nil {
		p.err = e
	}
}

// object returns v as an object whose members are all among fields.
func (p *parser) object(v any, ptr string, fields ...string) map[string]any {
	if p.err != nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		p.fail(fieldErr(CodeInvalidBody, ptr, "must be an object, got %s", kindOf(v)))
		return nil
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		p.fail(fieldErr(CodeInvalidBody, ptr+"/"+jsonpointer.Escape(unknown[0]),
			"unknown field %q: the members here are %s (docs/dashboard.md, \"Fixtures\")", unknown[0], strings.Join(fields, ", ")))
		return nil
	}
	return m
}

// list returns the member name of m as an array (nil when absent).
func (p *parser) list(m map[string]any, ptr, name string) []any {
	if p.err != nil {
		return nil
	}
	v, ok := m[name]
	if !ok {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		p.fail(fieldErr(CodeInvalidBody, ptr+"/"+name, "%s must be an array, got %s", name, kindOf(v)))
		return nil
	}
	if len(a) > maxFixtureEntries {
		p.fail(fieldErr(CodeInvalidField, ptr+"/"+name, "%s holds %d entries; a fixture file holds at most %d: split it into several files", name, len(a), maxFixtureEntries))
		return nil
	}
	return a
}

// str returns the member name of m as a string ("" when absent and not
// required).
func (p *parser) str(m map[string]any, ptr, name string, required bool) string {
	if p.err != nil {
		return ""
	}
	v, ok := m[name]
	if !ok {
		if required {
			p.fail(fieldErr(CodeMissingField, ptr+"/"+name, "%s is required here", name))
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		p.fail(fieldErr(CodeInvalidBody, ptr+"/"+name, "%s must be a string, got %s", name, kindOf(v)))
		return ""
	}
	if required && s == "" {
		p.fail(fieldErr(CodeMissingField, ptr+"/"+name, "%s must not be empty", name))
	}
	return s
}

func (p *parser) boolean(m map[string]any, ptr, name string) bool {
	if p.err != nil {
		return false
	}
	v, ok := m[name]
	if !ok {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		p.fail(fieldErr(CodeInvalidBody, ptr+"/"+name, "%s must be true or false, got %s", name, kindOf(v)))
	}
	return b
}

func (p *parser) subject(v any, ptr string) fxSubject {
	m := p.object(v, ptr, "id", "profile", "accounts", "companies")
	s := fxSubject{ptr: ptr, ID: p.str(m, ptr, "id", true)}
	if p.err == nil && !subjectIDRe.MatchString(s.ID) {
		p.fail(fieldErr(CodeInvalidField, ptr+"/id", "subject id %q breaks the rule: sub_ and 1 to 60 of a-z, 0-9 and _, such as sub_qa_dana", s.ID))
	}
	if p.err == nil {
		if _, ok := m["profile"]; !ok {
			p.fail(fieldErr(CodeMissingField, ptr+"/profile", `a subject has a profile: add "profile": {"name": "..."}`))
		}
	}
	s.Profile = p.profile(m["profile"], ptr+"/profile")
	for i, el := range p.list(m, ptr, "accounts") {
		s.Accounts = append(s.Accounts, p.account(el, ptr+"/accounts/"+strconv.Itoa(i)))
	}
	for i, el := range p.list(m, ptr, "companies") {
		mp := ptr + "/companies/" + strconv.Itoa(i)
		mm := p.object(el, mp, "id", "role")
		ms := fxMembership{ptr: mp, ID: p.str(mm, mp, "id", true), Role: p.str(mm, mp, "role", true)}
		switch {
		case p.err != nil:
		case !companyIDRe.MatchString(ms.ID):
			p.fail(fieldErr(CodeInvalidField, mp+"/id", "company id %q breaks the rule: org_ and 1 to 60 of a-z, 0-9 and _, such as org_andes", ms.ID))
		case ms.Role != "admin" && ms.Role != "member":
			p.fail(fieldErr(CodeInvalidField, mp+"/role", `role %q is none of the roles: "admin" or "member"`, ms.Role))
		}
		s.Companies = append(s.Companies, ms)
	}
	return s
}

func (p *parser) profile(v any, ptr string) store.Profile {
	m := p.object(v, ptr, "name", "given_name", "family_name", "email", "email_verified", "phone_number", "phone_number_verified", "addresses")
	pr := store.Profile{
		Name: p.str(m, ptr, "name", true), GivenName: p.str(m, ptr, "given_name", false), FamilyName: p.str(m, ptr, "family_name", false),
		Email: p.str(m, ptr, "email", false), EmailVerified: p.boolean(m, ptr, "email_verified"),
		PhoneNumber: p.str(m, ptr, "phone_number", false), PhoneNumberVerified: p.boolean(m, ptr, "phone_number_verified"),
		Addresses: []store.Address{},
	}
	for i, el := range p.list(m, ptr, "addresses") {
		pr.Addresses = append(pr.Addresses, p.address(el, ptr+"/addresses/"+strconv.Itoa(i)))
	}
	return pr
}

func (p *parser) address(v any, ptr string) store.Address {
	m := p.object(v, ptr, "street_address", "locality", "region", "postal_code", "country")
	a := store.Address{StreetAddress: p.str(m, ptr, "street_address", true), Locality: p.str(m, ptr, "locality", true),
		Region: p.str(m, ptr, "region", false), PostalCode: p.str(m, ptr, "postal_code", false), Country: p.str(m, ptr, "country", true)}
	if p.err == nil && !countryRe.MatchString(a.Country) {
		p.fail(fieldErr(CodeInvalidField, ptr+"/country", "country %q is no ISO 3166-1 alpha-2 code: two capital letters, such as CL", a.Country))
	}
	return a
}

func (p *parser) account(v any, ptr string) fxAccount {
	m := p.object(v, ptr, "id", "name", "number", "currency")
	a := fxAccount{ptr: ptr, ID: p.str(m, ptr, "id", true), Name: p.str(m, ptr, "name", true),
		Number: p.str(m, ptr, "number", true), Curr: p.str(m, ptr, "currency", true)}
	switch {
	case p.err != nil:
	case !uuidRe.MatchString(a.ID):
		p.fail(fieldErr(CodeInvalidField, ptr+"/id", "account id %q is no account id: an account id is a UUID in lower case, such as 3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a61", a.ID))
	case !currencyRe.MatchString(a.Curr):
		p.fail(fieldErr(CodeInvalidField, ptr+"/currency", "currency %q is no ISO 4217 code: three capital letters, such as CLP", a.Curr))
	}
	return a
}

func (p *parser) company(v any, ptr string) fxCompany {
	m := p.object(v, ptr, "id", "name", "legal_id", "country", "addresses", "accounts")
	c := fxCompany{ptr: ptr, ID: p.str(m, ptr, "id", true), Name: p.str(m, ptr, "name", true),
		LegalID: p.str(m, ptr, "legal_id", true), Country: p.str(m, ptr, "country", true), Addresses: []store.Address{}}
	switch {
	case p.err != nil:
	case !companyIDRe.MatchString(c.ID):
		p.fail(fieldErr(CodeInvalidField, ptr+"/id", "company id %q breaks the rule: org_ and 1 to 60 of a-z, 0-9 and _, such as org_qa_tienda", c.ID))
	case !countryRe.MatchString(c.Country):
		p.fail(fieldErr(CodeInvalidField, ptr+"/country", "country %q is no ISO 3166-1 alpha-2 code: two capital letters, such as CL", c.Country))
	}
	for i, el := range p.list(m, ptr, "addresses") {
		c.Addresses = append(c.Addresses, p.address(el, ptr+"/addresses/"+strconv.Itoa(i)))
	}
	for i, el := range p.list(m, ptr, "accounts") {
		c.Accounts = append(c.Accounts, p.account(el, ptr+"/accounts/"+strconv.Itoa(i)))
	}
	return c
}

// decision reads the members a consent and a grant share.
func (p *parser) decision(m map[string]any, ptr string) fxDecision {
	d := fxDecision{ptr: ptr, Subject: p.str(m, ptr, "subject", true), ClientID: p.str(m, ptr, "client_id", true),
		OrgID: p.str(m, ptr, "org_id", false)}
	switch {
	case p.err != nil:
		return d
	case !subjectIDRe.MatchString(d.Subject):
		p.fail(fieldErr(CodeInvalidField, ptr+"/subject", "subject id %q breaks the rule: sub_ and 1 to 60 of a-z, 0-9 and _", d.Subject))
	case d.OrgID != "" && !companyIDRe.MatchString(d.OrgID):
		p.fail(fieldErr(CodeInvalidField, ptr+"/org_id", "company id %q breaks the rule: org_ and 1 to 60 of a-z, 0-9 and _", d.OrgID))
	}
	for i, el := range p.list(m, ptr, "scope") {
		s, ok := el.(string)
		if !ok {
			p.fail(fieldErr(CodeInvalidBody, ptr+"/scope/"+strconv.Itoa(i), "each scope is a string, such as \"openid\"; got %s", kindOf(el)))
			break
		}
		if s == "" || strings.Contains(s, " ") {
			p.fail(fieldErr(CodeInvalidField, ptr+"/scope/"+strconv.Itoa(i), "each scope is one scope name, without spaces, such as \"openid\"; got %q", s))
			break
		}
		d.Scope = append(d.Scope, s)
	}
	if v, ok := m["authorization_details"]; ok && p.err == nil {
		a, isArray := v.([]any)
		if !isArray {
			p.fail(fieldErr(CodeInvalidBody, ptr+"/authorization_details", "authorization_details must be an array of objects (RFC 9396 §2), got %s", kindOf(v)))
			return d
		}
		for i, el := range a {
			if _, isObject := el.(map[string]any); !isObject {
				p.fail(fieldErr(CodeInvalidBody, ptr+"/authorization_details/"+strconv.Itoa(i), "each authorization_details entry must be an object, got %s", kindOf(el)))
				return d
			}
		}
		// Kept as JSON text for the catalog, which checks it as the
		// authorization endpoint checks the parameter (RFC 9396 §2).
		d.Details, _ = json.Marshal(v)
	}
	if p.err == nil && len(d.Scope) == 0 && d.Details == nil {
		p.fail(fieldErr(CodeMissingField, ptr+"/scope", "name at least one scope or one authorization_details entry"))
	}
	return d
}

// unique refuses an id named twice in the file.
func (f *fixtureFile) unique() error {
	seen := map[string]string{} // kind and id -> the pointer it was first named at
	dup := func(kind, id, ptr string) error {
		k := kind + " " + id
		if first, ok := seen[k]; ok {
			return fieldErr(CodeInvalidField, ptr, "%s %s is named twice, here and at %s: name each once", kind, id, first)
		}
		seen[k] = ptr
		return nil
	}
	for _, s := range f.Subjects {
		if err := dup("subject", s.ID, s.ptr+"/id"); err != nil {
			return err
		}
		for _, a := range s.Accounts {
			if err := dup("account", a.ID, a.ptr+"/id"); err != nil {
				return err
			}
		}
		for _, m := range s.Companies {
			if err := dup("membership of "+s.ID+" in", m.ID, m.ptr+"/id"); err != nil {
				return err
			}
		}
	}
	for _, c := range f.Companies {
		if err := dup("company", c.ID, c.ptr+"/id"); err != nil {
			return err
		}
		for _, a := range c.Accounts {
			if err := dup("account", a.ID, a.ptr+"/id"); err != nil {
				return err
			}
		}
	}
	for _, c := range f.Consents {
		if err := dup("consent of "+c.Subject+" for client", c.ClientID, c.ptr); err != nil {
			return err
		}
	}
	for _, g := range f.Grants {
		if err := dup("grant", g.ID, g.ptr+"/id"); err != nil {
			return err
		}
	}
	return nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// fxWorld is the world a fixture is checked against: the store's, with the
// file's records on top.
type fxWorld struct {
	c        *Controls
	ctx      context.Context
	f        *fixtureFile
	subjects map[string]*fxSubject
	orgs     map[string]*fxCompany
}

func (w *fxWorld) subjectKnown(id string) (bool, error) {
	if _, ok := w.subjects[id]; ok {
		return true, nil
	}
	_, err := w.c.cfg.Fixtures.Subject(w.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (w *fxWorld) companyKnown(id string) (bool, error) {
	if _, ok := w.orgs[id]; ok {
		return true, nil
	}
	_, err := w.c.cfg.Fixtures.Company(w.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (w *fxWorld) member(subject, org string) (bool, error) {
	if s, ok := w.subjects[subject]; ok && slices.ContainsFunc(s.Companies, func(m fxMembership) bool { return m.ID == org }) {
		return true, nil
	}
	return w.c.cfg.Fixtures.MemberOf(w.ctx, subject, org)
}

// owns reports whether account id is the subject's (org "") or the
// Company's, in the file or in the store.
func (w *fxWorld) owns(subject, org, id string) (bool, error) {
	var inFile []fxAccount
	if org == "" {
		if s, ok := w.subjects[subject]; ok {
			inFile = s.Accounts
		}
	} else if c, ok := w.orgs[org]; ok {
		inFile = c.Accounts
	}
	if slices.ContainsFunc(inFile, func(a fxAccount) bool { return a.ID == id }) {
		return true, nil
	}
	var stored []store.Account
	var err error
	if org == "" {
		stored, err = w.c.cfg.Fixtures.AccountsOf(w.ctx, subject, "")
	} else {
		stored, err = w.c.cfg.Fixtures.AccountsOf(w.ctx, "", org)
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(stored, func(a store.Account) bool { return a.ID == id }), nil
}

// checkDecision checks what a consent or grant names against the world
// and the catalog in force, and returns the catalog's reading of it.
func (w *fxWorld) checkDecision(d *fxDecision, cat *catalog.Catalog) (*catalog.Result, error) {
	if ok, err := w.subjectKnown(d.Subject); err != nil {
		return nil, err
	} else if !ok {
		return nil, fieldErr(CodeUnknownReference, d.ptr+"/subject", "subject %s is neither in this file's subjects nor stored: add it under /subjects, or name a stored one (the seed's sub_ana)", d.Subject)
	}
	if _, err := w.c.cfg.Fixtures.Client(w.ctx, d.ClientID); errors.Is(err, store.ErrNotFound) {
		return nil, fieldErr(CodeUnknownReference, d.ptr+"/client_id", "client %q is not registered (or was removed): name a registered client, such as the seed's demo-public", d.ClientID)
	} else if err != nil {
		return nil, err
	}
	if d.OrgID != "" {
		if ok, err := w.companyKnown(d.OrgID); err != nil {
			return nil, err
		} else if !ok {
			return nil, fieldErr(CodeUnknownReference, d.ptr+"/org_id", "company %s is neither in this file's companies nor stored: add it under /companies, or name a stored one (the seed's org_andes)", d.OrgID)
		}
		if ok, err := w.member(d.Subject, d.OrgID); err != nil {
			return nil, err
		} else if !ok {
			return nil, fieldErr(CodeInvalidField, d.ptr+"/org_id", "subject %s may not act for company %s (docs/service.md §2.2 rule 3): add {\"id\": %q, \"role\": \"member\"} to the subject's companies, or name a company it is a member of", d.Subject, d.OrgID, d.OrgID)
		}
	}
	res := cat.Check(catalog.Request{Scope: strings.Join(d.Scope, " "), AuthorizationDetails: d.Details, OrgID: d.OrgID})
	for _, v := range res.Violations {
		if v.Pointer == "/resource" || strings.HasPrefix(v.Pointer, "/resource/") {
			continue // a fixture names no resource: the catalog's own ones are meant
		}
		ptr := d.ptr + v.Pointer
		if v.Pointer == "/scope" {
			ptr = d.ptr + "/scope"
			for i, s := range d.Scope {
				if scopeRefused(cat, s) {
					ptr += "/" + strconv.Itoa(i)
					break
				}
			}
		}
		return nil, fieldErr(CodeInvalidField, ptr, "%s (%s, checked against the catalog in force as the authorization endpoint checks a request)", v.Message, v.Code)
	}
	return res, nil
}

// scopeRefused reports whether the catalog refuses scope s itself.
func scopeRefused(cat *catalog.Catalog, s string) bool {
	return slices.ContainsFunc(cat.Check(catalog.Request{Scope: s}).Violations, func(v catalog.Violation) bool { return v.Pointer == "/scope" })
}

// accountsNamed checks the accounts a detail names: identifiers are the
// subject's (docs/service.md §2.3), sources the Company's (§2.4).
func (w *fxWorld) accountsNamed(d *fxDecision, res *catalog.Result) error {
	for _, det := range res.Details {
		for _, f := range []struct{ member, org string }{{"identifiers", ""}, {"sources", d.OrgID}} {
			for j, id := range catalog.Strings(det.Object[f.member]) {
				ok, err := w.owns(d.Subject, f.org, id)
				if err != nil {
					return err
				}
				if !ok {
					owner := "subject " + d.Subject
					if f.org != "" {
						owner = "company " + f.org
					}
					return fieldErr(CodeInvalidField, fmt.Sprintf("%s/authorization_details/%d/%s/%d", d.ptr, det.Index, f.member, j),
						"account %s is no account of %s: name one of its accounts (in this file or stored), or add this one under its accounts", id, owner)
				}
			}
		}
	}
	return nil
}

// checkFixture checks a parsed file against the store and the catalog in
// force and returns what to write, the access tokens of its grants aside.
func (c *Controls) checkFixture(ctx context.Context, f *fixtureFile, now time.Time) (*store.Fixture, error) {
	w := &fxWorld{c: c, ctx: ctx, f: f, subjects: map[string]*fxSubject{}, orgs: map[string]*fxCompany{}}
	for i := range f.Subjects {
		w.subjects[f.Subjects[i].ID] = &f.Subjects[i]
	}
	for i := range f.Companies {
		w.orgs[f.Companies[i].ID] = &f.Companies[i]
	}
	out := &store.Fixture{}
	if err := w.people(out); err != nil {
		return nil, err
	}
	cat := c.cfg.Authority.Catalog()
	for _, fc := range f.Consents {
		co, err := w.consent(fc.fxDecision, cat, now)
		if err != nil {
			return nil, err
		}
		out.Consents = append(out.Consents, co)
	}
	for _, fg := range f.Grants {
		g, err := w.grant(fg, cat, now)
		if err != nil {
			return nil, err
		}
		out.Grants = append(out.Grants, g)
	}
	return out, nil
}

// people adds the file's subjects, companies, their accounts and the
// subjects' memberships to out; every company a subject is a member of
// must be in the file or stored.
func (w *fxWorld) people(out *store.Fixture) error {
	for _, s := range w.f.Subjects {
		out.Subjects = append(out.Subjects, store.Subject{ID: s.ID, Profile: s.Profile})
		for _, a := range s.Accounts {
			out.Accounts = append(out.Accounts, store.Account{ID: a.ID, SubjectID: s.ID, Name: a.Name, Number: a.Number, Currency: a.Curr})
		}
		for _, m := range s.Companies {
			if ok, err := w.companyKnown(m.ID); err != nil {
				return err
			} else if !ok {
				return fieldErr(CodeUnknownReference, m.ptr+"/id", "company %s is neither in this file's companies nor stored: add it under /companies, or name a stored one (the seed's org_andes)", m.ID)
			}
			out.Memberships = append(out.Memberships, store.Membership{SubjectID: s.ID, CompanyID: m.ID, Role: m.Role})
		}
	}
	for _, co := range w.f.Companies {
		out.Companies = append(out.Companies, store.Company{ID: co.ID, Name: co.Name, LegalID: co.LegalID, Country: co.Country, Addresses: co.Addresses})
		for _, a := range co.Accounts {
			out.Accounts = append(out.Accounts, store.Account{ID: a.ID, CompanyID: co.ID, Name: a.Name, Number: a.Number, Currency: a.Curr})
		}
	}
	return nil
}

// consent checks a remembered consent and returns it to store.
func (w *fxWorld) consent(d fxDecision, cat *catalog.Catalog, now time.Time) (*store.Consent, error) {
	res, err := w.checkDecision(&d, cat)
	if err != nil {
		return nil, err
	}
	if err := w.accountsNamed(&d, res); err != nil {
		return nil, err
	}
	if err := w.consentAccount(&d, res); err != nil {
		return nil, err
	}
	return &store.Consent{SubjectID: d.Subject, ClientID: d.ClientID, OrgID: d.OrgID,
		Permissions: sortedKeys(consent.Keys(res)), AccountID: d.AccountID, UpdatedAt: now}, nil
}

// consentAccount checks a consent's account_id: the subject's or its
// company's, and required when a detail asks to choose one (selection).
func (w *fxWorld) consentAccount(d *fxDecision, res *catalog.Result) error {
	if d.AccountID == "" {
		for _, det := range res.Details {
			if _, sel := det.Object["selection"]; sel {
				return fieldErr(CodeMissingField, d.ptr+"/account_id",
					"authorization_details/%d asks the subject to choose an account (selection): add account_id, the account chosen at the consent, one of the subject's accounts", det.Index)
			}
		}
		return nil
	}
	ok, err := w.owns(d.Subject, "", d.AccountID)
	if err == nil && !ok && d.OrgID != "" {
		ok, err = w.owns(d.Subject, d.OrgID, d.AccountID)
	}
	if err != nil {
		return err
	}
	if !ok {
		owner := "subject " + d.Subject
		if d.OrgID != "" {
			owner += " or of company " + d.OrgID
		}
		return fieldErr(CodeInvalidField, d.ptr+"/account_id", "account %s is no account of %s: name one of its accounts (in this file or stored)", d.AccountID, owner)
	}
	return nil
}

// grant checks a grant, which holds what was granted (no selection), and
// returns it to store, completed by the authority.
func (w *fxWorld) grant(fg fxGrant, cat *catalog.Catalog, now time.Time) (*store.Grant, error) {
	d := fg.fxDecision
	res, err := w.checkDecision(&d, cat)
	if err != nil {
		return nil, err
	}
	for _, det := range res.Details {
		if _, sel := det.Object["selection"]; sel {
			return nil, fieldErr(CodeInvalidField, fmt.Sprintf("%s/authorization_details/%d/selection", d.ptr, det.Index),
				"a grant holds what was granted: name the chosen account in identifiers (bank_account) or sources (automatic-charge) instead of selection")
		}
	}
	if err := w.accountsNamed(&d, res); err != nil {
		return nil, err
	}
	objs := make([]map[string]any, len(res.Details))
	for j, det := range res.Details {
		objs[j] = det.Object
	}
	details, err := json.Marshal(objs)
	if err != nil {
		return nil, fieldErr(CodeInvalidField, d.ptr+"/authorization_details", "the entries cannot be stored: %v", err)
	}
	g := &store.Grant{ID: fg.ID, ClientID: d.ClientID, SubjectID: d.Subject, OrgID: d.OrgID, Scopes: res.Scopes,
		Details: details, AuthTime: now, CreatedAt: now}
	if fg.Revoked {
		g.RevokedAt = now
	}
	w.c.cfg.Authority.CompleteGrant(g, res)
	return g, nil
}

func sortedKeys(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}

// fixtureKind is one kind of record in an apply's answer.
type fixtureKind struct {
	Count int      `json:"count"`
	IDs   []string `json:"ids"`
}

// fixtureToken is the access token an apply issued for a grant.
type fixtureToken struct {
	GrantID     string `json:"grant_id"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
	Revoked     bool   `json:"revoked"`
}

// FixtureSummary is the answer of POST /api/dev/fixtures.
type fixtureSummary struct {
	Subjects    fixtureKind `json:"subjects"`
	Companies   fixtureKind `json:"companies"`
	Memberships fixtureKind `json:"memberships"`
	Accounts    fixtureKind `json:"accounts"`
	Consents    fixtureKind `json:"consents"`
	Grants      struct {
		fixtureKind
		Tokens []fixtureToken `json:"tokens"`
	} `json:"grants"`
}

func kindOfIDs(ids []string) fixtureKind {
	if ids == nil {
		ids = []string{}
	}
	return fixtureKind{Count: len(ids), IDs: ids}
}

func (c *Controls) fixturesReady(w http.ResponseWriter, r *http.Request) bool {
	if c.cfg.Fixtures == nil || c.cfg.Authority == nil {
		c.writeError(w, r, &Error{Code: CodeNotFound, Field: "path", Message: "this server was started without fixtures (devctl.Config.Fixtures and Authority)"})
		return false
	}
	return true
}

func (c *Controls) handleFixtureApply(w http.ResponseWriter, r *http.Request) {
	if !c.fixturesReady(w, r) {
		return
	}
	raw, err := httplimit.ReadBody(w, r, maxBody)
	if err != nil {
		if httplimit.TooLarge(err) {
			c.writeError(w, r, &Error{Code: CodeTooLarge, Message: "the fixture file is over the limit of 1 MiB: split it into several files"})
			return
		}
		c.writeError(w, r, &Error{Code: CodeInvalidBody, Message: "the fixture file could not be read: " + err.Error()})
		return
	}
	f, err := parseFixture(raw)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	now := c.cfg.Clock.Now()
	fx, err := c.checkFixture(r.Context(), f, now)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	var sum fixtureSummary
	sum.Grants.Tokens = []fixtureToken{}
	for _, g := range fx.Grants {
		tok, at, ttl, err := c.cfg.Authority.MintAccessToken(r.Context(), g)
		if err != nil {
			c.writeError(w, r, err)
			return
		}
		fx.Tokens = append(fx.Tokens, at)
		sum.Grants.Tokens = append(sum.Grants.Tokens, fixtureToken{GrantID: g.ID, AccessToken: tok, ExpiresIn: int64(ttl.Seconds()), Revoked: g.Revoked()})
	}
	var conflict *store.FixtureConflictError
	if err := c.cfg.Fixtures.ApplyFixture(r.Context(), fx); errors.As(err, &conflict) {
		c.writeError(w, r, conflictErr(f, conflict))
		return
	} else if err != nil {
		c.writeError(w, r, err)
		return
	}
	var ids [6][]string
	for _, s := range fx.Subjects {
		ids[0] = append(ids[0], s.ID)
	}
	for _, co := range fx.Companies {
		ids[1] = append(ids[1], co.ID)
	}
	for _, m := range fx.Memberships {
		ids[2] = append(ids[2], m.SubjectID+" "+m.CompanyID)
	}
	for _, a := range fx.Accounts {
		ids[3] = append(ids[3], a.ID)
	}
	for _, co := range fx.Consents {
		ids[4] = append(ids[4], co.SubjectID+" "+co.ClientID)
	}
	for _, g := range fx.Grants {
		ids[5] = append(ids[5], g.ID)
	}
	sum.Subjects, sum.Companies, sum.Memberships = kindOfIDs(ids[0]), kindOfIDs(ids[1]), kindOfIDs(ids[2])
	sum.Accounts, sum.Consents, sum.Grants.fixtureKind = kindOfIDs(ids[3]), kindOfIDs(ids[4]), kindOfIDs(ids[5])
	writeJSON(w, http.StatusOK, sum)
}

// conflictErr is the refusal of a record the stored one forbids, at its
// pointer in the file.
func conflictErr(f *fixtureFile, e *store.FixtureConflictError) *Error {
	switch e.Kind {
	case "account":
		i := 0
		for _, s := range f.Subjects {
			for _, a := range s.Accounts {
				if i == e.Index {
					return fieldErr(CodeInvalidField, a.ptr+"/id", "account %s is stored as another owner's, and an account never changes owner: give this one another id", a.ID)
				}
				i++
			}
		}
		for _, co := range f.Companies {
			for _, a := range co.Accounts {
				if i == e.Index {
					return fieldErr(CodeInvalidField, a.ptr+"/id", "account %s is stored as another owner's, and an account never changes owner: give this one another id", a.ID)
				}
				i++
			}
		}
	case "grant":
		if e.Index < len(f.Grants) {
			g := f.Grants[e.Index]
			if g.ptr != "" {
				return fieldErr(CodeInvalidField, g.ptr+"/id", "grant %s: %s: give the grant of this file another id", g.ID, e.Msg)
			}
		}
	}
	return fieldErr(CodeInvalidField, "", "%s", e.Msg)
}

// resetBody is the body of POST /api/dev/fixtures/reset.
type resetBody struct {
	Subject  string `json:"subject"`
	ClientID string `json:"client_id"`
}

// resetSummary is its answer.
type resetSummary struct {
	ConsentsForgotten int      `json:"consents_forgotten"`
	GrantsRevoked     int      `json:"grants_revoked"`
	GrantIDs          []string `json:"grant_ids"`
	Consents          []string `json:"consents"`
}

func (c *Controls) handleFixtureReset(w http.ResponseWriter, r *http.Request) {
	if !c.fixturesReady(w, r) {
		return
	}
	var b resetBody
	if err := decode(w, r, &b); err != nil {
		c.writeError(w, r, err)
		return
	}
	if b.Subject == "" && b.ClientID == "" {
		c.writeError(w, r, &Error{Code: CodeMissingField, Field: "/subject",
			Message: `name whose decisions to forget: {"subject": "sub_..."}, {"client_id": "..."} or both`})
		return
	}
	st := c.cfg.Fixtures
	if b.Subject != "" {
		if _, err := st.Subject(r.Context(), b.Subject); errors.Is(err, store.ErrNotFound) {
			c.writeError(w, r, fieldErr(CodeUnknownReference, "/subject", "subject %q is not stored: name a stored subject, such as the seed's sub_ana", b.Subject))
			return
		} else if err != nil {
			c.writeError(w, r, err)
			return
		}
	}
	if b.ClientID != "" {
		if _, err := st.Client(r.Context(), b.ClientID); errors.Is(err, store.ErrNotFound) {
			c.writeError(w, r, fieldErr(CodeUnknownReference, "/client_id", "client %q is not registered (or was removed): name a registered client, such as the seed's demo-public", b.ClientID))
			return
		} else if err != nil {
			c.writeError(w, r, err)
			return
		}
	}
	out, err := st.ForgetDecisions(r.Context(), b.Subject, b.ClientID, c.cfg.Clock.Now())
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	for _, id := range out.Grants {
		c.cfg.Events.Record(r.Context(), audit.Event{Kind: audit.GrantRevoked, ClientID: b.ClientID, Subject: b.Subject, GrantID: id,
			Actor: audit.ActorOperator, Outcome: audit.OutcomeOK, Detail: map[string]string{"via": "fixture_reset"}})
	}
	sum := resetSummary{ConsentsForgotten: len(out.Consents), GrantsRevoked: len(out.Grants), GrantIDs: out.Grants, Consents: []string{}}
	if sum.GrantIDs == nil {
		sum.GrantIDs = []string{}
	}
	for _, co := range out.Consents {
		sum.Consents = append(sum.Consents, co.SubjectID+" "+co.ClientID)
	}
	writeJSON(w, http.StatusOK, sum)
}
