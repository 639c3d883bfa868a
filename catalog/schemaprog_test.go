package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/miniapp-host/miniapp-host/jsonpointer"

	"github.com/miniapp-host/miniapp-host/strictjson"
)

// The compiled validator (schemaprog.go) must say what jsonschema/v6 says
// on the same schemas: same verdict, same violations (pointer, code and
// message). These tests hold the two to that on the catalog's schemas and
// on a schema that uses every applicator the compiler implements.

// appliedSchema uses the keywords the catalog's schemas do not (anyOf,
// oneOf, not, if/then/else, boolean schemas, additionalProperties as a
// schema, a recursive $ref, fractional bounds, numeric enums), so that the
// differential tests cover every keyword the compiler accepts.
const appliedSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["b"],
  "definitions": {"leaf": {"type": "integer", "minimum": -2, "maximum": 2.5}},
  "properties": {
    "a": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 0.5, "maximum": 10}]},
    "o": {"oneOf": [{"type": "string"}, {"type": "string", "pattern": "^x"}, {"type": "array", "items": {"$ref": "#/definitions/leaf"}}]},
    "n": {"not": {"enum": [1, "x", null, {"k": [1]}]}},
    "i": {"if": {"type": "object", "required": ["k"]}, "then": {"properties": {"k": {"const": 1.0}}},
          "else": {"type": ["array", "null"], "uniqueItems": true, "maxItems": 30}},
    "b": {"type": "boolean"},
    "f": false,
    "t": true,
    "r": {"$ref": "#"},
    "s": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]*$"},
    "u": {"type": "array", "uniqueItems": true, "minItems": 2, "items": {"type": ["string", "number", "object", "array"]}}
  },
  "additionalProperties": {"type": ["number", "string"], "minLength": 2}
}`

const appliedURL = schemaBase + "test/applied.json"

// testSchema is a schema under test with the Type its messages name.
type testSchema struct {
	name string
	t    *Type
	s    *typeSchema
}

func testSchemas(t testing.TB) []testSchema {
	t.Helper()
	c := newTestCatalog(t)
	var out []testSchema
	for _, ty := range c.types {
		out = append(out, testSchema{ty.Key, ty, c.schemas[ty]})
	}
	comp, prog := newCompiler(), newSchemaCompiler()
	if err := addResource(comp, prog, appliedURL, []byte(appliedSchema)); err != nil {
		t.Fatal(err)
	}
	ref, err := comp.Compile(appliedURL)
	if err != nil {
		t.Fatal(err)
	}
	node, err := prog.compile(appliedURL)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, testSchema{"applied", &Type{Key: "applied", Name: "applied", Resource: "https://bank.example", Provider: Banking}, &typeSchema{node: node, ref: ref}})
	return out
}

// violationsBy renders the violations a set of broken rules turns into,
// sorted, one string each.
func violationsBy(ty *Type, v any, errs []schemaError) []string {
	var r Result
	obj, _ := v.(map[string]any)
	schemaViolations(&r, "", ty, obj, errs)
	out := make([]string, len(r.Violations))
	for i, x := range r.Violations {
		out[i] = x.Pointer + " " + x.Code + " " + x.Message
	}
	sort.Strings(out)
	return out
}

// agree fails the test when the two validators disagree on v.
func agree(t *testing.T, ts testSchema, v any) {
	t.Helper()
	fast := ts.s.node.validate(v)
	var ref []schemaError
	if err := ts.s.ref.Validate(v); err != nil {
		ref = refErrors(err)
	}
	fast, ref = dropMixedDuplicates(v, fast, ref)
	if (fast == nil) != (ref == nil) {
		js, _ := json.Marshal(v)
		t.Fatalf("%s: compiled validator says valid=%v, jsonschema/v6 says valid=%v for %s\ncompiled: %v\nv6: %v",
			ts.name, fast == nil, ref == nil, js, violationsBy(ts.t, v, fast), violationsBy(ts.t, v, ref))
	}
	if a, b := violationsBy(ts.t, v, fast), violationsBy(ts.t, v, ref); !slices.Equal(a, b) {
		js, _ := json.Marshal(v)
		t.Fatalf("%s: violations differ for %s\ncompiled: %q\nv6:       %q", ts.name, js, a, b)
	}
}

// dropMixedDuplicates removes the one known, deliberate difference:
// jsonschema/v6 compares a number with a string by their text when the
// number comes first (it finds ["1", 1] not unique), where JSON Schema
// (draft-07 validation §4.2.2) says values of different types are never
// equal. Where v6 reports such a pair, uniqueItems at that place is left
// out of the comparison on both sides.
func dropMixedDuplicates(v any, fast, ref []schemaError) ([]schemaError, []schemaError) {
	skip := map[string]bool{}
	for _, e := range ref {
		if k, ok := e.kind.(*kind.UniqueItems); ok {
			arr, _ := jsonpointer.Lookup(v, e.inst)
			if a, ok := arr.([]any); ok && textEqual(a[k.Duplicates[0]], a[k.Duplicates[1]]) && !jsonEqual(a[k.Duplicates[0]], a[k.Duplicates[1]]) {
				skip[e.inst] = true
			}
		}
	}
	if len(skip) == 0 {
		return fast, ref
	}
	keep := func(errs []schemaError) []schemaError {
		var out []schemaError
		for _, e := range errs {
			if _, ok := e.kind.(*kind.UniqueItems); !ok || !skip[e.inst] {
				out = append(out, e)
			}
		}
		return out
	}
	return keep(fast), keep(ref)
}

// textEqual is jsonschema/v6's equality: JSON equality, except that a
// number and a string compare by their text ("1" equals 1).
func textEqual(a, b any) bool {
	na, aNum := a.(json.Number)
	nb, bNum := b.(json.Number)
	sa, aStr := a.(string)
	sb, bStr := b.(string)
	switch {
	case aNum && bStr:
		return jsonEqual(na, json.Number(sb))
	case aStr && bNum:
		return jsonEqual(json.Number(sa), nb)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			if yv, ok := y[k]; !ok || !textEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !textEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return jsonEqual(a, b)
}

// normalize round-trips a Go value through JSON and the strict decoder, so
// that it holds what Check validates (numbers as json.Number).
func normalize(t testing.TB, v any) any {
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := strictjson.Decode(js, jsonLimits)
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return out
}

// palette holds the values mutations write: near misses of every rule.
var palette = []any{
	"", "x", "xy", "xyz1", "read", "create", "close", "read_movements", "CLP", "USD", "profile", "months", "days", "years",
	"main", "Main", " ", "\u200b", "ñandú", "15000", "015000", "1234567890123456", "1e3",
	"123e4567-e89b-42d3-a456-426614174000", "123e4567-e89b-02d3-a456-426614174000", "123E4567-E89B-42D3-B456-426614174000",
	"https://bank.example", "https://sign.example/api", "https://invoices.example/v1", "bank_account",
	json.Number("0"), json.Number("1"), json.Number("1.0"), json.Number("1e0"), json.Number("-1"), json.Number("-0"),
	json.Number("2"), json.Number("2.5"), json.Number("10"), json.Number("100"), json.Number("101"), json.Number("365"),
	json.Number("366"), json.Number("1e2"), json.Number("0.5"), json.Number("123456789012345678901"),
	true, false, nil, map[string]any{}, []any{}, []any{"read", "read"}, []any{json.Number("1"), json.Number("1.0")},
	map[string]any{"k": []any{json.Number("1")}}, map[string]any{"k": json.Number("1")},
}

var memberNames = []string{"type", "actions", "locations", "subject", "selection", "identifiers", "transaction", "budget",
	"account_binding", "name", "key", "suggested", "editable", "min", "max", "interval", "unit", "count", "amount",
	"time_zone", "currency", "minimum", "maximum", "sources", "beneficiaries", "identifier", "zzz", "a/b~c",
	"a", "o", "n", "i", "b", "f", "t", "r", "s", "u"}

// slot is one place in a value tree that a mutation can change.
type slot struct {
	val any
	set func(any)
	del func()
}

func slotsOf(v any, set func(any), del func(), out *[]slot) {
	*out = append(*out, slot{v, set, del})
	switch x := v.(type) {
	case map[string]any:
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			slotsOf(x[k], func(n any) { x[k] = n }, func() { delete(x, k) }, out)
		}
	case []any:
		for i := range x {
			slotsOf(x[i], func(n any) { x[i] = n }, func() { set(append(x[:i:i], x[i+1:]...)) }, out)
		}
	}
}

// mutate applies the mutations ops describes (three bytes each) to a copy
// of v: replace a value, delete it, add a member or an item, or copy one
// part of the tree over another.
func mutate(t testing.TB, v any, ops []byte) any {
	root := normalize(t, v)
	for len(ops) >= 3 {
		sel, op, val := int(ops[0]), ops[1], int(ops[2])
		ops = ops[3:]
		var slots []slot
		slotsOf(root, func(n any) { root = n }, func() { root = nil }, &slots)
		s := slots[sel%len(slots)]
		switch op % 6 {
		case 0:
			s.set(copyValue(palette[val%len(palette)]))
		case 1:
			s.del()
		case 2:
			if m, ok := s.val.(map[string]any); ok {
				m[memberNames[val%len(memberNames)]] = copyValue(palette[(val/7)%len(palette)])
			}
		case 3:
			if a, ok := s.val.([]any); ok {
				if len(a) > 0 && val%2 == 0 {
					s.set(append(a, copyValue(a[val%len(a)])))
				} else {
					s.set(append(a, copyValue(palette[val%len(palette)])))
				}
			}
		case 4:
			s.set(copyValue(slots[val%len(slots)].val))
		case 5:
			// A long array, to take the long path of uniqueItems.
			items := make([]any, 21+val%10)
			for i := range items {
				items[i] = fmt.Sprintf("123e4567-e89b-42d3-a456-4266141740%02d", i)
			}
			if val%3 == 0 {
				items[len(items)-1] = items[val%len(items)]
			}
			s.set(items)
		}
	}
	return root
}

func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyValue(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = copyValue(e)
		}
		return a
	}
	return v
}

// baseOf is a valid value of each schema under test, the start of mutations.
func baseOf(ts testSchema) any {
	if ts.name == "applied" {
		return map[string]any{"b": true, "a": "ab", "o": []any{1, 2}, "n": 2, "i": []any{1, "1"}, "s": "abc",
			"u": []any{"a", 1}, "r": map[string]any{"b": false}, "extra": "zz"}
	}
	d := validDetail(ts.name)
	switch ts.name {
	case "automatic-charge":
		d = realisticDetails("50000")[1]
	case "bank_account":
		d = set(set(d, "selection", nil), "identifiers", anys(uuids(3)))
	}
	return d
}

// TestSchemaAgreementGenerated runs both validators over thousands of
// mutated details of every type (a fixed seed, so a failure repeats).
func TestSchemaAgreementGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for _, ts := range testSchemas(t) {
		agree(t, ts, normalize(t, baseOf(ts)))
		for range n {
			ops := make([]byte, 3*(1+rng.IntN(4)))
			for i := range ops {
				ops[i] = byte(rng.Uint32())
			}
			agree(t, ts, mutate(t, baseOf(ts), ops))
		}
	}
}

// FuzzSchemaAgreement is the differential fuzz test: a mutated valid value
// of the chosen schema, and the raw input decoded as a document, checked
// by both validators against every schema.
//
//	go test -run '^$' -fuzz FuzzSchemaAgreement -fuzztime 3m ./catalog
func FuzzSchemaAgreement(f *testing.F) {
	schemas := testSchemas(f)
	f.Add(byte(1), []byte{3, 0, 7}, []byte(`{"type":"bank_account","actions":["read","read"],"subject":{"type":"x"}}`))
	f.Add(byte(0), []byte{9, 2, 40, 1, 5, 5}, []byte(`{"budget":{"interval":{"count":5.0}},"locations":[]}`))
	f.Add(byte(8), []byte{2, 0, 33, 4, 4, 1}, []byte(`{"b":1,"o":"xa","n":{"k":[1.0]},"i":{"k":1e0},"f":0}`))
	f.Add(byte(3), []byte{}, []byte(`[1,"x",null]`))
	f.Fuzz(func(t *testing.T, which byte, ops []byte, raw []byte) {
		if len(ops) > 30 {
			ops = ops[:30]
		}
		ts := schemas[int(which)%len(schemas)]
		agree(t, ts, mutate(t, baseOf(ts), ops))
		v, err := strictjson.Decode(raw, jsonLimits)
		if err != nil {
			return
		}
		for _, ts := range schemas {
			agree(t, ts, v)
		}
	})
}

// TestSchemaCompilerRefusesWhatItDoesNotImplement: a keyword the compiled
// validator does not implement fails the compilation, so no rule of a
// schema is ever left out quietly; New would fail the same way.
func TestSchemaCompilerRefusesWhatItDoesNotImplement(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type": "string", "format": "uuid"}`, `"format"`},
		{`{"patternProperties": {"^x": {}}}`, `"patternProperties"`},
		{`{"type": "number", "multipleOf": 2}`, `"multipleOf"`},
		{`{"type": "number", "exclusiveMinimum": 2}`, `"exclusiveMinimum"`},
		{`{"minProperties": 1}`, `"minProperties"`},
		{`{"items": [{"type": "string"}]}`, "tuple validation"},
		{`{"definitions": {"x": {"contains": {}}}}`, `"contains"`},
		{`{"properties": {"a": {"$ref": "#/definitions/x", "type": "string"}}, "definitions": {"x": {}}}`, "beside $ref"},
		{`{"$ref": "#x"}`, "anchors"},
		{`{"$ref": "#"}`, "without end"},
		{`{"allOf": [{"$ref": "#/definitions/a"}], "definitions": {"a": {"$ref": "#"}}}`, "without end"},
		{`{"properties": {"a": {"$id": "other.json"}}}`, "$id"},
		{`{"$schema": "https://json-schema.org/draft/2020-12/schema"}`, "draft-07"},
		{`{"$ref": "other.json"}`, "not one of the embedded documents"},
		{`{"type": "text"}`, "not a JSON Schema type"},
	} {
		prog := newSchemaCompiler()
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(tc.schema)))
		if err != nil {
			t.Fatal(err)
		}
		if err := prog.add(appliedURL, doc); err != nil {
			t.Fatal(err)
		}
		_, err = prog.compile(appliedURL)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one mentioning %s", tc.schema, err, tc.want)
		}
	}
}

// TestDeclaredSchemaBeyondTheCompiler: a Resource Server's schema may use
// draft-07 keywords the compiled validator does not implement; its details
// are then checked by jsonschema/v6, and the keyword is enforced.
func TestDeclaredSchemaBeyondTheCompiler(t *testing.T) {
	d := payrollDeclaration()
	var schema map[string]any
	if err := json.Unmarshal(d.Types[0].Schema, &schema); err != nil {
		t.Fatal(err)
	}
	schema["maxProperties"] = 2
	d.Types[0].Schema, _ = json.Marshal(schema)
	c, err := newTestCatalog(t).Extend(d)
	if err != nil {
		t.Fatal(err)
	}
	ty, _ := c.Type(d.Types[0].Name)
	if c.schemas[ty].node != nil {
		t.Fatal("maxProperties must not compile into the fast validator")
	}
	js, _ := json.Marshal([]any{map[string]any{"type": ty.Name, "actions": []any{d.Types[0].Actions[0].Name}, "locations": []any{d.Resource}}})
	r := c.Check(Request{AuthorizationDetails: js})
	if r.Valid() || r.Violations[0].Pointer != "/authorization_details/0" || r.Violations[0].Code != "schema" {
		t.Fatalf("a detail with 3 members against maxProperties 2: got %v", r.Violations)
	}
}

// TestCheckAgreesWithReference checks whole request documents (the
// catalog examples under testdata/catalog/requests and mutated realistic
// requests) twice: with the compiled validator, and with jsonschema/v6 in
// its place. Users see the same violations either way.
func TestCheckAgreesWithReference(t *testing.T) {
	fast := newTestCatalog(t)
	ref := newTestCatalog(t)
	for ty, s := range ref.schemas {
		ref.schemas[ty] = &typeSchema{ref: s.ref}
	}
	files, err := filepath.Glob("../testdata/catalog/requests/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no request documents: %v", err)
	}
	var docs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		ops := make([]byte, 3*(1+rng.IntN(5)))
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		details := mutate(t, anys(realisticDetails("50000")), ops)
		doc, _ := json.Marshal(map[string]any{"scope": "openid profile", "resource": "https://bank.example", "authorization_details": details, "org_id": "org-1"})
		docs = append(docs, doc)
	}
	for _, doc := range docs {
		a, errA := fast.CheckDocument(doc)
		b, errB := ref.CheckDocument(doc)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s: errors differ: %v, %v", doc, errA, errB)
		}
		if errA != nil {
			continue
		}
		if got, want := fmt.Sprint(a.Violations), fmt.Sprint(b.Violations); got != want {
			t.Fatalf("%s:\ncompiled: %s\nv6:       %s", doc, got, want)
		}
	}
}
