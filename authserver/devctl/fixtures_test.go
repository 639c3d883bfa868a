package devctl

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

const examplePath = "../../examples/fixtures/qa.json"

// fixtureSchema compiles assets/schemas/devctl/fixture.json.
func fixtureSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile("../../assets/schemas/devctl/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	const url = "https://schemas.miniapp-host.invalid/devctl/fixture.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// schemaAccepts reports whether the schema accepts data.
func schemaAccepts(t testing.TB, s *jsonschema.Schema, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// TestFixtureExampleParses: the example file of docs/dashboard.md is read
// whole by the parser and accepted by the file's JSON Schema.
func TestFixtureExampleParses(t *testing.T) {
	raw, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseFixture(raw)
	if err != nil {
		t.Fatalf("the example is refused: %v", err)
	}
	if len(f.Subjects) != 2 || len(f.Companies) != 1 || len(f.Consents) != 2 || len(f.Grants) != 2 ||
		len(f.Subjects[0].Accounts) != 2 || len(f.Subjects[1].Companies) != 2 || !f.Grants[1].Revoked || f.Consents[0].AccountID == "" {
		t.Fatalf("the example is not read whole: %+v", f)
	}
	if err := schemaAccepts(t, fixtureSchema(t), raw); err != nil {
		t.Fatalf("the schema refuses the example: %v", err)
	}
}

// TestFixtureParseRefusals: each refusal is at the JSON pointer of the
// value, with the rule, and the schema refuses the same files.
func TestFixtureParseRefusals(t *testing.T) {
	s := fixtureSchema(t)
	for _, x := range []struct {
		body, code, field, want string
	}{
		{`[]`, CodeInvalidBody, "", "must be an object"},
		{`{"version": 2}`, CodeInvalidField, "/version", "version must be the number 1"},
		{`{"version": 1, "extra": 1}`, CodeInvalidBody, "/extra", `unknown field "extra"`},
		{`{"version": 1, "subjects": [{"id": "sub_a", "profile": {"name": "A", "nick": "a"}}]}`, CodeInvalidBody, "/subjects/0/profile/nick", "unknown field"},
		{`{"version": 1, "subjects": [{"id": "sub_a"}]}`, CodeMissingField, "/subjects/0/profile", "profile"},
		{`{"version": 1, "subjects": [{"id": "sub_a", "profile": {"name": ""}}]}`, CodeMissingField, "/subjects/0/profile/name", "must not be empty"},
		{`{"version": 1, "subjects": [{"id": "sub_A", "profile": {"name": "A"}}]}`, CodeInvalidField, "/subjects/0/id", "sub_ and 1 to 60"},
		{`{"version": 1, "subjects": null}`, CodeInvalidBody, "/subjects", "must be an array, got null"},
		{`{"version": 1, "subjects": [{"id": "sub_a", "profile": {"name": "A"}, "companies": [{"id": "org_b", "role": "owner"}]}]}`,
			CodeInvalidField, "/subjects/0/companies/0/role", `"admin" or "member"`},
		{`{"version": 1, "companies": [{"id": "org_b", "name": "B", "legal_id": "1", "country": "Chile"}]}`, CodeInvalidField, "/companies/0/country", "ISO 3166-1"},
		{`{"version": 1, "companies": [{"id": "org_b", "name": "B", "legal_id": "1", "country": "CL",
			"accounts": [{"id": "ACC", "name": "a", "number": "1", "currency": "CLP"}]}]}`, CodeInvalidField, "/companies/0/accounts/0/id", "UUID in lower case"},
		{`{"version": 1, "companies": [{"id": "org_b", "name": "B", "legal_id": "1", "country": "CL",
			"accounts": [{"id": "8c7b6a59-4e3d-4c2b-9a1f-0e9d8c7b6a52", "name": "a", "number": "1", "currency": "pesos"}]}]}`, CodeInvalidField, "/companies/0/accounts/0/currency", "ISO 4217"},
		{`{"version": 1, "consents": [{"subject": "sub_a", "client_id": "c"}]}`, CodeMissingField, "/consents/0/scope", "at least one scope"},
		{`{"version": 1, "consents": [{"subject": "sub_a", "client_id": "c", "scope": "openid"}]}`, CodeInvalidBody, "/consents/0/scope", "must be an array"},
		{`{"version": 1, "consents": [{"subject": "sub_a", "client_id": "c", "scope": ["openid", "a b"]}]}`, CodeInvalidField, "/consents/0/scope/1", "without spaces"},
		{`{"version": 1, "consents": [{"subject": "sub_a", "client_id": "c", "authorization_details": {"type": "x"}}]}`, CodeInvalidBody, "/consents/0/authorization_details", "must be an array"},
		{`{"version": 1, "consents": [{"subject": "sub_a", "client_id": "c", "authorization_details": ["x"]}]}`, CodeInvalidBody, "/consents/0/authorization_details/0", "must be an object"},
		{`{"version": 1, "consents": [{"subject": "sub_a", "client_id": 7, "scope": ["openid"]}]}`, CodeInvalidBody, "/consents/0/client_id", "must be a string, got a number"},
		{`{"version": 1, "grants": [{"id": "g1", "subject": "sub_a", "client_id": "c", "scope": ["openid"]}]}`, CodeInvalidField, "/grants/0/id", "UUID in lower case"},
		{`{"version": 1, "grants": [{"id": "0193a7c0-0000-7000-8000-00000000a001", "subject": "sub_a", "client_id": "c", "scope": ["openid"], "revoked": 1}]}`,
			CodeInvalidBody, "/grants/0/revoked", "true or false"},
		{`{"version": 1, "subjects": [{"id": "sub_a", "profile": {"name": "A"}}, {"id": "sub_a", "profile": {"name": "A"}}]}`, CodeInvalidField, "/subjects/1/id", "named twice"},
	} {
		_, err := parseFixture([]byte(x.body))
		var e *Error
		if !errors.As(err, &e) || e.Code != x.code || e.Field != x.field || !strings.Contains(e.Message, x.want) {
			t.Errorf("%s: want %s at %q saying %q, got %v", x.body, x.code, x.field, x.want, err)
			continue
		}
		if x.want != "named twice" && schemaAccepts(t, s, []byte(x.body)) == nil {
			t.Errorf("%s: the parser refuses it, the schema accepts it", x.body)
		}
	}
}

// FuzzFixtureFile feeds arbitrary documents to the fixture file's parser,
// which reads outside input: it never panics; a refusal is an *Error with
// a code, a message, and a field whose parent is in the document; a file
// it accepts is one the published schema accepts too.
func FuzzFixtureFile(f *testing.F) {
	raw, err := os.ReadFile(examplePath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	for _, s := range []string{`{"version": 1}`, `{"version": 1, "subjects": [{"id": "sub_a", "profile": {"name": "A", "addresses": [{}]}}]}`,
		`{"version": 1, "consents": [{"subject": "sub_a", "client_id": "c", "authorization_details": []}]}`, `{"a~/b": 1}`, `[]`, `null`} {
		f.Add([]byte(s))
	}
	schema := fixtureSchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := parseFixture(data)
		if err == nil {
			if err := schemaAccepts(t, schema, data); err != nil {
				t.Fatalf("the parser accepts %q, the schema refuses it: %v", data, err)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) || e.Code == "" || e.Message == "" {
			t.Fatalf("refusal of %q is not a complete *Error: %#v", data, err)
		}
		doc, derr := strictjson.Decode(data, strictjson.Limits{})
		switch {
		case derr != nil && e.Code != CodeInvalidBody:
			t.Fatalf("%q is refused as %s, but it is not even JSON: %v", data, e.Code, derr)
		case derr != nil || e.Field == "":
			return
		}
		parent := e.Field[:strings.LastIndex(e.Field, "/")]
		if _, ok := jsonpointer.Lookup(doc, parent); !ok {
			t.Fatalf("refusal of %q names %s, whose parent is not in the document", data, e.Field)
		}
	})
}
