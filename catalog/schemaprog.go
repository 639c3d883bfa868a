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
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

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

// schemaError is one broken schema rule: the leaf of jsonschema/v6's error
// tree, or what the compiled validator reports in its place.
type schemaError struct {
	inst   string // JSON pointer into the validated value
	schema string // location of the subschema whose keyword failed
	kind   jsonschema.ErrorKind
}

// refErrors flattens a jsonschema/v6 validation error into its leaves.
func refErrors(err error) []schemaError {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []schemaError{{kind: &kind.Schema{Location: err.Error()}}}
	}
	var out []schemaError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, schemaError{inst: jsonpointer.FromTokens(e.InstanceLocation), schema: e.SchemaURL, kind: e.ErrorKind})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// pathTok is one step into the value: a member name, or an index when key
// is empty and idx >= 0.
type pathTok struct {
	key string
	idx int
}

// schemaRun is the state of one validation: the path to the current value
// (turned into a pointer only when a rule fails) and the errors so far.
type schemaRun struct {
	path []pathTok
	errs []schemaError
}

func (r *schemaRun) fail(n *schemaNode, k jsonschema.ErrorKind) {
	r.errs = append(r.errs, schemaError{inst: pathPointer(r.path), schema: n.loc, kind: k})
}

// pathPointer is the JSON pointer of a path.
func pathPointer(path []pathTok) string {
	var b strings.Builder
	for _, t := range path {
		b.WriteByte('/')
		if t.idx >= 0 {
			b.WriteString(strconv.Itoa(t.idx))
		} else {
			b.WriteString(jsonpointer.Escape(t.key))
		}
	}
	return b.String()
}

// validate returns the broken rules of v, nil when it is valid.
func (n *schemaNode) validate(v any) []schemaError {
	var run schemaRun
	var path [8]pathTok
	run.path = path[:0]
	n.check(v, &run)
	if len(run.errs) == 0 {
		return nil // applicators may leave an empty, non-nil slice
	}
	return run.errs
}

// valid reports whether v passes n, leaving run's errors as they were.
func (n *schemaNode) valid(v any, run *schemaRun) bool {
	mark := len(run.errs)
	n.check(v, run)
	ok := len(run.errs) == mark
	run.errs = run.errs[:mark]
	return ok
}

// check validates v against n, in the order jsonschema/v6 does, so that
// both report the same rules: type, const and enum end the check when they
// fail; then $ref alone (draft-07); then the keywords of v's type; then
// not, allOf, anyOf, oneOf and if/then/else.
func (n *schemaNode) check(v any, run *schemaRun) {
	if n.falseSchema {
		run.fail(n, &kind.FalseSchema{})
		return
	}
	t := typeOf(v)
	if n.types != 0 && n.types&t == 0 && !(n.types&tInteger != 0 && t == tNumber && isInteger(v)) {
		run.fail(n, &kind.Type{Got: typeName(t), Want: n.typeWant})
		return
	}
	if n.hasConst && !jsonEqual(v, n.constVal) {
		run.fail(n, &kind.Const{Got: v, Want: n.constVal})
		return
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if jsonEqual(v, e) {
				found = true
				break
			}
		}
		if !found {
			run.fail(n, &kind.Enum{Got: v, Want: n.enum})
			return
		}
	}
	if n.ref != nil {
		n.ref.check(v, run)
		return
	}
	switch x := v.(type) {
	case map[string]any:
		n.checkObject(x, run)
	case []any:
		n.checkArray(x, run)
	case string:
		n.checkString(x, run)
	case nil, bool:
	default:
		n.checkNumber(v, run)
	}
	n.checkApplicators(v, run)
}

func (n *schemaNode) checkObject(obj map[string]any, run *schemaRun) {
	var missing []string
	for _, name := range n.required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	if missing != nil {
		run.fail(n, &kind.Required{Missing: missing})
	}
	// The schema's properties first, looked up in the value: cheaper than
	// walking the value's map, and enough when every member is one of them.
	found := 0
	for _, p := range n.propList {
		if val, ok := obj[p.name]; ok {
			found++
			run.path = append(run.path, pathTok{key: p.name, idx: -1})
			p.n.check(val, run)
			run.path = run.path[:len(run.path)-1]
		}
	}
	if found == len(obj) || (n.additional == nil && !n.noAdditional) {
		return
	}
	var extra []string
	for name, val := range obj {
		if _, ok := n.props[name]; ok {
			continue
		}
		if n.additional == nil {
			extra = append(extra, name)
			continue
		}
		run.path = append(run.path, pathTok{key: name, idx: -1})
		n.additional.check(val, run)
		run.path = run.path[:len(run.path)-1]
	}
	if extra != nil {
		run.fail(n, &kind.AdditionalProperties{Properties: extra})
	}
}

func (n *schemaNode) checkArray(arr []any, run *schemaRun) {
	if n.minItems >= 0 && len(arr) < n.minItems {
		run.fail(n, &kind.MinItems{Got: len(arr), Want: n.minItems})
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		run.fail(n, &kind.MaxItems{Got: len(arr), Want: n.maxItems})
	}
	if n.unique && len(arr) > 1 {
		if i, j := firstDuplicate(arr); j >= 0 {
			run.fail(n, &kind.UniqueItems{Duplicates: [2]int{i, j}})
		}
	}
	if n.items != nil {
		for i, e := range arr {
			run.path = append(run.path, pathTok{idx: i})
			n.items.check(e, run)
			run.path = run.path[:len(run.path)-1]
		}
	}
}

func (n *schemaNode) checkString(s string, run *schemaRun) {
	if n.minLength >= 0 || n.maxLength >= 0 {
		l := utf8.RuneCountInString(s)
		if n.minLength >= 0 && l < n.minLength {
			run.fail(n, &kind.MinLength{Got: l, Want: n.minLength})
		}
		if n.maxLength >= 0 && l > n.maxLength {
			run.fail(n, &kind.MaxLength{Got: l, Want: n.maxLength})
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		run.fail(n, &kind.Pattern{Got: s, Want: n.pattern.String()})
	}
}

func (n *schemaNode) checkNumber(v any, run *schemaRun) {
	if n.minimum == nil && n.maximum == nil {
		return
	}
	if i, ok := smallInt(v); ok {
		// The common case: a short integer literal against integer bounds.
		if (n.minimum == nil || n.minimum.IsInt() && n.minimum.Num().IsInt64()) &&
			(n.maximum == nil || n.maximum.IsInt() && n.maximum.Num().IsInt64()) {
			if n.minimum != nil && i < n.minimum.Num().Int64() {
				run.fail(n, &kind.Minimum{Got: new(big.Rat).SetInt64(i), Want: n.minimum})
			}
			if n.maximum != nil && i > n.maximum.Num().Int64() {
				run.fail(n, &kind.Maximum{Got: new(big.Rat).SetInt64(i), Want: n.maximum})
			}
			return
		}
	}
	r, ok := ratOf(v)
	if !ok {
		return
	}
	if n.minimum != nil && r.Cmp(n.minimum) < 0 {
		run.fail(n, &kind.Minimum{Got: r, Want: n.minimum})
	}
	if n.maximum != nil && r.Cmp(n.maximum) > 0 {
		run.fail(n, &kind.Maximum{Got: r, Want: n.maximum})
	}
}

func (n *schemaNode) checkApplicators(v any, run *schemaRun) {
	if n.not != nil && n.not.valid(v, run) {
		run.fail(n, &kind.Not{})
	}
	for _, s := range n.allOf {
		s.check(v, run)
	}
	if n.anyOf != nil {
		mark := len(run.errs)
		for _, s := range n.anyOf {
			before := len(run.errs)
			s.check(v, run)
			if len(run.errs) == before {
				run.errs = run.errs[:mark] // one branch holds: drop the others' errors
				break
			}
		}
	}
	if n.oneOf != nil {
		mark := len(run.errs)
		matched := -1
		for i, s := range n.oneOf {
			before := len(run.errs)
			s.check(v, run)
			if len(run.errs) > before {
				if matched >= 0 {
					run.errs = run.errs[:before]
				}
				continue
			}
			if matched < 0 {
				matched = i
				continue
			}
			run.errs = run.errs[:mark]
			run.fail(n, &kind.OneOf{Subschemas: []int{matched, i}})
			return
		}
		if matched >= 0 {
			run.errs = run.errs[:mark]
		}
	}
	if n.ifS != nil {
		if n.ifS.valid(v, run) {
			if n.thenS != nil {
				n.thenS.check(v, run)
			}
		} else if n.elseS != nil {
			n.elseS.check(v, run)
		}
	}
}

// typeOf is the JSON type of a decoded value (0 for a Go value JSON does
// not produce).
func typeOf(v any) int {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBoolean
	case json.Number, float64, float32, int, int64, int32:
		return tNumber
	case string:
		return tString
	case []any:
		return tArray
	case map[string]any:
		return tObject
	}
	return 0
}

func typeName(t int) string {
	for _, tn := range typeNames {
		if tn.bit == t {
			return tn.name
		}
	}
	return ""
}

// smallInt reads a number written as a plain integer of at most 18 digits
// (no fraction, no exponent), which fits an int64 without parsing a rational.
func smallInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	s := string(n)
	digits := strings.TrimPrefix(s, "-")
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}

// ratOf is the exact value of a number, as jsonschema/v6 reads it.
func ratOf(v any) (*big.Rat, bool) {
	if n, ok := v.(json.Number); ok {
		return new(big.Rat).SetString(string(n))
	}
	return new(big.Rat).SetString(fmt.Sprint(v))
}

// isInteger reports whether a number has an integral value (5, 5.0, 5e0).
func isInteger(v any) bool {
	if _, ok := smallInt(v); ok {
		return true
	}
	r, ok := ratOf(v)
	return ok && r.IsInt()
}

// jsonEqual is JSON equality as JSON Schema defines it for const, enum and
// uniqueItems: numbers by value, objects regardless of member order.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
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
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if typeOf(a) != tNumber || typeOf(b) != tNumber {
		return false
	}
	if na, ok := a.(json.Number); ok {
		if nb, ok := b.(json.Number); ok && na == nb {
			return true
		}
	}
	ra, ok1 := ratOf(a)
	rb, ok2 := ratOf(b)
	return ok1 && ok2 && ra.Cmp(rb) == 0
}

// firstDuplicate returns the first pair (i < j) of equal items, with j as
// small as possible and then i as small as possible (the pair
// jsonschema/v6 reports), or j = -1. Long arrays are keyed by a canonical
// text, so that a hostile array of a million items costs linear time.
func firstDuplicate(arr []any) (int, int) {
	if len(arr) <= 20 {
		for j := 1; j < len(arr); j++ {
			for i := 0; i < j; i++ {
				if jsonEqual(arr[i], arr[j]) {
					return i, j
				}
			}
		}
		return -1, -1
	}
	seen := make(map[string]int, len(arr))
	for j, e := range arr {
		k := canonicalKey(e)
		if i, ok := seen[k]; ok {
			return i, j
		}
		seen[k] = j
	}
	return -1, -1
}

// canonicalKey is a text equal for JSON-equal values and different otherwise.
func canonicalKey(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		b.WriteString(strconv.Quote(x))
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case []any:
		b.WriteByte('[')
		for _, e := range x {
			writeCanonical(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case map[string]any:
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		b.WriteByte('{')
		for _, k := range ks {
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanonical(b, x[k])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	default:
		if r, ok := ratOf(v); ok {
			b.WriteString("n" + r.RatString())
		} else {
			fmt.Fprintf(b, "?%v", v)
		}
	}
}
