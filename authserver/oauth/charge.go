package oauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// The charge endpoint is the one banking operation the reference server
// implements, because it is where the last of the resource's controls
// applies: an automatic charge's transaction limits (docs/service.md §2.4, "Transaction
// limits are enforced") can only be checked against an amount, and the
// amount is known when a charge is made, not at consent.

const pathCharges = "/automatic-charges" // appended to {base_url}'s path

// chargeRequest is the body of POST {base_url}/automatic-charges.
type chargeRequest struct {
	// Amount is a CLP amount string (docs/service.md §8: ^[1-9][0-9]{0,14}$).
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// charge is the created charge.
type charge struct {
	ID       string `json:"id"`
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
	Source   string `json:"source,omitempty"`
	Status   string `json:"status"`
}

// handleCharge serves POST {base_url}/automatic-charges: it creates a
// charge when the token's grant holds an automatic-charge detail with
// create_automatic_charge or execute_automatic_charge whose transaction
// minimum and maximum admit the amount.
func (s *resourceHandler) handleCharge(w http.ResponseWriter, r *http.Request) {
	tok, dpop, err := presentedToken(r)
	if err != nil {
		s.writeGrantError(w, r, err)
		return
	}
	_, g, err := s.tokens.activeToken(r.Context(), tok)
	if err == nil {
		err = s.dpop.checkBound(r, tok, dpop, g, r.Method, sameURL(s.requestURL(r)))
	}
	if err != nil {
		s.writeGrantError(w, r, err)
		return
	}
	var body chargeRequest
	if err := decodeJSONBody(w, r, &body); err != nil {
		if oe := s.asError(r, err); oe.Code == codeContentTooLarge {
			s.writeGrantError(w, r, oe)
			return
		}
		s.writeGrantError(w, r, oauthErr(codeInvalidCharge, "body must be {\"amount\": \"<CLP digits>\", \"currency\": \"CLP\"}"))
		return
	}
	if !catalog.IsAmount(body.Amount) {
		s.writeGrantError(w, r, oauthErr(codeInvalidCharge, "amount must be a string of 1 to 15 digits without a leading zero (docs/service.md §8)"))
		return
	}
	if body.Currency != "CLP" {
		s.writeGrantError(w, r, oauthErr(codeInvalidCharge, "currency must be CLP (docs/service.md §2.4)"))
		return
	}
	amount, _ := strconv.ParseInt(body.Amount, 10, 64) // 15 digits fit
	var details []struct {
		Type        string   `json:"type"`
		Actions     []string `json:"actions"`
		Sources     []string `json:"sources"`
		Transaction struct {
			Minimum string `json:"minimum"`
			Maximum string `json:"maximum"`
		} `json:"transaction"`
	}
	if err := json.Unmarshal(g.Details, &details); err != nil {
		s.writeGrantError(w, r, fmt.Errorf("oauth: grant %s details: %w", g.ID, err))
		return
	}
	want := s.cfg.baseURL() + "/authorization-details/automatic-charge"
	var limits []string
	for _, d := range details {
		if d.Type != want || !(slices.Contains(d.Actions, "create_automatic_charge") || slices.Contains(d.Actions, "execute_automatic_charge")) {
			continue
		}
		lo, err1 := strconv.ParseInt(d.Transaction.Minimum, 10, 64)
		hi, err2 := strconv.ParseInt(d.Transaction.Maximum, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if amount < lo || amount > hi {
			limits = append(limits, d.Transaction.Minimum+" to "+d.Transaction.Maximum)
			continue
		}
		id, err := s.randomToken(16)
		if err != nil {
			s.writeGrantError(w, r, err)
			return
		}
		c := charge{ID: "chg_" + id, Amount: body.Amount, Currency: "CLP", Status: "created"}
		if len(d.Sources) > 0 {
			c.Source = d.Sources[0]
		}
		writeJSON(w, http.StatusCreated, c)
		return
	}
	if len(limits) == 0 {
		s.writeGrantError(w, r, oauthErr(codeInsufficientAuthorization,
			"the grant has no "+want+" detail with create_automatic_charge or execute_automatic_charge"))
		return
	}
	s.writeGrantError(w, r, oauthErr(codeAmountOutsideLimits,
		fmt.Sprintf("amount %s CLP is outside the granted transaction limits (%v CLP)", body.Amount, limits)))
}
