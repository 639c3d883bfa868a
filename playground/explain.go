package playground

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

// The dry run from the launcher (docs/playground.md, "Explain a request"):
// the launcher's API passes the panel's request to the embedded server's
// POST /api/dev/explain with the playground's operator key, as `miniapp-host
// explain` does, so the report is the server's, through the same checks as a
// real authorization and with nothing written (docs/dashboard.md,
// "Explain").

// ExplainRequest is a dry run's request: client_id, subject, scope,
// authorization_details (a JSON array, or a string holding one) and
// org_id, or authorize_url and subject.
type ExplainRequest struct {
	ClientID             string          `json:"client_id,omitempty"`
	Subject              string          `json:"subject"`
	Scope                string          `json:"scope,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	OrgID                string          `json:"org_id,omitempty"`
	AuthorizeURL         string          `json:"authorize_url,omitempty"`
}

// Explain is the embedded server's dry run of req: its report as it came
// (docs/dashboard.md, "Explain"), or the dashboard's refusal
// (*dashboard.APIError) of input it cannot read.
func (p *Playground) Explain(ctx context.Context, req ExplainRequest) (json.RawMessage, error) {
	return p.operator().Do(ctx, http.MethodPost, "/api/dev/explain", req)
}

// handleExplain serves POST /api/explain.
func (p *Playground) handleExplain(w http.ResponseWriter, r *http.Request) {
	var in ExplainRequest
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	if string(in.AuthorizationDetails) == "null" || string(in.AuthorizationDetails) == `""` {
		in.AuthorizationDetails = nil
	}
	out, err := p.Explain(r.Context(), in)
	var de *dashboard.APIError
	switch {
	case errors.As(err, &de) && de.Status < 500:
		// Input the dry run cannot read: the member it names and what
		// to send.
		msg := de.Err.Message
		if de.Err.Field != "" {
			msg = de.Err.Field + ": " + msg
		}
		writeError(w, &apiError{de.Status, de.Err.Code, msg})
	case err != nil:
		writeError(w, &apiError{http.StatusBadGateway, "dashboard_failed", err.Error()})
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		w.Write(out)
	}
}
