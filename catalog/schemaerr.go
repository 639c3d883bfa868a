package catalog

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
)

// schemaViolations turns the broken schema rules of the detail at ptr into
// violations with stable codes, one per broken rule. The rules come from the
// compiled validator (schemaprog.go) or, for a declared schema it cannot
// compile, from jsonschema/v6 (refErrors): both report the same error kinds.
func schemaViolations(r *Result, ptr string, t *Type, obj map[string]any, errs []schemaError) {
	for _, e := range errs {
		schemaViolation(r, ptr, t, obj, e)
	}
}

// schemaViolation adds the violations of one broken schema rule.
func schemaViolation(r *Result, ptr string, t *Type, obj map[string]any, e schemaError) {
	const oauth = ErrInvalidAuthorizationDetails
	inst := e.inst
	field := fieldName(inst)
	val, _ := jsonpointer.Lookup(obj, inst)
	switch k := e.kind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			r.add(ptr+inst+"/"+jsonpointer.Escape(m), "missing_field", oauth,
				fmt.Sprintf("%s is required in a %s detail", joinField(field, m), t.Key))
		}
	case *kind.AdditionalProperties:
		for _, m := range k.Properties {
			r.add(ptr+inst+"/"+jsonpointer.Escape(m), "unknown_field", oauth,
				fmt.Sprintf("%s is not a field of a %s detail: remove it, or fix its spelling (unknown fields are invalid)", joinField(field, m), t.Key))
		}
	case *kind.Type:
		r.add(ptr+inst, "wrong_type", oauth, fmt.Sprintf("%s must be %s, got %s", field, strings.Join(k.Want, " or "), k.Got))
	case *kind.Const:
		if strings.HasPrefix(inst, "/locations/") {
			r.add(ptr+inst, "location_mismatch", oauth,
				fmt.Sprintf("locations must be [%q], the resource address of the %s provider; got %s", t.Resource, t.Provider, show(val)))
		} else {
			r.add(ptr+inst, "not_allowed_value", oauth, fmt.Sprintf("%s must be %s, got %s", field, show(k.Want), show(val)))
		}
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = show(w)
		}
		r.add(ptr+inst, "not_allowed_value", oauth, fmt.Sprintf("%s: %s is not allowed; use one of %s", field, show(val), strings.Join(want, ", ")))
	case *kind.Pattern:
		code, rule := patternRule(e, k)
		r.add(ptr+inst, code, oauth, fmt.Sprintf("%s %s; got %s", field, rule, show(val)))
	default:
		code, msg := boundViolation(field, val, e.kind)
		r.add(ptr+inst, code, oauth, msg)
	}
}

// patternRule names the rule of a broken pattern: the catalog's amounts,
// UUIDs and account binding keys by what they are, any other by the
// pattern.
func patternRule(e schemaError, k *kind.Pattern) (code, rule string) {
	switch {
	case strings.Contains(e.schema, "definitions/amount"):
		return "invalid_amount", "must be an amount: a string of 1 to 15 digits with no leading zero, such as \"15000\""
	case strings.Contains(e.schema, "definitions/uuid"):
		return "invalid_uuid", "must be a UUID: 8-4-4-4-12 hex digits, version digit 1 to 8, variant digit 8, 9, a or b"
	case strings.HasSuffix(e.inst, "/account_binding/key"):
		return "invalid_key", "must start with a lower-case letter followed by up to 63 of a-z, 0-9, _ and -"
	}
	return "bad_format", "must match " + strconv.Quote(k.Want)
}

// boundViolation is the code and message of a broken bound (items,
// uniqueness, range, length), or of any other rule.
func boundViolation(field string, val, ek any) (code, msg string) {
	switch k := ek.(type) {
	case *kind.MinItems:
		return "too_few_items", fmt.Sprintf("%s: at least %s required, got %d", field, plural(k.Want, "item"), k.Got)
	case *kind.MaxItems:
		return "too_many_items", fmt.Sprintf("%s: at most %s allowed, got %d", field, plural(k.Want, "item"), k.Got)
	case *kind.UniqueItems:
		return "duplicate_items", fmt.Sprintf("%s: items must be unique; items %d and %d are equal", field, k.Duplicates[0], k.Duplicates[1])
	case *kind.Minimum:
		return "out_of_range", fmt.Sprintf("%s must be at least %s, got %s", field, k.Want.RatString(), show(val))
	case *kind.Maximum:
		return "out_of_range", fmt.Sprintf("%s must be at most %s, got %s", field, k.Want.RatString(), show(val))
	case *kind.MinLength:
		return "too_short", fmt.Sprintf("%s must be at least %s long, got %d", field, plural(k.Want, "character"), k.Got)
	case *kind.MaxLength:
		return "too_long", fmt.Sprintf("%s must be at most %s long, got %d", field, plural(k.Want, "character"), k.Got)
	}
	return "schema", fmt.Sprintf("%s: %v", field, ek)
}

// plural writes "1 item", "2 items".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// fieldName renders an instance pointer as a dotted field path for
// messages: "/transaction/minimum" is "transaction.minimum".
func fieldName(inst string) string {
	if inst == "" {
		return "the detail"
	}
	return jsonpointer.Readable(inst)
}

func joinField(parent, name string) string {
	if parent == "the detail" {
		return name
	}
	return parent + "." + name
}

// show renders a value for a message, cut short when long.
func show(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = strconv.Quote(x)
	case nil:
		s = "null"
	default:
		s = fmt.Sprint(x)
		if _, ok := x.(map[string]any); ok {
			s = "an object"
		} else if _, ok := x.([]any); ok {
			s = "an array"
		}
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// sortViolations puts violations in request order: by the request member
// (scope, resource, authorization_details, org_id, then others), then by
// pointer with array indexes compared as numbers, keeping the order of
// violations at the same place. The schema library walks objects in map
// order, so without this the output would change from run to run.
func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool { return pointerLess(vs[i].Pointer, vs[j].Pointer) })
}

// memberRank orders the members of a request document.
var memberRank = map[string]int{"scope": 0, "resource": 1, "authorization_details": 2, "org_id": 3}

func pointerLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for k := 1; k < len(as) && k < len(bs); k++ {
		x, y := as[k], bs[k]
		if x == y {
			continue
		}
		if k == 1 {
			rx, okx := memberRank[x]
			ry, oky := memberRank[y]
			if !okx {
				rx = len(memberRank)
			}
			if !oky {
				ry = len(memberRank)
			}
			if rx != ry {
				return rx < ry
			}
		}
		nx, ex := strconv.Atoi(x)
		ny, ey := strconv.Atoi(y)
		if ex == nil && ey == nil {
			return nx < ny
		}
		return x < y
	}
	return len(as) < len(bs)
}

func sortStrings(s []string) { sort.Strings(s) }
