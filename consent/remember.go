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

// Remembered is a subject's remembered consent for a client, as Build
// reads it: the account the subject bound when it was given.
type Remembered struct {
	AccountID string
}

// remember marks the model Remembered when the subject's remembered
// consent r answers for the subject: nothing failed, and the account
// bound then (when one is required) is still offered. Otherwise the
// consent check asks, saying why.
func (m *Model) remember(r *Remembered) {
	if r == nil || !m.Approvable() {
		return
	}
	switch {
	case !m.AccountRequired:
		m.Remembered = true
	case len(m.AccountOwners()) > 1:
		// One account is remembered; a request binding the subject's
		// and the Company's is asked each time.
		m.askConsent("accounts of the subject and of the Company are bound: choose both")
	case slices.ContainsFunc(m.Accounts, func(a Account) bool { return a.ID == r.AccountID }):
		m.Remembered, m.RememberedAccount = true, r.AccountID
	default:
		m.askConsent("the account chosen before is no longer offered")
	}
}

// askConsent makes the consent check ask the subject, for the reason
// given.
func (m *Model) askConsent(why string) {
	for i := range m.Checks {
		if m.Checks[i].Name == CheckConsent {
			m.Checks[i] = Check{Name: CheckConsent, Outcome: Ask, Message: why}
		}
	}
}
