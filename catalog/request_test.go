package catalog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func pointersAndCodes(r *Result) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Pointer+" "+v.Code+" "+v.OAuthError)
	}
	return out
}

func TestRequestRules(t *testing.T) {
	c := newTestCatalog(t)
	detail := func(keys ...string) json.RawMessage {
		var ds []map[string]any
		for _, k := range keys {
			ds = append(ds, validDetail(k))
		}
		js, _ := json.Marshal(ds)
		return js
	}
	allScopes := make([]string, 0, 14)
	for _, s := range c.Scopes() {
		allScopes = append(allScopes, s.Name)
	}
	cases := []struct {
		name string
		req  Request
		want []string
	}{
		{"every catalog scope", Request{Scope: strings.Join(allScopes, " "), Resource: []string{"https://bank.example"}}, nil},
		{"empty request", Request{}, nil},
		{"unknown scope", Request{Scope: "openid admin", Resource: []string{"https://bank.example"}}, []string{"/scope unknown_scope invalid_scope"}},
		{"scope names are case-sensitive", Request{Scope: "OpenID", Resource: []string{"https://bank.example"}}, []string{"/scope unknown_scope invalid_scope"}},
		{"scope without resource", Request{Scope: "openid"}, []string{"/resource resource_missing invalid_target"}},
		{"scope with another resource", Request{Scope: "openid", Resource: []string{"https://bank.example.evil"}}, []string{"/resource resource_mismatch invalid_target"}},
		{"resource with trailing slash is another address", Request{Scope: "openid", Resource: []string{"https://bank.example/"}}, []string{"/resource resource_mismatch invalid_target"}},
		{"two resources, one wrong", Request{Scope: "openid", Resource: []string{"https://bank.example", "https://evil.example"}}, []string{"/resource/1 resource_mismatch invalid_target"}},
		{"signing detail with its resource", Request{Resource: []string{"https://sign.example/api"}, AuthorizationDetails: detail("signatures"), OrgID: "o"}, nil},
		{"signing detail with banking resource", Request{Resource: []string{"https://bank.example"}, AuthorizationDetails: detail("signatures"), OrgID: "o"}, []string{"/resource resource_mismatch invalid_target"}},
		{"company-scoped without org_id", Request{AuthorizationDetails: detail("documents")}, []string{"/org_id org_id_missing invalid_request"}},
		{"company-scoped with blank org_id", Request{AuthorizationDetails: detail("signing-key"), OrgID: "  "}, []string{"/org_id org_id_missing invalid_request"}},
		{"bank_account needs no org_id", Request{AuthorizationDetails: detail("bank_account")}, nil},
		{"company-identity alone", Request{AuthorizationDetails: detail("company-identity"), OrgID: "o"}, []string{"/authorization_details/0 company_pair_incomplete invalid_authorization_details"}},
		{"company-addresses alone", Request{AuthorizationDetails: detail("bank_account", "company-addresses"), OrgID: "o"}, []string{"/authorization_details/1 company_pair_incomplete invalid_authorization_details"}},
		{"company pair together", Request{AuthorizationDetails: detail("company-addresses", "company-identity"), OrgID: "o"}, nil},
		{"details not JSON", Request{AuthorizationDetails: json.RawMessage(`[{"type":`)}, []string{"/authorization_details malformed_json invalid_authorization_details"}},
		{"details an object", Request{AuthorizationDetails: json.RawMessage(`{"type":"bank_account"}`)}, []string{"/authorization_details not_an_array invalid_authorization_details"}},
		{"details empty", Request{AuthorizationDetails: json.RawMessage(`[]`)}, []string{"/authorization_details empty invalid_authorization_details"}},
		{"detail a string", Request{AuthorizationDetails: json.RawMessage(`["bank_account"]`)}, []string{"/authorization_details/0 not_an_object invalid_authorization_details"}},
		{"details too deep", Request{AuthorizationDetails: json.RawMessage(strings.Repeat("[", 40) + strings.Repeat("]", 40))}, []string{"/authorization_details malformed_json invalid_authorization_details"}},
		{"text after the array", Request{AuthorizationDetails: json.RawMessage(`[] []`)}, []string{"/authorization_details malformed_json invalid_authorization_details"}},
		// Review findings: separators, strict JSON, size caps.
		{"tab is not a scope separator", Request{Scope: "openid\tprofile", Resource: []string{"https://bank.example"}}, []string{"/scope bad_scope_syntax invalid_scope"}},
		{"no-break space is not a separator", Request{Scope: "openid\u00a0profile", Resource: []string{"https://bank.example"}}, []string{"/scope bad_scope_syntax invalid_scope"}},
		{"doubled spaces are passed over", Request{Scope: " openid  profile ", Resource: []string{"https://bank.example"}}, nil},
		{"duplicate member", Request{AuthorizationDetails: json.RawMessage(`[{"type":"nope","type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{}}]`)}, []string{"/authorization_details malformed_json invalid_authorization_details"}},
		{"closing brackets after the array", Request{AuthorizationDetails: json.RawMessage(`[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{}}]]}`)}, []string{"/authorization_details malformed_json invalid_authorization_details"}},
		{"huge exponent", Request{AuthorizationDetails: json.RawMessage(`[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"max":1e1000000}}]`)}, []string{"/authorization_details malformed_json invalid_authorization_details"}},
		{"too many details", Request{AuthorizationDetails: json.RawMessage("[" + strings.Repeat("{},", MaxDetails) + "{}]")}, []string{"/authorization_details too_many_details invalid_authorization_details"}},
		{"violations come in request order", Request{Scope: "nope", AuthorizationDetails: json.RawMessage(`[{"type":"x"},{"type":"y"}]`)},
			[]string{"/scope unknown_scope invalid_scope", "/authorization_details/0/type unknown_type invalid_authorization_details", "/authorization_details/1/type unknown_type invalid_authorization_details"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := pointersAndCodes(c.Check(tc.req))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("violations:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestResultParts(t *testing.T) {
	c := newTestCatalog(t)
	js, _ := json.Marshal([]any{validDetail("company-identity"), validDetail("company-addresses"), map[string]any{"type": "nope"}})
	r := c.Check(Request{Scope: "openid openid profile", Resource: []string{"https://bank.example"}, AuthorizationDetails: js, OrgID: "o"})
	if got := strings.Join(r.Scopes, " "); got != "openid profile" {
		t.Errorf("Scopes = %q, want repeats dropped", got)
	}
	if len(r.Details) != 2 || r.Details[0].Type.Key != "company-identity" || r.Details[1].Index != 1 {
		t.Fatalf("Details = %+v, want the two known details", r.Details)
	}
	if r.Details[0].Actions[0] != "read" || meaningOf(r.Details[0].Type, "read") != "Read the Company legal identifier and country" {
		t.Errorf("detail actions or meanings lost: %+v", r.Details[0])
	}
	// Each detail keeps its own text, exactly as sent.
	spaced := json.RawMessage(` [ {"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["123e4567-e89b-42d3-a456-426614174000"]} ,` +
		"\n\t" + `{"type" : "https://sign.example/authorization-details/signing-key", "actions":["read"], "locations":["https://sign.example/api"]}]`)
	r2 := c.Check(Request{AuthorizationDetails: spaced, OrgID: "o"})
	if len(r2.Details) != 2 || !strings.HasPrefix(string(r2.Details[0].JSON), `{"type":"bank_account"`) || !strings.HasSuffix(string(r2.Details[0].JSON), `"]}`) ||
		string(r2.Details[1].JSON) != `{"type" : "https://sign.example/authorization-details/signing-key", "actions":["read"], "locations":["https://sign.example/api"]}` {
		t.Errorf("detail texts: %q / %q", r2.Details[0].JSON, r2.Details[1].JSON)
	}
	var ce *Error
	if err := r.Err(); !errors.As(err, &ce) || ce.Code != ErrInvalidAuthorizationDetails || !strings.Contains(ce.Description, "unknown_type") {
		t.Errorf("Err() = %v, want invalid_authorization_details naming unknown_type", err)
	}
}

// meaningOf returns the meaning of a type's action, "" when it has none.
func meaningOf(t *Type, action string) string { a, _ := t.Action(action); return a.Meaning }

func TestEndpointsFillTypesAndLocations(t *testing.T) {
	other := Endpoints{BaseURL: "http://127.0.0.1:8080/bank/", SigningBaseURL: "http://127.0.0.2:9000", InvoicingBaseURL: "http://[::1]:9100/inv"}
	c, err := New(other)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{ // key -> type name, resource
		"bank_account":      {"bank_account", "http://127.0.0.1:8080/bank"},
		"automatic-charge":  {"http://127.0.0.1:8080/bank/authorization-details/automatic-charge", "http://127.0.0.1:8080/bank"},
		"company-addresses": {"http://127.0.0.1:8080/bank/authorization-details/company-addresses", "http://127.0.0.1:8080/bank"},
		"company-identity":  {"http://127.0.0.1:8080/bank/authorization-details/company-identity", "http://127.0.0.1:8080/bank"},
		"company-key":       {"http://127.0.0.2:9000/authorization-details/company-key", "http://127.0.0.2:9000"},
		"signatures":        {"http://127.0.0.2:9000/authorization-details/signatures", "http://127.0.0.2:9000"},
		"signing-key":       {"http://127.0.0.2:9000/authorization-details/signing-key", "http://127.0.0.2:9000"},
		"documents":         {"http://[::1]:9100/authorization-details/documents", "http://[::1]:9100/inv"},
	}
	if len(c.Types()) != 8 || len(c.Scopes()) != 14 {
		t.Fatalf("catalog has %d types and %d scopes, want 8 and 14", len(c.Types()), len(c.Scopes()))
	}
	for _, typ := range c.Types() {
		w := want[typ.Key]
		if typ.Name != w[0] || typ.Resource != w[1] {
			t.Errorf("%s: name %q resource %q, want %q %q", typ.Key, typ.Name, typ.Resource, w[0], w[1])
		}
		// The schema accepts exactly the endpoint's address in locations.
		d := map[string]any{"type": typ.Name, "actions": []any{typ.Actions[0].Name}, "locations": []any{typ.Resource}}
		js, _ := json.Marshal([]any{d})
		for _, v := range c.Check(Request{AuthorizationDetails: js, OrgID: "o"}).Violations {
			if strings.Contains(v.Pointer, "locations") {
				t.Errorf("%s: own resource refused in locations: %v", typ.Key, v)
			}
		}
	}
	if typ, _ := c.TypeByKey("documents"); meaningOf(typ, "create") != "Create documents" {
		t.Errorf("documents create meaning = %q", meaningOf(typ, "create"))
	}
}

func TestEndpointsValidate(t *testing.T) {
	good := testEndpoints
	for _, tc := range []struct {
		name string
		mod  func(*Endpoints)
		want string
	}{
		{"empty base", func(e *Endpoints) { e.BaseURL = "" }, "base_url"},
		{"relative signing", func(e *Endpoints) { e.SigningBaseURL = "/sign" }, "signing_base_url"},
		{"ftp invoicing", func(e *Endpoints) { e.InvoicingBaseURL = "ftp://x.example" }, "invoicing_base_url"},
		{"query", func(e *Endpoints) { e.BaseURL = "https://bank.example/?a=1" }, "base_url"},
		{"userinfo", func(e *Endpoints) { e.BaseURL = "https://u@bank.example" }, "base_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := good
			tc.mod(&e)
			_, err := New(e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestEveryMeaningIsSet(t *testing.T) {
	c := newTestCatalog(t)
	for _, s := range c.Scopes() {
		if s.Meaning == "" {
			t.Errorf("scope %s has no meaning", s.Name)
		}
	}
	for _, typ := range c.Types() {
		if typ.Meaning == "" || len(typ.Actions) == 0 {
			t.Errorf("type %s has no meaning or actions", typ.Key)
		}
		for _, a := range typ.Actions {
			if a.Meaning == "" {
				t.Errorf("%s action %s has no meaning", typ.Key, a.Name)
			}
		}
	}
}

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		wantErr  string
		want     []string
	}{
		{"not an object", `[1]`, "must be a JSON object", nil},
		{"not JSON", `{`, "not valid JSON", nil},
		{"too deep", strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100), "nesting deeper", nil},
		{"too large", `{"scope":"` + strings.Repeat("a", MaxRequestBytes) + `"}`, "the limit", nil},
		{"wrong member types", `{"scope":1,"org_id":[],"resource":{"a":1}}`, "", []string{"/scope wrong_type invalid_request", "/resource wrong_type invalid_request", "/org_id wrong_type invalid_request"}},
		{"resource array with a number", `{"resource":["a",1]}`, "", []string{"/resource wrong_type invalid_request"}},
		{"unknown member", `{"client_id":"x"}`, "", []string{"/client_id unknown_member invalid_request"}},
		{"all members", `{"scope":"openid","resource":["https://bank.example"],"authorization_details":[],"org_id":"o"}`, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, vs, err := DecodeRequest([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := pointersAndCodes(&Result{Violations: vs})
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("violations:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestViolationCap: a request built to produce many violations gets a
// bounded answer that says how many were left out.
func TestViolationCap(t *testing.T) {
	c := newTestCatalog(t)
	var b strings.Builder
	b.WriteString(`[`)
	for i := range MaxDetails {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"bank_account","actions":[],"subject":{},"selection":{"min":0,"max":0},"x":1}`)
	}
	b.WriteString(`]`)
	r := c.Check(Request{AuthorizationDetails: json.RawMessage(b.String())})
	last := r.Violations[len(r.Violations)-1]
	if len(r.Violations) != MaxViolations || last.Code != "too_many_violations" || !strings.Contains(last.Message, "more violations") {
		t.Fatalf("%d violations, last %+v", len(r.Violations), last)
	}
}

func TestFill(t *testing.T) {
	c := newTestCatalog(t)
	got := c.Fill("{base_url}/x {signing_base_url} {invoicing_base_url} {signing_origin}/authorization-details/signatures {invoicing_origin}")
	want := "https://bank.example/x https://sign.example/api https://invoices.example/v1 https://sign.example/authorization-details/signatures https://invoices.example"
	if got != want {
		t.Errorf("Fill = %q, want %q", got, want)
	}
	x, err := c.Extend(payrollDeclaration())
	if err != nil || x.Fill("{base_url}") != "https://bank.example" {
		t.Errorf("an extended catalog fills as its origin does: %v", err)
	}
}
