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

// fill compiles the keywords of one subschema, in name order, each by its
// entry of keywordCompilers; a keyword without one fails the schema.
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
	c := &fillCtx{sc: sc, p: p, n: n}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if _, ok := obj["$ref"]; ok {
		if err := c.refAlone(keys); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if annotations[k] {
			continue
		}
		compile, ok := keywordCompilers[k]
		if !ok {
			return c.bad(k, "keyword not supported by the catalog's compiled validator (catalog/schemaprog.go); implement it there, with its case in the differential fuzz test, or leave it out of the schema")
		}
		if err := compile(c, k, obj[k]); err != nil {
			return err
		}
	}
	return nil
}

// fillCtx is the subschema fill is compiling, with what its keyword
// compilers share: the error form and the children's locations.
type fillCtx struct {
	sc *schemaCompiler
	p  pendingNode
	n  *schemaNode
}

// refAlone refuses a keyword beside $ref that draft-07 ignores (§8.3): a
// schema author who wrote one meant it to apply.
func (c *fillCtx) refAlone(keys []string) error {
	for _, k := range keys {
		if k != "$ref" && k != "definitions" && k != "$schema" && k != "$id" && !annotations[k] {
			return c.bad("$ref", "keyword %q beside $ref is ignored by draft-07 (§8.3): move it into an allOf", k)
		}
	}
	return nil
}

// bad is the error of keyword kw of the subschema.
func (c *fillCtx) bad(kw, format string, a ...any) error {
	return fmt.Errorf("schema %s: keyword %q: %s", c.n.loc, kw, fmt.Sprintf(format, a...))
}

// sub returns the node of the subschema v of keyword kw, at kw followed by
// tokens; it is compiled later (pending).
func (c *fillCtx) sub(kw string, v any, tokens ...string) (*schemaNode, error) {
	ptr := c.p.ptr + "/" + jsonpointer.Escape(kw)
	for _, t := range tokens {
		ptr += "/" + jsonpointer.Escape(t)
	}
	switch v.(type) {
	case bool, map[string]any:
	default:
		return nil, c.bad(kw, "must be a schema (an object or a boolean)")
	}
	return c.sc.node(c.p.doc + "#" + ptr)
}

// subs returns the nodes of the non-empty array of subschemas v.
func (c *fillCtx) subs(kw string, v any) ([]*schemaNode, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, c.bad(kw, "must be a non-empty array of schemas")
	}
	out := make([]*schemaNode, len(arr))
	for i, e := range arr {
		s, err := c.sub(kw, e, strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// count reads a length or count keyword.
func (c *fillCtx) count(kw string, v any) (int, error) {
	num, ok := v.(json.Number)
	i, err := strconv.Atoi(string(num))
	if !ok || err != nil || i < 0 {
		return 0, c.bad(kw, "must be a non-negative integer written without fraction or exponent")
	}
	return i, nil
}

// keywordFunc compiles keyword kw, of value v, into c's node.
type keywordFunc func(c *fillCtx, kw string, v any) error

// keywordCompilers holds every keyword the compiled validator implements
// (annotations aside, which never change a verdict).
var keywordCompilers = map[string]keywordFunc{
	"$schema":     compileSchemaKeyword,
	"$id":         compileID,
	"definitions": compileDefinitions,
	"$ref":        compileRef,
	"type":        compileType,
	"const":       compileConst,
	"enum":        compileEnum,
	"pattern":     compilePattern,
	"minLength":   countKeyword(func(n *schemaNode) *int { return &n.minLength }),
	"maxLength":   countKeyword(func(n *schemaNode) *int { return &n.maxLength }),
	"minItems":    countKeyword(func(n *schemaNode) *int { return &n.minItems }),
	"maxItems":    countKeyword(func(n *schemaNode) *int { return &n.maxItems }),
	"uniqueItems": compileUniqueItems,
	"items":       compileItems,
	"minimum":     boundKeyword(func(n *schemaNode) **big.Rat { return &n.minimum }),
	"maximum":     boundKeyword(func(n *schemaNode) **big.Rat { return &n.maximum }),
	"required":    compileRequired,
	"properties":  compileProperties,

	"additionalProperties": compileAdditionalProperties,

	"allOf": subsKeyword(func(n *schemaNode) *[]*schemaNode { return &n.allOf }),
	"anyOf": subsKeyword(func(n *schemaNode) *[]*schemaNode { return &n.anyOf }),
	"oneOf": subsKeyword(func(n *schemaNode) *[]*schemaNode { return &n.oneOf }),
	"not":   subKeyword(func(n *schemaNode) **schemaNode { return &n.not }),
	"if":    subKeyword(func(n *schemaNode) **schemaNode { return &n.ifS }),
	"then":  subKeyword(func(n *schemaNode) **schemaNode { return &n.thenS }),
	"else":  subKeyword(func(n *schemaNode) **schemaNode { return &n.elseS }),
}

// countKeyword compiles a length or count keyword into the field of a node
// that field returns.
func countKeyword(field func(*schemaNode) *int) keywordFunc {
	return func(c *fillCtx, kw string, v any) error {
		i, err := c.count(kw, v)
		if err != nil {
			return err
		}
		*field(c.n) = i
		return nil
	}
}

// boundKeyword compiles minimum or maximum, an exact number.
func boundKeyword(field func(*schemaNode) **big.Rat) keywordFunc {
	return func(c *fillCtx, kw string, v any) error {
		num, ok := v.(json.Number)
		r, ok2 := new(big.Rat).SetString(string(num))
		if !ok || !ok2 {
			return c.bad(kw, "must be a number")
		}
		*field(c.n) = r
		return nil
	}
}

// subKeyword compiles a keyword whose value is one subschema.
func subKeyword(field func(*schemaNode) **schemaNode) keywordFunc {
	return func(c *fillCtx, kw string, v any) error {
		s, err := c.sub(kw, v)
		if err != nil {
			return err
		}
		*field(c.n) = s
		return nil
	}
}

// subsKeyword compiles a keyword whose value is an array of subschemas.
func subsKeyword(field func(*schemaNode) *[]*schemaNode) keywordFunc {
	return func(c *fillCtx, kw string, v any) error {
		s, err := c.subs(kw, v)
		if err != nil {
			return err
		}
		*field(c.n) = s
		return nil
	}
}

func compileSchemaKeyword(c *fillCtx, kw string, v any) error {
	s, _ := v.(string)
	if c.p.ptr != "" || strings.TrimSuffix(s, "#") != draft07 {
		return c.bad(kw, "only %q at the root of a document is supported", draft07+"#")
	}
	return nil
}

func compileID(c *fillCtx, kw string, _ any) error {
	if c.p.ptr != "" {
		return c.bad(kw, "$id is only supported at the root of a document")
	}
	return nil
}

func compileDefinitions(c *fillCtx, kw string, v any) error {
	defs, ok := v.(map[string]any)
	if !ok {
		return c.bad(kw, "must be an object of schemas")
	}
	for name, d := range defs {
		// Compiled even when unused, so that a definition with an
		// unsupported keyword fails now rather than when referenced.
		if _, err := c.sub(kw, d, name); err != nil {
			return err
		}
	}
	return nil
}

func compileRef(c *fillCtx, kw string, v any) error {
	s, ok := v.(string)
	if !ok {
		return c.bad(kw, "must be a string")
	}
	base, err := url.Parse(c.p.doc)
	if err != nil {
		return c.bad(kw, "%v", err)
	}
	r, err := url.Parse(s)
	if err != nil {
		return c.bad(kw, "%v", err)
	}
	target := base.ResolveReference(r)
	frag := target.Fragment
	target.Fragment = ""
	if c.n.ref, err = c.sc.node(target.String() + "#" + frag); err != nil {
		return c.bad(kw, "%v", err)
	}
	return nil
}

func compileType(c *fillCtx, kw string, v any) error {
	var names []string
	switch t := v.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return c.bad(kw, "must be a type name or an array of type names")
			}
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return c.bad(kw, "must be a type name or a non-empty array of type names")
	}
	for _, name := range names {
		bit := typeBit(name)
		if bit == 0 {
			return c.bad(kw, "%q is not a JSON Schema type", name)
		}
		c.n.types |= bit
	}
	for _, tn := range typeNames {
		if c.n.types&tn.bit != 0 {
			c.n.typeWant = append(c.n.typeWant, tn.name)
		}
	}
	return nil
}

// typeBit is the bit of a JSON Schema type name, 0 for none.
func typeBit(name string) int {
	for _, tn := range typeNames {
		if tn.name == name {
			return tn.bit
		}
	}
	return 0
}

func compileConst(c *fillCtx, _ string, v any) error {
	c.n.hasConst, c.n.constVal = true, v
	return nil
}

func compileEnum(c *fillCtx, kw string, v any) error {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return c.bad(kw, "must be a non-empty array")
	}
	c.n.enum = arr
	return nil
}

func compilePattern(c *fillCtx, kw string, v any) error {
	s, ok := v.(string)
	if !ok {
		return c.bad(kw, "must be a string")
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return c.bad(kw, "%v", err)
	}
	c.n.pattern = re
	return nil
}

func compileUniqueItems(c *fillCtx, kw string, v any) error {
	b, ok := v.(bool)
	if !ok {
		return c.bad(kw, "must be a boolean")
	}
	c.n.unique = b
	return nil
}

func compileItems(c *fillCtx, kw string, v any) error {
	if _, isArr := v.([]any); isArr {
		return c.bad(kw, "the array form (tuple validation) is not supported")
	}
	return subKeyword(func(n *schemaNode) **schemaNode { return &n.items })(c, kw, v)
}

func compileRequired(c *fillCtx, kw string, v any) error {
	arr, ok := v.([]any)
	if !ok {
		return c.bad(kw, "must be an array of strings")
	}
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return c.bad(kw, "must be an array of strings")
		}
		c.n.required = append(c.n.required, s)
	}
	return nil
}

func compileProperties(c *fillCtx, kw string, v any) error {
	props, ok := v.(map[string]any)
	if !ok {
		return c.bad(kw, "must be an object of schemas")
	}
	n := c.n
	n.props = make(map[string]*schemaNode, len(props))
	for name, ps := range props {
		s, err := c.sub(kw, ps, name)
		if err != nil {
			return err
		}
		n.props[name] = s
		n.propList = append(n.propList, namedNode{name, s})
	}
	sort.Slice(n.propList, func(i, j int) bool { return n.propList[i].name < n.propList[j].name })
	return nil
}

func compileAdditionalProperties(c *fillCtx, kw string, v any) error {
	if b, ok := v.(bool); ok {
		c.n.noAdditional = !b
		return nil
	}
	return subKeyword(func(n *schemaNode) **schemaNode { return &n.additional })(c, kw, v)
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
