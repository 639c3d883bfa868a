package catalog

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
)

// This file runs the schemaNode trees that schemaprog.go compiles: the
// checks of JSON Schema Validation draft-07 §6 in the order jsonschema/v6
// applies them, reporting its error kinds.

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
		return ok && objectsEqual(x, y)
	case []any:
		y, ok := b.([]any)
		return ok && arraysEqual(x, y)
	}
	return numbersEqual(a, b)
}

// objectsEqual reports whether two objects have the same members, each
// of equal value, in any order.
func objectsEqual(x, y map[string]any) bool {
	if len(x) != len(y) {
		return false
	}
	for k, xv := range x {
		yv, ok := y[k]
		if !ok || !jsonEqual(xv, yv) {
			return false
		}
	}
	return true
}

// arraysEqual reports whether two arrays have equal items in order.
func arraysEqual(x, y []any) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !jsonEqual(x[i], y[i]) {
			return false
		}
	}
	return true
}

// numbersEqual reports whether a and b are numbers of the same value
// (5, 5.0 and 5e0 are equal).
func numbersEqual(a, b any) bool {
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
