package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/miniapp-host/miniapp-host/assets"
)

// schemaBase is the made-up base URL of the embedded schemas' $id values;
// nothing is ever fetched from it (the compiler has no loader for it).
const schemaBase = "https://schemas.miniapp-host.invalid/catalog/"

// Catalog is the compiled catalog for one set of Endpoints. Its contents
// never change and it is safe for concurrent use; build it once with New.
type Catalog struct {
	ep      Endpoints
	scopes  []Scope
	byScope map[string]Scope
	types   []*Type
	byName  map[string]*Type
	schemas map[*Type]*typeSchema
	// verdicts memoises the verdicts of detail texts (verdicts.go).
	verdicts *verdicts
	// fill replaces the placeholders of docs/service.md with these endpoints.
	fill *strings.Replacer
}

// New builds the catalog for the given endpoints: it fills the placeholders
// of the type names and of the embedded schemas, and compiles each schema
// once.
func New(ep Endpoints) (*Catalog, error) {
	if err := ep.Validate(); err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(ep.BaseURL, "/")
	fill := strings.NewReplacer(
		"{base_url}", base,
		"{signing_base_url}", ep.SigningBaseURL,
		"{invoicing_base_url}", ep.InvoicingBaseURL,
		"{signing_origin}", ep.SigningOrigin(),
		"{invoicing_origin}", ep.InvoicingOrigin(),
	)
	c := &Catalog{
		fill:     fill,
		ep:       ep,
		byScope:  make(map[string]Scope, len(scopeDefs)),
		byName:   make(map[string]*Type, len(typeDefs)),
		schemas:  make(map[*Type]*typeSchema, len(typeDefs)),
		verdicts: newVerdicts(),
	}
	for _, d := range scopeDefs {
		s := Scope{Name: d[0], Meaning: d[1], Provider: Banking, Resource: ep.resource(Banking)}
		c.scopes = append(c.scopes, s)
		c.byScope[s.Name] = s
	}

	comp := newCompiler()
	prog := newSchemaCompiler()
	common, err := fs.ReadFile(assets.FS, "schemas/catalog/common.json")
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := addResource(comp, prog, schemaBase+"common.json", common); err != nil {
		return nil, fmt.Errorf("catalog: common.json: %w", err)
	}
	for _, d := range typeDefs {
		t := &Type{
			Name:          fill.Replace(d.nameTemplate),
			Key:           d.key,
			Meaning:       d.meaning,
			Provider:      d.provider,
			Resource:      ep.resource(d.provider),
			CompanyScoped: d.companyScoped,
			Actions:       append([]Action(nil), d.actions...),
		}
		raw, err := fs.ReadFile(assets.FS, "schemas/catalog/"+d.key+".json")
		if err != nil {
			return nil, fmt.Errorf("catalog: schema of %s: %w", d.key, err)
		}
		// The placeholders sit inside JSON strings: fill them with
		// JSON-escaped text so that no address can break the document.
		doc := jsonFill(raw, map[string]string{
			"{type}":               t.Name,
			"{base_url}":           base,
			"{signing_base_url}":   ep.SigningBaseURL,
			"{invoicing_base_url}": ep.InvoicingBaseURL,
		})
		url := schemaBase + d.key + ".json"
		if err := addResource(comp, prog, url, doc); err != nil {
			return nil, fmt.Errorf("catalog: schema of %s: %w", d.key, err)
		}
		// jsonschema/v6 checks that the schema is valid draft-07 and stays
		// the reference the compiled validator is tested against; the
		// compiled validator is what Check runs. A keyword it does not
		// implement is an error here, never a rule quietly left out.
		ref, err := comp.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("catalog: schema of %s: %w", d.key, err)
		}
		node, err := prog.compile(url)
		if err != nil {
			return nil, fmt.Errorf("catalog: schema of %s: %w", d.key, err)
		}
		c.types = append(c.types, t)
		c.byName[t.Name] = t
		c.schemas[t] = &typeSchema{node: node, ref: ref}
	}
	return c, nil
}

// newCompiler returns a draft-07 compiler that loads nothing: every schema
// it may use is added as a resource first, so no schema can make the
// process read a file or fetch a URL.
func newCompiler() *jsonschema.Compiler {
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft7)
	comp.UseLoader(jsonschema.SchemeURLLoader{})
	return comp
}

// addResource parses a schema document and adds it under url to the
// jsonschema/v6 compiler and, when prog is not nil, to the compiled
// validator's compiler: both read the same parsed document.
func addResource(comp *jsonschema.Compiler, prog *schemaCompiler, url string, doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	if prog != nil {
		if err := prog.add(url, v); err != nil {
			return err
		}
	}
	return comp.AddResource(url, v)
}

// typeSchema is the schema of one type in its two compiled forms.
type typeSchema struct {
	// node is the compiled validator (schemaprog.go); nil for a declared
	// schema that uses a keyword it does not implement.
	node *schemaNode
	// ref is jsonschema/v6's compilation of the same document.
	ref *jsonschema.Schema
}

// errors returns the broken rules of v, nil when v is valid.
func (s *typeSchema) errors(v any) []schemaError {
	if s.node != nil {
		return s.node.validate(v)
	}
	if err := s.ref.Validate(v); err != nil {
		return refErrors(err)
	}
	return nil
}

// jsonFill replaces each placeholder with the JSON string escape of its value.
func jsonFill(doc []byte, values map[string]string) []byte {
	pairs := make([]string, 0, 2*len(values))
	for k, v := range values {
		esc, _ := json.Marshal(v)
		pairs = append(pairs, k, string(esc[1:len(esc)-1]))
	}
	return []byte(strings.NewReplacer(pairs...).Replace(string(doc)))
}

// resource is the resource address of a provider.
func (e Endpoints) resource(p Provider) string {
	switch p {
	case Signing:
		return e.SigningBaseURL
	case Invoicing:
		return e.InvoicingBaseURL
	}
	return strings.TrimSuffix(e.BaseURL, "/")
}

// Fill replaces the placeholders of docs/service.md in s ({base_url},
// {signing_base_url}, {invoicing_base_url}, {signing_origin},
// {invoicing_origin}) with the catalog's endpoints, as in type names.
func (c *Catalog) Fill(s string) string { return c.fill.Replace(s) }

// Endpoints returns the endpoints the catalog was built for.
func (c *Catalog) Endpoints() Endpoints { return c.ep }

// Scopes returns the 12 catalog scopes in the order of docs/service.md, then those of
// approved Resource Servers.
func (c *Catalog) Scopes() []Scope { return append([]Scope(nil), c.scopes...) }

// Scope returns the named scope.
func (c *Catalog) Scope(name string) (Scope, bool) { s, ok := c.byScope[name]; return s, ok }

// Types returns the 8 catalog authorization_details types in the order of docs/service.md,
// then those of approved Resource Servers.
func (c *Catalog) Types() []*Type { return append([]*Type(nil), c.types...) }

// Type returns the type whose `type` value is name.
func (c *Catalog) Type(name string) (*Type, bool) { t, ok := c.byName[name]; return t, ok }

// TypeByKey returns the type with the given short key ("bank_account", "documents", ...).
func (c *Catalog) TypeByKey(key string) (*Type, bool) {
	for _, t := range c.types {
		if t.Key == key {
			return t, true
		}
	}
	return nil, false
}
