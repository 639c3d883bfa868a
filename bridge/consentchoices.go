package bridge

import (
	"encoding/json"
	"fmt"
)

// choices reads the per-entry decisions of consent.approve
// (docs/automation.md, "Commands"): declined_scopes (strings),
// declined_details (integers, indexes into authorization_details) and
// lowered_maximums ([{"index": N, "maximum": "digits"}]). It returns nil
// when none of them is present: the command keeps the screen's choices.
func (f fields) choices() (*ConsentChoices, error) {
	_, s := f["declined_scopes"]
	_, d := f["declined_details"]
	_, m := f["lowered_maximums"]
	if !s && !d && !m {
		return nil, nil
	}
	c := &ConsentChoices{DeclinedScopes: []string{}, DeclinedDetails: []int{}, LoweredMaximums: []LoweredMaximum{}}
	var err error
	if c.DeclinedScopes, err = eachItem(f, "declined_scopes", c.DeclinedScopes, declinedScope); err != nil {
		return nil, err
	}
	if c.DeclinedDetails, err = eachItem(f, "declined_details", c.DeclinedDetails, declinedDetail); err != nil {
		return nil, err
	}
	if c.LoweredMaximums, err = eachItem(f, "lowered_maximums", c.LoweredMaximums, loweredMaximum); err != nil {
		return nil, err
	}
	return c, nil
}

// eachItem reads the array field name with read, one item at a time,
// appending to out.
func eachItem[T any](f fields, name string, out []T, read func(i int, raw json.RawMessage) (T, error)) ([]T, error) {
	items, err := f.array(name)
	if err != nil {
		return nil, err
	}
	for i, raw := range items {
		v, err := read(i, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// declinedScope reads declined_scopes[i]: a non-empty string.
func declinedScope(i int, raw json.RawMessage) (string, error) {
	var name string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &name) != nil || name == "" {
		return "", fmt.Errorf("declined_scopes[%d] must be a scope name (a non-empty string)", i)
	}
	return name, nil
}

// declinedDetail reads declined_details[i]: an index into
// authorization_details.
func declinedDetail(i int, raw json.RawMessage) (int, error) {
	n, _, err := fields{"i": raw}.integer("i")
	if err != nil || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("declined_details[%d] must be the index of an authorization_details object (an integer from 0)", i)
	}
	return int(n), nil
}

// loweredMaximum reads lowered_maximums[i]: {"index": N, "maximum": "digits"}.
func loweredMaximum(i int, raw json.RawMessage) (LoweredMaximum, error) {
	at := fmt.Sprintf("lowered_maximums[%d]", i)
	if len(raw) == 0 || raw[0] != '{' {
		return LoweredMaximum{}, fmt.Errorf(`%s must be an object {"index": N, "maximum": "digits"}`, at)
	}
	o, err := splitObject(raw)
	if err != nil {
		return LoweredMaximum{}, fmt.Errorf("%s: %v", at, err)
	}
	if err := o.only("index", "maximum"); err != nil {
		return LoweredMaximum{}, fmt.Errorf("%s: %v", at, err)
	}
	n, present, err := o.integer("index")
	if err != nil || !present || n < 0 || n > 1<<20 {
		return LoweredMaximum{}, fmt.Errorf("%s.index must be the index of an automatic-charge object (an integer from 0)", at)
	}
	max, err := o.required("maximum")
	if err != nil {
		return LoweredMaximum{}, fmt.Errorf("%s.maximum must be an amount as a string of digits, e.g. \"20000\"", at)
	}
	return LoweredMaximum{Index: int(n), Maximum: max}, nil
}

// array reads a field holding a JSON array (nil when absent).
func (f fields) array(name string) ([]json.RawMessage, error) {
	raw, ok := f[name]
	if !ok {
		return nil, nil
	}
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, fmt.Errorf("%s must be an array", name)
	}
	if len(items) > 256 {
		return nil, fmt.Errorf("%s has %d items, at most 256", name, len(items))
	}
	return items, nil
}
