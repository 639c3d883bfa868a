package consent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// threeDetails: a bank_account by selection (index 0), company-identity
// (1) and company-addresses (2), which the catalog grants only together.
const threeDetails = `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1}},` +
	`{"type":"` + base + `/authorization-details/company-identity","actions":["read"],"locations":["` + base + `"]},` +
	`{"type":"` + base + `/authorization-details/company-addresses","actions":["read"],"locations":["` + base + `"]}]`

// TestDeclineEntries: a subject declines single scopes and details; the
// grant is exactly the rest, openid cannot be declined, entries that are
// not requested are refused by name, and a decision that would break the
// company pair is refused with a message naming both entries.
func TestDeclineEntries(t *testing.T) {
	m, res := build(t, "openid profile email", threeDetails, "org")
	acct := candidates[0].ID
	for _, tc := range []struct {
		name       string
		d          Decision
		want       error
		wantInErr  string
		scopes     string
		detailKeys string
	}{
		{"no per-entry fields grant everything", Decision{Action: Approve, AccountID: acct}, nil, "",
			"openid profile email", "bank_account company-identity company-addresses"},
		{"a scope and the account detail declined", Decision{Action: Approve, DeclinedScopes: []string{"profile"}, DeclinedDetails: []int{0}}, nil, "",
			"openid email", "company-identity company-addresses"},
		{"the company pair declined together", Decision{Action: Approve, AccountID: acct, DeclinedDetails: []int{1, 2}}, nil, "",
			"openid profile email", "bank_account"},
		{"an account is still needed for the account detail", Decision{Action: Approve, DeclinedScopes: []string{"email"}}, ErrAccountRequired, "", "", ""},
		{"openid is fixed", Decision{Action: Approve, AccountID: acct, DeclinedScopes: []string{"openid"}}, ErrFixed, `"openid"`, "", ""},
		{"a scope not requested", Decision{Action: Approve, AccountID: acct, DeclinedScopes: []string{"phone"}}, ErrNotRequested, `declined_scopes[0] "phone"`, "", ""},
		{"a detail not requested", Decision{Action: Approve, AccountID: acct, DeclinedDetails: []int{3}}, ErrNotRequested, "declined_details[0] 3", "", ""},
		{"identity without addresses", Decision{Action: Approve, AccountID: acct, DeclinedDetails: []int{2}}, ErrRuleBroken,
			"authorization_details/1 (company-identity) is granted only together with authorization_details/2 (company-addresses)", "", ""},
		{"addresses without identity", Decision{Action: Approve, AccountID: acct, DeclinedDetails: []int{1}}, ErrRuleBroken,
			"authorization_details/2 (company-addresses) is granted only together with authorization_details/1 (company-identity)", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Validate(tc.d)
			if !errors.Is(err, tc.want) || (err != nil && !strings.Contains(err.Error(), tc.wantInErr)) {
				t.Fatalf("Validate: want %v containing %q, got %v", tc.want, tc.wantInErr, err)
			}
			if err != nil {
				return
			}
			g := Granted(res, tc.d)
			var keys []string
			for _, d := range g.Details {
				keys = append(keys, d.Type.Key)
			}
			if strings.Join(g.Scopes, " ") != tc.scopes || strings.Join(keys, " ") != tc.detailKeys || Denies(res, tc.d) {
				t.Fatalf("granted scopes %v details %v", g.Scopes, keys)
			}
			js, err := GrantedDetails(res, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			var objs []map[string]any
			if err := json.Unmarshal(js, &objs); err != nil || len(objs) != len(keys) {
				t.Fatalf("granted details %s: %v", js, err)
			}
		})
	}
}

// TestModelSaysWhatGoesTogether: before any decision, the model marks
// openid fixed and says which entries need which (what a host shows), and
// a model read back from JSON, without the catalog, still refuses a
// decision that breaks the pair.
func TestModelSaysWhatGoesTogether(t *testing.T) {
	m, _ := build(t, "openid profile", threeDetails, "org")
	byName := map[string]Permission{}
	for _, p := range m.Permissions {
		name := p.Name
		if p.Key != "" {
			name = p.Key
		}
		byName[name] = p
	}
	if !byName["openid"].Fixed || byName["profile"].Fixed || byName["bank_account"].Fixed {
		t.Fatalf("fixed: openid %v profile %v bank_account %v", byName["openid"].Fixed, byName["profile"].Fixed, byName["bank_account"].Fixed)
	}
	for _, tc := range []struct {
		key   string
		needs int
	}{{"company-identity", 2}, {"company-addresses", 1}} {
		r := byName[tc.key].Requires
		if len(r) != 1 || r[0].Kind != KindDetail || r[0].Index == nil || *r[0].Index != tc.needs || !strings.Contains(r[0].Message, "grant both or decline both") {
			t.Fatalf("%s requires %+v, want detail %d", tc.key, r, tc.needs)
		}
	}
	if len(byName["bank_account"].Requires)+len(byName["profile"].Requires) != 0 {
		t.Fatalf("unexpected requirements: %+v %+v", byName["bank_account"].Requires, byName["profile"].Requires)
	}
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Model
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	err = back.Validate(Decision{Action: Approve, AccountID: candidates[0].ID, DeclinedDetails: []int{2}})
	if !errors.Is(err, ErrRuleBroken) || !strings.Contains(err.Error(), "company-addresses") {
		t.Fatalf("model from JSON: want ErrRuleBroken naming company-addresses, got %v", err)
	}
	if err := back.Validate(Decision{Action: Approve, DeclinedDetails: []int{0, 1, 2}}); err != nil {
		t.Fatalf("model from JSON: declining the pair and the account detail: %v", err)
	}
}

// TestDecliningEverything: without openid every entry can be declined, and
// declining all of them is a denial; with openid, declining the rest
// grants the sign-in alone.
func TestDecliningEverything(t *testing.T) {
	m, res := build(t, "profile email", "", "")
	d := Decision{Action: Approve, DeclinedScopes: []string{"email", "profile"}}
	if err := m.Validate(d); err != nil || !Denies(res, d) {
		t.Fatalf("declining every scope: Validate %v, Denies %v; want a valid denial", err, Denies(res, d))
	}
	m, res = build(t, "openid profile", "", "")
	d = Decision{Action: Approve, DeclinedScopes: []string{"profile"}}
	if err := m.Validate(d); err != nil || Denies(res, d) || strings.Join(Granted(res, d).Scopes, " ") != "openid" {
		t.Fatalf("declining all but openid: Validate %v, Denies %v, granted %v; want openid alone", err, Denies(res, d), Granted(res, d).Scopes)
	}
	if !Denies(res, Decision{Action: Deny}) {
		t.Fatal("a deny is not a denial")
	}
}

// TestLowerMaximum: the subject lowers an automatic charge's maximum; the
// grant and what is remembered carry the lowered amount, and a maximum
// outside the requested limits, not an amount, on a declined or
// limitless object is refused naming the field and how to fix it.
func TestLowerMaximum(t *testing.T) {
	charge := `[{"type":"https://inv.example/authorization-details/documents","actions":["read"],"locations":["https://inv.example/api"]},` +
		`{"type":"` + base + `/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["` + base + `"],` +
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"}}]`
	m, res := build(t, "", charge, "org")
	ok := Decision{Action: Approve, DeclinedDetails: []int{0}, AccountID: candidates[2].ID, LoweredMaximums: []LoweredMaximum{{Index: 1, Maximum: "20000"}}}
	if err := m.Validate(ok); err != nil {
		t.Fatalf("lowering to 20000: %v", err)
	}
	js, err := GrantedDetails(res, ok)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"maximum":"20000"`) || !strings.Contains(string(js), `"minimum":"1000"`) || strings.Contains(string(js), "documents") {
		t.Fatalf("granted %s, want the charge alone with maximum 20000", js)
	}
	if keys := Keys(Granted(res, ok)); len(keys) != 1 || !strings.Contains(keys[0], `"maximum":"20000"`) {
		t.Fatalf("remembered %v, want the lowered charge", keys)
	}
	if res.Details[1].Object["transaction"].(map[string]any)["maximum"] != "50000" {
		t.Fatal("lowering changed the request itself")
	}
	for _, tc := range []struct {
		name string
		lm   []LoweredMaximum
		dec  []int
		want string
	}{
		{"above the requested maximum", []LoweredMaximum{{1, "60000"}}, nil, "from 1000 (transaction.minimum) to 50000"},
		{"below the minimum", []LoweredMaximum{{1, "999"}}, nil, "outside the requested limits"},
		{"not an amount", []LoweredMaximum{{1, "020000"}}, nil, `lowered_maximums[0].maximum "020000" is not an amount`},
		{"no transaction", []LoweredMaximum{{0, "10"}}, nil, "index 0 has no transaction.maximum"},
		{"declined", []LoweredMaximum{{1, "2000"}}, []int{1}, "index 1 is declined"},
		{"twice", []LoweredMaximum{{1, "2000"}, {1, "3000"}}, nil, "named twice"},
		{"not requested", []LoweredMaximum{{7, "2000"}}, nil, "index 7 is not the index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decision{Action: Approve, AccountID: candidates[0].ID, DeclinedDetails: tc.dec, LoweredMaximums: tc.lm}
			if err := m.Validate(d); !errors.Is(err, ErrBadMaximum) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want ErrBadMaximum with %q, got %v", tc.want, err)
			}
		})
	}
}
