package webdriverfront

import (
	"bytes"
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
	var params struct {
		Account         string                  `json:"account"`
		DeclinedScopes  []string                `json:"declined_scopes"`
		DeclinedDetails []int                   `json:"declined_details"`
		LoweredMaximums []bridge.LoweredMaximum `json:"lowered_maximums"`
	}
	if len(bytes.TrimSpace(body)) > 0 {
		d := json.NewDecoder(bytes.NewReader(body))
		d.DisallowUnknownFields()
		if err := d.Decode(&params); err != nil || d.More() {
			what := `{} or {"account": "...", "declined_scopes": [...], "declined_details": [...], "lowered_maximums": [{"index": N, "maximum": "..."}]} (each member optional)`
			if !approve {
				what = "{}"
			}
			writeError(w, http.StatusBadRequest, errInvalidArgument, fmt.Sprintf("the body must be %s: %v", what, err))
			return
		}
		if !approve && (params.Account != "" || params.DeclinedScopes != nil || params.DeclinedDetails != nil || params.LoweredMaximums != nil) {
			writeError(w, http.StatusBadRequest, errInvalidArgument, "deny takes no account and no per-entry decisions: the body must be {}")
			return
		}
	}
	after := s.auto.Last()
	ctx := r.Context()
	switch {
	case approve && (params.DeclinedScopes != nil || params.DeclinedDetails != nil || params.LoweredMaximums != nil):
		// Per-entry decisions (docs/webdriver.md, "The consent screen").
		err = s.auto.ApproveWith(ctx, "", params.Account, bridge.ConsentChoices{DeclinedScopes: params.DeclinedScopes,
			DeclinedDetails: params.DeclinedDetails, LoweredMaximums: params.LoweredMaximums})
	case approve:
		err = s.auto.Approve(ctx, "", params.Account)
	default:
		err = s.auto.Deny(ctx, "")
	}
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && ce.Code == host.CodeNoConsent:
		writeError(w, http.StatusNotFound, errNoSuchAlert, ce.Message)
		return
	case errors.As(err, &ce) && ce.Code == host.CodeConsentRefused:
		writeError(w, http.StatusBadRequest, errElementState, ce.Message+" (deny is taken)")
		return
	case errors.As(err, &ce) && ce.Code == bridge.CodeInvalidParams:
		writeError(w, http.StatusBadRequest, errInvalidArgument, ce.Message)
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, errUnknown, "the host's automation channel: "+err.Error())
		return
	}
	ev, err := s.auto.WaitAfter(ctx, after, client.Kind("consent.decided"))
	if err != nil {
		writeError(w, http.StatusInternalServerError, errUnknown, "the host decided, but said nothing of it: "+err.Error())
		return
	}
	writeValue(w, ev.Data)
}
