package playground

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

// The operator's review from the launcher (docs/playground.md, "Pending
// reviews"): the submissions waiting on the playground's own dashboard
// (scope policies, Resource Server declarations, published Miniapps), with
// approve and reject. The launcher calls the dashboard's review API with the
// playground's operator key, as `miniapp-host review` does, so a decision
// made here is the dashboard's decision, with every check it makes.

// Review is a pending submission as the launcher lists it.
type Review struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"` // policy, resource_server or miniapp
	ProjectID string `json:"project_id"`
	CreatedAt string `json:"created_at"`
	// Summary says in one line what approving it grants.
	Summary string `json:"summary"`
	// Body is the submission as the project sent it.
	Body json.RawMessage `json:"body"`
}

// reviewKinds are the kinds of submissions, as in the dashboard.
var reviewKinds = []string{"policy", "resource_server", "miniapp"}

// OperatorKey is the operator credential of the playground's dashboard:
// `miniapp-host review ... --dashboard <dashboard_url> --key <it>` decides
// its submissions.
func (p *Playground) OperatorKey() string { return p.world.srv.OperatorKey() }

// operator is a client of the dashboard's review API with the operator key.
func (p *Playground) operator() *dashboard.Client {
	return &dashboard.Client{BaseURL: p.world.urls.Dashboard, Key: p.OperatorKey(), HTTP: p.cfg.HTTP}
}

// submission is a submission as the dashboard answers it.
type submission struct {
	ID        string          `json:"id"`
	ProjectID string          `json:"project_id"`
	Kind      string          `json:"kind"`
	Body      json.RawMessage `json:"body"`
	Status    string          `json:"status"`
	Reason    string          `json:"reason"`
	CreatedAt string          `json:"created_at"`
}

// PendingReviews lists the submissions waiting for the operator, oldest
// first.
func (p *Playground) PendingReviews(ctx context.Context) ([]Review, error) {
	raw, err := p.operator().Do(ctx, http.MethodGet, "/api/review?status=pending", nil)
	if err != nil {
		return nil, fmt.Errorf("playground: reading the pending reviews: %w", err)
	}
	var out struct {
		Submissions []submission `json:"submissions"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("playground: the dashboard's review list: %w", err)
	}
	list := make([]Review, 0, len(out.Submissions))
	for _, s := range out.Submissions {
		list = append(list, Review{ID: s.ID, Kind: s.Kind, ProjectID: s.ProjectID, CreatedAt: s.CreatedAt,
			Summary: reviewSummary(s.Kind, s.Body), Body: s.Body})
	}
	return list, nil
}

// reviewSummary is one line on what a submission asks for.
func reviewSummary(kind string, body json.RawMessage) string {
	var b struct {
		Scopes   json.RawMessage `json:"scopes"`
		Types    json.RawMessage `json:"types"`
		Resource string          `json:"resource"`
		Origin   string          `json:"origin"`
		Manifest struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"manifest"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	// names reads a list of names, or of objects with a name (a
	// declaration's scopes and types).
	names := func(raw json.RawMessage) string {
		var plain []string
		if json.Unmarshal(raw, &plain) == nil {
			return strings.Join(plain, " ")
		}
		var named []struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &named)
		out := make([]string, 0, len(named))
		for _, n := range named {
			out = append(out, n.Name)
		}
		return strings.Join(out, " ")
	}
	var parts []string
	switch kind {
	case "resource_server":
		parts = append(parts, "resource "+b.Resource)
	case "miniapp":
		return fmt.Sprintf("Miniapp %q (%s) at %s", b.Manifest.Name, b.Manifest.ID, b.Origin)
	}
	if s := names(b.Scopes); s != "" {
		parts = append(parts, "scopes "+s)
	}
	if t := names(b.Types); t != "" {
		parts = append(parts, "types "+t)
	}
	return strings.Join(parts, "; ")
}

// DecideReview approves or rejects (action) the pending submission id of
// the given kind, with an optional reason for an approval and a required
// one for a rejection, and returns the decided submission as the dashboard
// answered it. A kind that is not the submission's is refused, so that the
// launcher never decides what it did not show.
func (p *Playground) DecideReview(ctx context.Context, kind, id, action, reason string) (json.RawMessage, error) {
	if action != "approve" && action != "reject" {
		return nil, &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no action %q: approve or reject", action)}
	}
	if !slices.Contains(reviewKinds, kind) {
		return nil, invalid(fmt.Sprintf("kind %q is none of %s", kind, strings.Join(reviewKinds, ", ")))
	}
	list, err := p.PendingReviews(ctx)
	if err != nil {
		return nil, err
	}
	found := false
	for _, r := range list {
		if r.ID == id {
			if r.Kind != kind {
				return nil, invalid(fmt.Sprintf("submission %s is a %s submission, not %s", id, r.Kind, kind))
			}
			found = true
		}
	}
	if !found {
		return nil, &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no pending %s submission %q: GET /api/reviews lists them", kind, id)}
	}
	return p.operator().Do(ctx, http.MethodPost, "/api/review/"+url.PathEscape(id)+"/"+action, map[string]string{"reason": reason})
}

// handleReviews serves GET /api/reviews.
func (p *Playground) handleReviews(w http.ResponseWriter, r *http.Request) {
	list, err := p.PendingReviews(r.Context())
	if err != nil {
		writeError(w, &apiError{http.StatusBadGateway, "dashboard_failed", err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Reviews   []Review `json:"reviews"`
		Dashboard string   `json:"dashboard_url"`
	}{list, p.world.urls.Dashboard})
}

// handleDecideReview serves POST /api/reviews/{kind}/{id}/{action}, body
// {"reason": "..."} (optional to approve, required to reject).
func (p *Playground) handleDecideReview(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Reason string `json:"reason"`
	}
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	out, err := p.DecideReview(r.Context(), r.PathValue("kind"), r.PathValue("id"), r.PathValue("action"), in.Reason)
	var ae *apiError
	var de *dashboard.APIError
	switch {
	case errors.As(err, &ae):
		writeError(w, ae)
	case errors.As(err, &de) && de.Status < 500:
		// The dashboard's refusal (a reason missing, already decided, a
		// declaration that clashes): its status, code, field and message.
		msg := de.Err.Message
		if de.Err.Field != "" {
			msg = de.Err.Field + ": " + msg
		}
		writeError(w, &apiError{de.Status, de.Err.Code, msg})
	case err != nil:
		writeError(w, &apiError{http.StatusBadGateway, "dashboard_failed", err.Error()})
	default:
		writeJSON(w, http.StatusOK, out)
	}
}
