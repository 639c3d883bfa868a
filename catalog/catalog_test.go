package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var testEndpoints = Endpoints{
	BaseURL:          "https://bank.example",
	SigningBaseURL:   "https://sign.example/api",
	InvoicingBaseURL: "https://invoices.example/v1",
}

func newTestCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := New(testEndpoints)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// uuids returns n distinct valid UUIDs (version 4, variant 8).
func uuids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%08x-0000-4000-8000-000000000000", i+1)
	}
	return out
}

func repeat(s string, n int) string { return strings.Repeat(s, n) }

// validDetail returns a valid detail of each type, as a fresh map that a
// test case may change.
func validDetail(key string) map[string]any {
	base := "https://bank.example"
	switch key {
	case "bank_account":
		return map[string]any{"type": "bank_account", "actions": []any{"read"}, "subject": map[string]any{"type": "profile"}, "selection": map[string]any{"min": 1, "max": 1}}
	case "automatic-charge":
		return map[string]any{"type": base + "/authorization-details/automatic-charge", "actions": []any{"create_automatic_charge"}, "locations": []any{base},
			"transaction": map[string]any{"currency": "CLP", "minimum": "1000", "maximum": "50000"}}
	case "company-addresses", "company-identity":
		return map[string]any{"type": base + "/authorization-details/" + key, "actions": []any{"read"}, "locations": []any{base}}
	case "company-key", "signatures":
		return map[string]any{"type": "https://sign.example/authorization-details/" + key, "actions": []any{"create"}, "locations": []any{"https://sign.example/api"}}
	case "signing-key":
		return map[string]any{"type": "https://sign.example/authorization-details/signing-key", "actions": []any{"read"}, "locations": []any{"https://sign.example/api"}}
	case "documents":
		return map[string]any{"type": "https://invoices.example/authorization-details/documents", "actions": []any{"read", "create"}, "locations": []any{"https://invoices.example/v1"}}
	}
	panic("unknown key " + key)
}

// set changes the value at a dotted path of a detail ("transaction.minimum");
// a nil value deletes the member.
func set(d map[string]any, path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	m := d
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	if v == nil {
		delete(m, parts[len(parts)-1])
	} else {
		m[parts[len(parts)-1]] = v
	}
	return d
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// check runs Check on details with org_id set (so company-scoped details are
// judged on their own fields) and returns "pointer code" strings, sorted.
func check(t *testing.T, c *Catalog, details ...map[string]any) []string {
	t.Helper()
	js, err := json.Marshal(details)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Check(Request{AuthorizationDetails: js, OrgID: "org-1"})
	// The second check of the same text is answered from the verdict memo:
	// it must say exactly the same.
	if again := c.Check(Request{AuthorizationDetails: js, OrgID: "org-1"}); !reflect.DeepEqual(again.Violations, r.Violations) {
		t.Errorf("memoised check differs:\n first %v\nsecond %v", r.Violations, again.Violations)
	}
	var got []string
	for _, v := range r.Violations {
		if v.Message == "" || v.OAuthError == "" {
			t.Errorf("violation %+v lacks a message or an OAuth error", v)
		}
		got = append(got, v.Pointer+" "+v.Code)
	}
	sort.Strings(got)
	if r.Valid() != (len(got) == 0) {
		t.Errorf("Valid() = %v with %d violations", r.Valid(), len(got))
	}
	return got
}

func TestValidDetailsOfEveryType(t *testing.T) {
	c := newTestCatalog(t)
	for _, key := range []string{"bank_account", "automatic-charge", "company-key", "signatures", "signing-key", "documents"} {
		t.Run(key, func(t *testing.T) {
			if got := check(t, c, validDetail(key)); len(got) != 0 {
				t.Fatalf("valid %s detail refused: %v", key, got)
			}
		})
	}
	t.Run("company-identity with company-addresses", func(t *testing.T) {
		if got := check(t, c, validDetail("company-identity"), validDetail("company-addresses")); len(got) != 0 {
			t.Fatalf("refused: %v", got)
		}
	})
}

// TestDetailRules covers every rule of docs/service.md §2.2 to §2.5 and every limit of
// docs/service.md §8 at its boundary. want lists the exact "pointer code" violations.
func TestDetailRules(t *testing.T) {
	c := newTestCatalog(t)
	const p = "/authorization_details/0"
	ba := func(path string, v any) map[string]any { return set(validDetail("bank_account"), path, v) }
	baIDs := func(ids []any) map[string]any {
		return set(set(validDetail("bank_account"), "selection", nil), "identifiers", ids)
	}
	ac := func(path string, v any) map[string]any { return set(validDetail("automatic-charge"), path, v) }
	budget := func(path string, v any) map[string]any {
		d := ac("budget", map[string]any{"amount": "100000", "interval": map[string]any{"unit": "months", "count": 1}, "time_zone": "America/Santiago"})
		if path != "" {
			set(d, "budget."+path, v)
		}
		return d
	}
	allBA := []any{"read", "read_movements", "create_deposit_intent", "read_deposit_intents", "create_withdrawal_intent", "execute_withdrawal", "read_withdrawal_intents", "close"}
	cases := []struct {
		name   string
		detail map[string]any
		want   []string
	}{
		// bank_account actions: 1 to 8, unique, from the enumeration.
		{"bank_account actions 0", ba("actions", []any{}), []string{p + "/actions too_few_items"}},
		{"bank_account actions 1", ba("actions", []any{"close"}), nil},
		{"bank_account actions 8", ba("actions", allBA), nil},
		{"bank_account actions 9", ba("actions", append(append([]any{}, allBA...), "read")), []string{p + "/actions duplicate_items", p + "/actions too_many_items"}},
		{"bank_account action not in enum", ba("actions", []any{"transfer"}), []string{p + "/actions/0 not_allowed_value"}},
		{"bank_account action of another type", ba("actions", []any{"create_automatic_charge"}), []string{p + "/actions/0 not_allowed_value"}},
		{"actions not an array", ba("actions", "read"), []string{p + "/actions wrong_type"}},
		// subject
		{"subject missing", ba("subject", nil), []string{p + "/subject missing_field"}},
		{"subject type not profile", ba("subject.type", "company"), []string{p + "/subject/type not_allowed_value"}},
		{"subject identifier 0 chars", ba("subject.identifier", ""), []string{p + "/subject/identifier too_short"}},
		{"subject identifier 1 char", ba("subject.identifier", "a"), nil},
		{"subject identifier 128 chars", ba("subject.identifier", repeat("a", 128)), nil},
		{"subject identifier 129 chars", ba("subject.identifier", repeat("a", 129)), []string{p + "/subject/identifier too_long"}},
		{"subject unknown field", ba("subject.name", "x"), []string{p + "/subject/name unknown_field"}},
		// selection xor identifiers
		{"both selection and identifiers", ba("identifiers", anys(uuids(1))), []string{p + " selection_and_identifiers"}},
		{"neither selection nor identifiers", ba("selection", nil), []string{p + " selection_or_identifiers_missing"}},
		{"identifiers only", baIDs(anys(uuids(1))), nil},
		{"identifiers 0", baIDs([]any{}), []string{p + "/identifiers too_few_items"}},
		{"identifiers 100", baIDs(anys(uuids(100))), nil},
		{"identifiers 101", baIDs(anys(uuids(101))), []string{p + "/identifiers too_many_items"}},
		{"identifiers repeated", baIDs(anys([]string{uuids(1)[0], uuids(1)[0]})), []string{p + "/identifiers duplicate_items"}},
		// selection bounds and order
		{"selection min 0", ba("selection.min", 0), []string{p + "/selection/min out_of_range"}},
		{"selection min 1 max 100", ba("selection", map[string]any{"min": 1, "max": 100}), nil},
		{"selection max 101", ba("selection.max", 101), []string{p + "/selection/max out_of_range"}},
		{"selection min above max", ba("selection", map[string]any{"min": 3, "max": 2}), []string{p + "/selection/min selection_min_above_max"}},
		{"selection min equals max", ba("selection", map[string]any{"min": 7, "max": 7}), nil},
		{"selection empty object", ba("selection", map[string]any{}), nil},
		{"selection not integer", ba("selection.max", 1.5), []string{p + "/selection/max wrong_type"}},
		{"selection unknown field", ba("selection.count", 1), []string{p + "/selection/count unknown_field"}},
		// UUID edges (docs/service.md §2.2 rule 4)
		{"uuid version 0", baIDs([]any{"123e4567-e89b-02d3-a456-426614174000"}), []string{p + "/identifiers/0 invalid_uuid"}},
		{"uuid version 1", baIDs([]any{"123e4567-e89b-12d3-a456-426614174000"}), nil},
		{"uuid version 8", baIDs([]any{"123e4567-e89b-82d3-a456-426614174000"}), nil},
		{"uuid version 9", baIDs([]any{"123e4567-e89b-92d3-a456-426614174000"}), []string{p + "/identifiers/0 invalid_uuid"}},
		{"uuid variant 7", baIDs([]any{"123e4567-e89b-42d3-7456-426614174000"}), []string{p + "/identifiers/0 invalid_uuid"}},
		{"uuid variant 8", baIDs([]any{"123e4567-e89b-42d3-8456-426614174000"}), nil},
		{"uuid variant b", baIDs([]any{"123e4567-e89b-42d3-b456-426614174000"}), nil},
		{"uuid variant B upper case", baIDs([]any{"123E4567-E89B-42D3-B456-426614174ABC"}), nil},
		{"uuid variant c", baIDs([]any{"123e4567-e89b-42d3-c456-426614174000"}), []string{p + "/identifiers/0 invalid_uuid"}},
		{"uuid without dashes", baIDs([]any{"123e4567e89b42d3a456426614174000"}), []string{p + "/identifiers/0 invalid_uuid"}},
		{"uuid a number", baIDs([]any{12}), []string{p + "/identifiers/0 wrong_type"}},
		// locations (docs/service.md §2.2 rule 2)
		{"bank_account locations ok", ba("locations", []any{"https://bank.example"}), nil},
		{"bank_account locations other address", ba("locations", []any{"https://bank.example.evil"}), []string{p + "/locations/0 location_mismatch"}},
		{"locations 0 items", ac("locations", []any{}), []string{p + "/locations too_few_items"}},
		{"locations 2 items", ac("locations", []any{"https://bank.example", "https://bank.example"}), []string{p + "/locations too_many_items"}},
		{"locations missing", ac("locations", nil), []string{p + "/locations missing_field"}},
		{"signing detail at banking address", set(validDetail("signatures"), "locations", []any{"https://bank.example"}), []string{p + "/locations/0 location_mismatch"}},
		{"documents at signing address", set(validDetail("documents"), "locations", []any{"https://sign.example/api"}), []string{p + "/locations/0 location_mismatch"}},
		// automatic-charge transaction (docs/service.md §2.4, §8)
		{"transaction missing", ac("transaction", nil), []string{p + "/transaction missing_field"}},
		{"currency USD", ac("transaction.currency", "USD"), []string{p + "/transaction/currency not_allowed_value"}},
		{"minimum 15 digits", ac("transaction.minimum", repeat("9", 15)), nil},
		{"minimum 16 digits", ac("transaction.minimum", repeat("9", 16)), []string{p + "/transaction/minimum invalid_amount"}},
		{"maximum leading zero", ac("transaction.maximum", "0100"), []string{p + "/transaction/maximum invalid_amount"}},
		{"maximum zero", ac("transaction.maximum", "0"), []string{p + "/transaction/maximum invalid_amount"}},
		{"maximum 1", ac("transaction.maximum", "1"), nil},
		{"minimum a number", ac("transaction.minimum", 1000), []string{p + "/transaction/minimum wrong_type"}},
		{"minimum negative", ac("transaction.minimum", "-5"), []string{p + "/transaction/minimum invalid_amount"}},
		{"transaction unknown field", ac("transaction.fee", "1"), []string{p + "/transaction/fee unknown_field"}},
		{"automatic-charge action of bank_account", ac("actions", []any{"execute_withdrawal"}), []string{p + "/actions/0 not_allowed_value"}},
		{"automatic-charge actions 0", ac("actions", []any{}), []string{p + "/actions too_few_items"}},
		// budget: null or object
		{"budget null", ac("budget", nil), nil},
		{"budget JSON null", ac("budget", json.RawMessage("null")), nil},
		{"budget valid", budget("", nil), nil},
		{"budget a string", ac("budget", "monthly"), []string{p + "/budget wrong_type"}},
		{"budget amount missing", budget("amount", nil), []string{p + "/budget/amount missing_field"}},
		{"budget amount leading zero", budget("amount", "01"), []string{p + "/budget/amount invalid_amount"}},
		{"interval count 0", budget("interval.count", 0), []string{p + "/budget/interval/count out_of_range"}},
		{"interval count 1", budget("interval.count", 1), nil},
		{"interval count 365", budget("interval.count", 365), nil},
		{"interval count 366", budget("interval.count", 366), []string{p + "/budget/interval/count out_of_range"}},
		{"interval unit weeks", budget("interval.unit", "weeks"), []string{p + "/budget/interval/unit not_allowed_value"}},
		{"time_zone empty", budget("time_zone", ""), []string{p + "/budget/time_zone too_short"}},
		// sources and beneficiaries: up to 100 UUIDs, unique
		{"sources 0", ac("sources", []any{}), nil},
		{"sources 100", ac("sources", anys(uuids(100))), nil},
		{"sources 101", ac("sources", anys(uuids(101))), []string{p + "/sources too_many_items"}},
		{"beneficiaries 100", ac("beneficiaries", anys(uuids(100))), nil},
		{"beneficiaries 101", ac("beneficiaries", anys(uuids(101))), []string{p + "/beneficiaries too_many_items"}},
		{"beneficiaries repeated", ac("beneficiaries", anys([]string{uuids(1)[0], uuids(1)[0]})), []string{p + "/beneficiaries duplicate_items"}},
		{"beneficiary bad uuid", ac("beneficiaries", []any{"not-a-uuid"}), []string{p + "/beneficiaries/0 invalid_uuid"}},
		{"automatic-charge selection min above max", ac("selection", map[string]any{"min": 9, "max": 1}), []string{p + "/selection/min selection_min_above_max"}},
		// account_binding
		{"key 64 chars", ac("account_binding", map[string]any{"key": "a" + repeat("b", 63), "name": map[string]any{"suggested": "Main"}}), nil},
		{"key 65 chars", ac("account_binding", map[string]any{"key": "a" + repeat("b", 64), "name": map[string]any{"suggested": "Main"}}), []string{p + "/account_binding/key invalid_key"}},
		{"key starts with digit", ac("account_binding", map[string]any{"key": "1abc", "name": map[string]any{"suggested": "Main"}}), []string{p + "/account_binding/key invalid_key"}},
		{"key upper case", ac("account_binding", map[string]any{"key": "Main", "name": map[string]any{"suggested": "Main"}}), []string{p + "/account_binding/key invalid_key"}},
		{"key with _ and -", ac("account_binding", map[string]any{"key": "a_b-9", "name": map[string]any{"suggested": "Main"}}), nil},
		{"suggested 80 chars", ac("account_binding", map[string]any{"key": "k", "name": map[string]any{"suggested": repeat("x", 80)}}), nil},
		{"suggested 81 chars", ac("account_binding", map[string]any{"key": "k", "name": map[string]any{"suggested": repeat("x", 81)}}), []string{p + "/account_binding/name/suggested too_long"}},
		{"suggested all whitespace", ac("account_binding", map[string]any{"key": "k", "name": map[string]any{"suggested": " \t "}}), []string{p + "/account_binding/name/suggested blank"}},
		{"suggested empty", ac("account_binding", map[string]any{"key": "k", "name": map[string]any{"suggested": ""}}), []string{p + "/account_binding/name/suggested too_short"}},
		{"suggested invisible characters only", ac("account_binding", map[string]any{"key": "k", "name": map[string]any{"suggested": "\u00a0\u3000\u2003\u200b"}}), []string{p + "/account_binding/name/suggested blank"}},
		{"suggested with one visible character", ac("account_binding", map[string]any{"key": "k", "name": map[string]any{"suggested": "\u3000x"}}), nil},
		// integers spelled with a fraction or an exponent (review finding)
		{"selection min 5.0 above max", ba("selection", map[string]any{"min": json.Number("5.0"), "max": 1}), []string{p + "/selection/min non_canonical_number", p + "/selection/min selection_min_above_max"}},
		{"interval count 3.65e2", budget("interval.count", json.Number("3.65e2")), []string{p + "/budget/interval/count non_canonical_number"}},
		{"interval count 1.5", budget("interval.count", json.Number("1.5")), []string{p + "/budget/interval/count wrong_type"}},
		{"editable a string", ac("account_binding", map[string]any{"key": "k", "name": map[string]any{"suggested": "x", "editable": "yes"}}), []string{p + "/account_binding/name/editable wrong_type"}},
		{"account_binding without name", ac("account_binding", map[string]any{"key": "k"}), []string{p + "/account_binding/name missing_field"}},
		// docs/service.md §2.5 types
		{"documents action delete", set(validDetail("documents"), "actions", []any{"delete"}), []string{p + "/actions/0 not_allowed_value"}},
		{"signing-key action create", set(validDetail("signing-key"), "actions", []any{"create"}), []string{p + "/actions/0 not_allowed_value"}},
		{"company-key unknown field", set(validDetail("company-key"), "org_id", "x"), []string{p + "/org_id unknown_field"}},
		// type
		{"unknown type", map[string]any{"type": "https://bank.example/authorization-details/payroll", "actions": []any{"read"}}, []string{p + "/type unknown_type"}},
		{"type of another deployment", map[string]any{"type": "https://other-bank.example/authorization-details/company-identity", "actions": []any{"read"}}, []string{p + "/type unknown_type"}},
		{"type missing", map[string]any{"actions": []any{"read"}}, []string{p + " missing_field"}},
		{"type a number", map[string]any{"type": 7}, []string{p + "/type wrong_type"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := check(t, c, tc.detail)
			sort.Strings(tc.want)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("violations:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestVerdictMemoBound fills the memo past its bound: verdicts stay right
// and the memo starts again instead of growing.
func TestVerdictMemoBound(t *testing.T) {
	c := newTestCatalog(t)
	for i := range maxVerdicts + 10 {
		d := set(validDetail("automatic-charge"), "transaction.maximum", fmt.Sprint(1000+i))
		if i%2 == 1 {
			set(d, "transaction.minimum", "0"+fmt.Sprint(i))
		}
		got := check(t, c, d)
		if (i%2 == 1) != (len(got) == 1) {
			t.Fatalf("detail %d: violations %v", i, got)
		}
	}
	if n := c.verdicts.n.Load(); n > maxVerdicts {
		t.Errorf("memo holds %d verdicts, bound %d", n, maxVerdicts)
	}
}
