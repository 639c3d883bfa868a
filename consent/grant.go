package consent

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// The grant: what a checked decision grants of the request.

// Grant is what a decision, which passed Validate, grants of a request.
type Grant struct {
	// Denied is true for "deny" and for an approval that declines every
	// requested entry (access_denied); the rest is then empty.
	Denied bool
	// Result is the granted scopes and objects (Granted).
	Result *catalog.Result
	// Details are the granted authorization_details with the chosen
	// accounts bound (GrantedDetails).
	Details json.RawMessage
	// AccountID and CompanyAccountID are the decision's accounts, "" when
	// no granted detail binds one (the details that needed one were
	// declined).
	AccountID, CompanyAccountID string
}

// GrantOf is the grant of a decision, which must have passed Validate:
// the one call a decision site makes.
func GrantOf(res *catalog.Result, d Decision) (*Grant, error) {
	g := &Grant{Result: Granted(res, d)}
	if len(g.Result.Scopes)+len(g.Result.Details) == 0 {
		g.Denied = true
		return g, nil
	}
	if NeedsAccount(g.Result) {
		g.AccountID, g.CompanyAccountID = d.AccountID, d.CompanyAccountID
	}
	var err error
	if g.Details, err = GrantedDetails(res, d); err != nil {
		return nil, err
	}
	return g, nil
}

// Granted is what a decision grants of a request: the requested scopes
// and objects less the declined ones (all of them for a denial). The
// decision must have passed Validate.
func Granted(res *catalog.Result, d Decision) *catalog.Result {
	g := &catalog.Result{}
	if d.Action != Approve {
		return g
	}
	for _, s := range res.Scopes {
		if !slices.Contains(d.DeclinedScopes, s) {
			g.Scopes = append(g.Scopes, s)
		}
	}
	for _, det := range res.Details {
		if slices.Contains(d.DeclinedDetails, det.Index) {
			continue
		}
		if k := slices.IndexFunc(d.LoweredMaximums, func(lm LoweredMaximum) bool { return lm.Index == det.Index }); k >= 0 {
			det = lowered(det, d.LoweredMaximums[k].Maximum)
		}
		g.Details = append(g.Details, det)
	}
	return g
}

// lowered is det with its transaction.maximum set to maximum: what the
// grant holds, and what is remembered as consented (Keys), so that the
// requested maximum is asked for again.
func lowered(det catalog.Detail, maximum string) catalog.Detail {
	t, ok := det.Object["transaction"].(map[string]any)
	if !ok {
		return det
	}
	obj := maps.Clone(det.Object)
	tx := maps.Clone(t)
	tx["maximum"] = maximum
	obj["transaction"] = tx
	det.Object = obj
	if js, err := json.Marshal(obj); err == nil {
		det.JSON = js
	}
	return det
}

// Denies reports whether a decision, which passed Validate, is a denial:
// "deny", or an approval that declines every requested entry.
func Denies(res *catalog.Result, d Decision) bool {
	g := Granted(res, d)
	return len(g.Scopes)+len(g.Details) == 0
}

// NeedsAccount reports whether a detail of res binds an account.
func NeedsAccount(res *catalog.Result) bool {
	return slices.ContainsFunc(res.Details, func(d catalog.Detail) bool { o, _ := accountNeed(d); return o != "" })
}

// GrantedDetails returns the authorization_details that an approval grants:
// the requested objects it does not decline, with the chosen account bound
// in place of a selection (bank_account gets `identifiers`,
// automatic-charge gets `sources`). The decision must have passed
// Validate.
func GrantedDetails(res *catalog.Result, d Decision) (json.RawMessage, error) {
	granted := Granted(res, d).Details
	out := make([]map[string]any, 0, len(granted))
	for _, det := range granted {
		obj := make(map[string]any, len(det.Object))
		for k, v := range det.Object {
			obj[k] = v
		}
		if owner, _ := accountNeed(det); owner != "" && d.AccountFor(owner) != "" {
			field := "identifiers"
			if owner == OwnerCompany {
				field = "sources"
			}
			delete(obj, "selection")
			obj[field] = []string{d.AccountFor(owner)}
		}
		out = append(out, obj)
	}
	js, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("consent: %w", err)
	}
	return js, nil
}
