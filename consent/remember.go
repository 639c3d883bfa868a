package consent

import (
	"encoding/json"
	"slices"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// Keys names each permission of a valid request for remembering the
// subject's consent (docs/service.md §1): "scope " and the scope name, and "detail "
// and the requested object's JSON with its members in sorted order, so
// that the same object asked again has the same key and any change to it
// (another action, a higher limit) is a new permission that is asked for.
func Keys(res *catalog.Result) []string {
	keys := make([]string, 0, len(res.Scopes)+len(res.Details))
	for _, s := range res.Scopes {
		keys = append(keys, "scope "+s)
	}
	for _, d := range res.Details {
		// Marshalling a map sorts its keys; numbers stay json.Number, so
		// the text is canonical for equal objects.
		js, err := json.Marshal(d.Object)
		if err != nil {
			js = d.JSON
		}
		keys = append(keys, "detail "+string(js))
	}
	return keys
}

// Covered reports whether every key of want is in have: nothing new is
// requested.
func Covered(have, want []string) bool {
	for _, k := range want {
		if !slices.Contains(have, k) {
			return false
		}
	}
	return true
}
