package catalog

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
)

// schemaViolations turns a schema validation error of the detail at ptr into
// violations with stable codes, one per broken rule (the leaves of the
// error tree).
func schemaViolations(r *Result, ptr string, t *Type, obj map[string]any, ve *jsonschema.ValidationError) {
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	const oauth = ErrInvalidAuthorizationDetails
	for _, e := range leaves {
		inst := jsonpointer.FromTokens(e.InstanceLocation)
		field := fieldName(inst)
		val, _ := jsonpointer.Lookup(obj, inst)
		switch k := e.ErrorKind.(type) {
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
			code, rule := "bad_format", "must match "+strconv.Quote(k.Want)
			switch {
			case strings.Contains(e.SchemaURL, "definitions/amount"):
				code, rule = "invalid_amount", "must be an amount: a string of 1 to 15 digits with no leading zero, such as \"15000\""
			case strings.Contains(e.SchemaURL, "definitions/uuid"):
				code, rule = "invalid_uuid", "must be a UUID: 8-4-4-4-12 hex digits, version digit 1 to 8, variant digit 8, 9, a or b"
			case strings.HasSuffix(inst, "/account_binding/key"):
				code, rule = "invalid_key", "must start with a lower-case letter followed by up to 63 of a-z, 0-9, _ and -"
			}
			r.add(ptr+inst, code, oauth, fmt.Sprintf("%s %s; got %s", field, rule, show(val)))
		case *kind.MinItems:
			r.add(ptr+inst, "too_few_items", oauth, fmt.Sprintf("%s: at least %s required, got %d", field, plural(k.Want, "item"), k.Got))
		case *kind.MaxItems:
			r.add(ptr+inst, "too_many_items", oauth, fmt.Sprintf("%s: at most %s allowed, got %d", field, plural(k.Want, "item"), k.Got))
		case *kind.UniqueItems:
			r.add(ptr+inst, "duplicate_items", oauth, fmt.Sprintf("%s: items must be unique; items %d and %d are equal", field, k.Duplicates[0], k.Duplicates[1]))
		case *kind.Minimum:
			r.add(ptr+inst, "out_of_range", oauth, fmt.Sprintf("%s must be at least %s, got %s", field, k.Want.RatString(), show(val)))
		case *kind.Maximum:
			r.add(ptr+inst, "out_of_range", oauth, fmt.Sprintf("%s must be at most %s, got %s", field, k.Want.RatString(), show(val)))
		case *kind.MinLength:
			r.add(ptr+inst, "too_short", oauth, fmt.Sprintf("%s must be at least %s long, got %d", field, plural(k.Want, "character"), k.Got))
		case *kind.MaxLength:
			r.add(ptr+inst, "too_long", oauth, fmt.Sprintf("%s must be at most %s long, got %d", field, plural(k.Want, "character"), k.Got))
		default:
			r.add(ptr+inst, "schema", oauth, fmt.Sprintf("%s: %v", field, e.ErrorKind))
		}
	}
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
