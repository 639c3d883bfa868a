package playground

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

// submitted is a project with submissions pending on a playground's
// dashboard.
type submitted struct {
	project, key        string
	policy, rs, another string // submission ids
}

// submitForReview creates a project on p's dashboard that asks for a
// scope policy, a Resource Server and a second policy.
func submitForReview(t *testing.T, p *Playground) submitted {
	t.Helper()
	ctx := context.Background()
	c := &dashboard.Client{BaseURL: p.Services().Dashboard}
	do := func(path string, body any) map[string]any {
		t.Helper()
		raw, err := c.Do(ctx, http.MethodPost, path, body)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	prj := do("/api/projects", map[string]string{"name": "Payslips Inc."})
	s := submitted{project: prj["id"].(string), key: prj["key"].(string)}
	c.Key = s.key
	base := "/api/projects/" + s.project
	s.policy = do(base+"/policy", map[string]any{"scopes": []string{"openid", "profile"}})["id"].(string)
	s.rs = do(base+"/resource-servers", json.RawMessage(`{"resource":"https://payslips.example/api",
		"scopes":[{"name":"payslips:read","meaning":"Read payslips"}],"types":[]}`))["id"].(string)
	s.another = do(base+"/policy", map[string]any{"scopes": []string{"email"}})["id"].(string)
	return s
}

// approvedScopes reads the project's approved policy on the dashboard.
func approvedScopes(t *testing.T, p *Playground, s submitted) []string {
	t.Helper()
	raw, err := (&dashboard.Client{BaseURL: p.Services().Dashboard, Key: s.key}).Do(context.Background(), http.MethodGet, "/api/projects/"+s.project, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Policy struct{ Scopes []string } `json:"approved_policy"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v.Policy.Scopes
}

// TestReviewsAPI: the launcher lists the submissions pending on the
// playground's dashboard and approves or rejects them with the operator
// key given in the configuration; refusals name what to fix.
func TestReviewsAPI(t *testing.T) {
	p := start(t, Config{OperatorKey: "an-operator-key-for-the-tests"})
	if p.OperatorKey() != "an-operator-key-for-the-tests" {
		t.Fatalf("OperatorKey %q", p.OperatorKey())
	}
	s := submitForReview(t, p)

	var list struct {
		Reviews   []Review `json:"reviews"`
		Dashboard string   `json:"dashboard_url"`
	}
	if st := call(t, p, "GET", "/api/reviews", nil, &list); st != http.StatusOK || len(list.Reviews) != 3 || list.Dashboard != p.Services().Dashboard {
		t.Fatalf("GET /api/reviews: %d %+v", st, list)
	}
	want := map[string][2]string{
		s.policy: {"policy", "scopes openid profile"}, s.rs: {"resource_server", "resource https://payslips.example/api; scopes payslips:read"},
		s.another: {"policy", "scopes email"},
	}
	for _, r := range list.Reviews {
		if w := want[r.ID]; r.Kind != w[0] || r.Summary != w[1] || r.ProjectID != s.project || r.CreatedAt == "" || len(r.Body) == 0 {
			t.Errorf("review %+v, want %v", r, w)
		}
	}

	type apiErr struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	for _, c := range []struct {
		name, path string
		body       any
		status     int
		code, says string
	}{
		{"another kind", "/api/reviews/resource_server/" + s.policy + "/approve", map[string]string{}, 400, "invalid_request", "is a policy submission"},
		{"an unknown kind", "/api/reviews/project/" + s.policy + "/approve", map[string]string{}, 400, "invalid_request", "none of policy"},
		{"an unknown submission", "/api/reviews/policy/sub_none/approve", map[string]string{}, 404, "not_found", "GET /api/reviews"},
		{"an unknown action", "/api/reviews/policy/" + s.policy + "/accept", map[string]string{}, 404, "not_found", "approve or reject"},
		{"a rejection without reason", "/api/reviews/policy/" + s.another + "/reject", map[string]string{}, 400, "missing_field", "reason"},
		{"an unknown member", "/api/reviews/policy/" + s.policy + "/approve", map[string]string{"why": "x"}, 400, "invalid_request", "unknown field"},
	} {
		var e apiErr
		if st := call(t, p, "POST", c.path, c.body, &e); st != c.status || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.says) {
			t.Errorf("%s: %d %+v, want %d %s saying %q", c.name, st, e, c.status, c.code, c.says)
		}
	}
	if got := approvedScopes(t, p, s); len(got) != 0 {
		t.Fatalf("refused decisions approved %v", got)
	}

	var d struct{ ID, Status, Reason string }
	var rs struct {
		Status     string
		AssignedID string `json:"assigned_id"`
	}
	if st := call(t, p, "POST", "/api/reviews/policy/"+s.policy+"/approve", map[string]string{}, &d); st != http.StatusOK || d.Status != "approved" {
		t.Fatalf("approve the policy: %d %+v", st, d)
	}
	if got := approvedScopes(t, p, s); strings.Join(got, " ") != "openid profile" {
		t.Fatalf("approved policy %v", got)
	}
	if st := call(t, p, "POST", "/api/reviews/resource_server/"+s.rs+"/approve", map[string]string{"reason": "reviewed"}, &rs); st != http.StatusOK ||
		rs.Status != "approved" || !strings.HasPrefix(rs.AssignedID, "rs_") {
		t.Fatalf("approve the Resource Server: %d %+v", st, rs)
	}
	if st := call(t, p, "POST", "/api/reviews/policy/"+s.another+"/reject", map[string]string{"reason": "not needed"}, &d); st != http.StatusOK ||
		d.Status != "rejected" || d.Reason != "not needed" {
		t.Fatalf("reject: %d %+v", st, d)
	}
	var e apiErr
	if st := call(t, p, "POST", "/api/reviews/policy/"+s.policy+"/approve", map[string]string{}, &e); st != http.StatusNotFound || e.Error.Code != "not_found" {
		t.Errorf("deciding again: %d %+v", st, e)
	}
	if st := call(t, p, "GET", "/api/reviews", nil, &list); st != http.StatusOK || len(list.Reviews) != 0 {
		t.Errorf("GET /api/reviews after the decisions: %d %+v", st, list)
	}

	// The launcher API's gate holds for these routes too.
	for _, c := range []struct {
		name, method, path string
		header             map[string]string
		status             int
	}{
		{"list without token", "GET", "/api/reviews", map[string]string{"Authorization": ""}, 401},
		{"decide from another origin", "POST", "/api/reviews/policy/" + s.policy + "/approve", map[string]string{"Origin": "http://evil.example"}, 403},
		{"decide as a form", "POST", "/api/reviews/policy/" + s.policy + "/approve", map[string]string{"Content-Type": "text/plain"}, 415},
	} {
		req, _ := http.NewRequest(c.method, p.LauncherOrigin()+c.path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
		req.Header.Set("Origin", p.LauncherOrigin())
		req.Header.Set("Content-Type", "application/json")
		for k, v := range c.header {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
}
