package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

// Declaration is what a third party declares to become a Resource Server
// (docs/service.md §5.8): its resource address, its own scopes and its own
// authorization_details types with their JSON Schemas. Only declarations the
// operator approved are added to a catalog, with Extend.
type Declaration struct {
	// ID is the identifier the operator assigned on approval (docs/service.md §5.8 c).
	ID string `json:"id"`
	// Resource is the Resource Server's resource address.
	Resource string          `json:"resource"`
	Scopes   []DeclaredScope `json:"scopes"`
	Types    []DeclaredType  `json:"types"`
}

// DeclaredScope is a scope of a Resource Server.
type DeclaredScope struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// DeclaredType is an authorization_details type of a Resource Server.
type DeclaredType struct {
	// Name is the value of the detail's `type` member.
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
	// Actions is the enumeration of `actions` with each action's meaning; the
	// schema's `actions` enumeration must list exactly these names.
	Actions []Action `json:"actions"`
	// CompanyScoped types need `org_id` on the request (docs/service.md §2.2 rule 3).
	CompanyScoped bool `json:"company_scoped"`
	// Schema is a draft-07 JSON Schema of the detail object, with
	// `additionalProperties: false` on every object (docs/service.md §2).
	Schema json.RawMessage `json:"schema"`
}

// Provider is the provider name of the declaration's permissions.
func (d Declaration) Provider() Provider { return Provider("rs:" + d.ID) }

// CheckDeclaration checks a declaration before review and returns every
// problem, each with a pointer into the declaration document. A declaration
// with no problems can be added with Extend.
func (c *Catalog) CheckDeclaration(d Declaration) []Violation {
	dc := &declCheck{seen: map[string]bool{}}
	if strings.TrimSpace(d.ID) == "" {
		dc.bad("/id", "missing_field", "the Resource Server has no id; the operator assigns one on approval")
	}
	if _, err := originOf(d.Resource); err != nil {
		dc.bad("/resource", "bad_resource", "resource must be an absolute http(s) URL without userinfo, query or fragment: "+err.Error())
	} else if d.Resource == c.ep.resource(Banking) || d.Resource == c.ep.SigningBaseURL || d.Resource == c.ep.InvoicingBaseURL {
		dc.bad("/resource", "resource_taken", fmt.Sprintf("%s is the resource address of a catalog provider; declare the Resource Server's own address", d.Resource))
	}
	if len(d.Scopes) == 0 && len(d.Types) == 0 {
		dc.bad("", "empty", "a Resource Server declares at least one scope or authorization_details type")
	}
	for i, s := range d.Scopes {
		c.checkDeclaredScope(dc, "/scopes/"+strconv.Itoa(i), s)
	}
	for i, t := range d.Types {
		c.checkDeclaredType(dc, "/types/"+strconv.Itoa(i), d, t)
	}
	return dc.vs
}

// declCheck gathers a declaration's violations and the names it has
// declared so far.
type declCheck struct {
	vs   []Violation
	seen map[string]bool // scope names, and "type " + each type name
}

func (dc *declCheck) bad(ptr, code, msg string) {
	dc.vs = append(dc.vs, Violation{Pointer: ptr, Code: code, Message: msg})
}

// checkDeclaredScope checks the declared scope at p: a scope token, new
// to the catalog and the declaration, with a meaning.
func (c *Catalog) checkDeclaredScope(dc *declCheck, p string, s DeclaredScope) {
	switch {
	case !isScopeToken(s.Name):
		dc.bad(p+"/name", "bad_scope_name", fmt.Sprintf("scope %q is not a scope token (RFC 6749 §3.3: printable ASCII without space, double quote or backslash)", s.Name))
	case c.byScope[s.Name].Name != "" || dc.seen[s.Name]:
		dc.bad(p+"/name", "name_taken", fmt.Sprintf("scope %q is already in the catalog or declared twice", s.Name))
	}
	dc.seen[s.Name] = true
	if strings.TrimSpace(s.Meaning) == "" {
		dc.bad(p+"/meaning", "missing_field", "every scope needs a meaning for the consent screen")
	}
}

// checkDeclaredType checks the declared type at p: a name new to the
// catalog and the declaration, a meaning, actions with meanings, and its
// schema (checkTypeSchema).
func (c *Catalog) checkDeclaredType(dc *declCheck, p string, d Declaration, t DeclaredType) {
	switch {
	case strings.TrimSpace(t.Name) == "":
		dc.bad(p+"/name", "missing_field", "every type needs a name, the value of its details' `type`")
	case c.byName[t.Name] != nil || dc.seen["type "+t.Name]:
		dc.bad(p+"/name", "name_taken", fmt.Sprintf("type %q is already in the catalog or declared twice", t.Name))
	}
	dc.seen["type "+t.Name] = true
	if strings.TrimSpace(t.Meaning) == "" {
		dc.bad(p+"/meaning", "missing_field", "every type needs a meaning for the consent screen")
	}
	if len(t.Actions) == 0 {
		dc.bad(p+"/actions", "missing_field", "every type declares at least one action")
	}
	for j, a := range t.Actions {
		if a.Name == "" || strings.TrimSpace(a.Meaning) == "" {
			dc.bad(fmt.Sprintf("%s/actions/%d", p, j), "missing_field", "every action needs a name and a meaning")
		}
	}
	for _, v := range checkTypeSchema(d, t) {
		v.Pointer = p + "/schema" + v.Pointer
		dc.vs = append(dc.vs, v)
	}
}

// checkTypeSchema checks a declared schema: it is JSON, compiles as draft-07
// without loading anything, describes an object whose `type` is the
// declared name and whose `actions` enumerate the declared actions, whose
// `locations`, if any, hold the Resource Server's address, and every object
// in it sets additionalProperties to false.
func checkTypeSchema(d Declaration, t DeclaredType) []Violation {
	var vs []Violation
	bad := func(ptr, code, msg string) { vs = append(vs, Violation{Pointer: ptr, Code: code, Message: msg}) }
	doc, err := strictjson.Decode(t.Schema, jsonLimits)
	if err != nil {
		bad("", "bad_schema", "the schema is not a strict JSON document: "+err.Error())
		return vs
	}
	root, ok := doc.(map[string]any)
	if !ok {
		bad("", "bad_schema", "the schema must be a JSON object")
		return vs
	}
	if _, err := compileDeclared(d, t); err != nil {
		bad("", "bad_schema", "the schema does not compile as draft-07: "+err.Error())
		return vs
	}
	walkObjects(root, "", func(ptr string, obj map[string]any) {
		if ap, ok := obj["additionalProperties"]; !ok || ap != false {
			bad(ptr, "additional_properties_allowed", "add \"additionalProperties\": false to this object schema: every object schema of a declared type refuses unknown fields")
		}
	})
	if root["type"] != "object" {
		bad("/type", "bad_schema", `the schema describes an object: set "type": "object"`)
	}
	props, _ := root["properties"].(map[string]any)
	if typ, _ := props["type"].(map[string]any); typ == nil || typ["const"] != t.Name {
		bad("/properties/type", "bad_schema", fmt.Sprintf(`properties.type must be {"const": %q}`, t.Name))
	}
	req, _ := root["required"].([]any)
	if !containsAll(req, "type", "actions") {
		bad("/required", "bad_schema", `required must list "type" and "actions"`)
	}
	var enum []any
	if acts, _ := props["actions"].(map[string]any); acts != nil {
		if items, _ := acts["items"].(map[string]any); items != nil {
			enum, _ = items["enum"].([]any)
		}
	}
	var names []any
	for _, a := range t.Actions {
		names = append(names, a.Name)
	}
	if !sameSet(enum, names) {
		bad("/properties/actions/items/enum", "actions_mismatch", fmt.Sprintf("the actions enumeration must list exactly the declared actions %v", names))
	}
	if locs, _ := props["locations"].(map[string]any); locs != nil {
		items, _ := locs["items"].(map[string]any)
		lo, _ := intOf(locs["minItems"])
		hi, _ := intOf(locs["maxItems"])
		if items == nil || items["const"] != d.Resource || lo != 1 || hi != 1 {
			bad("/properties/locations", "bad_schema", fmt.Sprintf(`locations must be exactly one item, the declared resource: {"minItems": 1, "maxItems": 1, "items": {"const": %q}}`, d.Resource))
		}
	}
	return vs
}

// Extend returns a new catalog holding c's permissions and those of the
// approved declarations; c is left as it was. It refuses a declaration with
// any problem CheckDeclaration reports.
func (c *Catalog) Extend(decls ...Declaration) (*Catalog, error) {
	n := &Catalog{
		ep:       c.ep,
		scopes:   append([]Scope(nil), c.scopes...),
		byScope:  make(map[string]Scope, len(c.byScope)),
		types:    append([]*Type(nil), c.types...),
		byName:   make(map[string]*Type, len(c.byName)),
		schemas:  make(map[*Type]*typeSchema, len(c.schemas)),
		verdicts: newVerdicts(),
		fill:     c.fill,
	}
	for k, v := range c.byScope {
		n.byScope[k] = v
	}
	for k, v := range c.byName {
		n.byName[k] = v
	}
	for k, v := range c.schemas {
		n.schemas[k] = v
	}
	for _, d := range decls {
		// Checking against n, not c, also refuses names that an earlier
		// declaration of this call took.
		if vs := n.CheckDeclaration(d); len(vs) > 0 {
			return nil, fmt.Errorf("catalog: Resource Server %q: %s", d.ID, vs[0])
		}
		for _, s := range d.Scopes {
			sc := Scope{Name: s.Name, Meaning: s.Meaning, Provider: d.Provider(), Resource: d.Resource}
			n.scopes = append(n.scopes, sc)
			n.byScope[sc.Name] = sc
		}
		for _, dt := range d.Types {
			sch, err := compileDeclared(d, dt)
			if err != nil {
				return nil, err
			}
			// A declared schema runs on the compiled validator when it uses
			// only the keywords that one implements, and on jsonschema/v6
			// otherwise: both report the same rules.
			ts := &typeSchema{ref: sch}
			prog := newSchemaCompiler()
			if doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(dt.Schema)); err == nil && prog.add(declaredURL(d, dt), doc) == nil {
				ts.node, _ = prog.compile(declaredURL(d, dt))
			}
			t := &Type{Name: dt.Name, Key: dt.Name, Meaning: dt.Meaning, Provider: d.Provider(), Resource: d.Resource,
				CompanyScoped: dt.CompanyScoped, Actions: append([]Action(nil), dt.Actions...)}
			n.types = append(n.types, t)
			n.byName[t.Name] = t
			n.schemas[t] = ts
		}
	}
	return n, nil
}

// compileDeclared compiles a declared schema on its own, with no loader: a
// declaration can never make the server fetch a URL.
func compileDeclared(d Declaration, t DeclaredType) (*jsonschema.Schema, error) {
	comp := newCompiler()
	u := declaredURL(d, t)
	// A declared $id would move the schema to an address of its own choosing.
	var probe struct {
		ID *string `json:"$id"`
	}
	if err := json.Unmarshal(t.Schema, &probe); err == nil && probe.ID != nil {
		return nil, fmt.Errorf("catalog: declared schemas must not set $id")
	}
	if err := addResource(comp, nil, u, t.Schema); err != nil {
		return nil, err
	}
	return comp.Compile(u)
}

// declaredURL is the made-up address of a declared schema.
func declaredURL(d Declaration, t DeclaredType) string {
	return schemaBase + "rs/" + url.PathEscape(d.ID) + "/" + url.PathEscape(t.Name) + ".json"
}

// walkObjects calls fn for every subschema that describes an object.
func walkObjects(v any, ptr string, fn func(string, map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if x["type"] == "object" || x["properties"] != nil {
			fn(ptr, x)
		}
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			if k == "const" || k == "enum" || k == "default" || k == "examples" {
				continue // values, not schemas
			}
			walkObjects(x[k], ptr+"/"+jsonpointer.Escape(k), fn)
		}
	case []any:
		for i, e := range x {
			walkObjects(e, ptr+"/"+strconv.Itoa(i), fn)
		}
	}
}

func containsAll(list []any, want ...string) bool {
	for _, w := range want {
		found := false
		for _, e := range list {
			found = found || e == w
		}
		if !found {
			return false
		}
	}
	return true
}

func sameSet(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	sa, sb := append([]any(nil), a...), append([]any(nil), b...)
	sort.Slice(sa, func(i, j int) bool { return fmt.Sprint(sa[i]) < fmt.Sprint(sa[j]) })
	sort.Slice(sb, func(i, j int) bool { return fmt.Sprint(sb[i]) < fmt.Sprint(sb[j]) })
	return reflect.DeepEqual(sa, sb)
}

// isScopeToken reports whether s is a scope-token of RFC 6749 §3.3.
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b < 0x21 || b > 0x7e || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}
