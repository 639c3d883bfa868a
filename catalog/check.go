package catalog

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"

	"github.com/miniapp-host/miniapp-host/jsonpointer"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

// OAuth error codes a violation maps to (RFC 6749 §4.1.2.1, RFC 8707 §2,
// RFC 9396 §5).
const (
	ErrInvalidRequest              = "invalid_request"
	ErrInvalidScope                = "invalid_scope"
	ErrInvalidTarget               = "invalid_target"
	ErrInvalidAuthorizationDetails = "invalid_authorization_details"
)

// Limits on outside input, so that a hostile request costs little and never
// exhausts the stack or memory.
const (
	// MaxRequestBytes caps a request document and an authorization_details value.
	MaxRequestBytes = 1 << 20
	// MaxDepth caps the nesting of arrays and objects; the deepest catalog
	// detail nests 5 levels below the request.
	MaxDepth = 32
	// MaxDetails caps the authorization_details objects of one request.
	MaxDetails = 64
	// MaxViolations caps the violations reported for one request; past it a
	// last violation says how many more there were.
	MaxViolations = 100
)

// Request is an authorization request as the catalog reads it: the
// parameters of docs/service.md §5.1 and §5.2.
type Request struct {
	// Scope is the space-delimited scope parameter (RFC 6749 §3.3).
	Scope string
	// Resource holds every `resource` parameter (RFC 8707 allows several).
	Resource []string
	// AuthorizationDetails is the JSON text of `authorization_details`
	// (RFC 9396 §2), nil when the parameter is absent.
	AuthorizationDetails json.RawMessage
	// OrgID is the `org_id` parameter that picks the Company (docs/service.md §2.2 rule 3).
	OrgID string
}

// Violation is one broken rule.
type Violation struct {
	// Pointer is an RFC 6901 JSON pointer into the request document, for
	// example "/authorization_details/2/transaction/minimum".
	Pointer string `json:"pointer"`
	// Code is stable; docs/catalog.md lists every code.
	Code string `json:"code"`
	// Message says what is wrong and how to fix it.
	Message string `json:"message"`
	// OAuthError is the OAuth error the violation maps to; empty for
	// violations of a Resource Server declaration.
	OAuthError string `json:"oauth_error,omitempty"`
}

func (v Violation) String() string { return v.Pointer + ": " + v.Code + ": " + v.Message }

// Detail is one authorization_details object whose type is in the catalog.
type Detail struct {
	// Index is the object's position in the request's array.
	Index int
	// Type is the catalog type named by the object's `type`.
	Type *Type
	// Actions are the requested actions, as sent.
	Actions []string
	// Object is the decoded object (numbers as json.Number).
	Object map[string]any
	// JSON is the object's own JSON text.
	JSON json.RawMessage
}

// Result is the outcome of Check.
type Result struct {
	// Violations lists every broken rule in request order; empty when valid.
	Violations []Violation
	// Scopes are the requested scopes in order, without repeats.
	Scopes []string
	// Details are the objects of known types, in request order.
	Details []Detail
}

// Valid reports whether the request broke no rule.
func (r *Result) Valid() bool { return len(r.Violations) == 0 }

// Err returns nil for a valid request, and otherwise an *Error carrying the
// OAuth error of the first violation and a description of all of them.
func (r *Result) Err() error {
	if r.Valid() {
		return nil
	}
	msgs := make([]string, len(r.Violations))
	for i, v := range r.Violations {
		msgs[i] = v.String()
	}
	return &Error{Code: r.Violations[0].OAuthError, Description: strings.Join(msgs, "; "), Violations: r.Violations}
}

// Error is an invalid request as an OAuth error.
type Error struct {
	Code        string // an OAuth error code: ErrInvalidRequest, ErrInvalidScope, ...
	Description string
	Violations  []Violation
}

func (e *Error) Error() string { return "catalog: " + e.Code + ": " + e.Description }

// Check checks a whole authorization request against the catalog and
// returns every violation (docs/service.md §2.1 to §2.5, §5.1, §5.2, §7, §8).
func (c *Catalog) Check(req Request) *Result {
	r := &Result{}
	allKnown := c.checkScopes(req, r)
	c.checkDetails(req, r)
	if allKnown {
		// With an unknown scope the resource it belongs to is unknown too:
		// the scope violation says what to fix.
		c.checkResource(req, r)
	}
	sortViolations(r.Violations)
	r.capViolations()
	return r
}

// checkScopes applies docs/service.md §2.1: every scope is in the catalog. It reports
// whether every scope was known.
func (c *Catalog) checkScopes(req Request, r *Result) bool {
	allKnown := true
	seen := map[string]bool{}
	// RFC 6749 §3.3: scope tokens separated by single spaces. Other white
	// space is not a separator: "openid\tprofile" is one (invalid) token,
	// not two scopes. Empty tokens from doubled spaces are passed over.
	for _, s := range strings.Split(req.Scope, " ") {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		if !isScopeToken(s) {
			r.add("/scope", "bad_scope_syntax", ErrInvalidScope,
				fmt.Sprintf("%s is not a scope token: scopes are printable ASCII without double quotes or backslashes, separated by single spaces (RFC 6749 §3.3)", show(s)))
			allKnown = false
			continue
		}
		if _, ok := c.byScope[s]; !ok {
			r.add("/scope", "unknown_scope", ErrInvalidScope,
				fmt.Sprintf("scope %s is not in the catalog; use one of the catalog scopes (miniapp-host catalog)", show(s)))
			allKnown = false
			continue
		}
		r.Scopes = append(r.Scopes, s)
	}
	return allKnown
}

// checkResource applies docs/service.md §2.1 and RFC 8707: a request names the resource
// of every scope it asks for ({base_url} for the catalog scopes), and every
// resource it names is the address of a provider whose scopes or details it
// requests.
func (c *Catalog) checkResource(req Request, r *Result) {
	allowed := map[string]bool{}
	var needed []string // resources of the requested scopes, in order
	for _, name := range r.Scopes {
		res := c.byScope[name].Resource
		if !allowed[res] {
			needed = append(needed, res)
		}
		allowed[res] = true
	}
	for _, d := range r.Details {
		allowed[d.Type.Resource] = true
	}
	if len(needed) > 0 && len(req.Resource) == 0 {
		r.add("/resource", "resource_missing", ErrInvalidTarget,
			fmt.Sprintf("the requested scopes need resource=%s: add it to the request's resource", strings.Join(needed, " and resource=")))
		return
	}
	given := map[string]bool{}
	mismatch := false
	for i, res := range req.Resource {
		given[res] = true
		ptr := "/resource"
		if len(req.Resource) > 1 {
			ptr += "/" + strconv.Itoa(i)
		}
		if !allowed[res] {
			mismatch = true
			want := "the address of a provider whose scopes or details are requested"
			if len(allowed) > 0 {
				want = strings.Join(keys(allowed), " or ")
			}
			r.add(ptr, "resource_mismatch", ErrInvalidTarget,
				fmt.Sprintf("resource %q is not the address of a requested provider; use %s", res, want))
		}
	}
	if mismatch {
		return
	}
	for _, res := range needed {
		if !given[res] {
			r.add("/resource", "resource_missing", ErrInvalidTarget,
				fmt.Sprintf("the requested scopes of %s need resource=%s as well", res, res))
		}
	}
}

// checkDetails applies RFC 9396 §2 and docs/service.md §2.2 to §2.5 to authorization_details.
func (c *Catalog) checkDetails(req Request, r *Result) {
	if req.AuthorizationDetails == nil {
		return
	}
	const ptr = "/authorization_details"
	v, spans, err := decodeArray(req.AuthorizationDetails)
	if err != nil {
		r.add(ptr, "malformed_json", ErrInvalidAuthorizationDetails,
			"authorization_details is not valid JSON: "+err.Error())
		return
	}
	arr, ok := v.([]any)
	if !ok {
		r.add(ptr, "not_an_array", ErrInvalidAuthorizationDetails,
			"authorization_details must be a JSON array of objects (RFC 9396 §2), got "+jsonKind(v))
		return
	}
	if len(arr) == 0 {
		r.add(ptr, "empty", ErrInvalidAuthorizationDetails,
			"authorization_details must hold at least one object; leave the parameter out to request none")
		return
	}
	if len(arr) > MaxDetails {
		r.add(ptr, "too_many_details", ErrInvalidAuthorizationDetails,
			fmt.Sprintf("authorization_details holds %d objects; a request carries at most %d", len(arr), MaxDetails))
		return
	}
	present := map[string][]int{} // type key -> indexes
	companyScoped, companyType := -1, ""
	for i, el := range arr {
		p := ptr + "/" + strconv.Itoa(i)
		obj, ok := el.(map[string]any)
		if !ok {
			r.add(p, "not_an_object", ErrInvalidAuthorizationDetails,
				"each authorization_details entry must be an object, got "+jsonKind(el))
			continue
		}
		tv, has := obj["type"]
		name, isString := tv.(string)
		switch {
		case !has:
			r.add(p, "missing_field", ErrInvalidAuthorizationDetails,
				`the detail has no "type"; every detail names its catalog type (RFC 9396 §2)`)
			continue
		case !isString:
			r.add(p+"/type", "wrong_type", ErrInvalidAuthorizationDetails,
				"type must be a string, got "+jsonKind(tv))
			continue
		}
		t, known := c.byName[name]
		if !known {
			r.add(p+"/type", "unknown_type", ErrInvalidAuthorizationDetails,
				fmt.Sprintf("type %q is not in the catalog; the catalog types are listed by `miniapp-host catalog`", name))
			continue
		}
		raw := req.AuthorizationDetails[spans[i][0]:spans[i][1]:spans[i][1]]
		before := len(r.Violations)
		for _, v := range c.verdictOf(t, obj, raw) {
			v.Pointer = p + v.Pointer
			r.Violations = append(r.Violations, v)
		}
		present[t.Key] = append(present[t.Key], i)
		if t.CompanyScoped && companyScoped < 0 {
			companyScoped, companyType = i, t.Name
		}
		if len(r.Violations) == before {
			r.Details = append(r.Details, Detail{Index: i, Type: t, Actions: Strings(obj["actions"]), Object: obj, JSON: raw})
		}
	}
	// docs/service.md §2.5: company-identity and company-addresses are requested together.
	a, b := pairedTypes[0], pairedTypes[1]
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		if idx, ok := present[pair[0]]; ok && len(present[pair[1]]) == 0 {
			t, _ := c.TypeByKey(pair[1])
			r.add(ptr+"/"+strconv.Itoa(idx[0]), "company_pair_incomplete", ErrInvalidAuthorizationDetails,
				fmt.Sprintf("%s is only granted together with %s: add a detail of type %q to authorization_details", pair[0], pair[1], t.Name))
		}
	}
	// docs/service.md §2.2 rule 3 and docs/service.md §5.2: a Company-scoped detail needs org_id.
	if companyScoped >= 0 && strings.TrimSpace(req.OrgID) == "" {
		r.add("/org_id", "org_id_missing", ErrInvalidRequest,
			fmt.Sprintf("authorization_details/%d, of type %q, is Company-scoped and needs org_id (docs/service.md §2.2 rule 3): add org_id with the id of the Company it acts for", companyScoped, companyType))
	}
}

// verdictOf returns the violations of one detail of type t by its schema
// and the cross-field rules, with pointers relative to the detail. The
// verdict depends only on the detail's text, so it is memoised: a Miniapp
// sends the same details on every sign-in.
func (c *Catalog) verdictOf(t *Type, obj map[string]any, text []byte) []Violation {
	if vs, ok := c.verdicts.get(text); ok {
		return vs
	}
	var r Result
	if errs := c.schemas[t].errors(obj); errs != nil {
		schemaViolations(&r, "", t, obj, errs)
	}
	crossFieldRules(&r, "", t, obj)
	c.verdicts.put(text, r.Violations)
	return r.Violations
}

// crossFieldRules are the rules of docs/service.md §2.3 to §2.5 that the schemas leave to code.
func crossFieldRules(r *Result, p string, t *Type, obj map[string]any) {
	if t.Key == "bank_account" {
		_, sel := obj["selection"]
		_, ids := obj["identifiers"]
		switch {
		case sel && ids:
			r.add(p, "selection_and_identifiers", ErrInvalidAuthorizationDetails,
				"bank_account takes exactly one of selection or identifiers, not both: remove one")
		case !sel && !ids:
			r.add(p, "selection_or_identifiers_missing", ErrInvalidAuthorizationDetails,
				"bank_account needs exactly one of selection or identifiers: add one")
		}
	}
	// An integer spelled 5.0 or 5e0 is an integer to JSON Schema, but not to
	// every reader of the grant: ask for the plain spelling, so that the
	// consent screen, the grant and the Resource Server read one value.
	var path [8]pathTok
	walkNonCanonical(obj, path[:0], func(ptr string, n json.Number) {
		if _, integral := intOf(n); integral {
			r.add(p+ptr, "non_canonical_number", ErrInvalidAuthorizationDetails,
				fmt.Sprintf("%s is an integer written as %s; write it without fraction or exponent", fieldName(ptr), show(string(n))))
		}
	})
	if ab, ok := obj["account_binding"].(map[string]any); ok {
		if name, ok := ab["name"].(map[string]any); ok {
			if s, ok := name["suggested"].(string); ok && s != "" && !visible(s) {
				r.add(p+"/account_binding/name/suggested", "blank", ErrInvalidAuthorizationDetails,
					"account_binding.name.suggested must contain at least one visible character: white space and invisible characters alone are blank")
			}
		}
	}
	if sel, ok := obj["selection"].(map[string]any); ok {
		lo, okLo := intOf(sel["min"])
		hi, okHi := intOf(sel["max"])
		if okLo && okHi && lo > hi {
			r.add(p+"/selection/min", "selection_min_above_max", ErrInvalidAuthorizationDetails,
				fmt.Sprintf("selection.min (%d) must not exceed selection.max (%d): lower min or raise max", lo, hi))
		}
	}
}

// capViolations keeps the first MaxViolations violations and says how many
// it left out, so that a hostile request cannot make the answer huge.
func (r *Result) capViolations() {
	if n := len(r.Violations); n > MaxViolations {
		r.Violations = append(r.Violations[:MaxViolations-1], Violation{Pointer: "", Code: "too_many_violations",
			OAuthError: r.Violations[0].OAuthError, Message: fmt.Sprintf("%d more violations are not listed; fix these first", n-MaxViolations+1)})
	}
}

// walkNonCanonical calls fn with the pointer of every number below v
// written with a fraction or an exponent. The pointer is built only then:
// most details have no such number, and building a pointer for every
// member would cost an allocation each.
func walkNonCanonical(v any, path []pathTok, fn func(string, json.Number)) {
	switch x := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			fn(pathPointer(path), x)
		}
	case map[string]any:
		for k, e := range x {
			walkNonCanonical(e, append(path, pathTok{key: k, idx: -1}), fn)
		}
	case []any:
		for i, e := range x {
			walkNonCanonical(e, append(path, pathTok{idx: i}), fn)
		}
	}
}

// visible reports whether s has a character that is neither white space
// nor invisible (format characters such as U+200B are invisible).
func visible(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && unicode.IsGraphic(r) {
			return true
		}
	}
	return false
}

// add appends a violation.
func (r *Result) add(ptr, code, oauth, msg string) {
	r.Violations = append(r.Violations, Violation{Pointer: ptr, Code: code, Message: msg, OAuthError: oauth})
}

// CheckDocument decodes a request document (see DecodeRequest) and checks
// it, returning the violations of both steps in request order. The error is
// for input that is not a request document at all.
func (c *Catalog) CheckDocument(data []byte) (*Result, error) {
	req, vs, err := DecodeRequest(data)
	if err != nil {
		return nil, err
	}
	r := c.Check(req)
	r.Violations = append(vs, r.Violations...)
	sortViolations(r.Violations)
	r.capViolations()
	return r, nil
}

// DecodeRequest reads a request document of the CLI's form: one JSON object
// with the optional members scope, resource (a string or an array of
// strings), authorization_details and org_id. It returns an error, never a
// Result, when the input is not a JSON object, is too large or too deep; a
// member of the wrong type is returned as a violation.
func DecodeRequest(data []byte) (Request, []Violation, error) {
	if len(data) > MaxRequestBytes {
		return Request{}, nil, fmt.Errorf("catalog: request is %d bytes; the limit is %d", len(data), MaxRequestBytes)
	}
	v, _, err := decodeArray(data)
	if err != nil {
		return Request{}, nil, fmt.Errorf("catalog: request is not valid JSON: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Request{}, nil, fmt.Errorf("catalog: request must be a JSON object, got %s", jsonKind(v))
	}
	var req Request
	var vs []Violation
	bad := func(member, want string, got any) {
		vs = append(vs, Violation{Pointer: "/" + member, Code: "wrong_type", OAuthError: ErrInvalidRequest,
			Message: fmt.Sprintf("%s must be %s, got %s", member, want, jsonKind(got))})
	}
	for k, val := range obj {
		switch k {
		case "scope":
			if s, ok := val.(string); ok {
				req.Scope = s
			} else {
				bad(k, "a space-delimited string", val)
			}
		case "org_id":
			if s, ok := val.(string); ok {
				req.OrgID = s
			} else {
				bad(k, "a string", val)
			}
		case "resource":
			switch rv := val.(type) {
			case string:
				req.Resource = []string{rv}
			case []any:
				for _, e := range rv {
					s, ok := e.(string)
					if !ok {
						bad(k, "a string or an array of strings", val)
						req.Resource = nil
						break
					}
					req.Resource = append(req.Resource, s)
				}
			default:
				bad(k, "a string or an array of strings", val)
			}
		case "authorization_details":
			js, _ := json.Marshal(val)
			req.AuthorizationDetails = js
		default:
			vs = append(vs, Violation{Pointer: "/" + jsonpointer.Escape(k), Code: "unknown_member", OAuthError: ErrInvalidRequest,
				Message: fmt.Sprintf("%q is not a member of a request document; use scope, resource, authorization_details or org_id", k)})
		}
	}
	sortViolations(vs)
	return req, vs, nil
}

// jsonLimits bound outside JSON: nesting, and number literals short enough
// that the schema validator's exact rationals stay cheap.
var jsonLimits = strictjson.Limits{MaxDepth: MaxDepth, MaxNumberLen: 32, MaxExponentDigits: 3}

// decodeArray checks the size limit, then decodes one JSON value strictly
// (package strictjson: no member named twice, nothing after the value,
// bounded nesting and numbers). When the value is an array it also returns
// the byte span of each element, so that callers get each element's own
// text without encoding it again.
func decodeArray(data []byte) (any, [][2]int, error) {
	if len(data) > MaxRequestBytes {
		return nil, nil, fmt.Errorf("%d bytes is over the limit of %d", len(data), MaxRequestBytes)
	}
	return strictjson.DecodeArray(data, jsonLimits)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// Strings returns the strings of a decoded JSON array (a []any, as
// Detail.Object holds its members), in order, skipping any element that is
// not a string; nil or anything but an array gives an empty list. The one
// reader of such lists, for the catalog, the consent model and the
// authorization server's checks.
func Strings(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// intOf reads an integral JSON number, whatever its spelling; strictjson
// bounds the literal, so the exact rational is cheap.
func intOf(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	q, ok := new(big.Rat).SetString(string(n))
	if !ok || !q.IsInt() || !q.Num().IsInt64() {
		return 0, false
	}
	return q.Num().Int64(), true
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
