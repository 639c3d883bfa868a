package catalog

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestStrings: the list a request's array member gives the consent screen
// and the server's checks is its strings, in order, whatever else the
// array holds; a member that is not an array gives none.
func TestStrings(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want []string
	}{
		{"strings in order", []any{"acct-2", "acct-1"}, []string{"acct-2", "acct-1"}},
		{"non-strings skipped", []any{"a", json.Number("1"), nil, true, map[string]any{}, []any{"x"}, "b"}, []string{"a", "b"}},
		{"empty array", []any{}, []string{}},
		{"absent member", nil, []string{}},
		{"a string, not an array", "acct-1", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Strings(tc.v)
			if got == nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Strings(%#v) = %#v, want %#v", tc.v, got, tc.want)
			}
		})
	}
}
