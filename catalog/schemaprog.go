package catalog

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
)

// This file compiles the draft-07 JSON Schemas of the catalog into a tree
// of schemaNode values that validates an already decoded detail without
// allocating on the valid path. The schemas stay the source of truth: the
// tree is built at New from the same embedded documents that jsonschema/v6
// compiles, and every keyword the compiler does not implement makes it fail
// (a schema is never half-enforced). The checks follow JSON Schema
// Validation draft-07 (draft-handrews-json-schema-validation-01) §6 and
// the core specification's §8.3 for $ref, and report the same error kinds
// as jsonschema/v6 (package kind), so that schemaViolations maps both to
// the same violations; the differential fuzz test (schemaprog_test.go)
// holds the two validators to the same verdicts.

// draft07 is the only meta-schema a compiled schema may name.
const draft07 = "http://json-schema.org/draft-07/schema"

// JSON types as bits, in the order jsonschema/v6 lists them in a type error.
const (
	tNull = 1 << iota
	tBoolean
	tNumber
	tInteger
	tString
	tArray
	tObject
)

var typeNames = []struct {
	bit  int
	name string
}{{tNull, "null"}, {tBoolean, "boolean"}, {tNumber, "number"}, {tInteger, "integer"}, {tString, "string"}, {tArray, "array"}, {tObject, "object"}}

// schemaNode is one compiled subschema. Zero values mean "keyword absent";
// lengths and counts are -1 when absent.
type schemaNode struct {
	loc string // absolute location, "url#pointer", as jsonschema/v6 names it

	falseSchema bool
	ref         *schemaNode // draft-07 §8.3: with $ref no other keyword applies

	types    int // bits; 0 means any type
	typeWant []string
	hasConst bool
	constVal any
	enum     []any

	minLength, maxLength int
	pattern              *regexp.Regexp

	minItems, maxItems int
	unique             bool
	items              *schemaNode

	minimum, maximum *big.Rat

	required     []string
	props        map[string]*schemaNode
	propList     []namedNode // props in name order, for the valid path
	additional   *schemaNode // additionalProperties as a schema
	noAdditional bool        // additionalProperties: false

	allOf, anyOf, oneOf []*schemaNode
	not                 *schemaNode
	ifS, thenS, elseS   *schemaNode
}

// namedNode is one entry of properties.
type namedNode struct {
	name string
	n    *schemaNode
}

// schemaCompiler builds schemaNodes from parsed schema documents (as
// jsonschema.UnmarshalJSON returns them: numbers are json.Number).
type schemaCompiler struct {
	docs  map[string]any         // document URL (no fragment) -> document
	nodes map[string]*schemaNode // location -> node, so $ref targets are shared
	// pending holds nodes whose children are not compiled yet.
	pending []pendingNode
}

type pendingNode struct {
	n   *schemaNode
	doc string // document URL
	ptr string // JSON pointer of the subschema in the document
	v   any
}

func newSchemaCompiler() *schemaCompiler {
	return &schemaCompiler{docs: map[string]any{}, nodes: map[string]*schemaNode{}}
}

// add registers a document under its URL; a document's $id, if any, must be
// that URL (the compiler does not move documents).
func (sc *schemaCompiler) add(u string, doc any) error {
	if m, ok := doc.(map[string]any); ok {
		if id, ok := m["$id"]; ok && id != u {
			return fmt.Errorf("schema %s: $id %v differs from the address it is loaded under", u, id)
		}
	}
	sc.docs[u] = doc
	return nil
}

// compile returns the node of the schema at loc ("url" or "url#/pointer")
// with everything it reaches compiled, or an error naming the first
// unsupported or malformed keyword.
func (sc *schemaCompiler) compile(loc string) (*schemaNode, error) {
	n, err := sc.node(loc)
	if err != nil {
		return nil, err
	}
	for len(sc.pending) > 0 {
		p := sc.pending[len(sc.pending)-1]
		sc.pending = sc.pending[:len(sc.pending)-1]
		if err := sc.fill(p); err != nil {
			return nil, err
		}
	}
	if err := checkRefCycles(n, map[*schemaNode]int{}); err != nil {
		return nil, err
	}
	return n, nil
}

// node returns the node at loc, creating it (children pending) if new.
func (sc *schemaCompiler) node(loc string) (*schemaNode, error) {
	doc, ptr, _ := strings.Cut(loc, "#")
	loc = doc + "#" + ptr
	if n, ok := sc.nodes[loc]; ok {
		return n, nil
	}
	d, ok := sc.docs[doc]
	if !ok {
		return nil, fmt.Errorf("schema %s is not one of the embedded documents", doc)
	}
	if ptr != "" && !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("schema location %s: only JSON pointer fragments are supported, not anchors", loc)
	}
	v, ok := jsonpointer.Lookup(d, ptr)
	if !ok {
		return nil, fmt.Errorf("schema location %s does not exist", loc)
	}
	n := &schemaNode{loc: loc, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	sc.nodes[loc] = n
	sc.pending = append(sc.pending, pendingNode{n: n, doc: doc, ptr: ptr, v: v})
	return n, nil
}

// annotations are keywords that never change a verdict.
var annotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true, "$comment": true, "readOnly": true, "writeOnly": true}

// fill compiles the keywords of one subschema.
func (sc *schemaCompiler) fill(p pendingNode) error {
	n := p.n
	if b, ok := p.v.(bool); ok {
		n.falseSchema = !b
		return nil
	}
	obj, ok := p.v.(map[string]any)
	if !ok {
		return fmt.Errorf("schema %s is not an object or a boolean", n.loc)
	}
	bad := func(kw, format string, a ...any) error {
		return fmt.Errorf("schema %s: keyword %q: %s", n.loc, kw, fmt.Sprintf(format, a...))
	}
	sub := func(kw string, v any, tokens ...string) (*schemaNode, error) {
		ptr := p.ptr + "/" + jsonpointer.Escape(kw)
		for _, t := range tokens {
			ptr += "/" + jsonpointer.Escape(t)
		}
		switch v.(type) {
		case bool, map[string]any:
		default:
			return nil, bad(kw, "must be a schema (an object or a boolean)")
		}
		return sc.node(p.doc + "#" + ptr)
	}
	subs := func(kw string, v any) ([]*schemaNode, error) {
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return nil, bad(kw, "must be a non-empty array of schemas")
		}
		out := make([]*schemaNode, len(arr))
		for i, e := range arr {
			s, err := sub(kw, e, strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	count := func(kw string, v any) (int, error) {
		num, ok := v.(json.Number)
		i, err := strconv.Atoi(string(num))
		if !ok || err != nil || i < 0 {
			return 0, bad(kw, "must be a non-negative integer written without fraction or exponent")
		}
		return i, nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if _, ok := obj["$ref"]; ok {
		for _, k := range keys {
			if k != "$ref" && k != "definitions" && k != "$schema" && k != "$id" && !annotations[k] {
				return bad("$ref", "keyword %q beside $ref is ignored by draft-07 (§8.3): move it into an allOf", k)
			}
		}
	}
	var err error
	for _, k := range keys {
		v := obj[k]
		switch {
		case annotations[k]:
		case k == "$schema":
			s, _ := v.(string)
			if p.ptr != "" || strings.TrimSuffix(s, "#") != draft07 {
				return bad(k, "only %q at the root of a document is supported", draft07+"#")
			}
		case k == "$id":
			if p.ptr != "" {
				return bad(k, "$id is only supported at the root of a document")
			}
		case k == "definitions":
			defs, ok := v.(map[string]any)
			if !ok {
				return bad(k, "must be an object of schemas")
			}
			for name, d := range defs {
				// Compiled even when unused, so that a definition with an
				// unsupported keyword fails now rather than when referenced.
				if _, err := sub(k, d, name); err != nil {
					return err
				}
			}
		case k == "$ref":
			s, ok := v.(string)
			if !ok {
				return bad(k, "must be a string")
			}
			base, err := url.Parse(p.doc)
			if err != nil {
				return bad(k, "%v", err)
			}
			r, err := url.Parse(s)
			if err != nil {
				return bad(k, "%v", err)
			}
			target := base.ResolveReference(r)
			frag := target.Fragment
			target.Fragment = ""
			if n.ref, err = sc.node(target.String() + "#" + frag); err != nil {
				return bad(k, "%v", err)
			}
		case k == "type":
			var names []string
			switch t := v.(type) {
			case string:
				names = []string{t}
			case []any:
				for _, e := range t {
					s, ok := e.(string)
					if !ok {
						return bad(k, "must be a type name or an array of type names")
					}
					names = append(names, s)
				}
			}
			if len(names) == 0 {
				return bad(k, "must be a type name or a non-empty array of type names")
			}
			for _, name := range names {
				found := false
				for _, tn := range typeNames {
					if tn.name == name {
						n.types |= tn.bit
						found = true
					}
				}
				if !found {
					return bad(k, "%q is not a JSON Schema type", name)
				}
			}
			for _, tn := range typeNames {
				if n.types&tn.bit != 0 {
					n.typeWant = append(n.typeWant, tn.name)
				}
			}
		case k == "const":
			n.hasConst, n.constVal = true, v
		case k == "enum":
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				return bad(k, "must be a non-empty array")
			}
			n.enum = arr
		case k == "pattern":
			s, ok := v.(string)
			if !ok {
				return bad(k, "must be a string")
			}
			if n.pattern, err = regexp.Compile(s); err != nil {
				return bad(k, "%v", err)
			}
		case k == "minLength":
			if n.minLength, err = count(k, v); err != nil {
				return err
			}
		case k == "maxLength":
			if n.maxLength, err = count(k, v); err != nil {
				return err
			}
		case k == "minItems":
			if n.minItems, err = count(k, v); err != nil {
				return err
			}
		case k == "maxItems":
			if n.maxItems, err = count(k, v); err != nil {
				return err
			}
		case k == "uniqueItems":
			b, ok := v.(bool)
			if !ok {
				return bad(k, "must be a boolean")
			}
			n.unique = b
		case k == "items":
			if _, isArr := v.([]any); isArr {
				return bad(k, "the array form (tuple validation) is not supported")
			}
			if n.items, err = sub(k, v); err != nil {
				return err
			}
		case k == "minimum" || k == "maximum":
			num, ok := v.(json.Number)
			r, ok2 := new(big.Rat).SetString(string(num))
			if !ok || !ok2 {
				return bad(k, "must be a number")
			}
			if k == "minimum" {
				n.minimum = r
			} else {
				n.maximum = r
			}
		case k == "required":
			arr, ok := v.([]any)
			if !ok {
				return bad(k, "must be an array of strings")
			}
			for _, e := range arr {
				s, ok := e.(string)
				if !ok {
					return bad(k, "must be an array of strings")
				}
				n.required = append(n.required, s)
			}
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return bad(k, "must be an object of schemas")
			}
			n.props = make(map[string]*schemaNode, len(props))
			for name, ps := range props {
				if n.props[name], err = sub(k, ps, name); err != nil {
					return err
				}
				n.propList = append(n.propList, namedNode{name, n.props[name]})
			}
			sort.Slice(n.propList, func(i, j int) bool { return n.propList[i].name < n.propList[j].name })
		case k == "additionalProperties":
			if b, ok := v.(bool); ok {
				n.noAdditional = !b
			} else if n.additional, err = sub(k, v); err != nil {
				return err
			}
		case k == "allOf":
			if n.allOf, err = subs(k, v); err != nil {
				return err
			}
		case k == "anyOf":
			if n.anyOf, err = subs(k, v); err != nil {
				return err
			}
		case k == "oneOf":
			if n.oneOf, err = subs(k, v); err != nil {
				return err
			}
		case k == "not":
			if n.not, err = sub(k, v); err != nil {
				return err
			}
		case k == "if":
			if n.ifS, err = sub(k, v); err != nil {
				return err
			}
		case k == "then":
			if n.thenS, err = sub(k, v); err != nil {
				return err
			}
		case k == "else":
			if n.elseS, err = sub(k, v); err != nil {
				return err
			}
		default:
			return bad(k, "keyword not supported by the catalog's compiled validator (catalog/schemaprog.go); implement it there, with its case in the differential fuzz test, or leave it out of the schema")
		}
	}
	return nil
}

// checkRefCycles refuses a schema that applies itself to the same value
// without end ({"$ref": "#"}, or an allOf that reaches itself): state 1 is
// "on the current path of in-place applications", 2 is "done".
func checkRefCycles(n *schemaNode, state map[*schemaNode]int) error {
	switch state[n] {
	case 1:
		return fmt.Errorf("schema %s applies itself to the same value without end", n.loc)
	case 2:
		return nil
	}
	state[n] = 1
	inPlace := append(append(append([]*schemaNode{n.ref, n.not, n.ifS, n.thenS, n.elseS}, n.allOf...), n.anyOf...), n.oneOf...)
	for _, c := range inPlace {
		if c != nil {
			if err := checkRefCycles(c, state); err != nil {
				return err
			}
		}
	}
	state[n] = 2
	// Children that descend into the value start new paths.
	down := []*schemaNode{n.items, n.additional}
	for _, c := range n.props {
		down = append(down, c)
	}
	for _, c := range down {
		if c != nil && state[c] == 0 {
			if err := checkRefCycles(c, map[*schemaNode]int{}); err != nil {
				return err
			}
		}
	}
	return nil
}
