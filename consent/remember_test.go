package consent

import (
	"encoding/json"
	"testing"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// TestBuildReadsTheRememberedConsent: Build, given the remembered consent,
// says whether the screen may be skipped (docs/service.md §1, the
// subject's consent): a request without accounts is Remembered; one that
// binds an account is Remembered with that account while it is offered,
// and asks again, saying why, when it is not, when the request binds both
// owners' accounts, or when a check failed.
func TestBuildReadsTheRememberedConsent(t *testing.T) {
	cat := newCatalog(t)
	check := func(t *testing.T, scope, details, org string) *catalog.Result {
		t.Helper()
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
		return res
	}
	asked := Check{Name: CheckConsent, Outcome: Pass}
	bank := `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}}]`
	both := `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}},` +
		`{"type":"` + base + `/authorization-details/automatic-charge","actions":["read"],"locations":["` + base + `"],"transaction":{"currency":"CLP","minimum":"1","maximum":"10"}}]`
	for _, tc := range []struct {
		name, scope, details string
		remembered           *Remembered
		failed               bool
		want                 bool
		wantAccount, why     string
	}{
		{"nothing remembered", "openid profile", "", nil, false, false, "", ""},
		{"scopes only", "openid profile", "", &Remembered{}, false, true, "", ""},
		{"the account chosen before is offered", "", bank, &Remembered{AccountID: candidates[1].ID}, false, true, candidates[1].ID, ""},
		{"the account chosen before is gone", "", bank, &Remembered{AccountID: "gone"}, false, false, "", "the account chosen before is no longer offered"},
		{"both owners' accounts", "", both, &Remembered{AccountID: candidates[0].ID}, false, false, "", "accounts of the subject and of the Company are bound: choose both"},
		{"a check failed", "openid profile", "", &Remembered{}, true, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := []Check{asked}
			if tc.failed {
				checks = append(checks, Check{Name: CheckProjectApproval, Outcome: Fail, Code: "x", Message: "refused"})
			}
			org := ""
			if tc.details == both {
				org = "org"
			}
			m := Build(cat, Input{Subject: Subject{ID: "u"}, Candidates: candidates, Result: check(t, tc.scope, tc.details, org),
				Checks: checks, OrgID: org, Remembered: tc.remembered})
			if m.Remembered != tc.want || m.RememberedAccount != tc.wantAccount {
				t.Fatalf("Remembered %v %q, want %v %q", m.Remembered, m.RememberedAccount, tc.want, tc.wantAccount)
			}
			for _, c := range m.Checks {
				if c.Name != CheckConsent {
					continue
				}
				if tc.why == "" && c != asked {
					t.Fatalf("consent check %+v, want it unchanged", c)
				}
				if tc.why != "" && (c.Outcome != Ask || c.Message != tc.why) {
					t.Fatalf("consent check %+v, want ask: %s", c, tc.why)
				}
			}
		})
	}
}

// TestGrantOf: one call gives a decision's grant: a denial (deny, or
// every entry declined) grants nothing; an approval grants the entries it
// kept, with the accounts bound only when a kept detail binds one.
func TestGrantOf(t *testing.T) {
	m, res := build(t, "openid profile", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}}]`, "")
	acct := candidates[0].ID
	for _, tc := range []struct {
		name    string
		d       Decision
		denied  bool
		scopes  int
		details int
		account string
	}{
		{"deny", Decision{Action: Deny}, true, 0, 0, ""},
		{"approve all", Decision{Action: Approve, AccountID: acct}, false, 2, 1, acct},
		{"the detail declined", Decision{Action: Approve, AccountID: acct, DeclinedDetails: []int{0}}, false, 2, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.Validate(tc.d); err != nil {
				t.Fatal(err)
			}
			g, err := GrantOf(res, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if g.Denied != tc.denied || len(g.Result.Scopes) != tc.scopes || len(g.Result.Details) != tc.details || g.AccountID != tc.account {
				t.Fatalf("grant %+v, want denied %v, %d scopes, %d details, account %q", g, tc.denied, tc.scopes, tc.details, tc.account)
			}
			if !tc.denied {
				var got []map[string]any
				if err := json.Unmarshal(g.Details, &got); err != nil || len(got) != tc.details {
					t.Fatalf("details %s (%v), want %d", g.Details, err, tc.details)
				}
			}
		})
	}
}
