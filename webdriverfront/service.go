package webdriverfront

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/automation/client"
	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/devclient"
)

// The development controls of the front's service (docs/webdriver.md,
// "The service's development controls"), and the network conditions of
// the session's host:
//
//	POST /session/{id}/miniapp-host/service/{control}  params of devclient's control → {"value": the service's answer}
//	POST /session/{id}/miniapp-host/network            the host's network.set params
//	POST /session/{id}/miniapp-host/network/clear
//
// The front runs the service's controls itself, with the operator key it
// was given (Config.OperatorKey), against the one dashboard it was
// started for; the network conditions are the host's, through its
// automation channel.

// serviceControl runs one of the service's development controls.
func (f *Front) serviceControl(w http.ResponseWriter, r *http.Request, control string) {
	if !devclient.Known(control) {
		writeError(w, http.StatusNotFound, errUnknownCommand, fmt.Sprintf("no development control %q; they are %s", control, strings.Join(devclient.Controls, ", ")))
		return
	}
	if f.cfg.OperatorKey == "" {
		writeError(w, http.StatusInternalServerError, errUnsupportedOperation, "this front was started without the service's operator key: start miniapp-host webdriver with MINIAPP_HOST_OPERATOR_KEY set (the key the playground or serve prints as operator key)")
		return
	}
	params, ok := readParams(w, r)
	if !ok {
		return
	}
	c := &devclient.Client{Dashboard: f.cfg.Dashboard, Key: f.cfg.OperatorKey}
	answer, err := c.Do(r.Context(), control, params)
	var pe *devclient.ParamsError
	var se *devclient.ServiceError
	switch {
	case errors.As(err, &pe):
		writeError(w, http.StatusBadRequest, errInvalidArgument, pe.Error())
	case errors.As(err, &se):
		writeErrorData(w, http.StatusBadRequest, errInvalidArgument, control+": "+se.Error(), se)
	case err != nil:
		writeError(w, http.StatusInternalServerError, errUnknown, err.Error())
	default:
		writeValue(w, answer)
	}
}

// network sets or clears the network conditions of the session's host
// (its automation commands network.set and network.clear).
func (f *Front) network(w http.ResponseWriter, r *http.Request, s *session, clear bool) {
	params, ok := readParams(w, r)
	if !ok {
		return
	}
	command := "network.set"
	if clear {
		command = "network.clear"
	}
	var answer json.RawMessage
	err := s.auto.Do(r.Context(), command, params, &answer)
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && (ce.Code == bridge.CodeInvalidParams || ce.Code == bridge.CodeUnknownCommand):
		writeError(w, http.StatusBadRequest, errInvalidArgument, ce.Message)
	case err != nil:
		writeError(w, http.StatusInternalServerError, errUnknown, "the host's automation channel: "+err.Error())
	default:
		if answer == nil {
			answer = json.RawMessage("null")
		}
		writeValue(w, answer)
	}
}

// readParams reads a command's body: a JSON object, or nothing for none.
func readParams(w http.ResponseWriter, r *http.Request) (json.RawMessage, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, errInvalidArgument, "reading the body: "+err.Error())
		return nil, false
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return json.RawMessage("{}"), true
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		writeError(w, http.StatusBadRequest, errInvalidArgument, "the body must be one JSON object: "+err.Error())
		return nil, false
	}
	return json.RawMessage(body), true
}

func writeErrorData(w http.ResponseWriter, status int, code, msg string, data any) {
	writeJSON(w, status, map[string]any{"value": map[string]any{"error": code, "message": msg, "stacktrace": "", "data": data}})
}
