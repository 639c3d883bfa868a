package webdriverfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/host"
)

// extension answers the front's extension commands (W3C WebDriver,
// "Extensions"): /session/{id}/miniapp-host/consent[/approve|/deny].
func (f *Front) extension(w http.ResponseWriter, r *http.Request, s *session, rest []string) {
	path := strings.Join(rest, "/")
	switch {
	case path == "consent" && r.Method == http.MethodGet:
		shown, _, ok := s.consentShown()
		if !ok {
			writeError(w, http.StatusNotFound, errNoSuchAlert, "no consent screen is shown")
			return
		}
		writeValue(w, shown)
	case (path == "consent/approve" || path == "consent/deny") && r.Method == http.MethodPost:
		f.decide(w, r, s, path == "consent/approve")
	case len(rest) == 2 && rest[0] == "service" && r.Method == http.MethodPost:
		f.serviceControl(w, r, rest[1])
	case (path == "network" || path == "network/clear") && r.Method == http.MethodPost:
		f.network(w, r, s, path == "network/clear")
	default:
		writeError(w, http.StatusNotFound, errUnknownCommand, fmt.Sprintf(
			"%s %s is not a command of this front; its extension commands are GET /session/{id}/%s/consent, POST .../consent/approve, POST .../consent/deny, POST .../service/{control}, POST .../network, POST .../network/clear",
			r.Method, r.URL.Path, VendorPrefix))
	}
}

// consentShown returns the data of the consent screen on screen as the
// channel last told it (the last consent.shown with no consent.decided
// after it), and the seq of that event.
func (s *session) consentShown() (json.RawMessage, int64, bool) {
	var shown *client.Event
	for _, e := range s.auto.Events() {
		switch e.Kind {
		case "consent.shown":
			shown = &e
		case "consent.decided":
			shown = nil
		}
	}
	if shown == nil {
		return nil, 0, false
	}
	return shown.Data, shown.Seq, true
}

// decide approves or denies the consent screen through the host's
// automation channel, which applies the screen's rules (its arming delay
// is waited out; an approval a failed check disables is refused), then
// waits for the host's consent.decided and answers with it: once the
// command has returned, Get Consent no longer shows that screen.
func (f *Front) decide(w http.ResponseWriter, r *http.Request, s *session, approve bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, errInvalidArgument, "reading the body: "+err.Error())
		return
	}
	params, msg := readDecision(body, approve)
	if msg != "" {
		writeError(w, http.StatusBadRequest, errInvalidArgument, msg)
		return
	}
	after := s.auto.Last()
	ctx := r.Context()
	if err := s.sendDecision(ctx, approve, params); err != nil {
		writeDecisionError(w, err)
		return
	}
	ev, err := s.auto.WaitAfter(ctx, after, client.Kind("consent.decided"))
	if err != nil {
		writeError(w, http.StatusInternalServerError, errUnknown, "the host decided, but said nothing of it: "+err.Error())
		return
	}
	writeValue(w, ev.Data)
}

// decision is the body of consent/approve (each member optional); deny's
// is {} or empty.
type decision struct {
	Account         string                  `json:"account"`
	DeclinedScopes  []string                `json:"declined_scopes"`
	DeclinedDetails []int                   `json:"declined_details"`
	LoweredMaximums []bridge.LoweredMaximum `json:"lowered_maximums"`
}

// perEntry reports whether the decision has per-entry choices.
func (p decision) perEntry() bool {
	return p.DeclinedScopes != nil || p.DeclinedDetails != nil || p.LoweredMaximums != nil
}

// readDecision reads a decision's body; a refusal is a message for
// `invalid argument`.
func readDecision(body []byte, approve bool) (params decision, refusal string) {
	if len(bytes.TrimSpace(body)) == 0 {
		return params, ""
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&params); err != nil || d.More() {
		what := `{} or {"account": "...", "declined_scopes": [...], "declined_details": [...], "lowered_maximums": [{"index": N, "maximum": "..."}]} (each member optional)`
		if !approve {
			what = "{}"
		}
		return params, fmt.Sprintf("the body must be %s: %v", what, err)
	}
	if !approve && (params.Account != "" || params.perEntry()) {
		return params, "deny takes no account and no per-entry decisions: the body must be {}"
	}
	return params, ""
}

// sendDecision approves (with per-entry decisions, docs/webdriver.md,
// "The consent screen", when there are any) or denies through the host's
// automation channel.
func (s *session) sendDecision(ctx context.Context, approve bool, params decision) error {
	switch {
	case approve && params.perEntry():
		return s.auto.ApproveWith(ctx, "", params.Account, bridge.ConsentChoices{DeclinedScopes: params.DeclinedScopes,
			DeclinedDetails: params.DeclinedDetails, LoweredMaximums: params.LoweredMaximums})
	case approve:
		return s.auto.Approve(ctx, "", params.Account)
	}
	return s.auto.Deny(ctx, "")
}

// writeDecisionError answers the channel's refusal of a decision as the
// W3C error a client expects: no such alert when no screen is shown,
// invalid element state when its checks refuse the approval.
func writeDecisionError(w http.ResponseWriter, err error) {
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && ce.Code == host.CodeNoConsent:
		writeError(w, http.StatusNotFound, errNoSuchAlert, ce.Message)
	case errors.As(err, &ce) && ce.Code == host.CodeConsentRefused:
		writeError(w, http.StatusBadRequest, errElementState, ce.Message+" (deny is taken)")
	case errors.As(err, &ce) && ce.Code == bridge.CodeInvalidParams:
		writeError(w, http.StatusBadRequest, errInvalidArgument, ce.Message)
	default:
		writeError(w, http.StatusInternalServerError, errUnknown, "the host's automation channel: "+err.Error())
	}
}
