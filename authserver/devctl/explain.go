package devctl

import (
	"encoding/json"
	"net/http"
)

// ExplainRequest is the body of POST /api/dev/explain (docs/dashboard.md,
// "Explain"): the parameters of an authorization request, or a whole
// authorize URL, and the subject who would decide.
type ExplainRequest struct {
	ClientID string `json:"client_id"`
	Subject  string `json:"subject"`
	Scope    string `json:"scope"`
	// AuthorizationDetails is a JSON array, or a JSON string holding one.
	AuthorizationDetails json.RawMessage `json:"authorization_details"`
	OrgID                string          `json:"org_id"`
	AuthorizeURL         string          `json:"authorize_url"`
}

// explainRoutes registers the dry run.
func (c *Controls) explainRoutes() {
	// POST /api/dev/explain: the dry run of an authorization request.
	c.mux.HandleFunc("POST /api/dev/explain", c.handleExplain)
}

func (c *Controls) handleExplain(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Explain == nil {
		c.writeError(w, r, &Error{Code: CodeNotFound, Field: "path", Message: "this server has no dry run of authorization requests"})
		return
	}
	var b ExplainRequest
	if err := decode(w, r, &b); err != nil {
		c.writeError(w, r, err)
		return
	}
	if string(b.AuthorizationDetails) == "null" {
		b.AuthorizationDetails = nil
	}
	rep, err := c.cfg.Explain(r.Context(), b)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	// Marshalled here, so that a report that cannot be is an
	// internal_error (logged), never an empty 200.
	out, err := json.Marshal(rep)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, json.RawMessage(out))
}
