package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/miniapp-host/miniapp-host/strictjson"
)

// The page and the test driver are outside input. encoding/json alone is too
// lenient for them: it matches field names case-insensitively, lets the last
// of two duplicate fields win and turns null into a zero value. So messages
// are read with the project's strict reader (package strictjson): an object
// is split into its fields with exact names, duplicates refused, numbers and
// nesting bounded, and each value is checked for its JSON type before it is
// converted by the helpers below.

// maxSafeInteger is the largest integer a JavaScript number holds exactly;
// ids above it could not be echoed faithfully to the page.
const maxSafeInteger = 1<<53 - 1

// fields is a JSON object split into its members.
type fields map[string]json.RawMessage

// messageLimits bound what splitObject reads of a message as encoding/json
// bounded it: nesting up to 10000 levels, numbers of any length (a field's
// text is only converted when it is read, integer refuses what it cannot
// hold). So a message that only breaks a limit of the authorization server
// inside authorization_details is still answered, with its id, by
// parseDetails, which reads them with the server's limits.
var messageLimits = strictjson.Limits{MaxDepth: 10000, MaxNumberLen: maxCommandSize, MaxExponentDigits: maxCommandSize}

// splitObject parses raw as one JSON object and nothing else. The objects
// inside its fields are checked for duplicates when they are read (object).
func splitObject(raw []byte) (fields, error) {
	f, err := strictjson.Members(raw, messageLimits)
	if err == nil {
		return f, nil
	}
	var se *strictjson.SyntaxError
	if !errors.As(err, &se) {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	switch se.Kind {
	case strictjson.KindDuplicate:
		return nil, fmt.Errorf("duplicate field %s", quote(se.Member))
	case strictjson.KindNotObject:
		return nil, errors.New("not a JSON object")
	case strictjson.KindTrailing:
		return nil, errors.New("data after the JSON object")
	}
	return nil, fmt.Errorf("not valid JSON: %w", err)
}

// only refuses any field not in allowed.
func (f fields) only(allowed ...string) error {
	for name := range f {
		known := false
		for _, a := range allowed {
			if name == a {
				known = true
				break
			}
		}
		if !known {
			return fmt.Errorf("unknown field %s", quote(name))
		}
	}
	return nil
}

// str reads a string field. present is false when the field is absent.
func (f fields) str(name string) (s string, present bool, err error) {
	raw, ok := f[name]
	if !ok {
		return "", false, nil
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", true, fmt.Errorf("%s must be a string", name)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, fmt.Errorf("%s must be a string", name)
	}
	return s, true, nil
}

// boolean reads a boolean field.
func (f fields) boolean(name string) (b bool, present bool, err error) {
	raw, ok := f[name]
	if !ok {
		return false, false, nil
	}
	switch string(raw) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, true, fmt.Errorf("%s must be a boolean", name)
}

// integer reads a field holding an integer written without fraction or
// exponent, as JSON.stringify writes the integers the bridge script sends.
func (f fields) integer(name string) (n int64, present bool, err error) {
	raw, ok := f[name]
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%s must be an integer", name)
	}
	return n, true, nil
}

// number reads a field holding a finite JSON number.
func (f fields) number(name string) (n float64, present bool, err error) {
	raw, ok := f[name]
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.ParseFloat(string(raw), 64)
	if err != nil || len(raw) == 0 || raw[0] == '"' || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, true, fmt.Errorf("%s must be a number", name)
	}
	return n, true, nil
}

// object reads a field holding a JSON object.
func (f fields) object(name string) (obj fields, present bool, err error) {
	raw, ok := f[name]
	if !ok {
		return nil, false, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, true, fmt.Errorf("%s must be an object", name)
	}
	obj, err = splitObject(raw)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %v", name, err)
	}
	return obj, true, nil
}

// quote renders a name taken from the input for an error message, short
// enough that a hostile name cannot bloat the reply.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}
