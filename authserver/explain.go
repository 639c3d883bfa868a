package authserver

import (
	"context"
	"errors"

	"github.com/miniapp-host/miniapp-host/authserver/devctl"
	"github.com/miniapp-host/miniapp-host/authserver/oauth"
)

// explainFor is the development controls' dry run (docs/dashboard.md,
// "Explain") over the OAuth server o: its bad input in the controls'
// error shape.
func explainFor(o *oauth.Server) func(context.Context, devctl.ExplainRequest) (any, error) {
	return func(ctx context.Context, r devctl.ExplainRequest) (any, error) {
		ex, err := o.Explain(ctx, oauth.ExplainRequest{ClientID: r.ClientID, Subject: r.Subject, Scope: r.Scope,
			AuthorizationDetails: r.AuthorizationDetails, OrgID: r.OrgID, AuthorizeURL: r.AuthorizeURL})
		var ee *oauth.ExplainError
		if errors.As(err, &ee) {
			return nil, &devctl.Error{Code: ee.Code, Field: ee.Field, Message: ee.Message}
		}
		return ex, err
	}
}
