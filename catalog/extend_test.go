package catalog

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

const payrollSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "additionalProperties": false,
  "required": ["type", "actions", "locations"],
  "properties": {
    "type": {"const": "https://payroll.example/authorization-details/payslips"},
    "actions": {"type": "array", "minItems": 1, "uniqueItems": true, "items": {"enum": ["read", "publish"]}},
    "locations": {"type": "array", "minItems": 1, "maxItems": 1, "items": {"const": "https://payroll.example/api"}},
    "period": {"type": "object", "additionalProperties": false, "properties": {"month": {"type": "integer", "minimum": 1, "maximum": 12}}}
  }
}`

func payrollDeclaration() Declaration {
	return Declaration{
		ID:       "rs-payroll",
		Resource: "https://payroll.example/api",
		Scopes:   []DeclaredScope{{Name: "payroll:read", Meaning: "Read the subject's payslips"}},
		Types: []DeclaredType{{
			Name: "https://payroll.example/authorization-details/payslips", Meaning: "Payslips of the Company",
			Actions:       []Action{{"read", "Read payslips"}, {"publish", "Publish payslips"}},
			CompanyScoped: true,
			Schema:        json.RawMessage(payrollSchema),
		}},
	}
}

func TestExtendWithApprovedResourceServer(t *testing.T) {
	c := newTestCatalog(t)
	if vs := c.CheckDeclaration(payrollDeclaration()); len(vs) != 0 {
		t.Fatalf("valid declaration refused: %v", vs)
	}
	x, err := c.Extend(payrollDeclaration())
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Scopes()) != 15 || len(x.Types()) != 9 || len(c.Scopes()) != 14 || len(c.Types()) != 8 {
		t.Fatalf("extended %d/%d, original %d/%d; want 15/9 and 14/8", len(x.Scopes()), len(x.Types()), len(c.Scopes()), len(c.Types()))
	}
	detail := func(month any) json.RawMessage {
		js, _ := json.Marshal([]any{map[string]any{"type": "https://payroll.example/authorization-details/payslips", "actions": []any{"read"},
			"locations": []any{"https://payroll.example/api"}, "period": map[string]any{"month": month}}})
		return js
	}
	for _, tc := range []struct {
		name string
		cat  *Catalog
		req  Request
		want string
	}{
		{"RS detail accepted", x, Request{AuthorizationDetails: detail(3), OrgID: "o", Resource: []string{"https://payroll.example/api"}}, ""},
		{"RS detail checked by its schema", x, Request{AuthorizationDetails: detail(13), OrgID: "o"}, "/authorization_details/0/period/month out_of_range"},
		{"RS type needs org_id", x, Request{AuthorizationDetails: detail(1)}, "/org_id org_id_missing"},
		{"RS type unknown to the original catalog", c, Request{AuthorizationDetails: detail(1), OrgID: "o"}, "/authorization_details/0/type unknown_type"},
		{"RS scope with its resource", x, Request{Scope: "payroll:read", Resource: []string{"https://payroll.example/api"}}, ""},
		{"RS scope with the banking resource", x, Request{Scope: "payroll:read", Resource: []string{"https://bank.example"}}, "/resource resource_mismatch"},
		{"RS and catalog scopes need both resources", x, Request{Scope: "openid payroll:read", Resource: []string{"https://bank.example"}}, "/resource resource_missing"},
		{"RS and catalog scopes with both resources", x, Request{Scope: "openid payroll:read", Resource: []string{"https://bank.example", "https://payroll.example/api"}}, ""},
		{"RS scope unknown to the original catalog", c, Request{Scope: "payroll:read", Resource: []string{"https://payroll.example/api"}}, "/scope unknown_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range tc.cat.Check(tc.req).Violations {
				got = append(got, v.Pointer+" "+v.Code)
			}
			if strings.Join(got, "\n") != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if typ, ok := x.Type("https://payroll.example/authorization-details/payslips"); !ok || typ.Provider != "rs:rs-payroll" || meaningOf(typ, "publish") != "Publish payslips" {
		t.Errorf("declared type = %+v", typ)
	}
}

func TestCheckDeclarationProblems(t *testing.T) {
	c := newTestCatalog(t)
	edit := func(f func(*Declaration)) Declaration { d := payrollDeclaration(); f(&d); return d }
	schema := func(old, new string) func(*Declaration) {
		return func(d *Declaration) { d.Types[0].Schema = json.RawMessage(strings.Replace(payrollSchema, old, new, 1)) }
	}
	for _, tc := range []struct {
		name string
		decl Declaration
		want []string
	}{
		{"no id", edit(func(d *Declaration) { d.ID = "" }), []string{"/id missing_field"}},
		{"resource not a URL", edit(func(d *Declaration) { d.Resource = "payroll" }), []string{"/resource bad_resource", "/types/0/schema/properties/locations bad_schema"}},
		{"resource of the bank", edit(func(d *Declaration) { d.Resource = "https://bank.example" }), []string{"/resource resource_taken", "/types/0/schema/properties/locations bad_schema"}},
		{"nothing declared", edit(func(d *Declaration) { d.Scopes, d.Types = nil, nil }), []string{" empty"}},
		{"scope with a space", edit(func(d *Declaration) { d.Scopes[0].Name = "payroll read" }), []string{"/scopes/0/name bad_scope_name"}},
		{"catalog scope taken", edit(func(d *Declaration) { d.Scopes[0].Name = "openid" }), []string{"/scopes/0/name name_taken"}},
		{"scope without meaning", edit(func(d *Declaration) { d.Scopes[0].Meaning = " " }), []string{"/scopes/0/meaning missing_field"}},
		{"catalog type taken", edit(func(d *Declaration) { d.Types[0].Name = "bank_account" }), []string{"/types/0/name name_taken", "/types/0/schema/properties/type bad_schema"}},
		{"action without meaning", edit(func(d *Declaration) { d.Types[0].Actions[1].Meaning = "" }), []string{"/types/0/actions/1 missing_field"}},
		{"nested object allows more", edit(schema(`"period": {"type": "object", "additionalProperties": false,`, `"period": {"type": "object",`)), []string{"/types/0/schema/properties/period additional_properties_allowed"}},
		{"root allows more", edit(schema(`"additionalProperties": false,
  "required"`, `"required"`)), []string{"/types/0/schema additional_properties_allowed"}},
		{"actions enum differs", edit(schema(`["read", "publish"]`, `["read", "delete"]`)), []string{"/types/0/schema/properties/actions/items/enum actions_mismatch"}},
		{"locations of another address", edit(schema(`"items": {"const": "https://payroll.example/api"}`, `"items": {"const": "https://evil.example"}`)), []string{"/types/0/schema/properties/locations bad_schema"}},
		{"schema not JSON", edit(func(d *Declaration) { d.Types[0].Schema = json.RawMessage(`{`) }), []string{"/types/0/schema bad_schema"}},
		{"schema loads a URL", edit(schema(`"period": {`, `"period": {"$ref": "https://evil.example/s.json", `)), []string{"/types/0/schema bad_schema"}},
		{"schema sets $id", edit(schema(`"type": "object",`, `"$id": "https://evil.example/x", "type": "object",`)), []string{"/types/0/schema bad_schema"}},
		{"type not required", edit(schema(`"required": ["type", "actions", "locations"]`, `"required": ["actions"]`)), []string{"/types/0/schema/required bad_schema"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range c.CheckDeclaration(tc.decl) {
				if v.Message == "" {
					t.Errorf("violation without message: %+v", v)
				}
				got = append(got, v.Pointer+" "+v.Code)
			}
			sort.Strings(got)
			sort.Strings(tc.want)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
			if len(tc.want) > 0 {
				if _, err := c.Extend(tc.decl); err == nil {
					t.Error("Extend accepted a declaration with problems")
				}
			}
		})
	}
	t.Run("two declarations taking one name", func(t *testing.T) {
		other := payrollDeclaration()
		other.ID, other.Types = "rs-other", nil
		if _, err := c.Extend(payrollDeclaration(), other); err == nil || !strings.Contains(err.Error(), "name_taken") {
			t.Errorf("Extend = %v, want the second declaration refused", err)
		}
	})
}
