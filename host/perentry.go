package host

import (
	"strconv"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/consent"
)

// Per-entry consent (docs/native-consent.md, "2. Post the decision"): the
// consent view lets the subject decline each scope but a fixed one and
// each authorization_details object, and lower an automatic charge's
// maximum (docs/service.md §2.4); the host sends those choices with the
// approval and the service grants exactly the rest.

// consentEntries lists a model's entries for the automation channel's
// consent.shown.
func consentEntries(m consent.Model) []bridge.ConsentEntry {
	out := make([]bridge.ConsentEntry, 0, len(m.Permissions))
	for _, p := range m.Permissions {
		e := bridge.ConsentEntry{Kind: p.Kind, Name: p.Name, Index: p.Index, Fixed: p.Fixed}
		if p.Limits != nil && p.Limits.Maximum != "" {
			e.Minimum, e.Maximum = p.Limits.Minimum, p.Limits.Maximum
		}
		for _, r := range p.Requires {
			e.Requires = append(e.Requires, entryName(r.Kind, r.Name, r.Index))
		}
		out = append(out, e)
	}
	return out
}

// entryName names an entry as the consent view's form does (consent.Permission.Entry).
func entryName(kind, name string, index *int) string {
	if kind == consent.KindDetail && index != nil {
		return "detail " + strconv.Itoa(*index)
	}
	return "scope " + name
}

// hostDecision is the consent view's answer (assets/host/consent.js).
type hostDecision struct {
	Account         string                   `json:"account"`
	CompanyAccount  string                   `json:"company_account"`
	DeclinedScopes  []string                 `json:"declined_scopes"`
	DeclinedDetails []int                    `json:"declined_details"`
	LoweredMaximums []consent.LoweredMaximum `json:"lowered_maximums"`
}

// approval is the decision the view's approval asks for.
func (h hostDecision) approval() consent.Decision {
	return consent.Decision{Action: consent.Approve, AccountID: h.Account, CompanyAccountID: h.CompanyAccount,
		DeclinedScopes: h.DeclinedScopes, DeclinedDetails: h.DeclinedDetails, LoweredMaximums: h.LoweredMaximums}
}

// decidedEvent is consent.decided for d.
func decidedEvent(d consent.Decision, flowID string) bridge.ConsentDecidedEvent {
	if d.Action != consent.Approve {
		return bridge.ConsentDecidedEvent{Decision: bridge.ConsentDenied, Flow: flowID}
	}
	ev := bridge.ConsentDecidedEvent{Decision: bridge.ConsentApproved, Account: d.AccountID, Flow: flowID,
		DeclinedScopes: d.DeclinedScopes, DeclinedDetails: d.DeclinedDetails}
	for _, lm := range d.LoweredMaximums {
		ev.LoweredMaximums = append(ev.LoweredMaximums, bridge.LoweredMaximum{Index: lm.Index, Maximum: lm.Maximum})
	}
	return ev
}
