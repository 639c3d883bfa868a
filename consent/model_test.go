package consent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/catalog"
)

const base = "https://bank.example/api"

func newCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.New(catalog.Endpoints{BaseURL: base, SigningBaseURL: "https://sign.example/api", InvoicingBaseURL: "https://inv.example/api"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var candidates = []Account{
	{ID: "11111111-1111-4111-8111-111111111111", Name: "Personal 1", Owner: OwnerSubject, Currency: "CLP"},
	{ID: "22222222-2222-4222-8222-222222222222", Name: "Personal 2", Owner: OwnerSubject, Currency: "CLP"},
	{ID: "33333333-3333-4333-8333-333333333333", Name: "Company", Owner: OwnerCompany, Currency: "CLP"},
}

// build checks a request with the catalog and builds its model.
func build(t *testing.T, scope, details, org string) (*Model, *catalog.Result) {
	t.Helper()
	cat := newCatalog(t)
	req := catalog.Request{Scope: scope, OrgID: org}
	if scope != "" {
		req.Resource = []string{base}
	}
	if details != "" {
		req.AuthorizationDetails = json.RawMessage(details)
	}
	res := cat.Check(req)
	if !res.Valid() {
		t.Fatalf("request invalid: %v", res.Err())
	}
	return Build(cat, Input{Subject: Subject{ID: "u"}, Candidates: candidates, Result: res, OrgID: org}), res
}

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name, scope, details, org string
		accounts                  []string
		required                  bool
		approvable                bool
	}{
		{"scopes only", "openid profile", "", "", nil, false, true},
		{"bank_account by selection offers personal accounts", "",
			`[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}}]`, "",
			[]string{candidates[0].ID, candidates[1].ID}, true, true},
		{"bank_account by identifiers offers those", "",
			`[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["` + candidates[1].ID + `"]}]`, "",
			[]string{candidates[1].ID}, true, true},
		{"automatic charge offers company accounts", "",
			`[{"type":"` + base + `/authorization-details/automatic-charge","actions":["read"],"locations":["` + base + `"],"transaction":{"currency":"CLP","minimum":"1","maximum":"10"}}]`, "org",
			[]string{candidates[2].ID}, true, true},
		{"bank_account naming an unknown account cannot be approved", "",
			`[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["44444444-4444-4444-8444-444444444444"]}]`, "",
			[]string{}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := build(t, tc.scope, tc.details, tc.org)
			var ids []string
			for _, a := range m.Accounts {
				ids = append(ids, a.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.accounts, ",") || m.AccountRequired != tc.required || m.Approvable() != tc.approvable {
				t.Fatalf("accounts %v required %v approvable %v", ids, m.AccountRequired, m.Approvable())
			}
			if _, err := json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLimitsAndMeanings(t *testing.T) {
	m, _ := build(t, "openid", `[{"type":"`+base+`/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["`+base+`"],`+
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"},"budget":{"amount":"200000","interval":{"unit":"months","count":1},"time_zone":"America/Santiago"},`+
		`"account_binding":{"key":"main","name":{"suggested":"Cuenta","editable":true}}}]`, "org")
	if len(m.Permissions) != 2 || m.Permissions[0].Meaning != "Authenticate with OpenID Connect" {
		t.Fatalf("permissions: %+v", m.Permissions)
	}
	p := m.Permissions[1]
	l := p.Limits
	if p.Actions[0].Meaning != "Create automatic charges" || l.Currency != "CLP" || l.Minimum != "1000" || l.Maximum != "50000" ||
		l.Budget == nil || l.Budget.Count != 1 || l.Budget.Unit != "months" || l.AccountBinding == nil || !l.AccountBinding.Editable {
		t.Fatalf("limits: %+v %+v", p, l)
	}
}

func TestValidateAndGrant(t *testing.T) {
	m, res := build(t, "", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"min":1,"max":1}}]`, "")
	for _, tc := range []struct {
		name string
		d    Decision
		want error
	}{
		{"deny", Decision{Action: Deny}, nil},
		{"approve without account", Decision{Action: Approve}, ErrAccountRequired},
		{"approve with a foreign account", Decision{Action: Approve, AccountID: candidates[2].ID}, ErrAccountNotOffered},
		{"unknown action", Decision{Action: "maybe"}, ErrUnknownAction},
		{"approve", Decision{Action: Approve, AccountID: candidates[0].ID}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.Validate(tc.d); !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
		})
	}
	js, err := GrantedDetails(res, Decision{Action: Approve, AccountID: candidates[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"identifiers":["`+candidates[0].ID+`"]`) || strings.Contains(string(js), "selection") {
		t.Fatalf("granted details: %s", js)
	}
}

// TestKeysCovered: the same request is covered by its own keys; another
// action, a changed limit or a new scope is not.
func TestKeysCovered(t *testing.T) {
	_, first := build(t, "openid", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}}]`, "")
	have := Keys(first)
	for _, tc := range []struct {
		name, scope, details string
		want                 bool
	}{
		{"the same request", "openid", `[{"type":"bank_account","subject":{"type":"profile"},"selection":{"max":1},"actions":["read"]}]`, true},
		{"less", "openid", "", true},
		{"another action", "openid", `[{"type":"bank_account","actions":["read","close"],"subject":{"type":"profile"},"selection":{"max":1}}]`, false},
		{"another limit", "openid", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":2}}]`, false},
		{"a new scope", "openid email", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, res := build(t, tc.scope, tc.details, "")
			if got := Covered(have, Keys(res)); got != tc.want {
				t.Fatalf("Covered = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBankAccountWithAutomaticCharge: a bank_account detail binds one of
// the subject's accounts and an automatic-charge detail one of the
// Company's. Asked together they once offered no account at all (one
// choice narrowed by both owners: no_fitting_account); each owner now has
// its own choice, and the approval binds each detail to its owner's.
func TestBankAccountWithAutomaticCharge(t *testing.T) {
	m, res := build(t, "", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}},`+
		`{"type":"`+base+`/authorization-details/automatic-charge","actions":["read"],"locations":["`+base+`"],"transaction":{"currency":"CLP","minimum":"1","maximum":"10"}}]`, "org")
	if !m.Approvable() || !m.AccountRequired || len(m.Accounts) != 3 {
		t.Fatalf("approvable %v required %v accounts %+v checks %+v", m.Approvable(), m.AccountRequired, m.Accounts, m.Checks)
	}
	if got := m.AccountOwners(); strings.Join(got, ",") != "subject,company" {
		t.Fatalf("owners %v", got)
	}
	if p := m.Permissions[1]; !p.NeedsAccount || p.AccountOwner != OwnerCompany {
		t.Fatalf("automatic-charge permission %+v", p)
	}
	personal, company := candidates[0].ID, candidates[2].ID
	for _, tc := range []struct {
		name string
		d    Decision
		want error
	}{
		{"only the subject's", Decision{Action: Approve, AccountID: personal}, ErrAccountRequired},
		{"the Company's as the subject's", Decision{Action: Approve, AccountID: company, CompanyAccountID: company}, ErrAccountNotOffered},
		{"no account", Decision{Action: Approve}, ErrAccountRequired},
		{"the automatic charge declined", Decision{Action: Approve, AccountID: personal, DeclinedDetails: []int{1}}, nil},
		{"the bank_account declined", Decision{Action: Approve, AccountID: company, DeclinedDetails: []int{0}}, nil},
		{"both", Decision{Action: Approve, AccountID: personal, CompanyAccountID: company}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.Validate(tc.d); !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
		})
	}
	js, err := GrantedDetails(res, Decision{Action: Approve, AccountID: personal, CompanyAccountID: company})
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if ids, _ := got[0]["identifiers"].([]any); len(ids) != 1 || ids[0] != personal {
		t.Fatalf("bank_account bound %v", got[0])
	}
	if src, _ := got[1]["sources"].([]any); len(src) != 1 || src[0] != company {
		t.Fatalf("automatic-charge bound %v", got[1])
	}
	// A Company without an account still fails, naming the Company.
	cat := newCatalog(t)
	only := Build(cat, Input{Subject: Subject{ID: "u"}, Candidates: candidates[:2], Result: res, OrgID: "org"})
	if f := only.Failed(); f == nil || f.Code != CodeNoFittingAccount || !strings.Contains(f.Message, "Company") {
		t.Fatalf("failed check %+v", f)
	}
}
