package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/miniapp-host/miniapp-host/devclient"
)

// ServiceControls is a ServiceController over a development server's
// controls, for the hosts that know its operator key (the playground's
// embedded server, `open --operator-key-env`): params a control cannot
// take are CodeInvalidParams, the service's refusal CodeServiceRefused,
// a service out of reach CodeCommandFailed.
type ServiceControls struct{ Client *devclient.Client }

// ServiceControl implements ServiceController.
func (s ServiceControls) ServiceControl(ctx context.Context, control string, params json.RawMessage) (json.RawMessage, error) {
	b, err := s.Client.Do(ctx, control, params)
	var pe *devclient.ParamsError
	var se *devclient.ServiceError
	switch {
	case errors.As(err, &pe):
		return nil, Errorf(CodeInvalidParams, "%s", pe.Error())
	case errors.As(err, &se):
		msg := fmt.Sprintf("%d %s", se.Status, se.Code)
		if se.Field != "" {
			msg += " at " + se.Field
		}
		if se.Message != "" {
			msg += ": " + se.Message
		}
		return nil, Errorf(CodeServiceRefused, "%s", msg)
	case err != nil:
		return nil, Errorf(CodeCommandFailed, "%s", err.Error())
	}
	return b, nil
}
